package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/verisim/verisim/internal/engine/generate"
	"github.com/verisim/verisim/internal/engine/tokenizer"
)

type chatRequest struct {
	sampling
	Messages            []wireMessage   `json:"messages"`
	Tools               []wireTool      `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Logprobs            bool            `json:"logprobs"`
	TopLogprobs         *int            `json:"top_logprobs"`
}

type chatLogprob struct {
	Token   string  `json:"token"`
	Logprob float32 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

type chatTokenLogprob struct {
	chatLogprob
	TopLogprobs []chatLogprob `json:"top_logprobs"`
}

type chatLogprobs struct {
	Content []chatTokenLogprob `json:"content"`
}

type chatOutMessage struct {
	Role      string         `json:"role"`
	Content   *string        `json:"content"`
	ToolCalls []wireToolCall `json:"tool_calls,omitempty"`
}

type chatChoice struct {
	Index        int            `json:"index"`
	Message      chatOutMessage `json:"message"`
	Logprobs     *chatLogprobs  `json:"logprobs"`
	FinishReason string         `json:"finish_reason"`
	TokenIDs     []int32        `json:"token_ids,omitempty"`
	// RoutedExperts: see docs/serving-api.md.
	RoutedExperts [][]int32 `json:"routed_experts,omitempty"`
}

// response is the envelope every generation answer shares, for both
// endpoints: C is the endpoint's choice, U is usage in a whole response
// and *usage in a stream chunk (set on the last one only).
type response[C, U any] struct {
	ID                  string    `json:"id"`
	Object              string    `json:"object"`
	Created             int64     `json:"created"`
	Model               string    `json:"model"`
	Choices             []C       `json:"choices"`
	Usage               U         `json:"usage,omitzero"`
	WeightsVersion      string    `json:"weights_version"`
	PromptTokenIDs      []int32   `json:"prompt_token_ids,omitempty"`
	PromptRoutedExperts [][]int32 `json:"prompt_routed_experts,omitempty"`
}

type (
	chatResponse       = response[chatChoice, usage]
	chatChunk          = response[chunkChoice, *usage]
	completionResponse = response[completionChoice, usage]
	completionChunk    = response[completionChunkChoice, *usage]
)

type chatDelta struct {
	Role      string         `json:"role,omitempty"`
	Content   *string        `json:"content,omitempty"`
	ToolCalls []wireToolCall `json:"tool_calls,omitempty"`
}

type chunkChoice struct {
	Index         int           `json:"index"`
	Delta         chatDelta     `json:"delta"`
	Logprobs      *chatLogprobs `json:"logprobs"`
	FinishReason  *string       `json:"finish_reason"`
	TokenIDs      []int32       `json:"token_ids,omitempty"`
	RoutedExperts [][]int32     `json:"routed_experts,omitempty"`
}

// job is one validated generation request: the weights it took at its
// start, the prompt and the params of its n choices.
type job struct {
	w      *weights
	prompt []int32
	params generate.Params
	n      int
}

// generate runs j's n choices together through the batcher (choice i
// seeded with seed+i); emit sees every sampled token with its choice. It
// returns each choice's result and sampled tokens.
func (s *Server) generate(ctx context.Context, j *job, emit func(choice int, t generate.Token) error) ([]generate.Result, [][]generate.Token, error) {
	params := make([]generate.Params, j.n)
	for i := range params {
		params[i] = j.params
		if p := j.params.Seed; p != nil {
			seed := *p + uint64(i)
			params[i].Seed = &seed
		}
	}
	toks := make([][]generate.Token, j.n)
	res, err := s.batch.Generate(ctx, j.w.m, s.tok, j.prompt, params, func(i int, t generate.Token) error {
		toks[i] = append(toks[i], t)
		if emit != nil {
			return emit(i, t)
		}
		return nil
	})
	s.met.prompt.Add(float64(len(j.prompt)))
	for _, r := range res {
		s.met.generated.Add(float64(len(r.Tokens)))
	}
	var cerr *generate.ContextError
	switch {
	case errors.As(err, &cerr):
		return res, toks, contextError("", cerr)
	case errors.Is(err, generate.ErrParams):
		return res, toks, badRequest("", "%v", err)
	case err != nil:
		return res, toks, fmt.Errorf("generate: %w", err)
	}
	return res, toks, nil
}

// tokenBytes is id's text as bytes; "" for an id the tokenizer lacks.
func (s *Server) tokenBytes(id int32) []byte {
	b, err := s.tok.Decode([]int32{id})
	if err != nil {
		return nil
	}
	return b
}

func (s *Server) chatLogprob(id int32, lp float32, asIDs bool) chatLogprob {
	b := s.tokenBytes(id)
	ints := make([]int, len(b))
	for i, c := range b {
		ints[i] = int(c)
	}
	tok := string(b)
	if asIDs {
		tok = fmt.Sprintf("token_id:%d", id)
	}
	return chatLogprob{Token: tok, Logprob: lp, Bytes: ints}
}

func (s *Server) chatLogprobs(toks []generate.Token, asIDs bool) *chatLogprobs {
	out := &chatLogprobs{Content: make([]chatTokenLogprob, 0, len(toks))}
	for _, t := range toks {
		e := chatTokenLogprob{chatLogprob: s.chatLogprob(t.ID, t.Logprob, asIDs), TopLogprobs: []chatLogprob{}}
		for _, a := range t.Top {
			e.TopLogprobs = append(e.TopLogprobs, s.chatLogprob(a.ID, a.Logprob, asIDs))
		}
		out.Content = append(out.Content, e)
	}
	return out
}

// assistantMessage splits a completion into content and tool calls when
// parseTools is set, counting malformed blocks.
func (s *Server) assistantMessage(text, finish string, parseTools bool) (chatOutMessage, string) {
	msg := chatOutMessage{Role: "assistant"}
	if !parseTools {
		msg.Content = &text
		return msg, finish
	}
	content, calls, malformed := generate.ParseToolCalls(text)
	s.met.malformed.Add(float64(len(malformed)))
	if len(calls) == 0 || content != "" {
		msg.Content = &content
	}
	for _, c := range calls {
		w := wireToolCall{ID: c.ID, Type: "function"}
		w.Function.Name, w.Function.Arguments = c.Name, c.Arguments
		msg.ToolCalls = append(msg.ToolCalls, w)
	}
	if len(calls) > 0 {
		finish = "tool_calls"
	}
	return msg, finish
}

// chatJob validates req and renders and encodes its prompt.
func (s *Server) chatJob(req *chatRequest) (*job, bool, error) {
	if err := s.checkModel(req.Model); err != nil {
		return nil, false, err
	}
	maxTokens := req.MaxCompletionTokens
	p, n, err := req.params(s.maxN, s.tok.VocabSize(), maxTokens)
	if err != nil {
		return nil, false, err
	}
	if req.TopLogprobs != nil {
		if *req.TopLogprobs < 0 || *req.TopLogprobs > generate.MaxTopLogprobs {
			return nil, false, badRequest("top_logprobs", "top_logprobs must be between 0 and %d, got %d", generate.MaxTopLogprobs, *req.TopLogprobs)
		}
		if *req.TopLogprobs > 0 && !req.Logprobs {
			return nil, false, badRequest("top_logprobs", "top_logprobs needs logprobs: true")
		}
		p.TopLogprobs = *req.TopLogprobs
	}
	p.Logprobs = req.Logprobs
	parseTools, err := toolChoice(req.ToolChoice)
	if err != nil {
		return nil, false, err
	}
	msgs, tools, err := chatMessages(req.Messages, req.Tools)
	if err != nil {
		return nil, false, err
	}
	if !parseTools {
		tools = nil
	}
	parseTools = parseTools && len(tools) > 0
	w := s.cur.Load()
	if err := checkRoutes(&req.sampling, w); err != nil {
		return nil, false, err
	}
	prompt := s.tok.Encode(generate.RenderChat(msgs, tools, true))
	if max := w.m.Config.MaxPositionEmbeddings; len(prompt) > max {
		return nil, false, contextError("messages", &generate.ContextError{Prompt: len(prompt), Max: max})
	}
	return &job{w: w, prompt: prompt, params: p, n: n}, parseTools, nil
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if err := decodeStrict(r.Body, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	j, parseTools, err := s.chatJob(&req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set(WeightsVersionHeader, j.w.version)
	if req.Stream {
		s.streamChat(w, r, &req, j, parseTools)
		return
	}
	resp := chatResponse{
		ID:             newID("chatcmpl-"),
		Object:         "chat.completion",
		Created:        time.Now().Unix(),
		Model:          s.name,
		WeightsVersion: j.w.version,
	}
	if req.ReturnTokenIDs {
		resp.PromptTokenIDs = j.prompt
	}
	resp.Usage.PromptTokens = len(j.prompt)
	results, toks, err := s.generate(r.Context(), j, nil)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	for i, res := range results {
		msg, finish := s.assistantMessage(res.Text, res.FinishReason, parseTools)
		c := chatChoice{Index: i, Message: msg, FinishReason: finish}
		if req.Logprobs {
			c.Logprobs = s.chatLogprobs(toks[i], req.ReturnTokensAsTokenIDs)
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

// sseWriter writes server-sent events and flushes each one.
type sseWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func (e *sseWriter) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return e.raw(b)
}

func (e *sseWriter) raw(b []byte) error {
	if _, err := fmt.Fprintf(e.w, "data: %s\n\n", b); err != nil {
		return err
	}
	return e.rc.Flush()
}

// heldBack is how much of the end of text a stream must not send yet: an
// incomplete UTF-8 sequence, or a suffix that may be the start of a stop
// string or of a <tool_call> block.
func heldBack(text string, stops []string) int {
	hold := 0
	for _, stop := range stops {
		for k := min(len(stop)-1, len(text)); k > hold; k-- {
			if strings.HasSuffix(text, stop[:k]) {
				hold = k
				break
			}
		}
	}
	// An incomplete rune at the end.
	for k := 1; k <= min(utf8.UTFMax-1, len(text)); k++ {
		if utf8.RuneStart(text[len(text)-k]) {
			if !utf8.FullRuneInString(text[len(text)-k:]) {
				hold = max(hold, k)
			}
			break
		}
	}
	return hold
}

// streamText is one choice's text as a stream sends it: content goes out
// as soon as it cannot turn out to be part of a cut (a stop string, or a
// <tool_call> block sent separately at the end).
type streamText struct {
	cuts    []string
	text    strings.Builder
	sent    int
	pending []generate.Token // sampled, not yet sent
}

// add records t and returns the text that became safe to send.
func (st *streamText) add(s *Server, t generate.Token, stopIDs map[int32]bool) string {
	st.pending = append(st.pending, t)
	if !stopIDs[t.ID] {
		st.text.Write(s.tokenBytes(t.ID))
	}
	visible := st.text.String()
	for _, c := range st.cuts {
		if k := strings.Index(visible, c); k >= 0 {
			visible = visible[:k]
		}
	}
	safe := len(visible) - heldBack(visible, st.cuts)
	if safe <= st.sent {
		return ""
	}
	delta := visible[st.sent:safe]
	st.sent = safe
	return delta
}

// rest is what remains to send of final, the choice's finished content,
// once the stream has sent what add returned.
func (st *streamText) rest(final *string, generated string) string {
	if final != nil && len(*final) >= st.sent && strings.HasPrefix(*final, generated[:st.sent]) {
		return (*final)[st.sent:]
	}
	return ""
}

// takePending returns the tokens sampled since the last call.
func (st *streamText) takePending() []generate.Token {
	p := st.pending
	st.pending = nil
	return p
}

// defaultStopIDs are the special tokens that end a generation and whose
// text is never shown.
func (s *Server) defaultStopIDs() map[int32]bool {
	ids := map[int32]bool{}
	for _, name := range []string{tokenizer.EndOfText, tokenizer.ImEnd} {
		if id, ok := s.tok.Special(name); ok {
			ids[id] = true
		}
	}
	return ids
}

// startStream sends the headers of a server-sent event stream.
func startStream(w http.ResponseWriter) *sseWriter {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return &sseWriter{w: w, rc: http.NewResponseController(w)}
}

// streamError ends a stream that failed after its headers were sent, as
// OpenAI's API does: an error event, then [DONE]. A client that went away
// gets nothing.
func (s *Server) streamError(r *http.Request, out *sseWriter, err error) {
	if r.Context().Err() != nil {
		return
	}
	var e *apiError
	if !errors.As(err, &e) {
		s.log.Error("stream failed", "err", err)
		e = &apiError{status: http.StatusInternalServerError, Message: err.Error(), Type: "server_error"}
	}
	_ = out.send(map[string]any{"error": e})
	_ = out.raw([]byte("[DONE]"))
}

// streamChat generates j's choices together, sending each choice's content
// as it becomes safe to show, and its tool calls and finish reason when
// all are done.
func (s *Server) streamChat(w http.ResponseWriter, r *http.Request, req *chatRequest, j *job, parseTools bool) {
	out := startStream(w)
	base := chatChunk{
		ID:             newID("chatcmpl-"),
		Object:         "chat.completion.chunk",
		Created:        time.Now().Unix(),
		Model:          s.name,
		WeightsVersion: j.w.version,
	}
	// The text that may not be sent: stop strings end the completion, and
	// a <tool_call> block is sent as a tool call at the end.
	cuts := append([]string{}, j.params.Stop...)
	if parseTools {
		cuts = append(cuts, tokenizer.ToolCall)
	}
	stopIDs := s.defaultStopIDs()
	chunk := func(c chunkChoice) chatChunk {
		k := base
		k.Choices = []chunkChoice{c}
		return k
	}
	streams := make([]streamText, j.n)
	for i := range streams {
		streams[i].cuts = cuts
		first := chunk(chunkChoice{Index: i, Delta: chatDelta{Role: "assistant", Content: new(string)}})
		if req.ReturnTokenIDs && i == 0 {
			first.PromptTokenIDs = j.prompt
		}
		if err := out.send(first); err != nil {
			return
		}
	}
	// A choice's routes, and the prompt's on choice 0, ride on its
	// finishing chunk.
	routes := make([][][]int32, j.n)
	var promptRoutes [][]int32
	flush := func(i int, delta string, finish *string, d chatDelta) error {
		c := chunkChoice{Index: i, Delta: d, FinishReason: finish}
		if finish != nil {
			c.RoutedExperts = routes[i]
		}
		if delta != "" {
			c.Delta.Content = &delta
		}
		pending := streams[i].takePending()
		if req.Logprobs && len(pending) > 0 {
			c.Logprobs = s.chatLogprobs(pending, req.ReturnTokensAsTokenIDs)
		}
		if req.ReturnTokenIDs {
			for _, t := range pending {
				c.TokenIDs = append(c.TokenIDs, t.ID)
			}
		}
		k := chunk(c)
		if finish != nil && i == 0 {
			k.PromptRoutedExperts = promptRoutes
		}
		return out.send(k)
	}
	results, _, err := s.generate(r.Context(), j, func(i int, t generate.Token) error {
		if delta := streams[i].add(s, t, stopIDs); delta != "" {
			if err := flush(i, delta, nil, chatDelta{}); err != nil {
				return err
			}
		}
		if s.onToken != nil {
			s.onToken()
		}
		return nil
	})
	if err != nil {
		s.streamError(r, out, err)
		return
	}
	u := usage{PromptTokens: len(j.prompt)}
	for i, res := range results {
		u.CompletionTokens += len(res.Tokens)
		msg, finish := s.assistantMessage(res.Text, res.FinishReason, parseTools)
		if rest := streams[i].rest(msg.Content, res.Text); rest != "" {
			if err := flush(i, rest, nil, chatDelta{}); err != nil {
				return
			}
		}
		d := chatDelta{}
		for k, c := range msg.ToolCalls {
			c.Index = &k
			d.ToolCalls = append(d.ToolCalls, c)
		}
		if req.ReturnRoutedExperts {
			routes[i] = res.Routes
			if i == 0 {
				promptRoutes = res.PromptRoutes
			}
		}
		if err := flush(i, "", &finish, d); err != nil {
			return
		}
	}
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
		k := base
		k.Choices = []chunkChoice{}
		k.Usage = &u
		if err := out.send(k); err != nil {
			return
		}
	}
	_ = out.raw([]byte("[DONE]"))
}
