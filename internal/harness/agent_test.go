package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/verisim/verisim/internal/policy"
	"github.com/verisim/verisim/internal/trajectory"
)

// step is one scripted answer of the model server.
type step struct {
	status  int           // HTTP status; 0 means 200
	delay   time.Duration // wait this long (or until the request ends) first
	content string
	calls   [][2]string // tool calls: name, raw arguments
}

// chatRequest is what the model server reads of a request.
type chatRequest struct {
	Messages []struct {
		Role       string `json:"role"`
		Content    string `json:"content"`
		ToolCallID string `json:"tool_call_id"`
		ToolCalls  []struct {
			ID string `json:"id"`
		} `json:"tool_calls"`
	} `json:"messages"`
	Tools     []json.RawMessage `json:"tools"`
	MaxTokens int               `json:"max_tokens"`
}

// modelServer is a scripted chat-completions server shaped like vLLM with
// return_token_ids and logprobs: a test double of the model only. It keeps
// one conversation's token ids, so that each prompt extends the previous
// prompt and completion by one token per new message. The last step
// repeats once the script runs out.
type modelServer struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	script []step
	reqs   []chatRequest
	ids    []int32 // prompt and completion of the last answer
	seen   int     // messages the last prompt and answer account for
	next   int32
}

func newModelServer(t *testing.T, script ...step) *modelServer {
	t.Helper()
	s := &modelServer{t: t, script: script, next: 100}
	s.srv = httptest.NewServer(s)
	t.Cleanup(s.srv.Close)
	return s
}

func (s *modelServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	n := len(s.reqs)
	s.reqs = append(s.reqs, req)
	st := s.script[min(n, len(s.script)-1)]
	s.mu.Unlock()

	if st.delay > 0 {
		timer := time.NewTimer(st.delay)
		defer timer.Stop()
		select {
		case <-r.Context().Done():
			return
		case <-timer.C:
		}
	}
	if st.status != 0 && st.status != http.StatusOK {
		http.Error(w, fmt.Sprintf(`{"error":{"message":"scripted %d"}}`, st.status), st.status)
		return
	}

	s.mu.Lock()
	prompt := slices.Clone(s.ids)
	for range len(req.Messages) - s.seen {
		prompt = append(prompt, s.token())
	}
	completion := []int32{s.token(), s.token(), s.token()}
	s.ids = append(slices.Clone(prompt), completion...)
	s.seen = len(req.Messages) + 1
	s.mu.Unlock()

	type fn struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type call struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}
	type logprob struct {
		Token   string  `json:"token"`
		Logprob float64 `json:"logprob"`
	}
	var calls []call
	for i, c := range st.calls {
		calls = append(calls, call{ID: fmt.Sprintf("call_%d_%d", n, i), Type: "function", Function: fn{c[0], c[1]}})
	}
	var lps []logprob
	for _, id := range completion {
		lps = append(lps, logprob{Token: fmt.Sprintf("token_id:%d", id), Logprob: -0.25})
	}
	finish := "stop"
	if len(calls) > 0 {
		finish = "tool_calls"
	}
	body := map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion", "model": "scripted",
		"prompt_token_ids": prompt,
		"choices": []any{map[string]any{
			"index":         0,
			"message":       map[string]any{"role": "assistant", "content": st.content, "tool_calls": calls},
			"finish_reason": finish,
			"token_ids":     completion,
			"logprobs":      map[string]any{"content": lps},
		}},
		"usage": map[string]int{"prompt_tokens": len(prompt), "completion_tokens": len(completion), "total_tokens": len(prompt) + len(completion)},
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set(policy.HeaderWeightsVersion, "v1")
	if err := json.NewEncoder(w).Encode(body); err != nil {
		s.t.Errorf("model server: %v", err)
	}
}

func (s *modelServer) token() int32 { s.next++; return s.next }

func (s *modelServer) requests() []chatRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reqs)
}

func (s *modelServer) agent(t *testing.T, cfg Config) *Agent {
	t.Helper()
	c, err := policy.New(policy.Options{
		BaseURL: s.srv.URL, Model: "scripted", MaxRetries: 1,
		BackoffBase: time.Millisecond, BackoffMax: 2 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewAgent(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// run runs an episode and checks what every trajectory must satisfy.
func run(t *testing.T, a *Agent, ws Workspace) *trajectory.Trajectory {
	t.Helper()
	traj, err := a.Run(t.Context(), ws, "make the change")
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := traj.Validate(); err != nil {
		t.Fatalf("trajectory does not validate: %v", err)
	}
	if traj.Reward != 0 {
		t.Errorf("reward %v set by the agent", traj.Reward)
	}
	if traj.Started.IsZero() || traj.Finished.Before(traj.Started) {
		t.Errorf("started %v, finished %v", traj.Started, traj.Finished)
	}
	return traj
}

func flagNames(traj *trajectory.Trajectory) []string {
	var names []string
	for _, f := range traj.Flags {
		names = append(names, f.Name)
	}
	return names
}

func TestAgentWritesFileThenAnswers(t *testing.T) {
	srv := newModelServer(t,
		step{calls: [][2]string{{"write_file", `{"path": "pkg/hello.txt", "content": "hi\n"}`}}},
		step{content: "Wrote pkg/hello.txt."},
	)
	ws, dir := newDir(t, nil)
	var seen []int
	a := srv.agent(t, Config{OnTurn: func(tr trajectory.Turn) { seen = append(seen, tr.Index) }})
	traj := run(t, a, ws)

	if got, err := os.ReadFile(filepath.Join(dir, "pkg/hello.txt")); err != nil || string(got) != "hi\n" {
		t.Fatalf("hello.txt = %q, %v", got, err)
	}
	if traj.Status != trajectory.StatusOK || traj.Metadata[MetaStop] != StopAnswer || len(traj.Flags) != 0 {
		t.Fatalf("status %s stop %q flags %v error %q", traj.Status, traj.Metadata[MetaStop], traj.Flags, traj.Error)
	}
	if len(traj.Turns) != 2 || !slices.Equal(seen, []int{0, 1}) {
		t.Fatalf("%d turns, OnTurn saw %v", len(traj.Turns), seen)
	}
	t0, t1 := traj.Turns[0], traj.Turns[1]
	for i, tr := range traj.Turns {
		if len(tr.PromptTokenIDs) == 0 || len(tr.CompletionTokenIDs) != 3 || len(tr.CompletionLogprobs) != 3 {
			t.Errorf("turn %d: %d prompt ids, %d completion ids, %d logprobs", i, len(tr.PromptTokenIDs), len(tr.CompletionTokenIDs), len(tr.CompletionLogprobs))
		}
	}
	if t1.PrefixBreak || !t0.PrefixOf(t1.PromptTokenIDs) {
		t.Errorf("turn 1 does not extend turn 0: break %v, prompt %v after %v+%v", t1.PrefixBreak, t1.PromptTokenIDs, t0.PromptTokenIDs, t0.CompletionTokenIDs)
	}
	if len(t0.Messages) != 2 || !t0.Messages[0].ToolCalls[0].Valid || t0.Messages[1].Role != "tool" || t0.Messages[1].ToolCallID != "call_0_0" {
		t.Errorf("turn 0 messages: %+v", t0.Messages)
	}
	if len(t0.Observations) != 1 || t0.Observations[0].Tool != "write_file" || t0.Observations[0].Error != "" || t0.Observations[0].ToolCallID != "call_0_0" {
		t.Errorf("turn 0 observations: %+v", t0.Observations)
	}
	if traj.TaskID != "adhoc" || traj.Model.Name != "scripted" || !strings.HasPrefix(traj.Model.Endpoint, srv.srv.URL) || !slices.Equal(traj.Model.WeightsVersions, []string{"v1"}) {
		t.Errorf("task %q model %+v", traj.TaskID, traj.Model)
	}
	if traj.Timings["model"] <= 0 || traj.Timings["tools"] <= 0 {
		t.Errorf("timings %v", traj.Timings)
	}

	reqs := srv.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	first, second := reqs[0], reqs[1]
	if len(first.Tools) != len(DefaultTools()) || first.Messages[0].Role != "system" || first.Messages[0].Content != DefaultSystemPrompt || first.Messages[1].Content != "make the change" {
		t.Errorf("first request: %d tools, messages %+v", len(first.Tools), first.Messages)
	}
	if len(second.Messages) != 4 {
		t.Fatalf("second request has %d messages", len(second.Messages))
	}
	asst, tool := second.Messages[2], second.Messages[3]
	if asst.Role != "assistant" || len(asst.ToolCalls) != 1 || tool.Role != "tool" || tool.ToolCallID != asst.ToolCalls[0].ID {
		t.Errorf("second request history: %+v", second.Messages[2:])
	}
}

// rendezvous is a tool each of whose calls waits until another call of it is
// running too, so that it succeeds only when calls run concurrently.
type rendezvous struct{ arrived chan struct{} }

func (r *rendezvous) Name() string        { return "rendezvous" }
func (r *rendezvous) Description() string { return "waits for a second call" }
func (r *rendezvous) Parameters() json.RawMessage {
	return schema(param{"tag", "string", "echoed", true})
}
func (r *rendezvous) Call(ctx context.Context, ws Workspace, raw json.RawMessage) (Result, error) {
	var a struct{ Tag string }
	if err := json.Unmarshal(raw, &a); err != nil {
		return Result{Error: err.Error(), Malformed: true}, nil
	}
	r.arrived <- struct{}{} // buffered for both calls
	deadline := time.NewTimer(5 * time.Second)
	defer deadline.Stop()
	for {
		if len(r.arrived) == 2 {
			return Result{Output: a.Tag}, nil
		}
		select {
		case <-deadline.C:
			return Result{Error: "the other call never ran alongside"}, nil
		case <-ctx.Done():
			return Result{}, ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

func TestAgentParallelToolCalls(t *testing.T) {
	srv := newModelServer(t,
		step{calls: [][2]string{{"rendezvous", `{"tag": "first"}`}, {"rendezvous", `{"tag": "second"}`}}},
		step{content: "done"},
	)
	reg, err := NewRegistry(append(DefaultTools(), &rendezvous{arrived: make(chan struct{}, 2)})...)
	if err != nil {
		t.Fatal(err)
	}
	ws, _ := newDir(t, nil)
	traj := run(t, srv.agent(t, Config{Tools: reg}), ws)

	obs := traj.Turns[0].Observations
	if len(obs) != 2 || obs[0].Output != "first" || obs[1].Output != "second" || obs[0].Error != "" || obs[1].Error != "" {
		t.Fatalf("observations: %+v", obs)
	}
	msgs := srv.requests()[1].Messages
	if got := []string{msgs[3].ToolCallID, msgs[3].Content, msgs[4].ToolCallID, msgs[4].Content}; !slices.Equal(got, []string{"call_0_0", "first", "call_0_1", "second"}) {
		t.Errorf("tool messages to the model: %v", got)
	}
}

func TestAgentMalformedToolCall(t *testing.T) {
	srv := newModelServer(t,
		step{calls: [][2]string{{"write_file", `{"path": "x.txt", "content": `}, {"frobnicate", `{}`}}},
		step{calls: [][2]string{{"write_file", `{"path": "x.txt", "content": "x"}`}}},
		step{content: "done"},
	)
	ws, dir := newDir(t, nil)
	traj := run(t, srv.agent(t, Config{}), ws)

	if traj.Status != trajectory.StatusOK || len(traj.Turns) != 3 {
		t.Fatalf("status %s, %d turns, error %q", traj.Status, len(traj.Turns), traj.Error)
	}
	if !slices.Equal(flagNames(traj), []string{FlagMalformedToolCall, FlagMalformedToolCall}) {
		t.Fatalf("flags %+v", traj.Flags)
	}
	for _, f := range traj.Flags {
		if f.Turn != 0 {
			t.Errorf("flag %+v not on turn 0", f)
		}
	}
	if !strings.Contains(traj.Flags[0].Evidence, "write_file") || !strings.Contains(traj.Flags[1].Evidence, "frobnicate") {
		t.Errorf("evidence: %+v", traj.Flags)
	}
	t0 := traj.Turns[0]
	if t0.Messages[0].ToolCalls[0].Valid || t0.Observations[0].Error == "" {
		t.Errorf("broken call recorded as valid: %+v %+v", t0.Messages[0].ToolCalls[0], t0.Observations[0])
	}
	if tool := srv.requests()[1].Messages[3]; !strings.HasPrefix(tool.Content, "Error: ") {
		t.Errorf("model was not told of its broken call: %q", tool.Content)
	}
	if _, err := os.Stat(filepath.Join(dir, "x.txt")); err != nil {
		t.Errorf("the episode did not go on to write x.txt: %v", err)
	}
}

func TestAgentBudgets(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cfg       Config
		wantTurns int
		wantStop  string
	}{
		{"max_turns", Config{MaxTurns: 3}, 3, StopMaxTurns},
		// Each completion is 3 tokens: 3 spent, then a request for at most 2.
		{"max_tokens", Config{MaxTokens: 5}, 2, StopMaxTokens},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newModelServer(t, step{calls: [][2]string{{"list_dir", `{"path": "."}`}}})
			ws, _ := newDir(t, nil)
			traj := run(t, srv.agent(t, tc.cfg), ws)
			if traj.Status != trajectory.StatusOK || traj.Metadata[MetaStop] != tc.wantStop || len(traj.Turns) != tc.wantTurns {
				t.Fatalf("status %s stop %q, %d turns, error %q", traj.Status, traj.Metadata[MetaStop], len(traj.Turns), traj.Error)
			}
			if slices.Contains(flagNames(traj), FlagNoEditReply) {
				t.Errorf("budget stop flagged as a reply: %+v", traj.Flags)
			}
			reqs := srv.requests()
			if len(reqs) != tc.wantTurns {
				t.Errorf("%d requests for %d turns", len(reqs), tc.wantTurns)
			}
			if tc.cfg.MaxTokens > 0 && reqs[1].MaxTokens != 2 {
				t.Errorf("second request asked for %d tokens, want what is left (2)", reqs[1].MaxTokens)
			}
		})
	}
}

// failingTool fails as infrastructure does.
type failingTool struct{}

func (failingTool) Name() string                { return "flaky" }
func (failingTool) Description() string         { return "fails" }
func (failingTool) Parameters() json.RawMessage { return schema() }
func (failingTool) Call(context.Context, Workspace, json.RawMessage) (Result, error) {
	return Result{}, errors.New("sandbox died")
}

func TestAgentFailures(t *testing.T) {
	reg, err := NewRegistry(failingTool{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		script     []step
		cfg        Config
		wantStatus trajectory.Status
		wantErr    string
		wantReqs   int
		wantTurns  int
	}{
		{"unavailable", []step{{status: http.StatusServiceUnavailable}}, Config{},
			trajectory.StatusInfraError, "unavailable", 2, 0},
		{"refused", []step{{status: http.StatusBadRequest}}, Config{},
			trajectory.StatusPolicyError, "400", 1, 0},
		{"unauthorized", []step{{status: http.StatusUnauthorized}}, Config{},
			trajectory.StatusInfraError, "401", 1, 0},
		{"slow", []step{{delay: 10 * time.Second}}, Config{MaxWall: 100 * time.Millisecond},
			trajectory.StatusTimeout, "wall-time budget", 1, 0},
		{"tool_infra", []step{{calls: [][2]string{{"flaky", `{}`}}}}, Config{Tools: reg},
			trajectory.StatusInfraError, "sandbox died", 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newModelServer(t, tc.script...)
			ws, _ := newDir(t, nil)
			start := time.Now()
			traj := run(t, srv.agent(t, tc.cfg), ws)
			if traj.Status != tc.wantStatus || !strings.Contains(traj.Error, tc.wantErr) {
				t.Fatalf("status %s error %q; want %s with %q", traj.Status, traj.Error, tc.wantStatus, tc.wantErr)
			}
			if n := len(srv.requests()); n != tc.wantReqs || len(traj.Turns) != tc.wantTurns {
				t.Errorf("%d requests, %d turns; want %d, %d", n, len(traj.Turns), tc.wantReqs, tc.wantTurns)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %s", d)
			}
		})
	}
}

func TestAgentNoEditReply(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script []step
		want   bool
	}{
		{"question", []step{{content: "Which date format do you mean?"}}, true},
		{"read_only", []step{{calls: [][2]string{{"read_file", `{"path": "a.txt"}`}}}, {content: "Looks fine to me."}}, true},
		{"edited", []step{{calls: [][2]string{{"edit_file", `{"path": "a.txt", "old_string": "a", "new_string": "b"}`}}}, {content: "Fixed."}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newModelServer(t, tc.script...)
			ws, _ := newDir(t, map[string]string{"a.txt": "a\n"})
			traj := run(t, srv.agent(t, Config{}), ws)
			if traj.Status != trajectory.StatusOK || traj.Metadata[MetaStop] != StopAnswer {
				t.Fatalf("status %s stop %q error %q", traj.Status, traj.Metadata[MetaStop], traj.Error)
			}
			got := slices.Contains(flagNames(traj), FlagNoEditReply)
			if got != tc.want {
				t.Fatalf("no_edit_reply %v, want %v; flags %+v; observations %+v", got, tc.want, traj.Flags, traj.Turns[0].Observations)
			}
			if got && traj.Flags[0].Turn != len(traj.Turns)-1 {
				t.Errorf("flag on turn %d, want the answer's", traj.Flags[0].Turn)
			}
		})
	}
}

func TestAgentRunRejectsBadCalls(t *testing.T) {
	srv := newModelServer(t, step{content: "x"})
	a := srv.agent(t, Config{})
	ws, _ := newDir(t, nil)
	if _, err := a.Run(t.Context(), nil, "do it"); err == nil {
		t.Error("nil workspace accepted")
	}
	if _, err := a.Run(t.Context(), ws, "  "); err == nil {
		t.Error("empty instruction accepted")
	}
	if _, err := NewAgent(nil, Config{}); err == nil {
		t.Error("nil model accepted")
	}
	if n := len(srv.requests()); n != 0 {
		t.Errorf("%d requests for rejected calls", n)
	}
}
