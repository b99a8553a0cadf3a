// Package policy is the client verisim's agents use to call a model: an
// OpenAI-compatible chat-completions client (POST {base}/v1/chat/completions)
// that keeps what reinforcement learning needs and what a plain client throws
// away.
//
// # Token in, token out
//
// The trainer learns from the exact token ids the model saw and produced;
// re-tokenising the text afterwards gives different ids (merges across message
// boundaries, special tokens, a chat template that drops reasoning), and the
// gradient would then be taken on a sequence nobody sampled. So every request
// asks the server for:
//
//   - "logprobs": true, "top_logprobs": 0 — the sampled tokens' logprobs under
//     the serving weights (standard OpenAI), needed for importance-sampling
//     corrections of stale samples;
//   - "return_token_ids": true — vLLM (and SGLang since its chat endpoint got
//     the flag) then returns "prompt_token_ids" on the response and the
//     completion ids per choice ("token_ids" in vLLM and early SGLang,
//     "response_token_ids" in later SGLang);
//   - "return_tokens_as_token_ids": true — vLLM then spells each logprob
//     entry's token as "token_id:N", which recovers completion ids from
//     servers too old for return_token_ids.
//
// SGLang's response-level extension "sglext" ({"input_ids": [...],
// "output_ids": [[...], ...]}, enabled on the server with --return-input-ids
// and --return-output-ids) is read as well. Options.StandardOnly drops the two
// non-standard fields for hosted APIs that reject unknown parameters. A server
// that returns no ids (a plain OpenAI endpoint) is not an error: the id and
// logprob fields of the Response are then empty, and the trajectory simply
// carries no tokens for that turn.
//
// The served weights' version comes from the X-Weights-Version response
// header, which verisim's own engine sends; vLLM and SGLang do not, so a
// deployment that hot-loads weights into them should add the header in the
// proxy in front of them. Without it the response's "model" field stands in.
//
// # Promises
//
//   - A Client is safe for concurrent use by many goroutines. An Episode is
//     for one episode and one goroutine.
//   - Transient failures — connection errors, a per-request timeout, HTTP 429
//     and 5xx — are retried with exponential backoff and full jitter,
//     honouring Retry-After; other 4xx answers are never retried.
//   - Errors say whose fault they are: ErrUnavailable (the server could not
//     be reached or kept failing; the rollout records infra_error, never a
//     reward of 0), ErrBadResponse (a 2xx answer that is not a usable chat
//     completion), *StatusError (the server refused the request). A cancelled
//     ctx returns ctx's error.
//   - Every request carries X-Session-ID when a session is set, so a router
//     with session affinity sends one episode's turns to one replica and its
//     prefix cache.
//   - Logprobs are finite: NaN and -Inf (and anything below LogprobFloor) are
//     clamped to LogprobFloor, values above 0 to 0, so trajectories validate.
//     A logprob list whose length does not match the known completion ids is
//     dropped rather than misaligned.
//
// Streaming is not used: a turn is one request and one JSON answer.
package policy
