// Package serve is verisim's OpenAI-compatible inference server: it puts a
// model checkpoint and its tokenizer behind the HTTP endpoints that OpenAI
// clients and RL trainers call (/v1/chat/completions, /v1/completions,
// /v1/models, vLLM's /tokenize and /detokenize), plus /health, /metrics and
// /admin/reload for swapping in new weights without a restart.
//
// What the package promises:
//
//   - The wire format is OpenAI's. Request bodies are decoded strictly: an
//     unknown field, invalid JSON, trailing data or a value out of range is
//     a 400 whose body is {"error": {"message", "type":
//     "invalid_request_error", "param", "code"}} and whose message names the
//     field. No input makes a handler panic.
//   - Every generation response carries the version of the weights that
//     produced it, as the X-Weights-Version header and as weights_version in
//     the body (and in every stream chunk).
//   - Reload is atomic and never fails a request. Each request reads the
//     serving {model, version} pair once, when it starts, and uses it to the
//     end; /admin/reload loads the new checkpoint aside, refuses it (409,
//     the old weights keep serving) when its config differs from the serving
//     one in anything but torch_dtype, and otherwise swaps the pair with one
//     atomic store. Requests in flight finish on the weights they started
//     with; requests that start after the reload returns use the new ones.
//     Reloads are serialised with each other.
//   - A Server is safe for concurrent use. Its Run owns the decode loop
//     (generate.Batcher) and must run while the handler serves: concurrent
//     requests, and the n choices of one, decode together, each with its
//     own KV cache over the shared read-only model. A request's generation
//     stops when its context ends (the client disconnects).
//   - With a seed, a request is reproducible: the same weights, prompt and
//     params give the same tokens (up to float rounding between batch
//     compositions). Choice i of an n>1 request uses seed+i.
//   - Metrics go to a registry owned by the Server, never the global one.
//
// Defaults that differ from the generate package: temperature defaults to
// 1 (OpenAI's default), not greedy; an explicit max_tokens of 0 means no
// completion (with echo and logprobs, a scoring request); logit_bias and
// the presence and frequency penalties shape sampling while logprobs stay
// the model's own. Not implemented: echo with stream, best_of, tool_choice
// naming a function or "required", and response_format.
package serve
