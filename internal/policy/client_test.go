package policy

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// reply is one scripted answer of the model server.
type reply struct {
	status int
	header map[string]string
	body   string
	hang   bool // block until the client gives up
}

// scripted is a test double of the model server: it answers requests with
// its replies in order (the last one repeats) and records what it was sent.
type scripted struct {
	mu      sync.Mutex
	replies []reply
	got     []*http.Request
	bodies  [][]byte
	times   []time.Time
}

func serve(t *testing.T, replies ...reply) (*scripted, *httptest.Server) {
	t.Helper()
	s := &scripted{replies: replies}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	n := len(s.got)
	s.got = append(s.got, r)
	s.bodies = append(s.bodies, body)
	s.times = append(s.times, time.Now())
	rep := s.replies[min(n, len(s.replies)-1)]
	s.mu.Unlock()
	if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
		http.Error(w, "wrong route "+r.Method+" "+r.URL.Path, http.StatusNotFound)
		return
	}
	if rep.hang {
		<-r.Context().Done()
		return
	}
	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(orDefault(rep.status, http.StatusOK))
	io.WriteString(w, rep.body)
}

func (s *scripted) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.got)
}

func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// vllmBody is a chat completion shaped like vLLM's answer to
// return_token_ids + logprobs + return_tokens_as_token_ids.
const vllmBody = `{
  "id": "chatcmpl-1", "object": "chat.completion", "model": "qwen-base",
  "prompt_token_ids": [1, 2, 3, 4],
  "choices": [{
    "index": 0,
    "message": {"role": "assistant", "content": null, "reasoning_content": "look first",
      "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"a.go\"}"}},
        {"id": "call_2", "type": "function", "function": {"name": "grep", "arguments": "{\"pattern\": broken"}}
      ]},
    "finish_reason": "tool_calls",
    "token_ids": [10, 11, 12],
    "logprobs": {"content": [
      {"token": "token_id:10", "logprob": -0.5, "bytes": [1], "top_logprobs": []},
      {"token": "token_id:11", "logprob": -1.25, "top_logprobs": []},
      {"token": "token_id:12", "logprob": 0.0, "top_logprobs": []}
    ]}
  }],
  "usage": {"prompt_tokens": 4, "completion_tokens": 3, "total_tokens": 7}
}`

// plainBody is what a server with no token extensions answers.
const plainBody = `{"id": "x", "model": "gpt-hosted", "choices": [{"index": 0,
  "message": {"role": "assistant", "content": "done"}, "finish_reason": "stop"}],
  "usage": {"prompt_tokens": 9, "completion_tokens": 1, "total_tokens": 10}}`

func newClient(t *testing.T, base string, mod func(*Options)) *Client {
	t.Helper()
	o := Options{BaseURL: base, Model: "m", MaxRetries: 3, BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond, Timeout: 5 * time.Second}
	if mod != nil {
		mod(&o)
	}
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var userTurn = Request{Messages: []Message{{Role: "user", Content: "fix it"}}}

func TestCompleteVLLM(t *testing.T) {
	s, srv := serve(t, reply{body: vllmBody, header: map[string]string{HeaderWeightsVersion: "step-42"}})
	c := newClient(t, srv.URL+"/v1/", func(o *Options) { o.APIKey = "sekret"; o.SessionID = "ep-7" })
	temp := 0.7
	req := Request{
		Messages: []Message{
			{Role: "system", Content: "you are a coder"},
			{Role: "user", Content: "fix it"},
			{Role: "assistant", ToolCalls: []ToolCall{{ID: "c0", Name: "list_dir", Arguments: `{"path":"."}`}}},
			{Role: "tool", ToolCallID: "c0", Content: "a.go"},
		},
		Tools:       []Tool{{Name: "read_file", Description: "read a file", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}},
		Temperature: &temp,
		MaxTokens:   128,
	}
	resp, err := c.Complete(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}

	want := &Response{
		ID: "chatcmpl-1", Model: "qwen-base",
		Message: Message{Role: "assistant", ToolCalls: []ToolCall{
			{ID: "call_1", Name: "read_file", Arguments: `{"path": "a.go"}`},
			{ID: "call_2", Name: "grep", Arguments: `{"pattern": broken`},
		}},
		Reasoning: "look first", FinishReason: "tool_calls",
		Usage:              Usage{PromptTokens: 4, CompletionTokens: 3, TotalTokens: 7},
		PromptTokenIDs:     []int32{1, 2, 3, 4},
		CompletionTokenIDs: []int32{10, 11, 12},
		Logprobs:           []float32{-0.5, -1.25, 0},
		WeightsVersion:     "step-42",
		Attempts:           1,
	}
	resp.Started, resp.Duration = time.Time{}, 0
	if g, w := mustJSON(t, resp), mustJSON(t, want); g != w {
		t.Errorf("response\n got %s\nwant %s", g, w)
	}

	h := s.got[0].Header
	for k, v := range map[string]string{"Authorization": "Bearer sekret", HeaderSessionID: "ep-7", "Content-Type": "application/json"} {
		if h.Get(k) != v {
			t.Errorf("header %s = %q, want %q", k, h.Get(k), v)
		}
	}
	var sent map[string]any
	if err := json.Unmarshal(s.bodies[0], &sent); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]any{"model": "m", "logprobs": true, "top_logprobs": 0.0, "return_token_ids": true,
		"return_tokens_as_token_ids": true, "temperature": 0.7, "max_tokens": 128.0} {
		if sent[k] != v {
			t.Errorf("request %s = %v, want %v", k, sent[k], v)
		}
	}
	msgs := sent["messages"].([]any)
	if asst := msgs[2].(map[string]any); asst["content"] != nil || asst["tool_calls"].([]any)[0].(map[string]any)["function"].(map[string]any)["arguments"] != `{"path":"."}` {
		t.Errorf("assistant tool-call message sent as %v", asst)
	}
	if tool := msgs[3].(map[string]any); tool["tool_call_id"] != "c0" {
		t.Errorf("tool message sent as %v", tool)
	}
	if fn := sent["tools"].([]any)[0].(map[string]any)["function"].(map[string]any); fn["name"] != "read_file" || fn["parameters"] == nil {
		t.Errorf("tool sent as %v", fn)
	}
}

func TestCompletePlainServer(t *testing.T) {
	s, srv := serve(t, reply{body: plainBody})
	c := newClient(t, srv.URL, func(o *Options) { o.StandardOnly = true })
	resp, err := c.Complete(t.Context(), userTurn)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Content != "done" || resp.FinishReason != "stop" || resp.Usage.TotalTokens != 10 {
		t.Errorf("response = %+v", resp)
	}
	if resp.PromptTokenIDs != nil || resp.CompletionTokenIDs != nil || resp.Logprobs != nil {
		t.Errorf("ids/logprobs = %v %v %v, want none", resp.PromptTokenIDs, resp.CompletionTokenIDs, resp.Logprobs)
	}
	if resp.WeightsVersion != "gpt-hosted" {
		t.Errorf("weights version = %q, want the model field", resp.WeightsVersion)
	}
	if h := s.got[0].Header; h.Get("Authorization") != "" || h.Get(HeaderSessionID) != "" {
		t.Errorf("unexpected auth/session headers %v", h)
	}
	if strings.Contains(string(s.bodies[0]), "return_token_ids") {
		t.Errorf("StandardOnly request carries return_token_ids: %s", s.bodies[0])
	}
}

func TestRetries(t *testing.T) {
	tests := []struct {
		name         string
		replies      []reply
		maxRetries   int
		wantAttempts int
		wantErr      error // nil: success
		wantStatus   int   // a *StatusError with this code in the chain
	}{
		{"503 then ok", []reply{{status: 503, body: "overloaded"}, {status: 503}, {body: plainBody}}, 3, 3, nil, 0},
		{"429 then ok", []reply{{status: 429}, {body: plainBody}}, 3, 2, nil, 0},
		{"400 not retried", []reply{{status: 400, body: `{"error":"bad tool schema"}`}}, 3, 1, nil, 400},
		{"404 not retried", []reply{{status: 404}}, 3, 1, nil, 404},
		{"500 until exhausted", []reply{{status: 500}}, 2, 3, ErrUnavailable, 500},
		{"no retries", []reply{{status: 502}}, 0, 1, ErrUnavailable, 502},
		{"malformed body not retried", []reply{{body: `{"choices": [`}}, 3, 1, ErrBadResponse, 0},
		{"no choices", []reply{{body: `{"choices": []}`}}, 3, 1, ErrBadResponse, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, srv := serve(t, tt.replies...)
			c := newClient(t, srv.URL, func(o *Options) { o.MaxRetries = tt.maxRetries })
			resp, err := c.Complete(t.Context(), userTurn)
			if got := s.count(); got != tt.wantAttempts {
				t.Errorf("attempts = %d, want %d", got, tt.wantAttempts)
			}
			if tt.wantErr == nil && tt.wantStatus == 0 {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				if resp.Attempts != tt.wantAttempts {
					t.Errorf("resp.Attempts = %d, want %d", resp.Attempts, tt.wantAttempts)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr == nil && (errors.Is(err, ErrUnavailable) || errors.Is(err, ErrBadResponse)) {
				t.Errorf("err = %v is marked unavailable/bad response", err)
			}
			var se *StatusError
			if tt.wantStatus != 0 && (!errors.As(err, &se) || se.Code != tt.wantStatus) {
				t.Errorf("err = %v, want a StatusError %d", err, tt.wantStatus)
			}
		})
	}
}

func TestStatusErrorBody(t *testing.T) {
	_, srv := serve(t, reply{status: 400, body: `{"error":"bad tool schema"}`})
	_, err := newClient(t, srv.URL, nil).Complete(t.Context(), userTurn)
	var se *StatusError
	if !errors.As(err, &se) || !strings.Contains(se.Body, "bad tool schema") {
		t.Fatalf("err = %v, want a StatusError with the body", err)
	}
}

func TestRetryAfterHonoured(t *testing.T) {
	s, srv := serve(t, reply{status: 429, header: map[string]string{"Retry-After": "1"}}, reply{body: plainBody})
	c := newClient(t, srv.URL, nil) // backoff alone would wait at most 5ms
	if _, err := c.Complete(t.Context(), userTurn); err != nil {
		t.Fatal(err)
	}
	if gap := s.times[1].Sub(s.times[0]); gap < 900*time.Millisecond {
		t.Errorf("retried after %v, want Retry-After's 1s", gap)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", 0}, {"2", 2 * time.Second}, {"0", 0}, {"-3", 0}, {"soon", 0},
		{"99999999", maxRetryAfter},
		{now.Add(7 * time.Second).Format(http.TimeFormat), 7 * time.Second},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0},
	}
	for _, tt := range tests {
		if got := parseRetryAfter(tt.in, now); got != tt.want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// countingTransport counts the attempts that reach the network.
type countingTransport struct{ n atomic.Int32 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

func TestUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	tr := &countingTransport{}
	c := newClient(t, "http://"+addr, func(o *Options) { o.MaxRetries = 2; o.HTTPClient = &http.Client{Transport: tr} })
	_, err = c.Complete(t.Context(), userTurn)
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	var se *StatusError
	if errors.As(err, &se) {
		t.Errorf("err = %v carries a StatusError", err)
	}
	if got := tr.n.Load(); got != 3 {
		t.Errorf("attempts = %d, want 3", got)
	}
}

func TestPerRequestTimeout(t *testing.T) {
	s, srv := serve(t, reply{hang: true}, reply{body: plainBody})
	c := newClient(t, srv.URL, func(o *Options) { o.Timeout = 50 * time.Millisecond; o.MaxRetries = 1 })
	resp, err := c.Complete(t.Context(), userTurn)
	if err != nil {
		t.Fatalf("a timed-out attempt should be retried: %v", err)
	}
	if resp.Attempts != 2 || s.count() != 2 {
		t.Errorf("attempts = %d (server saw %d), want 2", resp.Attempts, s.count())
	}

	_, srv2 := serve(t, reply{hang: true})
	c = newClient(t, srv2.URL, func(o *Options) { o.Timeout = 50 * time.Millisecond; o.MaxRetries = 1 })
	_, err = c.Complete(t.Context(), userTurn)
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want ErrUnavailable wrapping a deadline", err)
	}
}

func TestSessionHeaderEveryRequest(t *testing.T) {
	s, srv := serve(t, reply{status: 503}, reply{body: plainBody})
	base := newClient(t, srv.URL, nil)
	c := base.WithSession("episode-3")
	if _, err := c.Complete(t.Context(), userTurn); err != nil {
		t.Fatal(err)
	}
	if _, err := base.Complete(t.Context(), userTurn); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range s.got {
		got = append(got, r.Header.Get(HeaderSessionID))
	}
	if want := []string{"episode-3", "episode-3", ""}; !slices.Equal(got, want) {
		t.Errorf("session headers = %q, want %q", got, want)
	}
}

func TestCancelledContext(t *testing.T) {
	_, srv := serve(t, reply{status: 503, header: map[string]string{"Retry-After": "60"}})
	c := newClient(t, srv.URL, nil)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	time.AfterFunc(20*time.Millisecond, cancel)
	_, err := c.Complete(ctx, userTurn)
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrUnavailable) {
		t.Errorf("err = %v, want context.Canceled and not ErrUnavailable", err)
	}
}

func TestNew(t *testing.T) {
	for _, base := range []string{"http://h:8000", "http://h:8000/", "http://h:8000/v1", "http://h:8000/v1/"} {
		c, err := New(Options{BaseURL: base, Model: "m"})
		if err != nil {
			t.Fatalf("New(%q): %v", base, err)
		}
		if got := c.Endpoint(); got != "http://h:8000/v1/chat/completions" {
			t.Errorf("New(%q).Endpoint() = %q", base, got)
		}
	}
	if c, _ := New(Options{BaseURL: "https://gw/openai/v1", Model: "m"}); c.Endpoint() != "https://gw/openai/v1/chat/completions" {
		t.Errorf("path prefix lost: %q", c.Endpoint())
	}
	for _, o := range []Options{{BaseURL: "h:8000", Model: "m"}, {BaseURL: "ftp://h", Model: "m"}, {BaseURL: "http://h"}, {BaseURL: "http://h", Model: "m", MaxRetries: -1}} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		}
	}
}

func TestLogprobClamping(t *testing.T) {
	body := `{"model":"m","choices":[{"index":0,"message":{"content":"x"},"finish_reason":"length",
	  "token_ids":[5,6,7,8,9],
	  "logprobs":{"content":[{"token":"a","logprob":-Infinity},{"token":"NaN","logprob":NaN},
	    {"token":"c","logprob":null},{"token":"d","logprob":-1e300},{"token":"e","logprob":1e-7}]}}]}`
	r, err := parseResponse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := []float32{LogprobFloor, LogprobFloor, LogprobFloor, LogprobFloor, 0}
	if !slices.Equal(r.Logprobs, want) {
		t.Errorf("logprobs = %v, want %v", r.Logprobs, want)
	}
	for _, v := range r.Logprobs {
		if math.IsInf(float64(v), 0) || math.IsNaN(float64(v)) {
			t.Errorf("non-finite logprob %v", v)
		}
	}
}

func TestParseVariants(t *testing.T) {
	tests := []struct {
		name                   string
		body                   string
		wantPrompt, wantCompl  []int32
		wantLogprobs           int
		wantArgs, wantReasoned string
	}{
		{"sglang response_token_ids", `{"prompt_token_ids":[1,2],"choices":[{"index":0,"message":{"content":"x","reasoning":"r"},"response_token_ids":[3,4]}]}`,
			[]int32{1, 2}, []int32{3, 4}, 0, "", "r"},
		{"sglext", `{"sglext":{"input_ids":[1],"output_ids":[[7,8]]},"choices":[{"index":0,"message":{"content":"x"},"logprobs":{"content":[{"token":"a","logprob":-1},{"token":"b","logprob":-2}]}}]}`,
			[]int32{1}, []int32{7, 8}, 2, "", ""},
		{"ids from token_id: tokens", `{"choices":[{"index":0,"message":{"content":"x"},"logprobs":{"content":[{"token":"token_id:42","logprob":-1},{"token":"token_id:43","logprob":-2}]}}]}`,
			nil, []int32{42, 43}, 2, "", ""},
		{"logprobs not matching ids dropped", `{"choices":[{"index":0,"message":{"content":"x"},"token_ids":[1,2,3],"logprobs":{"content":[{"token":"a","logprob":-1}]}}]}`,
			nil, []int32{1, 2, 3}, 0, "", ""},
		{"object arguments kept raw", `{"choices":[{"index":0,"message":{"tool_calls":[{"id":"c","function":{"name":"f","arguments":{"a":1}}}]}}]}`,
			nil, nil, 0, `{"a":1}`, ""},
		{"choice index 0 picked", `{"choices":[{"index":1,"message":{"content":"no"},"token_ids":[9]},{"index":0,"message":{"content":"x"},"token_ids":[5]}]}`,
			nil, []int32{5}, 0, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := parseResponse([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(r.PromptTokenIDs, tt.wantPrompt) || !slices.Equal(r.CompletionTokenIDs, tt.wantCompl) || len(r.Logprobs) != tt.wantLogprobs {
				t.Errorf("prompt %v completion %v logprobs %v", r.PromptTokenIDs, r.CompletionTokenIDs, r.Logprobs)
			}
			if r.Reasoning != tt.wantReasoned {
				t.Errorf("reasoning = %q, want %q", r.Reasoning, tt.wantReasoned)
			}
			if tt.wantArgs != "" && (len(r.Message.ToolCalls) != 1 || r.Message.ToolCalls[0].Arguments != tt.wantArgs) {
				t.Errorf("tool calls = %+v", r.Message.ToolCalls)
			}
			if tt.name == "choice index 0 picked" && r.Message.Content != "x" {
				t.Errorf("content = %q", r.Message.Content)
			}
		})
	}
}

func TestSanitizeLeavesStrings(t *testing.T) {
	in := `{"a":"NaN and -Infinity \" Infinity","b":-Infinity}`
	want := `{"a":"NaN and -Infinity \" Infinity","b":-1e9}`
	if got := string(sanitizeNonFinite([]byte(in))); got != want {
		t.Errorf("sanitize = %s, want %s", got, want)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
