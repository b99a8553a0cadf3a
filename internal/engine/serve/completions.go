package serve

import (
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/verisim/verisim/internal/engine/generate"
)

type completionRequest struct {
	sampling
	Prompt *promptInput `json:"prompt"`
	// Logprobs is how many alternatives to return per token; set (even
	// to 0) it asks for the sampled tokens' logprobs.
	Logprobs *int `json:"logprobs"`
	// Echo puts the prompt before each choice's text, and with Logprobs
	// its tokens before the completion's, each scored given the tokens
	// before it (the first, with nothing before it, has null). With
	// max_tokens 0 it scores a text without generating.
	Echo bool `json:"echo"`
}

// completionLogprobs is OpenAI's legacy logprobs object. An echoed
// prompt's first token has a null logprob and null alternatives.
type completionLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []*float32           `json:"token_logprobs"`
	TopLogprobs   []map[string]float32 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

type completionChoice struct {
	Index         int                 `json:"index"`
	Text          string              `json:"text"`
	Logprobs      *completionLogprobs `json:"logprobs"`
	FinishReason  string              `json:"finish_reason"`
	TokenIDs      []int32             `json:"token_ids,omitempty"`
	RoutedExperts [][]int32           `json:"routed_experts,omitempty"`
}

// checkRoutes refuses return_routed_experts for a dense model.
func checkRoutes(q *sampling, w *weights) error {
	if q.ReturnRoutedExperts && !w.m.Config.MoE() {
		return badRequest("return_routed_experts", "return_routed_experts: the model is dense (%s); only a mixture-of-experts model routes tokens", w.m.Config.Architectures[0])
	}
	return nil
}

// checkIDs refuses token ids the tokenizer does not know.
func (s *Server) checkIDs(param string, ids []int32) error {
	for i, id := range ids {
		if id < 0 || int(id) >= s.tok.VocabSize() {
			return badRequest(param, "%s[%d]: token id %d is outside the vocabulary of %d", param, i, id, s.tok.VocabSize())
		}
	}
	return nil
}

func (s *Server) completionJob(req *completionRequest) (*job, error) {
	if err := s.checkModel(req.Model); err != nil {
		return nil, err
	}
	p, n, err := req.params(s.maxN, s.tok.VocabSize(), nil)
	if err != nil {
		return nil, err
	}
	if req.Logprobs != nil {
		if *req.Logprobs < 0 || *req.Logprobs > generate.MaxTopLogprobs {
			return nil, badRequest("logprobs", "logprobs must be between 0 and %d, got %d", generate.MaxTopLogprobs, *req.Logprobs)
		}
		p.Logprobs, p.TopLogprobs = true, *req.Logprobs
	}
	if req.Echo && req.Stream {
		return nil, badRequest("echo", "echo is not supported with stream; send the request without stream")
	}
	p.PromptLogprobs = req.Echo && p.Logprobs
	if req.Prompt == nil {
		return nil, badRequest("prompt", "prompt is required")
	}
	prompt := req.Prompt.ids
	if prompt == nil {
		prompt = s.tok.Encode(req.Prompt.text)
	} else if err := s.checkIDs("prompt", prompt); err != nil {
		return nil, err
	}
	if len(prompt) == 0 {
		return nil, badRequest("prompt", "prompt must not be empty")
	}
	w := s.cur.Load()
	if err := checkRoutes(&req.sampling, w); err != nil {
		return nil, err
	}
	if max := w.m.Config.MaxPositionEmbeddings; len(prompt) > max {
		return nil, contextError("prompt", &generate.ContextError{Prompt: len(prompt), Max: max})
	}
	return &job{w: w, prompt: prompt, params: p, n: n}, nil
}

// completionLogprobs describes toks, whose text starts at offset off of
// the completion. With first set, a token with no logprob comes first:
// the first token of an echoed prompt.
func (s *Server) completionLogprobs(toks []generate.Token, asIDs bool, off int, first *int32) *completionLogprobs {
	out := &completionLogprobs{}
	name := func(id int32) string {
		if asIDs {
			return fmt.Sprintf("token_id:%d", id)
		}
		return string(s.tokenBytes(id))
	}
	add := func(id int32, lp *float32, top map[string]float32) {
		out.Tokens = append(out.Tokens, name(id))
		out.TokenLogprobs = append(out.TokenLogprobs, lp)
		out.TopLogprobs = append(out.TopLogprobs, top)
		out.TextOffset = append(out.TextOffset, off)
		off += len(s.tokenBytes(id))
	}
	if first != nil {
		add(*first, nil, nil)
	}
	for _, t := range toks {
		top := make(map[string]float32, len(t.Top))
		for _, a := range t.Top {
			top[name(a.ID)] = a.Logprob
		}
		add(t.ID, &t.Logprob, top)
	}
	return out
}

func (s *Server) handleCompletions(w http.ResponseWriter, r *http.Request) {
	var req completionRequest
	if err := decodeStrict(r.Body, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	j, err := s.completionJob(&req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set(WeightsVersionHeader, j.w.version)
	resp := completionResponse{
		ID:             newID("cmpl-"),
		Object:         "text_completion",
		Created:        time.Now().Unix(),
		Model:          s.name,
		WeightsVersion: j.w.version,
		Usage:          usage{PromptTokens: len(j.prompt)},
	}
	if req.ReturnTokenIDs {
		resp.PromptTokenIDs = j.prompt
	}
	if req.Stream {
		s.streamCompletions(w, r, &req, j, resp)
		return
	}
	results, toks, err := s.generate(r.Context(), j, nil)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var echo string
	if req.Echo {
		echo = req.Prompt.text
		if req.Prompt.ids != nil {
			b, _ := s.tok.Decode(j.prompt)
			echo = string(b)
		}
	}
	for i, res := range results {
		c := completionChoice{Index: i, Text: echo + res.Text, FinishReason: res.FinishReason}
		if j.params.Logprobs {
			all := toks[i]
			var first *int32
			if req.Echo {
				first = &j.prompt[0]
				all = append(slices.Clip(res.Prompt), toks[i]...)
			}
			c.Logprobs = s.completionLogprobs(all, req.ReturnTokensAsTokenIDs, 0, first)
		}
		if req.ReturnTokenIDs {
			c.TokenIDs = res.Tokens
		}
		if req.ReturnRoutedExperts {
			c.RoutedExperts = res.Routes
			resp.PromptRoutedExperts = res.PromptRoutes
		}
		resp.Choices = append(resp.Choices, c)
		resp.Usage.CompletionTokens += len(res.Tokens)
	}
	resp.Usage.TotalTokens = resp.Usage.PromptTokens + resp.Usage.CompletionTokens
	writeJSON(w, http.StatusOK, resp)
}

// streamCompletions sends j's choices as server-sent events in OpenAI's
// text_completion chunk shape: text deltas as they become safe to show
// (a possible stop string is held back), then each choice's finish
// reason, the usage chunk if asked for, and [DONE]. base carries the
// response's id and fields; the prompt's token ids ride on the first
// chunk.
func (s *Server) streamCompletions(w http.ResponseWriter, r *http.Request, req *completionRequest, j *job, base completionResponse) {
	out := startStream(w)
	stopIDs := s.defaultStopIDs()
	streams := make([]streamText, j.n)
	offsets := make([]int, j.n)
	promptIDs := base.PromptTokenIDs
	base.PromptTokenIDs = nil
	// A choice's routes, and the prompt's on choice 0, ride on its
	// finishing chunk.
	routes := make([][][]int32, j.n)
	var promptRoutes [][]int32
	head := completionChunk{ID: base.ID, Object: base.Object, Created: base.Created, Model: base.Model, WeightsVersion: base.WeightsVersion}
	send := func(i int, text string, finish *string) error {
		c := completionChunkChoice{Index: i, Text: text, FinishReason: finish}
		if finish != nil {
			c.RoutedExperts = routes[i]
		}
		pending := streams[i].takePending()
		if j.params.Logprobs && len(pending) > 0 {
			c.Logprobs = s.completionLogprobs(pending, req.ReturnTokensAsTokenIDs, offsets[i], nil)
		}
		if req.ReturnTokenIDs {
			for _, t := range pending {
				c.TokenIDs = append(c.TokenIDs, t.ID)
			}
		}
		for _, t := range pending {
			offsets[i] += len(s.tokenBytes(t.ID))
		}
		k := head
		k.Choices, k.PromptTokenIDs = []completionChunkChoice{c}, promptIDs
		promptIDs = nil
		if finish != nil && i == 0 {
			k.PromptRoutedExperts = promptRoutes
		}
		return out.send(k)
	}
	for i := range streams {
		streams[i].cuts = j.params.Stop
	}
	results, _, err := s.generate(r.Context(), j, func(i int, t generate.Token) error {
		if delta := streams[i].add(s, t, stopIDs); delta != "" {
			return send(i, delta, nil)
		}
		return nil
	})
	if err != nil {
		s.streamError(r, out, err)
		return
	}
	u := base.Usage
	for i, res := range results {
		u.CompletionTokens += len(res.Tokens)
		finish := res.FinishReason
		if req.ReturnRoutedExperts {
			routes[i] = res.Routes
			if i == 0 {
				promptRoutes = res.PromptRoutes
			}
		}
		if err := send(i, streams[i].rest(&res.Text, res.Text), &finish); err != nil {
			return
		}
	}
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
		k := head
		k.Choices, k.Usage = []completionChunkChoice{}, &u
		if err := out.send(k); err != nil {
			return
		}
	}
	_ = out.raw([]byte("[DONE]"))
}

type completionChunkChoice struct {
	Index         int                 `json:"index"`
	Text          string              `json:"text"`
	Logprobs      *completionLogprobs `json:"logprobs"`
	FinishReason  *string             `json:"finish_reason"`
	TokenIDs      []int32             `json:"token_ids,omitempty"`
	RoutedExperts [][]int32           `json:"routed_experts,omitempty"`
}

type tokenizeRequest struct {
	Model               string        `json:"model"`
	Prompt              *string       `json:"prompt"`
	Messages            []wireMessage `json:"messages"`
	Tools               []wireTool    `json:"tools"`
	AddGenerationPrompt *bool         `json:"add_generation_prompt"`
	// AddSpecialTokens is accepted for vLLM compatibility; the tokenizer
	// never adds any, the chat template does.
	AddSpecialTokens *bool `json:"add_special_tokens"`
}

// handleTokenize encodes a prompt, or a conversation rendered as
// /v1/chat/completions renders it (with the generation prompt unless
// add_generation_prompt is false).
func (s *Server) handleTokenize(w http.ResponseWriter, r *http.Request) {
	var req tokenizeRequest
	if err := decodeStrict(r.Body, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.checkModel(req.Model); err != nil {
		s.writeError(w, r, err)
		return
	}
	var ids []int32
	switch {
	case req.Prompt != nil && req.Messages != nil:
		s.writeError(w, r, badRequest("messages", "give either prompt or messages, not both"))
		return
	case req.Prompt != nil:
		ids = s.tok.Encode(*req.Prompt)
	case req.Messages != nil:
		msgs, tools, err := chatMessages(req.Messages, req.Tools)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		addGen := req.AddGenerationPrompt == nil || *req.AddGenerationPrompt
		ids = s.tok.Encode(generate.RenderChat(msgs, tools, addGen))
	default:
		s.writeError(w, r, badRequest("prompt", "prompt or messages is required"))
		return
	}
	if ids == nil {
		ids = []int32{}
	}
	cur := s.cur.Load()
	writeJSON(w, http.StatusOK, map[string]any{
		"tokens":        ids,
		"count":         len(ids),
		"max_model_len": cur.m.Config.MaxPositionEmbeddings,
	})
}

type detokenizeRequest struct {
	Model  string  `json:"model"`
	Tokens []int32 `json:"tokens"`
}

func (s *Server) handleDetokenize(w http.ResponseWriter, r *http.Request) {
	var req detokenizeRequest
	if err := decodeStrict(r.Body, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.checkModel(req.Model); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.checkIDs("tokens", req.Tokens); err != nil {
		s.writeError(w, r, err)
		return
	}
	text, err := s.tok.DecodeString(req.Tokens)
	if err != nil {
		s.writeError(w, r, badRequest("tokens", "%v", err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"prompt": text})
}
