package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"

	"github.com/verisim/verisim/internal/engine/generate"
)

// sampling holds the request fields /v1/chat/completions and
// /v1/completions share.
type sampling struct {
	Model       string   `json:"model"`
	N           *int     `json:"n"`
	Temperature *float64 `json:"temperature"`
	TopP        *float64 `json:"top_p"`
	// TopK is vLLM's extension; -1 or 0 keeps every token.
	TopK      *int     `json:"top_k"`
	Seed      *int64   `json:"seed"`
	MaxTokens *int     `json:"max_tokens"`
	Stop      stopList `json:"stop"`
	Stream    bool     `json:"stream"`
	// StreamOptions.IncludeUsage adds a last chunk with usage.
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	// ReturnTokenIDs adds prompt_token_ids to the response and token_ids
	// to each choice, as vLLM does.
	ReturnTokenIDs bool `json:"return_token_ids"`
	// ReturnTokensAsTokenIDs spells each logprob entry's token as
	// "token_id:N", as vLLM does, so that a client recovers the exact ids
	// from the logprobs alone.
	ReturnTokensAsTokenIDs bool `json:"return_tokens_as_token_ids"`
	// ReturnRoutedExperts, for a mixture-of-experts model, adds the
	// experts every prompt and completion token was routed to (router
	// replay for the trainer).
	ReturnRoutedExperts bool   `json:"return_routed_experts"`
	User                string `json:"user"`
	// LogitBias maps token ids (as strings, OpenAI's shape) to a bias
	// added to their logits before sampling, in [-100, 100].
	LogitBias        map[string]float64 `json:"logit_bias"`
	PresencePenalty  *float64           `json:"presence_penalty"`
	FrequencyPenalty *float64           `json:"frequency_penalty"`
}

// params turns the shared fields into generate.Params and n, checking
// ranges; maxTokens overrides MaxTokens when set (max_completion_tokens);
// vocab bounds logit_bias's token ids.
func (q *sampling) params(maxN, vocab int, maxTokens *int) (generate.Params, int, error) {
	var p generate.Params
	n := 1
	if q.N != nil {
		n = *q.N
	}
	if n < 1 || n > maxN {
		return p, 0, badRequest("n", "n must be between 1 and %d, got %d", maxN, n)
	}
	p.Temperature = 1
	if q.Temperature != nil {
		p.Temperature = *q.Temperature
	}
	if q.TopP != nil {
		p.TopP = *q.TopP
	}
	if q.TopK != nil {
		switch k := *q.TopK; {
		case k == -1:
		case k < 0:
			return p, 0, badRequest("top_k", "top_k must be -1, 0 or positive, got %d", k)
		default:
			p.TopK = k
		}
	}
	if q.Seed != nil {
		seed := uint64(*q.Seed)
		p.Seed = &seed
	}
	if maxTokens == nil {
		maxTokens = q.MaxTokens
	}
	if maxTokens != nil {
		if *maxTokens < 0 {
			return p, 0, badRequest("max_tokens", "max_tokens must be >= 0, got %d", *maxTokens)
		}
		p.MaxTokens = *maxTokens
		// The generate package reads 0 as "until the context is full";
		// asked for, it means no completion (a scoring request with echo).
		p.NoCompletion = *maxTokens == 0
	}
	p.Stop = q.Stop
	for _, f := range []struct {
		name string
		v    *float64
		to   *float64
	}{{"presence_penalty", q.PresencePenalty, &p.PresencePenalty}, {"frequency_penalty", q.FrequencyPenalty, &p.FrequencyPenalty}} {
		if f.v == nil {
			continue
		}
		if !(math.Abs(*f.v) <= generate.MaxPenalty) {
			return p, 0, badRequest(f.name, "%s must be between -%d and %d, got %v", f.name, generate.MaxPenalty, generate.MaxPenalty, *f.v)
		}
		*f.to = *f.v
	}
	if len(q.LogitBias) > 0 {
		p.LogitBias = make(map[int32]float32, len(q.LogitBias))
		for k, b := range q.LogitBias {
			id, err := strconv.Atoi(k)
			if err != nil || id < 0 || id >= vocab {
				return p, 0, badRequest("logit_bias", "logit_bias key %q is not a token id of this model's vocabulary (0 to %d)", k, vocab-1)
			}
			if !(math.Abs(b) <= generate.MaxLogitBias) {
				return p, 0, badRequest("logit_bias", "logit_bias for token %d must be between -%d and %d, got %v", id, generate.MaxLogitBias, generate.MaxLogitBias, b)
			}
			p.LogitBias[int32(id)] = float32(b)
		}
	}
	if err := p.Validate(); err != nil {
		return p, 0, badRequest("", "%v", err)
	}
	return p, n, nil
}

// stopList is OpenAI's stop: a string or an array of strings.
type stopList []string

func (s *stopList) UnmarshalJSON(b []byte) error {
	switch {
	case bytes.Equal(b, []byte("null")):
		*s = nil
		return nil
	case len(b) > 0 && b[0] == '"':
		var one string
		if err := json.Unmarshal(b, &one); err != nil {
			return badRequest("stop", "stop: %v", err)
		}
		*s = stopList{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return badRequest("stop", "stop must be a string or an array of strings")
	}
	*s = many
	return nil
}

// content is a message's content: a string, null, or an array of text
// parts, which are concatenated.
type content string

func (c *content) UnmarshalJSON(b []byte) error {
	switch {
	case bytes.Equal(b, []byte("null")):
		*c = ""
		return nil
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return badRequest("messages", "content: %v", err)
		}
		*c = content(s)
		return nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&parts); err != nil {
		return badRequest("messages", "content must be a string or an array of text parts: %v", err)
	}
	var sb bytes.Buffer
	for _, p := range parts {
		if p.Type != "text" {
			return badRequest("messages", "content part of type %q is not supported; only \"text\"", p.Type)
		}
		sb.WriteString(p.Text)
	}
	*c = content(sb.String())
	return nil
}

// promptInput is /v1/completions' prompt: a string or an array of token
// ids.
type promptInput struct {
	text string
	ids  []int32
}

func (p *promptInput) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &p.text)
	}
	if err := json.Unmarshal(b, &p.ids); err != nil {
		return badRequest("prompt", "prompt must be a string or an array of token ids (batched prompts are not supported)")
	}
	if p.ids == nil {
		p.ids = []int32{}
	}
	return nil
}

type wireToolCall struct {
	// Index is set in stream deltas only.
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type wireMessage struct {
	Role       string         `json:"role"`
	Content    content        `json:"content"`
	Name       string         `json:"name"`
	ToolCalls  []wireToolCall `json:"tool_calls"`
	ToolCallID string         `json:"tool_call_id"`
}

type wireTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		Strict      *bool           `json:"strict"`
	} `json:"function"`
}

// chatMessages converts the wire messages and tools for RenderChat.
func chatMessages(in []wireMessage, tools []wireTool) ([]generate.Message, []generate.Tool, error) {
	if len(in) == 0 {
		return nil, nil, badRequest("messages", "messages must not be empty")
	}
	msgs := make([]generate.Message, 0, len(in))
	for i, m := range in {
		role := m.Role
		switch role {
		case "developer":
			role = "system"
		case "system", "user", "assistant", "tool":
		default:
			return nil, nil, badRequest(fmt.Sprintf("messages[%d].role", i), "messages[%d]: unknown role %q", i, m.Role)
		}
		if len(m.ToolCalls) > 0 && role != "assistant" {
			return nil, nil, badRequest(fmt.Sprintf("messages[%d].tool_calls", i), "messages[%d]: only assistant messages carry tool_calls", i)
		}
		g := generate.Message{Role: role, Content: string(m.Content), ToolCallID: m.ToolCallID}
		for _, c := range m.ToolCalls {
			g.ToolCalls = append(g.ToolCalls, generate.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
		}
		msgs = append(msgs, g)
	}
	gt := make([]generate.Tool, 0, len(tools))
	for i, t := range tools {
		if t.Type != "function" {
			return nil, nil, badRequest(fmt.Sprintf("tools[%d].type", i), "tools[%d]: type %q is not supported; only \"function\"", i, t.Type)
		}
		if t.Function.Name == "" {
			return nil, nil, badRequest(fmt.Sprintf("tools[%d].function.name", i), "tools[%d]: function name is required", i)
		}
		gt = append(gt, generate.Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters})
	}
	return msgs, gt, nil
}

// toolChoice reads tool_choice: absent or "auto" parses tool calls, "none"
// leaves the tools out of the prompt and parses none.
func toolChoice(raw json.RawMessage) (bool, error) {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return true, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return false, badRequest("tool_choice", "tool_choice naming a function is not supported; use \"auto\" or \"none\"")
	}
	switch s {
	case "auto":
		return true, nil
	case "none":
		return false, nil
	}
	return false, badRequest("tool_choice", "tool_choice %q is not supported; use \"auto\" or \"none\"", s)
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// contextError is the 400 for a prompt that does not fit.
func contextError(param string, e *generate.ContextError) *apiError {
	return withCode(badRequest(param, "%v", e), http.StatusBadRequest, "context_length_exceeded")
}
