package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/verisim/verisim/internal/policy"
	"github.com/verisim/verisim/internal/sandbox"
	"github.com/verisim/verisim/internal/sandbox/process"
)

// TestSandboxWorkspace runs the same tools over a sandbox (the process
// backend) to show that training takes the production code path.
func TestSandboxWorkspace(t *testing.T) {
	ctx := t.Context()
	rt, err := process.New(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := rt.Create(ctx, sandbox.Spec{Env: []string{"PATH=/usr/bin:/bin"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close(t.Context()) })
	var pwd strings.Builder
	if _, err := sb.Run(ctx, sandbox.Cmd{Args: []string{"pwd"}, Stdout: &pwd}); err != nil {
		t.Fatal(err)
	}
	ws := SandboxWorkspace(sb, strings.TrimSpace(pwd.String()))

	steps := []struct{ tool, args, want string }{
		{"write_file", `{"path":"src/a.go","content":"package a\n// TODO fix\n"}`, "Wrote 22 bytes"},
		{"edit_file", `{"path":"src/a.go","old_string":"TODO fix","new_string":"fixed"}`, "Replaced 1 occurrence(s)"},
		{"read_file", `{"path":"src/a.go"}`, "     2\t// fixed\n"},
		{"list_dir", `{}`, "src/"},
		{"glob", `{"pattern":"**/*.go"}`, "src/a.go"},
		{"grep", `{"pattern":"fix","include":"*.go"}`, "src/a.go:2:// fixed"},
		{"run_terminal_cmd", `{"command":"cat src/a.go | wc -l; exit 4"}`, "2\n[exit code: 4]"},
		{"delete_file", `{"path":"src/a.go"}`, "Deleted src/a.go"},
		{"read_file", `{"path":"src/a.go"}`, "Error: src/a.go: no such file or directory"},
	}
	reg := DefaultRegistry()
	for _, s := range steps {
		res, err := CallAll(ctx, ws, reg, []policy.ToolCall{{Name: s.tool, Arguments: s.args}})
		if err != nil {
			t.Fatalf("%s: %v", s.tool, err)
		}
		if got := res[0].Text(); !strings.Contains(got, s.want) {
			t.Fatalf("%s(%s) = %q, want %q", s.tool, s.args, got, s.want)
		}
	}
	res := callTool(t, ws, "run_terminal_cmd", `{"command":"sleep 30","timeout_seconds":1}`)
	if !strings.Contains(res.Output, "timed out after 1 seconds") {
		t.Fatalf("timeout in sandbox: %q", res.Output)
	}
}

func FuzzApplyEdit(f *testing.F) {
	f.Add("a b a", "a", "z", false)
	f.Add("a b a", "a", "z", true)
	f.Add("", "", "", false)
	f.Add("xx", "x", "xx", true)
	f.Fuzz(func(t *testing.T, content, old, new string, all bool) {
		out, n, msg := applyEdit(content, old, new, all)
		if msg != "" {
			if n != 0 || out != "" {
				t.Fatalf("refusal with output %q, %d", out, n)
			}
			return
		}
		if n < 1 || (!all && n != 1) {
			t.Fatalf("%d replacements (all=%v)", n, all)
		}
		if len(out) != len(content)+n*(len(new)-len(old)) {
			t.Fatalf("length %d, want %d", len(out), len(content)+n*(len(new)-len(old)))
		}
		if out != strings.ReplaceAll(content, old, new) {
			t.Fatalf("result differs from ReplaceAll")
		}
	})
}

// FuzzToolArgs feeds arbitrary argument text to every default tool: the
// answer is a Result, never a panic, and JSON that is not an object is
// always a malformed call.
func FuzzToolArgs(f *testing.F) {
	for _, s := range []string{`{"path":"f"}`, `{"pattern":"**/*","include":"*.{a,b}"}`, `{"old_string":"x","new_string":"y","path":"f"}`, `{`, `null`, `{"start_line":-1,"path":"f"}`, `{"path":"../.."}`} {
		f.Add(s)
	}
	ws, _ := newDir(f, map[string]string{"f": "x\ny\n"})
	tools := DefaultTools()
	f.Fuzz(func(t *testing.T, args string) {
		for _, tl := range tools {
			if tl.Name() == "run_terminal_cmd" || tl.Name() == "write_file" || tl.Name() == "delete_file" || tl.Name() == "edit_file" {
				continue // these act; the parsing they share is covered by the others
			}
			res, err := tl.Call(t.Context(), ws, json.RawMessage(args))
			if err != nil {
				t.Fatalf("%s(%q): infrastructure error %v", tl.Name(), args, err)
			}
			var obj map[string]json.RawMessage
			if json.Unmarshal([]byte(args), &obj) != nil && strings.TrimSpace(args) != "" && !res.Malformed {
				t.Fatalf("%s(%q): not an object yet not malformed: %+v", tl.Name(), args, res)
			}
		}
	})
}

// noFork is a sandbox that cannot start a command: its processes hold the
// pids limit (the error the local backend returns then).
type noFork struct{ sandbox.Sandbox }

func (noFork) Run(context.Context, sandbox.Cmd) (sandbox.ExitStatus, error) {
	return sandbox.ExitStatus{}, fmt.Errorf("start /bin/sh: %w", syscall.EAGAIN)
}

// TestRunCannotFork: a command that cannot be started is the model's
// answer, as in a terminal, not a failure of the machine.
func TestRunCannotFork(t *testing.T) {
	rt, err := process.New(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := rt.Create(t.Context(), sandbox.Spec{Env: []string{"PATH=/usr/bin:/bin"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close(t.Context()) })
	ws := SandboxWorkspace(noFork{sb}, t.TempDir())
	reg, err := NewRegistry(DefaultTools()...)
	if err != nil {
		t.Fatal(err)
	}
	res, err := CallAll(t.Context(), ws, reg, []policy.ToolCall{{ID: "1", Name: "run_terminal_cmd", Arguments: `{"command":"true"}`}})
	if err != nil {
		t.Fatalf("run_terminal_cmd when no process can start: %v", err)
	}
	if !strings.Contains(res[0].Output, "fork: Resource temporarily unavailable") || !strings.Contains(res[0].Output, "[exit code: 2]") {
		t.Errorf("result %+v", res[0])
	}
}
