// Package model is verisim's decoder-only transformer: the Llama and Qwen2
// architectures as Hugging Face transformers defines them, their
// config.json, their safetensors checkpoints, random initialisation, and an
// fp32 CPU forward pass with a per-sequence KV cache.
//
// What the package promises:
//
//   - Checkpoints are Hugging Face's: config.json plus model.safetensors or
//     a sharded model.safetensors.index.json, with HF tensor names and
//     [out, in] linear weights, laid out as transformers' save_pretrained
//     lays them out (a published Qwen2.5 config.json parses, and its
//     parameter count matches). Save writes the weights first and
//     config.json last, each file atomically.
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
//   - Init is deterministic: the same Config and seed give the same weights.
//   - A *Model is read-only after Init or Load and safe for concurrent
//     Forward calls, each with its own *KVCache. A KVCache is not safe for
//     concurrent use.
//
// Not implemented: mixture-of-experts layers, rope_scaling variants
// (llama3, yarn, …), sliding-window attention, quantised weights, and
// batching several sequences into one Forward call.
package model
