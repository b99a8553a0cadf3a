// Package model is verisim's decoder-only transformer: the Llama, Qwen2 and
// Mixtral architectures as Hugging Face transformers defines them, their
// config.json, their safetensors checkpoints, random initialisation, and an
// fp32 CPU forward pass over a batch of sequences, each with its own KV
// cache.
//
// What the package promises:
//
//   - Checkpoints are Hugging Face's: config.json plus model.safetensors or
//     a sharded model.safetensors.index.json, with HF tensor names and
//     [out, in] linear weights, laid out as transformers' save_pretrained
//     lays them out (published Qwen2.5 and Mixtral-8x7B config.json files
//     parse, and their parameter counts match). Save writes the weights
//     first and config.json last, each file atomically.
//   - Loading is strict. ParseConfig refuses, naming the field, anything
//     that would change the output and is not implemented (rope_scaling,
//     sliding windows, an activation other than silu, an unknown
//     architecture or an unknown field), wrapping ErrUnsupported. Load
//     refuses a checkpoint with a missing tensor, a tensor of the wrong
//     shape, or a tensor the config does not call for, naming the tensor.
//   - The forward pass follows transformers' math: RMSNorm in fp32, RoPE in
//     the rotate_half layout with frequencies theta^(-2i/head_dim),
//     grouped-query causal attention, SwiGLU MLP, final norm and lm_head
//     (tied to the embedding when tie_word_embeddings is set). Qwen2 has a
//     bias on q, k and v; Llama with attention_bias has one on q, k, v and
//     o. Weights stored as BF16 or F16 are widened to fp32 at load.
//   - Mixtral (model_type "mixtral") is Llama attention with each MLP a
//     sparse mixture of experts: per token the router's logits pick the
//     num_experts_per_tok experts with the highest logits (a tie goes to the
//     lower expert index), weighted by the softmax of their logits (softmax over
//     all experts renormalised over the chosen ones), and the token's MLP
//     output is the weighted sum of those experts' SwiGLU outputs. A batch's
//     tokens are grouped by expert so each expert multiplies all of its rows
//     at once. Training-only router settings (router_aux_loss_coef,
//     output_router_logits, router_jitter_noise at 0) are accepted and
//     ignored.
//   - Routes and router replay: a KVCache records, for every position it
//     holds, the experts each layer used, [position][layer·k + j]
//     (KVCache.Routes); rewinding drops them with the keys and values and
//     Clone copies them. Seq.Replay hands such routes back to force the
//     routing, as reinforcement learning's router replay needs: replaying
//     what a forward pass recorded, in a call of the same shape, gives
//     bit-identical logits; in any other batch or chunking the logits agree
//     up to float rounding and the experts are the same even where that
//     rounding would have flipped a near-tie in the router.
//   - ForwardBatch runs several sequences in one pass: projections, MLPs
//     and experts multiply every sequence's rows together, attention runs
//     per sequence over its own cache, and each sequence gets the logits it
//     would get alone (up to float rounding).
//   - Init is deterministic: the same Config and seed give the same weights.
//   - A *Model is read-only after Init or Load and safe for concurrent
//     Forward calls, each with its own *KVCache. A KVCache is not safe for
//     concurrent use.
//
// Not implemented: rope_scaling variants (llama3, yarn, …), sliding-window
// attention, quantised weights, shared experts (Qwen-MoE, DeepSeek-MoE)
// and expert capacity limits.
package model
