// Package train is how verisim trains a model: the Trainer contract an RL
// loop or a pretraining run drives (ForwardBackward over batches of token
// sequences with a per-position loss, OptimStep, Logprobs for scoring,
// Save and Load of checkpoints), and Builtin, the backend that trains the
// engine's own model.Model on the CPU in process.
//
// # The contract
//
// ForwardBackward adds the gradient of a batch's loss (a sum over data and
// positions, see LossCrossEntropy and LossImportanceSampling) to an
// accumulator, together with the sum of the position weights; OptimStep
// divides the accumulated gradient by that sum, so a batch sent in several
// ForwardBackward calls steps exactly as if it had been sent in one. A
// loss or gradient that is NaN or infinite fails the call with an error
// wrapping ErrNonFinite that names the datum; the call's gradient is
// dropped, what was accumulated before is kept, and the weights are not
// touched. Every datum is validated (tokens inside the vocabulary, length
// within max_position_embeddings, per-position slices as long as Tokens,
// a known loss, Routes that the model can replay, see below) before
// anything is computed; what fails validation changes nothing, and its
// error wraps ErrBadInput and names the datum and position at fault.
//
// # What Builtin promises
//
//   - One call at a time: the methods lock a mutex, so any goroutine may
//     call them, and concurrent calls queue.
//   - Determinism: the same starting state and the same calls give
//     bit-identical weights, moments, metrics and logprobs, whatever
//     Options.Compute.Threads is. The gemm kernels sum every element in the
//     same order whatever their thread count, the element-wise passes
//     split only independent work, and reductions (the gradient norm, the
//     loss) run over fixed-size chunks in a fixed order.
//   - Logprobs follows the engine's forward pass (model.Forward and
//     model.LogSoftmax, or model.ForwardBatch with Seq.Replay for a datum
//     with Routes) operation for operation: the tests find them equal, bit
//     for bit on the toy models they use.
//   - The master weights are the model's own fp32 slices, updated in
//     place; Model returns that model, to read between calls.
//   - Save writes a checkpoint the engine loads as it is (config.json and
//     safetensors weights in Options.PublishDType) plus OptimizerFile and
//     StateFile, into a fresh directory that is then renamed into place, so
//     the checkpoint directory is never half-written. Load refuses a
//     checkpoint that does not match the trainer's model config or whose
//     optimiser state is incomplete, naming what differs and changing
//     nothing; a Save/Load round trip is bit-exact and training continues
//     exactly as if it had not stopped.
//
// # Optimiser
//
// AdamW as PyTorch defines it: the averaged gradient g is clipped to a
// global L2 norm of Options.ClipNorm, then m ← β1·m + (1−β1)·g, v ← β2·v +
// (1−β2)·g², and w ← w·(1 − lr·wd) − lr·m̂/(√v̂ + eps) with the bias
// corrections m̂ = m/(1−β1^t), v̂ = v/(1−β2^t). Weight decay applies to
// 2-D weight matrices (the projections, the embedding and an untied LM
// head), as nanoGPT does, and not to RMSNorm weights or biases. The
// learning rate warms up linearly over WarmupSteps, then follows a cosine
// down to MinLRRatio of the peak at TotalSteps. Moments and the update are
// computed in float64 and stored in fp32.
//
// # Why hand-written backward passes
//
// A general automatic-differentiation library was measured 10–20× slower
// than the forward pass here: almost all the work of a transformer is in
// matrix products, and their gradients are matrix products too (dX = dY·W,
// dW += dYᵀ·X), which a tape of scalar or small-tensor operations cannot
// hand to a blocked, vectorised kernel. So each operation (embedding,
// RMSNorm, linear with bias, RoPE, causal grouped-query attention,
// SwiGLU, the mixture of experts' router and experts, residuals, the LM
// head, tied or not, and the log-softmax loss)
// has its backward pass written out beside its forward, every product goes
// through the gemm kernels, and each is checked against finite differences
// of an independent float64 model in the tests. Attention keeps only each
// score row's maximum and normaliser and rebuilds the probabilities in the
// backward pass, so memory grows with T·d per layer rather than T²·heads;
// the LM head keeps the full [T, vocab] logits of one sequence.
//
// Buffers (activations, gradients, scratch) are sized to the longest
// sequence seen and reused, so steady training allocates almost nothing.
//
// # Mixture of experts and router replay
//
// A Mixtral model trains like a dense one, each MLP a sparse mixture of
// experts computed as the engine computes it: router logits h·Routerᵀ,
// per token the num_experts_per_tok (k) experts with the highest logits
// (a tie going to the lower index), their weights the softmax of their
// logits, and the weighted sum of their SwiGLU outputs. Rows are grouped
// by expert so each expert's projections run as one gemm over its rows.
// The choice of experts is discrete and has no gradient; as in
// transformers, the router learns through the chosen experts' weights
// (the softmax over their logits), and an expert no token went to gets a
// zero gradient. There is no load-balancing loss (router_aux_loss_coef is
// ignored, as the engine ignores it).
//
// Datum.Routes replays the experts the sampling server used (router
// replay, what reinforcement learning needs so that the trainer scores
// and trains the policy that sampled, even where its own router, or float
// rounding near a tie, would pick differently): one entry per token in
// model.KVCache.Routes' layout, layer l's k experts at [l·k, (l+1)·k),
// distinct and in range; an empty entry routes that position afresh (the
// last sampled token, never run through the server, has none, and its
// routing changes no loss). The weights are still the softmax of the
// current router's logits over the given experts, so the router keeps its
// gradient. With the weights the routes were recorded with, a datum
// scores the same with and without its Routes.
//
// The router and the experts are trainable tensors like the rest, under
// their Hugging Face names (model.layers.N.block_sparse_moe.gate.weight,
// ….experts.E.w1/w2/w3.weight): AdamW updates and decays them as 2-D
// matrices, and they count in the gradient norm and the checkpoint's
// optimiser state.
package train
