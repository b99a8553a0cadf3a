package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// LogprobFloor is the value a non-finite or absurdly low logprob is clamped
// to: finite, so trajectories validate, and low enough to read as
// "impossible" to any importance-sampling ratio.
const LogprobFloor = -1e9

// Request is one chat-completion request. Zero-valued optional fields are
// left to the server's defaults.
type Request struct {
	Messages []Message
	Tools    []Tool
	// ToolChoice is "auto", "none" or "required"; empty leaves the default.
	ToolChoice  string
	Temperature *float64
	TopP        *float64
	MaxTokens   int // sent as max_tokens, which vLLM, SGLang and most hosts accept
	Stop        []string
	Seed        *int64
}

// Message is a chat message in the OpenAI shape.
type Message struct {
	Role       string // "system", "user", "assistant" or "tool"
	Content    string
	Name       string
	ToolCallID string     // on "tool" messages: the call this answers
	ToolCalls  []ToolCall // on "assistant" messages
}

// ToolCall is a function call as the model produced it.
type ToolCall struct {
	ID   string
	Name string
	// Arguments is the raw text the model produced, valid JSON or not.
	Arguments string
}

// Tool is a function the model may call.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON Schema of the arguments object.
	Parameters json.RawMessage
}

// Response is the first choice of a chat completion and what the server said
// about how it was produced.
type Response struct {
	ID    string
	Model string // the "model" field of the answer
	// Message is the assistant's reply: content and tool calls.
	Message Message
	// Reasoning is the separated reasoning text, when the server's
	// reasoning parser split it out ("reasoning_content" or "reasoning").
	Reasoning    string
	FinishReason string
	Usage        Usage
	// PromptTokenIDs and CompletionTokenIDs are the exact ids the model saw
	// and produced; empty when the server did not return them.
	PromptTokenIDs     []int32
	CompletionTokenIDs []int32
	// Logprobs are the sampled tokens' logprobs, clamped into
	// [LogprobFloor, 0]; empty when the server did not return them, or
	// when their count did not match the completion ids.
	Logprobs []float32
	// WeightsVersion is the X-Weights-Version header, or Model without it.
	WeightsVersion string
	Attempts       int           // HTTP attempts this call took
	Started        time.Time     // when Complete was called
	Duration       time.Duration // Complete's wall time, retries included
}

// Usage is the server's token accounting.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
	TotalTokens      int
}

// Wire shapes. Requests and responses have separate types so that response
// parsing can be lenient where servers differ.

type wireRequest struct {
	Model                  string        `json:"model"`
	Messages               []wireMessage `json:"messages"`
	Tools                  []wireTool    `json:"tools,omitempty"`
	ToolChoice             string        `json:"tool_choice,omitempty"`
	Temperature            *float64      `json:"temperature,omitempty"`
	TopP                   *float64      `json:"top_p,omitempty"`
	MaxTokens              int           `json:"max_tokens,omitempty"`
	Stop                   []string      `json:"stop,omitempty"`
	Seed                   *int64        `json:"seed,omitempty"`
	Logprobs               bool          `json:"logprobs"`
	TopLogprobs            int           `json:"top_logprobs"`
	ReturnTokenIDs         bool          `json:"return_token_ids,omitempty"`
	ReturnTokensAsTokenIDs bool          `json:"return_tokens_as_token_ids,omitempty"`
}

type wireMessage struct {
	Role       string         `json:"role"`
	Content    *string        `json:"content"` // null on a tool-calling assistant turn without text
	Name       string         `json:"name,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
	ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
}

type wireToolCall struct {
	ID       string `json:"id,omitempty"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type wireTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
	} `json:"function"`
}

func (c *Client) wireRequest(r Request) wireRequest {
	w := wireRequest{
		Model:       c.opts.Model,
		Messages:    make([]wireMessage, len(r.Messages)),
		ToolChoice:  r.ToolChoice,
		Temperature: r.Temperature,
		TopP:        r.TopP,
		MaxTokens:   r.MaxTokens,
		Stop:        r.Stop,
		Seed:        r.Seed,
		Logprobs:    true,
	}
	if !c.opts.StandardOnly {
		w.ReturnTokenIDs = true
		w.ReturnTokensAsTokenIDs = true
	}
	for i, m := range r.Messages {
		wm := wireMessage{Role: m.Role, Name: m.Name, ToolCallID: m.ToolCallID}
		if m.Content != "" || len(m.ToolCalls) == 0 {
			wm.Content = &m.Content
		}
		for _, tc := range m.ToolCalls {
			var wc wireToolCall
			wc.ID, wc.Type = tc.ID, "function"
			wc.Function.Name, wc.Function.Arguments = tc.Name, tc.Arguments
			wm.ToolCalls = append(wm.ToolCalls, wc)
		}
		w.Messages[i] = wm
	}
	for _, t := range r.Tools {
		var wt wireTool
		wt.Type = "function"
		wt.Function.Name, wt.Function.Description, wt.Function.Parameters = t.Name, t.Description, t.Parameters
		w.Tools = append(w.Tools, wt)
	}
	return w
}

type wireResponse struct {
	ID             string       `json:"id"`
	Model          string       `json:"model"`
	Choices        []wireChoice `json:"choices"`
	Usage          *wireUsage   `json:"usage"`
	PromptTokenIDs []int32      `json:"prompt_token_ids"` // vLLM, SGLang return_token_ids
	SGLExt         *struct {
		InputIDs  []int32         `json:"input_ids"`
		OutputIDs json.RawMessage `json:"output_ids"` // one list per choice
	} `json:"sglext"`
}

type wireUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

type wireChoice struct {
	Index   int `json:"index"`
	Message struct {
		Role             string             `json:"role"`
		Content          string             `json:"content"` // null reads as ""
		ReasoningContent string             `json:"reasoning_content"`
		Reasoning        string             `json:"reasoning"`
		ToolCalls        []wireRespToolCall `json:"tool_calls"`
	} `json:"message"`
	FinishReason string `json:"finish_reason"`
	Logprobs     *struct {
		Content []struct {
			Token   string   `json:"token"`
			Logprob *float64 `json:"logprob"` // null reads as LogprobFloor
		} `json:"content"`
	} `json:"logprobs"`
	TokenIDs         []int32 `json:"token_ids"`          // vLLM, early SGLang
	ResponseTokenIDs []int32 `json:"response_token_ids"` // later SGLang
}

type wireRespToolCall struct {
	ID       string `json:"id"`
	Function struct {
		Name string `json:"name"`
		// Arguments should be a string; some servers send the object.
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// parseResponse decodes a chat-completion body. Any error wraps
// ErrBadResponse.
func parseResponse(data []byte) (*Response, error) {
	var w wireResponse
	if err := json.Unmarshal(sanitizeNonFinite(data), &w); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadResponse, err)
	}
	if len(w.Choices) == 0 {
		return nil, fmt.Errorf("%w: no choices", ErrBadResponse)
	}
	ci := 0
	for i, ch := range w.Choices {
		if ch.Index == 0 {
			ci = i
			break
		}
	}
	ch := w.Choices[ci]
	r := &Response{
		ID:             w.ID,
		Model:          w.Model,
		FinishReason:   ch.FinishReason,
		Reasoning:      ch.Message.ReasoningContent,
		WeightsVersion: w.Model,
		Message:        Message{Role: ch.Message.Role, Content: ch.Message.Content},
	}
	if r.Message.Role == "" {
		r.Message.Role = "assistant"
	}
	if r.Reasoning == "" {
		r.Reasoning = ch.Message.Reasoning
	}
	if w.Usage != nil {
		r.Usage = Usage(*w.Usage)
	}
	for i, tc := range ch.Message.ToolCalls {
		args, err := rawArguments(tc.Function.Arguments)
		if err != nil {
			return nil, fmt.Errorf("%w: tool_calls[%d].function.arguments: %w", ErrBadResponse, i, err)
		}
		r.Message.ToolCalls = append(r.Message.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: args})
	}

	r.PromptTokenIDs = w.PromptTokenIDs
	if len(r.PromptTokenIDs) == 0 && w.SGLExt != nil {
		r.PromptTokenIDs = w.SGLExt.InputIDs
	}
	switch {
	case len(ch.TokenIDs) > 0:
		r.CompletionTokenIDs = ch.TokenIDs
	case len(ch.ResponseTokenIDs) > 0:
		r.CompletionTokenIDs = ch.ResponseTokenIDs
	case w.SGLExt != nil:
		r.CompletionTokenIDs = sglOutputIDs(w.SGLExt.OutputIDs, ci)
	}

	if ch.Logprobs != nil && len(ch.Logprobs.Content) > 0 {
		lps := make([]float32, len(ch.Logprobs.Content))
		var fromTokens []int32 // ids spelled "token_id:N" by vLLM's return_tokens_as_token_ids
		for i, e := range ch.Logprobs.Content {
			v := math.Inf(-1)
			if e.Logprob != nil {
				v = *e.Logprob
			}
			lps[i] = clampLogprob(v)
			if id, ok := tokenIDFromToken(e.Token); ok && len(fromTokens) == i {
				fromTokens = append(fromTokens, id)
			}
		}
		if len(r.CompletionTokenIDs) == 0 && len(fromTokens) == len(lps) {
			r.CompletionTokenIDs = fromTokens
		}
		if len(r.CompletionTokenIDs) == 0 || len(r.CompletionTokenIDs) == len(lps) {
			r.Logprobs = lps
		}
	}
	return r, nil
}

// rawArguments returns a tool call's arguments as the text the model
// produced: the string's contents, or the raw JSON of a non-string value.
func rawArguments(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", err
		}
		return s, nil
	}
	return string(raw), nil
}

// sglOutputIDs picks choice i's ids from SGLang's sglext.output_ids, which
// holds one list per choice (a flat list is taken as the only choice's).
func sglOutputIDs(raw json.RawMessage, i int) []int32 {
	if len(raw) == 0 {
		return nil
	}
	var perChoice [][]int32
	if err := json.Unmarshal(raw, &perChoice); err == nil {
		if i < len(perChoice) {
			return perChoice[i]
		}
		return nil
	}
	var flat []int32
	if err := json.Unmarshal(raw, &flat); err == nil && i == 0 {
		return flat
	}
	return nil
}

func tokenIDFromToken(tok string) (int32, bool) {
	s, ok := strings.CutPrefix(tok, "token_id:")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, false
	}
	return int32(n), true
}

// clampLogprob maps v into [LogprobFloor, 0]; NaN and ±Inf become
// LogprobFloor.
func clampLogprob(v float64) float32 {
	switch {
	case math.IsNaN(v), math.IsInf(v, 0), v < LogprobFloor:
		return LogprobFloor
	case v > 0:
		return 0
	}
	return float32(v)
}

// sanitizeNonFinite rewrites the bare NaN, Infinity and -Infinity literals
// that Python's json module emits (and encoding/json rejects) to a finite
// number, outside strings only. The result is only ever used as logprobs,
// where clampLogprob maps it to LogprobFloor anyway.
func sanitizeNonFinite(data []byte) []byte {
	if !bytes.Contains(data, []byte("NaN")) && !bytes.Contains(data, []byte("Infinity")) {
		return data
	}
	const floor = "-1e9"
	out := make([]byte, 0, len(data))
	inString, escaped := false, false
	for i := 0; i < len(data); i++ {
		b := data[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
			out = append(out, b)
			continue
		}
		if b == '"' {
			inString = true
			out = append(out, b)
			continue
		}
		rest := data[i:]
		var lit string
		for _, l := range []string{"-Infinity", "Infinity", "NaN", "-NaN"} {
			if bytes.HasPrefix(rest, []byte(l)) {
				lit = l
				break
			}
		}
		if lit != "" {
			out = append(out, floor...)
			i += len(lit) - 1
			continue
		}
		out = append(out, b)
	}
	return out
}
