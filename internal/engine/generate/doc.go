// Package generate turns a model and a prompt into a completion: it samples
// tokens from logits, runs the prefill-then-decode loop over a KV cache,
// renders chat conversations in the ChatML template Qwen2.5 uses, and parses
// the <tool_call> blocks a completion holds.
//
// What the package promises:
//
//   - Sampling is reproducible: with Params.Seed set, the same weights, prompt
//     and Params give the same tokens on every run. Without a seed each call
//     draws a fresh one. Temperature 0 (or TopK 1) is greedy: the argmax,
//     the lowest id on ties, with no random draw.
//   - Logprobs are of the model's own distribution: log-softmax of the raw
//     logits, before temperature, top-k or top-p (vLLM's default). The
//     sampled token's logprob and the top alternatives come from the same
//     logits the token was drawn from, so they equal model.LogSoftmax of a
//     separate full forward over prompt+completion up to float rounding.
//   - Generate prefills the prompt with one Forward call and then decodes one
//     token per call on the same cache. Every token it emits is in
//     Result.Tokens, in order, the token that ended generation included (a
//     stop token, or the token that completed a stop string); Result.Text
//     leaves out the stop token's text and everything from a stop string on.
//   - A prompt longer than the model's max_position_embeddings is refused with
//     a *ContextError; generation that fills the context ends with "length".
//   - RenderChat and ParseToolCalls are pure functions, safe for concurrent
//     use. ParseToolCalls never drops text it could not parse: a malformed
//     block stays in the content and is also returned in malformed.
//   - Generate is safe to call concurrently on one *model.Model: each call owns
//     its KV cache and sampler. A Sampler is not safe for concurrent use.
//   - A Batcher decodes the sequences of concurrent Batcher.Generate calls
//     together, one model.ForwardBatch step for all of them; each call's
//     prompt is prefilled once and its choices decode from copies of that
//     cache. Each choice gets the tokens Generate would give it alone, up to
//     float rounding of the logits between batched and unbatched products.
//     Its Run owns the decode loop; Generate calls block until their choices
//     finish, their context ends, or Run returns (ErrClosed).
//   - For a mixture-of-experts model, Result carries the experts each prompt
//     and completion token was routed to, the layout model.Seq.Replay takes.
//
// Not implemented: repetition/frequency penalties, min-p, logit bias, beam
// search, and chunked prefill.
package generate
