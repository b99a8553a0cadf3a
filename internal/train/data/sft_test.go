package data

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/verisim/verisim/internal/engine/generate"
	"github.com/verisim/verisim/internal/engine/tokenizer"
	"github.com/verisim/verisim/internal/task"
	"github.com/verisim/verisim/internal/train"
	"github.com/verisim/verisim/internal/trajectory"
)

func traj(id string, status trajectory.Status, turns ...trajectory.Turn) *trajectory.Trajectory {
	t := &trajectory.Trajectory{Version: trajectory.Version, TaskID: id, Status: status, Turns: turns, Started: time.Unix(0, 0), Finished: time.Unix(1, 0)}
	if status != trajectory.StatusOK {
		t.Error = "broken"
	}
	for i := range t.Turns {
		t.Turns[i].Index = i
	}
	return t
}

func turn(prompt, completion []int32) trajectory.Turn {
	return trajectory.Turn{PromptTokenIDs: prompt, CompletionTokenIDs: completion}
}

func writeTrajectories(t *testing.T, ts ...*trajectory.Trajectory) string {
	t.Helper()
	var b bytes.Buffer
	w := trajectory.NewWriter(&b)
	for _, tr := range ts {
		if err := w.Write(tr); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(t.TempDir(), "trajectories.jsonl")
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadTrajectories(t *testing.T) {
	breakTurn := turn([]int32{1, 50, 51}, []int32{52})
	breakTurn.PrefixBreak = true
	p := writeTrajectories(t,
		// Two turns extending each other: one datum.
		traj("a", trajectory.StatusOK,
			turn([]int32{1, 2, 3}, []int32{10, 11}),
			turn([]int32{1, 2, 3, 10, 11, 20, 21}, []int32{12, 13})),
		// Not ok: skipped.
		traj("b", trajectory.StatusInfraError, turn([]int32{1}, []int32{2})),
		// A marked break: two datums.
		traj("c", trajectory.StatusOK,
			turn([]int32{1, 2}, []int32{30}),
			breakTurn),
	)
	got, err := ReadTrajectories(p)
	if err != nil {
		t.Fatal(err)
	}
	want := []train.Datum{
		{Tokens: []int32{1, 2, 3, 10, 11, 20, 21, 12, 13}, Weights: []float32{0, 0, 0, 1, 1, 0, 0, 1, 1}},
		{Tokens: []int32{1, 2, 30}, Weights: []float32{0, 0, 1}},
		{Tokens: []int32{1, 50, 51, 52}, Weights: []float32{0, 0, 0, 1}},
	}
	if len(got) != len(want) {
		t.Fatalf("%d datums, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if !slices.Equal(got[i].Tokens, want[i].Tokens) || !slices.Equal(got[i].Weights, want[i].Weights) {
			t.Errorf("datum %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestReadTrajectoriesErrors(t *testing.T) {
	good := writeTrajectories(t, traj("a", trajectory.StatusOK, turn([]int32{1}, []int32{2})))
	goodLine, _ := os.ReadFile(good)
	noIDs := writeTrajectories(t, traj("x", trajectory.StatusOK, trajectory.Turn{}))
	noIDsLine, _ := os.ReadFile(noIDs)

	dir := t.TempDir()
	write := func(name string, content string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(content), 0o644)
		return p
	}
	for _, tc := range []struct {
		name, content string
		want          []string
		is            error
	}{
		{"bad json", string(goodLine) + "\n" + string(goodLine) + "{not json}\n", []string{"line 4"}, nil},
		{"invalid record", string(goodLine) + `{"version":1,"task_id":"","sample":0,"status":"ok","reward":0,"started":"2025-01-01T00:00:00Z","finished":"2025-01-01T00:00:00Z"}` + "\n", []string{"line 2", "task_id"}, trajectory.ErrInvalid},
		{"no token ids", string(goodLine) + string(goodLine) + string(noIDsLine), []string{"line 3", "x/0 turn 0", "no token ids"}, ErrNoTokenIDs},
		{"cut short", string(goodLine) + `{"version":1,"task_id":"a"`, []string{"line 2"}, trajectory.ErrTruncated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadTrajectories(write(strings.ReplaceAll(tc.name, " ", "-")+".jsonl", tc.content))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v is not %v", err, tc.is)
			}
		})
	}
	if _, err := ReadTrajectories(filepath.Join(dir, "missing.jsonl")); err == nil {
		t.Error("missing file: no error")
	}
}

func TestChatDatum(t *testing.T) {
	tok := testTokenizer(t)
	tools := []generate.Tool{{Name: "run", Description: "run a command", Parameters: []byte(`{"type":"object"}`)}}
	msgs := []generate.Message{
		{Role: "system", Content: "be brief"},
		{Role: "user", Content: "fix it"},
		{Role: "assistant", ToolCalls: []generate.ToolCall{{ID: "c1", Name: "run", Arguments: `{"command":"make"}`}}},
		{Role: "tool", Content: "ok", ToolCallID: "c1"},
		{Role: "assistant", Content: "Fixed."},
	}
	d, err := ChatDatum(tok, msgs, tools)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Weights) != len(d.Tokens) {
		t.Fatalf("%d weights for %d tokens", len(d.Weights), len(d.Tokens))
	}
	// The tokens decode to the rendered conversation.
	text, _ := tok.DecodeString(d.Tokens)
	full := generate.RenderChat(msgs, tools, false)
	if text != strings.TrimSuffix(full, "\n") {
		t.Errorf("datum decodes to\n%q\nwant\n%q", text, full)
	}
	// The weighted tokens are exactly the two assistant turns' text, each
	// through its <|im_end|>.
	var trained []string
	var run []int32
	for i, w := range d.Weights {
		if w == 1 {
			run = append(run, d.Tokens[i])
		}
		if (w == 0 || i == len(d.Weights)-1) && len(run) > 0 {
			s, _ := tok.DecodeString(run)
			trained = append(trained, s)
			run = nil
		}
	}
	want := []string{
		"<tool_call>\n{\"name\": \"run\", \"arguments\": {\"command\": \"make\"}}\n</tool_call>" + tokenizer.ImEnd,
		"Fixed." + tokenizer.ImEnd,
	}
	if !slices.Equal(trained, want) {
		t.Errorf("trained spans %q, want %q", trained, want)
	}
	// The prompt of each assistant turn is tokenised as the generation
	// prompt the model is given.
	prompt := tok.Encode(generate.RenderChat(msgs[:2], tools, true))
	if !slices.Equal(d.Tokens[:len(prompt)], prompt) {
		t.Error("the first prompt is not tokenised as the generation prompt")
	}
	if _, err := ChatDatum(tok, msgs[:2], tools); err == nil {
		t.Error("a conversation without an assistant turn made a datum")
	}
}

func TestSolutionDemo(t *testing.T) {
	tasks, err := task.LoadSuite(filepath.Join("..", "..", "..", "tasks"))
	if err != nil {
		t.Skip("no bundled tasks:", err)
	}
	tok := testTokenizer(t)
	n := 0
	for _, tk := range tasks {
		if !tk.HasSolution() {
			continue
		}
		msgs, err := SolutionDemo(t.Context(), tk)
		if err != nil {
			t.Errorf("%s: %v", tk.ID, err)
			continue
		}
		n++
		if msgs[1].Content != strings.TrimSpace(tk.Instruction) || msgs[2].Role != "assistant" || len(msgs[2].ToolCalls) == 0 {
			t.Errorf("%s: demonstration starts %+v", tk.ID, msgs[:3])
		}
		for _, m := range msgs {
			// A file read (numbered lines), written, or a command's success.
			if m.Role == "tool" && !strings.HasPrefix(m.Content, "     1\t") && !strings.HasPrefix(m.Content, "Wrote ") && !strings.Contains(m.Content, "[exit code: 0]") {
				t.Errorf("%s: tool result %.200q", tk.ID, m.Content)
			}
		}
		if _, err := ChatDatum(tok, msgs, AgentTools()); err != nil {
			t.Fatalf("%s: %v", tk.ID, err)
		}
		// The tool calls the model is trained to write parse back.
		_, calls, malformed := generate.ParseToolCalls(generate.RenderChat(msgs[2:3], nil, false))
		if len(malformed) > 0 || len(calls) != len(msgs[2].ToolCalls) || calls[0].Name != msgs[2].ToolCalls[0].Name {
			t.Errorf("%s: rendered calls parse as %+v, malformed %q", tk.ID, calls, malformed)
		}
	}
	if n == 0 {
		t.Error("no task has a solution")
	}
}
