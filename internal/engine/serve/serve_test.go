package serve

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/verisim/verisim/internal/engine/generate"
	"github.com/verisim/verisim/internal/engine/model"
)

const chatBody = `{"model":"toy","messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"what is the "},{"type":"text","text":"weather?"}]}],"max_tokens":12,"seed":%d%s}`

func TestChatCompletion(t *testing.T) {
	_, srv, dir := startServer(t)
	var resp chatResponse
	h := postOK(t, srv.URL+"/v1/chat/completions", fmt.Sprintf(chatBody, 5, `,"return_token_ids":true,"logprobs":true,"top_logprobs":3`), &resp)

	if got := h.Get(WeightsVersionHeader); got != "0" {
		t.Errorf("%s = %q, want 0", WeightsVersionHeader, got)
	}
	if resp.WeightsVersion != "0" || resp.Object != "chat.completion" || resp.Model != "toy" {
		t.Errorf("weights_version %q, object %q, model %q", resp.WeightsVersion, resp.Object, resp.Model)
	}
	if len(resp.Choices) != 1 {
		t.Fatalf("%d choices, want 1", len(resp.Choices))
	}
	c := resp.Choices[0]
	if c.FinishReason != "stop" && c.FinishReason != "length" {
		t.Errorf("finish_reason %q", c.FinishReason)
	}
	if c.Message.Role != "assistant" || c.Message.Content == nil {
		t.Errorf("message %+v", c.Message)
	}

	// prompt_token_ids are the tokens of the rendered conversation.
	tok := testTokenizer(t)
	want := tok.Encode(generate.RenderChat([]generate.Message{
		{Role: "system", Content: "be brief"},
		{Role: "user", Content: "what is the weather?"},
	}, nil, true))
	if !slices.Equal(resp.PromptTokenIDs, want) {
		t.Errorf("prompt_token_ids = %v, want %v", resp.PromptTokenIDs, want)
	}
	u := resp.Usage
	if u.PromptTokens != len(want) || u.CompletionTokens != len(c.TokenIDs) || u.TotalTokens != u.PromptTokens+u.CompletionTokens || len(c.TokenIDs) == 0 {
		t.Errorf("usage %+v with %d prompt and %d completion ids", u, len(want), len(c.TokenIDs))
	}

	// Logprobs equal a full forward over prompt+completion.
	m, err := model.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	seq := append(slices.Clone(want), c.TokenIDs...)
	logits, err := m.Forward(m.NewKVCache(), seq, 0)
	if err != nil {
		t.Fatal(err)
	}
	if c.Logprobs == nil || len(c.Logprobs.Content) != len(c.TokenIDs) {
		t.Fatalf("logprobs %+v for %d tokens", c.Logprobs, len(c.TokenIDs))
	}
	vocab := m.Config.VocabSize
	for i, id := range c.TokenIDs {
		row := len(want) - 1 + i
		lp := model.LogSoftmax(logits[row*vocab : (row+1)*vocab])
		e := c.Logprobs.Content[i]
		if d := math.Abs(float64(e.Logprob - lp[id])); d >= 1e-4 {
			t.Errorf("token %d: logprob %v, full forward %v", i, e.Logprob, lp[id])
		}
		if len(e.TopLogprobs) != 3 {
			t.Errorf("token %d: %d top_logprobs, want 3", i, len(e.TopLogprobs))
		}
		b, err := tok.Decode([]int32{id})
		if err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(e.Bytes))
		for k, v := range e.Bytes {
			got[k] = byte(v)
		}
		if !slices.Equal(got, b) {
			t.Errorf("token %d: bytes %q, want %q", i, got, b)
		}
	}
}

func TestChatStream(t *testing.T) {
	_, srv, _ := startServer(t)
	var plain chatResponse
	postOK(t, srv.URL+"/v1/chat/completions", fmt.Sprintf(chatBody, 9, `,"stop":["zz"]`), &plain)

	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(fmt.Sprintf(chatBody, 9, `,"stop":"zz","stream":true,"stream_options":{"include_usage":true}`)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q", ct)
	}
	if v := resp.Header.Get(WeightsVersionHeader); v != "0" {
		t.Errorf("%s = %q", WeightsVersionHeader, v)
	}
	got := collectStream(t, readSSE(t, resp.Body))
	if got.content != *plain.Choices[0].Message.Content {
		t.Errorf("streamed content %q, non-streamed %q", got.content, *plain.Choices[0].Message.Content)
	}
	if got.finish != plain.Choices[0].FinishReason {
		t.Errorf("streamed finish %q, non-streamed %q", got.finish, plain.Choices[0].FinishReason)
	}
	if got.version != "0" || got.chunks < 3 {
		t.Errorf("version %q, %d chunks", got.version, got.chunks)
	}
	if got.usage == nil || *got.usage != plain.Usage {
		t.Errorf("stream usage %+v, want %+v", got.usage, plain.Usage)
	}
}

func TestHeldBack(t *testing.T) {
	stops := []string{"STOP", "<tool_call>"}
	for _, tc := range []struct {
		text string
		want int
	}{
		{"hello", 0},
		{"hello ST", 2},
		{"hello <tool", 5},
		{"a\xe2\x82", 2}, // first two bytes of "€"
		{"a€", 0},
	} {
		if got := heldBack(tc.text, stops); got != tc.want {
			t.Errorf("heldBack(%q) = %d, want %d", tc.text, got, tc.want)
		}
	}
}

func TestSeedReproducible(t *testing.T) {
	_, srv, _ := startServer(t)
	ids := func(seed int, extra string) [][]int32 {
		var r chatResponse
		postOK(t, srv.URL+"/v1/chat/completions", fmt.Sprintf(chatBody, seed, `,"return_token_ids":true`+extra), &r)
		var out [][]int32
		for _, c := range r.Choices {
			out = append(out, c.TokenIDs)
		}
		return out
	}
	a, b, c := ids(11, ""), ids(11, ""), ids(12, "")
	if !slices.Equal(a[0], b[0]) {
		t.Errorf("seed 11 gave %v then %v", a[0], b[0])
	}
	if slices.Equal(a[0], c[0]) {
		t.Errorf("seeds 11 and 12 both gave %v", a[0])
	}
	// Choice i of an n>1 request uses seed+i.
	n := ids(11, `,"n":2`)
	if len(n) != 2 || !slices.Equal(n[0], a[0]) || !slices.Equal(n[1], c[0]) {
		t.Errorf("n=2 seed 11 gave %v, want [%v %v]", n, a[0], c[0])
	}
}

func TestCompletions(t *testing.T) {
	_, srv, _ := startServer(t)
	tok := testTokenizer(t)
	prompt := tok.Encode("the quick brown fox")
	ids, _ := json.Marshal(prompt)
	var byText, byIDs completionResponse
	postOK(t, srv.URL+"/v1/completions", `{"prompt":"the quick brown fox","max_tokens":6,"seed":3,"logprobs":2,"return_token_ids":true}`, &byText)
	postOK(t, srv.URL+"/v1/completions", `{"prompt":`+string(ids)+`,"max_tokens":6,"seed":3,"logprobs":2,"return_token_ids":true}`, &byIDs)
	if !slices.Equal(byText.PromptTokenIDs, prompt) || !slices.Equal(byIDs.PromptTokenIDs, prompt) {
		t.Errorf("prompt_token_ids %v and %v, want %v", byText.PromptTokenIDs, byIDs.PromptTokenIDs, prompt)
	}
	a, b := byText.Choices[0], byIDs.Choices[0]
	if a.Text != b.Text || !slices.Equal(a.TokenIDs, b.TokenIDs) || len(a.TokenIDs) == 0 {
		t.Errorf("text prompt gave %q %v, id prompt %q %v", a.Text, a.TokenIDs, b.Text, b.TokenIDs)
	}
	lp := a.Logprobs
	if byText.Object != "text_completion" || lp == nil || len(lp.Tokens) != len(a.TokenIDs) || len(lp.TokenLogprobs) != len(a.TokenIDs) || len(lp.TopLogprobs) != len(a.TokenIDs) || len(lp.TextOffset) != len(a.TokenIDs) {
		t.Fatalf("object %q, logprobs %+v for %d tokens", byText.Object, lp, len(a.TokenIDs))
	}
	for i, top := range lp.TopLogprobs {
		if len(top) == 0 || len(top) > 2 {
			t.Errorf("token %d: %d alternatives, want 1 or 2", i, len(top))
		}
	}
}

// TestCompletionsStream checks that a streamed completion with two
// choices and a stop string adds up, choice by choice, to the same text,
// token ids and logprobs as the same request unstreamed, with text
// offsets that run on across chunks.
func TestCompletionsStream(t *testing.T) {
	_, srv, _ := startServer(t)
	const body = `{"prompt":"the quick brown fox","max_tokens":12,"seed":5,"temperature":0.8,"n":2,"stop":["zz"],"logprobs":1,"return_token_ids":true%s}`
	var plain completionResponse
	postOK(t, srv.URL+"/v1/completions", fmt.Sprintf(body, ""), &plain)
	resp, err := http.Post(srv.URL+"/v1/completions", "application/json",
		strings.NewReader(fmt.Sprintf(body, `,"stream":true,"stream_options":{"include_usage":true}`)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := readSSE(t, resp.Body)
	if len(events) == 0 || events[len(events)-1] != "[DONE]" {
		t.Fatalf("stream did not end with [DONE]: %q", events)
	}
	type acc struct {
		text    strings.Builder
		ids     []int32
		lps     []float32
		offsets []int
		finish  string
	}
	got := make([]acc, 2)
	var u *usage
	var promptIDs []int32
	for _, e := range events[:len(events)-1] {
		var c completionChunk
		dec := json.NewDecoder(strings.NewReader(e))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			t.Fatalf("chunk %s: %v", e, err)
		}
		if c.Object != "text_completion" || c.ID != "" && !strings.HasPrefix(c.ID, "cmpl-") {
			t.Fatalf("chunk %s: object/id", e)
		}
		if c.Usage != nil {
			u = c.Usage
		}
		promptIDs = append(promptIDs, c.PromptTokenIDs...)
		for _, ch := range c.Choices {
			a := &got[ch.Index]
			a.text.WriteString(ch.Text)
			a.ids = append(a.ids, ch.TokenIDs...)
			if ch.Logprobs != nil {
				a.lps = append(a.lps, values(ch.Logprobs.TokenLogprobs)...)
				a.offsets = append(a.offsets, ch.Logprobs.TextOffset...)
			}
			if ch.FinishReason != nil {
				a.finish = *ch.FinishReason
			}
		}
	}
	if !slices.Equal(promptIDs, plain.PromptTokenIDs) {
		t.Errorf("streamed prompt ids %v, want %v", promptIDs, plain.PromptTokenIDs)
	}
	for i, want := range plain.Choices {
		g := &got[i]
		if g.text.String() != want.Text || !slices.Equal(g.ids, want.TokenIDs) || g.finish != want.FinishReason {
			t.Errorf("choice %d streamed %q %v %s, plain %q %v %s", i, g.text.String(), g.ids, g.finish, want.Text, want.TokenIDs, want.FinishReason)
		}
		if !slices.Equal(g.lps, values(want.Logprobs.TokenLogprobs)) || !slices.Equal(g.offsets, want.Logprobs.TextOffset) {
			t.Errorf("choice %d streamed logprobs %v offsets %v, plain %v %v", i, g.lps, g.offsets, values(want.Logprobs.TokenLogprobs), want.Logprobs.TextOffset)
		}
	}
	if u == nil || *u != plain.Usage {
		t.Errorf("stream usage %+v, want %+v", u, plain.Usage)
	}
}

func TestBadInput(t *testing.T) {
	_, srv, _ := startServer(t)
	long := strings.Repeat("the quick brown fox jumps over the lazy dog. ", 200)
	for _, tc := range []struct {
		name, path, body string
		status           int
		msg              string
	}{
		{"invalid json", "/v1/chat/completions", `{"messages":`, 400, "invalid JSON"},
		{"not an object", "/v1/chat/completions", `[1,2]`, 400, "invalid JSON"},
		{"trailing data", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}]} {}`, 400, "data after"},
		{"unknown field", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"frobnicate":1}`, 400, `unknown field "frobnicate"`},
		{"unknown part field", "/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"text","text":"a","x":1}]}]}`, 400, `unknown field "x"`},
		{"n too large", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"n":5}`, 400, "n must be between 1 and 4, got 5"},
		{"n zero", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"n":0}`, 400, "n must be between 1 and 4"},
		{"negative max_tokens", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":-1}`, 400, "max_tokens must be >= 0, got -1"},
		{"bad temperature", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"temperature":-2}`, 400, "temperature"},
		{"wrong type", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"n":"two"}`, 400, `"n"`},
		{"empty messages", "/v1/chat/completions", `{"messages":[]}`, 400, "messages must not be empty"},
		{"bad role", "/v1/chat/completions", `{"messages":[{"role":"wizard","content":"hi"}]}`, 400, `unknown role "wizard"`},
		{"tool_choice required", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"tool_choice":"required"}`, 400, "tool_choice"},
		{"wrong model", "/v1/chat/completions", `{"model":"gpt-9","messages":[{"role":"user","content":"hi"}]}`, 404, `model "gpt-9" does not exist`},
		{"chat over context", "/v1/chat/completions", `{"messages":[{"role":"user","content":"` + long + `"}]}`, 400, fmt.Sprintf("exceeds the model's context of %d positions", testMaxPos)},
		{"prompt over context", "/v1/completions", `{"prompt":"` + long + `"}`, 400, fmt.Sprintf("exceeds the model's context of %d positions", testMaxPos)},
		{"prompt id out of vocab", "/v1/completions", `{"prompt":[1,99999]}`, 400, "token id 99999"},
		{"batched prompt", "/v1/completions", `{"prompt":["a","b"]}`, 400, "batched prompts"},
		{"completion stream n", "/v1/completions", `{"prompt":"a","stream":true,"n":99}`, 400, "n"},
		{"detokenize bad id", "/detokenize", `{"tokens":[-1]}`, 400, "token id -1"},
		{"reload without version", "/admin/reload", `{"path":"/nowhere"}`, 400, "version is required"},
		{"reload missing dir", "/admin/reload", `{"path":"/nowhere","version":"x"}`, 400, "/nowhere"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, _, b := post(t, srv.URL+tc.path, tc.body)
			var e struct {
				Error struct {
					Message, Type string
					Param, Code   *string
				}
			}
			if err := json.Unmarshal(b, &e); err != nil {
				t.Fatalf("status %d, body %s: %v", status, b, err)
			}
			if status != tc.status || !strings.Contains(e.Error.Message, tc.msg) || e.Error.Type != "invalid_request_error" {
				t.Errorf("status %d, error %+v; want %d with %q", status, e.Error, tc.status, tc.msg)
			}
		})
	}
	// The prompt-length message names both lengths.
	_, _, b := post(t, srv.URL+"/v1/completions", `{"prompt":"`+long+`"}`)
	n := len(testTokenizer(t).Encode(long))
	if !strings.Contains(string(b), fmt.Sprintf("prompt of %d tokens", n)) {
		t.Errorf("context error %s does not give the prompt's %d tokens", b, n)
	}
	// Still serving.
	var r chatResponse
	postOK(t, srv.URL+"/v1/chat/completions", fmt.Sprintf(chatBody, 1, ""), &r)
	if len(r.Choices) != 1 {
		t.Errorf("after bad input: %d choices", len(r.Choices))
	}
}

func TestTokenizeRoundTrip(t *testing.T) {
	_, srv, _ := startServer(t)
	for _, text := range []string{"the quick brown fox", "<|im_start|>user\nhi ünïcode<|im_end|>", ""} {
		body, _ := json.Marshal(map[string]string{"prompt": text})
		var tk struct {
			Tokens      []int32 `json:"tokens"`
			Count       int     `json:"count"`
			MaxModelLen int     `json:"max_model_len"`
		}
		postOK(t, srv.URL+"/tokenize", string(body), &tk)
		if tk.Count != len(tk.Tokens) || tk.MaxModelLen != testMaxPos || !slices.Equal(tk.Tokens, testTokenizer(t).Encode(text)) {
			t.Errorf("tokenize %q = %+v", text, tk)
		}
		ids, _ := json.Marshal(map[string][]int32{"tokens": tk.Tokens})
		var dt struct {
			Prompt string `json:"prompt"`
		}
		postOK(t, srv.URL+"/detokenize", string(ids), &dt)
		if dt.Prompt != text {
			t.Errorf("detokenize(tokenize(%q)) = %q", text, dt.Prompt)
		}
	}
	// messages render as chat completions renders them.
	var tk struct {
		Tokens []int32 `json:"tokens"`
	}
	postOK(t, srv.URL+"/tokenize", `{"messages":[{"role":"user","content":"hi"}]}`, &tk)
	want := testTokenizer(t).Encode(generate.RenderChat([]generate.Message{{Role: "user", Content: "hi"}}, nil, true))
	if !slices.Equal(tk.Tokens, want) {
		t.Errorf("tokenize messages = %v, want %v", tk.Tokens, want)
	}
}

func TestModelsAndHealth(t *testing.T) {
	_, srv, _ := startServer(t)
	resp, err := http.Get(srv.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Object string
		Data   []struct{ ID, Object string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	if list.Object != "list" || len(list.Data) != 1 || list.Data[0].ID != "toy" {
		t.Errorf("models %+v", list)
	}
	h, err := http.Get(srv.URL + "/health")
	if err != nil {
		t.Fatal(err)
	}
	h.Body.Close()
	if h.StatusCode != 200 {
		t.Errorf("/health status %d", h.StatusCode)
	}
}

func TestNewErrors(t *testing.T) {
	if _, err := New(Options{ModelDir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), TokenizerFile) {
		t.Errorf("New on an empty dir: %v, want an error naming %s", err, TokenizerFile)
	}
}

// TestConcurrentRequests runs chat requests in parallel; under -race it
// checks that requests share nothing mutable.
func TestConcurrentRequests(t *testing.T) {
	_, srv, _ := startServer(t)
	var want chatResponse
	postOK(t, srv.URL+"/v1/chat/completions", fmt.Sprintf(chatBody, 4, `,"return_token_ids":true`), &want)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			var got chatResponse
			resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(fmt.Sprintf(chatBody, 4, `,"return_token_ids":true`)))
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || len(got.Choices) != 1 {
				t.Errorf("status %d, %+v: %v", resp.StatusCode, got, err)
				return
			}
			if !slices.Equal(got.Choices[0].TokenIDs, want.Choices[0].TokenIDs) {
				t.Errorf("concurrent request gave %v, want %v", got.Choices[0].TokenIDs, want.Choices[0].TokenIDs)
			}
		})
	}
	wg.Wait()
}

// TestServedLogprobsMatchScoring checks the served logprobs against a
// separate scoring pass: the checkpoint loaded afresh, prompt and
// completion run through one Forward call, log-softmax at each
// completion position. They agree up to float rounding between a
// batched token-by-token decode and one full pass; the gap is logged.
func TestServedLogprobsMatchScoring(t *testing.T) {
	_, srv, dir := startServer(t)
	var resp completionResponse
	postOK(t, srv.URL+"/v1/completions", `{"prompt":"the quick brown fox","max_tokens":16,"seed":9,"temperature":1,"n":3,"logprobs":0,"return_token_ids":true}`, &resp)
	m, err := model.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	V := m.Config.VocabSize
	worst := 0.0
	for _, c := range resp.Choices {
		seq := append(slices.Clone(resp.PromptTokenIDs), c.TokenIDs...)
		logits, err := m.Forward(m.NewKVCache(), seq, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Logprobs.TokenLogprobs) != len(c.TokenIDs) {
			t.Fatalf("%d logprobs for %d tokens", len(c.Logprobs.TokenLogprobs), len(c.TokenIDs))
		}
		for i, id := range c.TokenIDs {
			row := len(resp.PromptTokenIDs) + i - 1
			want := model.LogSoftmax(logits[row*V : (row+1)*V])[id]
			worst = max(worst, math.Abs(float64(*c.Logprobs.TokenLogprobs[i]-want)))
		}
	}
	t.Logf("served vs scoring logprobs: max |diff| = %.3g over %d choices", worst, len(resp.Choices))
	if worst > 1e-4 {
		t.Errorf("served logprobs differ from a scoring pass by up to %g", worst)
	}
}

// TestRoutedExperts serves a mixture-of-experts checkpoint and checks
// return_routed_experts: one entry of layers·k experts per prompt token
// and per completion token (the last, never run, empty), the same in a
// stream as without, and replaying them in a scoring pass reproduces the
// served logprobs. A dense model refuses the field.
func TestRoutedExperts(t *testing.T) {
	dir := writeArchCheckpoint(t, "moe", "mixtral", 3, 32)
	s, err := New(Options{ModelDir: dir, MaxN: 4})
	if err != nil {
		t.Fatal(err)
	}
	runServer(t, s)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	const body = `{"prompt":"the quick brown fox","max_tokens":8,"seed":2,"temperature":1,"n":2,"logprobs":0,"return_token_ids":true,"return_routed_experts":true%s}`
	var resp completionResponse
	postOK(t, srv.URL+"/v1/completions", fmt.Sprintf(body, ""), &resp)
	m, err := model.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	k := m.Config.NumHiddenLayers * m.Config.NumExpertsPerTok
	if len(resp.PromptRoutedExperts) != len(resp.PromptTokenIDs) {
		t.Fatalf("%d prompt routes for %d prompt tokens", len(resp.PromptRoutedExperts), len(resp.PromptTokenIDs))
	}
	V := m.Config.VocabSize
	for _, c := range resp.Choices {
		if len(c.RoutedExperts) != len(c.TokenIDs) || len(c.RoutedExperts[len(c.RoutedExperts)-1]) != 0 {
			t.Fatalf("choice %d: routes %v for %d tokens; want one each, the last empty", c.Index, c.RoutedExperts, len(c.TokenIDs))
		}
		replay := append(slices.Clone(resp.PromptRoutedExperts), c.RoutedExperts...)
		for i, e := range replay[:len(replay)-1] {
			if len(e) != k {
				t.Fatalf("choice %d: route %d = %v, want %d experts", c.Index, i, e, k)
			}
		}
		replay[len(replay)-1] = nil
		seq := append(slices.Clone(resp.PromptTokenIDs), c.TokenIDs...)
		logits, err := m.ForwardBatch([]model.Seq{{Cache: m.NewKVCache(), Tokens: seq, Replay: replay}})
		if err != nil {
			t.Fatal(err)
		}
		for i, id := range c.TokenIDs {
			row := len(resp.PromptTokenIDs) + i - 1
			if want := model.LogSoftmax(logits[row*V : (row+1)*V])[id]; math.Abs(float64(want-*c.Logprobs.TokenLogprobs[i])) > 1e-5 {
				t.Errorf("choice %d token %d: served logprob %g, replayed scoring %g", c.Index, i, *c.Logprobs.TokenLogprobs[i], want)
			}
		}
	}

	// Streamed: the finishing chunks carry the same routes.
	r, err := http.Post(srv.URL+"/v1/completions", "application/json", strings.NewReader(fmt.Sprintf(body, `,"stream":true`)))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	events := readSSE(t, r.Body)
	streamed := make([][][]int32, 2)
	var promptRoutes [][]int32
	for _, e := range events[:len(events)-1] {
		var c completionChunk
		if err := json.Unmarshal([]byte(e), &c); err != nil {
			t.Fatal(err)
		}
		promptRoutes = append(promptRoutes, c.PromptRoutedExperts...)
		for _, ch := range c.Choices {
			streamed[ch.Index] = append(streamed[ch.Index], ch.RoutedExperts...)
		}
	}
	if fmt.Sprint(promptRoutes) != fmt.Sprint(resp.PromptRoutedExperts) {
		t.Errorf("streamed prompt routes %v, want %v", promptRoutes, resp.PromptRoutedExperts)
	}
	for i, c := range resp.Choices {
		if fmt.Sprint(streamed[i]) != fmt.Sprint(c.RoutedExperts) {
			t.Errorf("choice %d: streamed routes %v, want %v", i, streamed[i], c.RoutedExperts)
		}
	}

	_, dense, _ := startServer(t)
	status, _, b := post(t, dense.URL+"/v1/completions", `{"prompt":"a","return_routed_experts":true}`)
	if status != http.StatusBadRequest || !strings.Contains(string(b), "dense") {
		t.Errorf("dense model: status %d %s, want 400 naming it dense", status, b)
	}
}

// values dereferences a logprobs list that has no nulls (no echoed prompt).
func values(ps []*float32) []float32 {
	out := make([]float32, len(ps))
	for i, p := range ps {
		out[i] = *p
	}
	return out
}

// TestEcho scores a text through /v1/completions with echo, logprobs and
// max_tokens 0, as an RL loop scores a sequence under reference weights:
// the text comes back whole, its first token has null logprob and
// alternatives, every other token's logprob equals a separate scoring
// pass's, bit for bit, and offsets run through the text. With a
// completion, the prompt's tokens come first. Echo with stream is
// refused.
func TestEcho(t *testing.T) {
	_, srv, dir := startServer(t)
	m, err := model.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	const text = "the quick brown fox"
	var resp completionResponse
	postOK(t, srv.URL+"/v1/completions", `{"prompt":"`+text+`","max_tokens":0,"echo":true,"logprobs":2,"return_token_ids":true}`, &resp)
	c := resp.Choices[0]
	ids := resp.PromptTokenIDs
	if c.Text != text || len(c.TokenIDs) != 0 || resp.Usage.CompletionTokens != 0 {
		t.Fatalf("echo with max_tokens 0: text %q, %d tokens generated", c.Text, len(c.TokenIDs))
	}
	lp := c.Logprobs
	if lp == nil || len(lp.Tokens) != len(ids) || lp.TokenLogprobs[0] != nil || lp.TopLogprobs[0] != nil {
		t.Fatalf("logprobs %+v for %d prompt tokens", lp, len(ids))
	}
	V := m.Config.VocabSize
	logits, err := m.Forward(m.NewKVCache(), ids, 0)
	if err != nil {
		t.Fatal(err)
	}
	off := 0
	for i, id := range ids {
		if lp.TextOffset[i] != off {
			t.Errorf("token %d at offset %d, want %d", i, lp.TextOffset[i], off)
		}
		off += len(lp.Tokens[i])
		if i == 0 {
			continue
		}
		want := model.LogSoftmax(logits[(i-1)*V : i*V])[id]
		if *lp.TokenLogprobs[i] != want || len(lp.TopLogprobs[i]) != 2 {
			t.Errorf("token %d: logprob %g (%d alternatives), scoring pass %g", i, *lp.TokenLogprobs[i], len(lp.TopLogprobs[i]), want)
		}
	}

	var gen completionResponse
	postOK(t, srv.URL+"/v1/completions", `{"prompt":"`+text+`","max_tokens":4,"echo":true,"logprobs":0,"temperature":0,"return_token_ids":true}`, &gen)
	g := gen.Choices[0]
	if !strings.HasPrefix(g.Text, text) || len(g.Logprobs.Tokens) != len(ids)+len(g.TokenIDs) || g.Logprobs.TextOffset[len(ids)] != len(text) {
		t.Errorf("echo with a completion: text %q, %d logprob entries for %d+%d tokens", g.Text, len(g.Logprobs.Tokens), len(ids), len(g.TokenIDs))
	}
	if status, _, b := post(t, srv.URL+"/v1/completions", `{"prompt":"x","echo":true,"stream":true}`); status != http.StatusBadRequest || !strings.Contains(string(b), "echo is not supported with stream") {
		t.Errorf("echo with stream: %d %s", status, b)
	}
}

// TestLogitBiasAndPenalties: logit_bias forces a token through the API,
// penalties are accepted, and bad values are 400s naming the field.
func TestLogitBiasAndPenalties(t *testing.T) {
	_, srv, _ := startServer(t)
	var resp completionResponse
	postOK(t, srv.URL+"/v1/completions", `{"prompt":"the quick","max_tokens":5,"temperature":1,"seed":4,"logit_bias":{"65":100},"presence_penalty":0.5,"frequency_penalty":-0.5,"return_token_ids":true}`, &resp)
	for _, id := range resp.Choices[0].TokenIDs {
		if id != 65 {
			t.Fatalf("token ids %v with logit_bias {65: 100}", resp.Choices[0].TokenIDs)
		}
	}
	var chat chatResponse
	postOK(t, srv.URL+"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":3,"logit_bias":{"66":100},"return_token_ids":true}`, &chat)
	if ids := chat.Choices[0].TokenIDs; len(ids) != 3 || ids[0] != 66 {
		t.Errorf("chat token ids %v with logit_bias {66: 100}", ids)
	}
	for _, c := range []struct{ body, want string }{
		{`{"prompt":"x","logit_bias":{"abc":1}}`, `abc\" is not a token id`},
		{`{"prompt":"x","logit_bias":{"999999":1}}`, `999999\" is not a token id`},
		{`{"prompt":"x","logit_bias":{"5":101}}`, "must be between -100 and 100"},
		{`{"prompt":"x","presence_penalty":3}`, "presence_penalty must be between -2 and 2"},
		{`{"prompt":"x","frequency_penalty":-2.5}`, "frequency_penalty must be between -2 and 2"},
	} {
		if status, _, b := post(t, srv.URL+"/v1/completions", c.body); status != http.StatusBadRequest || !strings.Contains(string(b), c.want) {
			t.Errorf("%s: %d %s, want 400 with %q", c.body, status, b, c.want)
		}
	}
}
