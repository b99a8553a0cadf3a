package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/verisim/verisim/internal/harness"
	"github.com/verisim/verisim/internal/trajectory"
)

// reply is one scripted answer of the model: text, or tool calls (name,
// raw arguments).
type reply struct {
	content string
	calls   [][2]string
}

// scriptedModel is a chat-completions server that answers from a script: a
// test double of the model only. It records the tool results it is sent.
type scriptedModel struct {
	url string
	mu  sync.Mutex
	n   int
	obs []string // contents of the "tool" messages of the last request
}

func newScriptedModel(t *testing.T, script ...reply) *scriptedModel {
	t.Helper()
	m := &scriptedModel{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"object":"list","data":[{"id":"scripted","object":"model"}]}`)
	})
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model != "scripted" {
			http.Error(w, fmt.Sprintf("bad request: %v, model %q", err, req.Model), http.StatusBadRequest)
			return
		}
		m.mu.Lock()
		st := script[min(m.n, len(script)-1)]
		n := m.n
		m.n++
		m.obs = m.obs[:0]
		for _, msg := range req.Messages {
			if msg.Role == "tool" {
				m.obs = append(m.obs, msg.Content)
			}
		}
		m.mu.Unlock()
		var calls []any
		for i, c := range st.calls {
			calls = append(calls, map[string]any{"id": fmt.Sprintf("call_%d_%d", n, i), "type": "function",
				"function": map[string]string{"name": c[0], "arguments": c[1]}})
		}
		finish := "stop"
		if len(calls) > 0 {
			finish = "tool_calls"
		}
		json.NewEncoder(w).Encode(map[string]any{
			"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion", "model": "scripted",
			"choices": []any{map[string]any{"index": 0, "finish_reason": finish,
				"message": map[string]any{"role": "assistant", "content": st.content, "tool_calls": calls}}},
			"usage": map[string]int{"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13},
		})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	m.url = srv.URL
	return m
}

func (m *scriptedModel) observations() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.obs...)
}

// agentCmd runs verisim agent without a sandbox, with stdin from stdin (a
// pipe unless it is an *os.File).
func agentCmd(t *testing.T, stdin io.Reader, args ...string) result {
	t.Helper()
	return runVerisim(t, stdin, append([]string{"--state", t.TempDir(), "agent"}, args...)...)
}

func TestAgentWritesFile(t *testing.T) {
	m := newScriptedModel(t,
		reply{calls: [][2]string{{"write_file", `{"path": "notes/hello.txt", "content": "hi\n"}`}}},
		reply{content: "Wrote notes/hello.txt."},
	)
	dir := t.TempDir()
	trajFile := filepath.Join(t.TempDir(), "runs", "agent.jsonl")
	// No --model-name: the server's /v1/models names it.
	r := agentCmd(t, strings.NewReader(""), "--model", m.url, "--yes", "--dir", dir, "--trajectory", trajFile, "write a greeting")
	if r.code != 0 || r.stdout != "Wrote notes/hello.txt.\n" || !strings.Contains(r.stderr, "→ write_file notes/hello.txt") {
		t.Fatalf("code %d out %q err %q", r.code, r.stdout, r.stderr)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "notes/hello.txt")); err != nil || string(got) != "hi\n" {
		t.Errorf("hello.txt = %q, %v", got, err)
	}
	trajs, err := trajectory.ReadFile(trajFile)
	if err != nil || len(trajs) != 1 || trajs[0].Status != trajectory.StatusOK || len(trajs[0].Turns) != 2 || trajs[0].Model.Name != "scripted" {
		t.Fatalf("trajectories %+v, %v", trajs, err)
	}
}

func TestAgentConfirmsCommands(t *testing.T) {
	script := []reply{
		{calls: [][2]string{{"run_terminal_cmd", `{"command": "touch ran"}`}}},
		{content: "Done."},
	}
	declined := func(t *testing.T, m *scriptedModel, dir string, r result) {
		t.Helper()
		if r.code != 0 || r.stdout != "Done.\n" {
			t.Fatalf("code %d out %q err %q", r.code, r.stdout, r.stderr)
		}
		if _, err := os.Stat(filepath.Join(dir, "ran")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the declined command ran: %v", err)
		}
		if obs := m.observations(); len(obs) != 1 || !strings.Contains(obs[0], "the user declined to run this command") {
			t.Errorf("the model read %q", obs)
		}
	}

	// onTerminal runs the agent with its stdin on a pseudo-terminal that
	// has answer typed into it.
	onTerminal := func(t *testing.T, answer string) (*scriptedModel, string, result) {
		m, dir := newScriptedModel(t, script...), t.TempDir()
		ptmx, tty, err := pty.Open()
		if err != nil {
			t.Skipf("no pseudo-terminal: %v", err)
		}
		defer ptmx.Close()
		defer tty.Close()
		go io.Copy(io.Discard, ptmx)      // the echo
		ptmx.Write([]byte(answer + "\n")) // the line discipline holds it until read
		return m, dir, agentCmd(t, tty, "--model", m.url, "--model-name", "scripted", "--dir", dir, "make a file")
	}
	t.Run("terminal answers n", func(t *testing.T) {
		m, dir, r := onTerminal(t, "n")
		declined(t, m, dir, r)
		if !strings.Contains(r.stderr, "run: touch ran? [y/N]") {
			t.Errorf("no question on stderr: %q", r.stderr)
		}
	})
	t.Run("terminal answers yes", func(t *testing.T) {
		_, dir, r := onTerminal(t, "yes")
		if _, err := os.Stat(filepath.Join(dir, "ran")); r.code != 0 || err != nil {
			t.Errorf("accepted command did not run: %v; code %d err %q", err, r.code, r.stderr)
		}
	})
	t.Run("stdin not a terminal", func(t *testing.T) {
		m, dir := newScriptedModel(t, script...), t.TempDir()
		r := agentCmd(t, strings.NewReader("y\n"), "--model", m.url, "--model-name", "scripted", "--dir", dir, "make a file")
		declined(t, m, dir, r)
		if strings.Count(r.stderr, "not a terminal") != 1 {
			t.Errorf("stderr should say once that commands are refused: %q", r.stderr)
		}
	})
}

func TestAgentErrors(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // so that the server sees the client leave
		<-r.Context().Done()
	}))
	t.Cleanup(hang.Close)
	dir := t.TempDir()
	cases := []struct {
		name      string
		args      []string
		wantCode  int
		wantInErr string
	}{
		{"model unreachable", []string{"--model", closed, "--model-name", "m", "--retries", "1", "--yes", "--dir", dir, "fix it"}, exitFailure, "cannot reach the model at " + closed},
		{"model unreachable, no name", []string{"--model", closed, "--dir", dir, "fix it"}, exitFailure, "cannot reach the model at " + closed},
		{"timeout", []string{"--model", hang.URL, "--model-name", "m", "--timeout", "300ms", "--yes", "--dir", dir, "fix it"}, exitTimeout, "--timeout 300ms"},
		{"no model", []string{"--dir", dir, "fix it"}, exitUsage, "--model URL is required"},
		{"no instruction", []string{"--model", closed}, exitUsage, "instruction"},
		{"no such dir", []string{"--model", closed, "--model-name", "m", "--dir", filepath.Join(dir, "nope"), "fix it"}, exitUsage, "--dir"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			r := agentCmd(t, strings.NewReader(""), tc.args...)
			if r.code != tc.wantCode || !strings.Contains(r.stderr, tc.wantInErr) || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
				t.Errorf("code %d err %q; want code %d, one line containing %q", r.code, r.stderr, tc.wantCode, tc.wantInErr)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

func TestAgentSandbox(t *testing.T) {
	c := newCLI(t)
	repo := gitRepo(t)
	// Uncommitted work of the user's: the agent sees it, the diff leaves it
	// out, and it is still there afterwards.
	os.WriteFile(filepath.Join(repo, "notes.txt"), []byte("wip: remember the edge case\n"), 0o644)
	// The checkout is a user's, as on a developer's machine.
	if out, err := exec.Command("chown", "-R", "1000:1000", repo).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v %s", err, out)
	}
	m := newScriptedModel(t,
		reply{calls: [][2]string{{"read_file", `{"path": "notes.txt"}`}}},
		reply{calls: [][2]string{{"edit_file", `{"path": "README.md", "old_string": "# demo", "new_string": "# demo, edited"}`}}},
		reply{calls: [][2]string{{"run_terminal_cmd", `{"command": "echo more >> notes.txt && touch made-by-agent.txt"}`}}},
		reply{content: "Edited the README."},
	)
	r := c.do("", "agent", "--model", m.url, "--model-name", "scripted", "--sandbox", "--dir", repo, "edit the readme")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "Edited the README.\n") || !strings.Contains(r.stdout, "+# demo, edited\n") ||
		!strings.Contains(r.stdout, "+more\n") || !strings.Contains(r.stdout, "made-by-agent.txt") ||
		strings.Contains(r.stdout, "+wip: remember") || !strings.Contains(r.stderr, "→ edit_file README.md") {
		t.Fatalf("code %d out %q err %q", r.code, r.stdout, r.stderr)
	}
	if obs := m.observations(); len(obs) == 0 {
		t.Fatal("no observations reached the model")
	}
	for name, want := range map[string]string{"README.md": "# demo\n", "notes.txt": "wip: remember the edge case\n"} {
		if got, _ := os.ReadFile(filepath.Join(repo, name)); string(got) != want {
			t.Errorf("the checkout's %s changed: %q", name, got)
		}
	}
	if _, err := os.Stat(filepath.Join(repo, "made-by-agent.txt")); err == nil {
		t.Error("a file the agent made appeared in the checkout")
	}
	if out, _ := exec.Command("git", "-c", "safe.directory=*", "-C", repo, "status", "--porcelain").Output(); string(out) != "?? notes.txt\n" {
		t.Errorf("the checkout's git state changed: %q", out)
	}
	// A directory owned by root cannot be the user's.
	rootRepo := gitRepo(t)
	r = c.do("", "agent", "--model", m.url, "--model-name", "scripted", "--sandbox", "--dir", rootRepo, "edit the readme")
	if r.code != exitRepo || !strings.Contains(r.stderr, "belongs to root") {
		t.Errorf("root-owned checkout: exit %d, %s", r.code, r.stderr)
	}
	c.assertClean()
}

// TestLineAsker checks the answers the terminal question takes.
func TestLineAsker(t *testing.T) {
	for in, want := range map[string]bool{"y\n": true, "YES\n": true, " yes \n": true, "n\n": false, "\n": false, "": false, "yep\n": false} {
		ws, err := harness.DirWorkspace(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		var prompt bytes.Buffer
		pr, pw, _ := os.Pipe()
		pw.WriteString(in)
		pw.Close()
		l := &lineAsker{in: bufio.NewReader(pr), out: &prompt}
		var out bytes.Buffer
		st, err := harness.ConfirmWorkspace(ws, l.ask).Run(t.Context(), "echo ran", time.Minute, &out)
		pr.Close()
		ran := strings.Contains(out.String(), "ran\n")
		if err != nil || ran != want || (ran == (st.ExitCode == harness.DeclinedExitCode)) || prompt.String() != "run: echo ran? [y/N] " {
			t.Errorf("answer %q: ran %v (exit %d, err %v, prompt %q); want %v", in, ran, st.ExitCode, err, prompt.String(), want)
		}
	}
}
