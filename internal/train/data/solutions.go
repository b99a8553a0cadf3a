package data

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/verisim/verisim/internal/engine/generate"
	"github.com/verisim/verisim/internal/harness"
	"github.com/verisim/verisim/internal/lazyregexp"
	"github.com/verisim/verisim/internal/task"
)

// AgentTools are the harness's default tools as the chat template shows
// them to the model.
func AgentTools() []generate.Tool {
	specs := harness.DefaultRegistry().Specs()
	out := make([]generate.Tool, len(specs))
	for i, s := range specs {
		out[i] = generate.Tool{Name: s.Name, Description: s.Description, Parameters: s.Parameters}
	}
	return out
}

// AgentPrompt is the start of an episode on t as the harness's agent
// begins it: the default system prompt and the task's instruction.
func AgentPrompt(t *task.Task) []generate.Message {
	return []generate.Message{
		{Role: "system", Content: harness.DefaultSystemPrompt},
		{Role: "user", Content: strings.TrimSpace(t.Instruction)},
	}
}

// copyLine is the one kind of line bundled solve.sh scripts use to apply a
// solution: copy a file from the solution's files/ into the workspace.
var copyLine = lazyregexp.New(`^cp\s+"?\$(?:\{SOLUTION_DIR\}|SOLUTION_DIR)/files/([^"\s]+)"?\s+"?([^"\s]+)"?$`)

// SolutionDemo builds a demonstration episode for t from its reference
// solution, without a sandbox: the agent's prompt (AgentPrompt), then the
// assistant's tool calls that apply solution/solve.sh, the tools' results,
// and a short final answer naming the files changed.
//
// Each `cp "$SOLUTION_DIR/files/SRC" DST` line of solve.sh becomes a
// write_file call of DST with SRC's content, all in one assistant turn,
// preceded by a turn of read_file calls of those DSTs that exist in the
// task's repo/; the remaining commands (chmod +x, say) become one
// run_terminal_cmd call in a last turn. The calls are made for real, with
// the harness's own tools, in a scratch directory that holds only the
// files read, so the tool results are the text the harness returns. A script whose other lines read $SOLUTION_DIR
// cannot be expressed this way and is an error. Blank lines, comments (the
// shebang included) and `set -…` lines are dropped.
func SolutionDemo(ctx context.Context, t *task.Task) ([]generate.Message, error) {
	script, err := os.ReadFile(filepath.Join(t.Dir, task.SolutionDir, task.SolveScript))
	if err != nil {
		return nil, fmt.Errorf("demonstration of %s: %w", t.ID, err)
	}
	var writes []generate.ToolCall
	var rest, changed []string
	for line := range strings.Lines(string(script)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "set -") {
			continue
		}
		if m := copyLine.FindStringSubmatch(line); m != nil {
			content, err := os.ReadFile(filepath.Join(t.Dir, task.SolutionDir, "files", filepath.FromSlash(m[1])))
			if err != nil {
				return nil, fmt.Errorf("demonstration of %s: %w", t.ID, err)
			}
			writes = append(writes, toolCall("write_file", map[string]string{"path": m[2], "content": string(content)}))
			changed = append(changed, m[2])
			continue
		}
		if strings.Contains(line, "SOLUTION_DIR") {
			return nil, fmt.Errorf("demonstration of %s: solve.sh line %q reads the solution directory in a way the demonstration cannot express", t.ID, line)
		}
		rest = append(rest, line)
	}
	// The harness runs one message's calls concurrently, so reading,
	// writing and the commands, which may touch the files written, each
	// get a turn of their own.
	var turns [][]generate.ToolCall
	dir, err := os.MkdirTemp("", "verisim-demo-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	var reads []generate.ToolCall
	for _, p := range changed {
		if t.Repo.Dir == "" || !filepath.IsLocal(p) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(t.Dir, t.Repo.Dir, filepath.FromSlash(p)))
		if err != nil {
			continue // a new file
		}
		dst := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			return nil, err
		}
		reads = append(reads, toolCall("read_file", map[string]string{"path": p}))
	}
	if len(reads) > 0 {
		turns = append(turns, reads)
	}
	if len(writes) > 0 {
		turns = append(turns, writes)
	}
	if len(rest) > 0 {
		turns = append(turns, []generate.ToolCall{toolCall("run_terminal_cmd", map[string]string{"command": strings.Join(rest, " && ")})})
	}
	if len(turns) == 0 {
		return nil, fmt.Errorf("demonstration of %s: solve.sh does nothing", t.ID)
	}
	ws, err := harness.DirWorkspace(dir)
	if err != nil {
		return nil, err
	}
	reg := harness.DefaultRegistry()
	msgs := AgentPrompt(t)
	n := 0
	for _, calls := range turns {
		for i := range calls {
			calls[i].ID = fmt.Sprintf("call_%d", n)
			n++
		}
		msgs = append(msgs, generate.Message{Role: "assistant", ToolCalls: calls})
		for _, c := range calls {
			tool, _ := reg.Lookup(c.Name)
			r, err := tool.Call(ctx, ws, json.RawMessage(c.Arguments))
			if err == nil && r.Error != "" {
				err = errors.New(r.Text())
			}
			if err != nil {
				return nil, fmt.Errorf("demonstration of %s: %s: %w", t.ID, c.Name, err)
			}
			msgs = append(msgs, generate.Message{Role: "tool", Content: r.Text(), ToolCallID: c.ID})
		}
	}
	answer := "Done."
	if len(changed) > 0 {
		answer = "Updated " + strings.Join(changed, ", ") + " to do what you asked."
	}
	return append(msgs, generate.Message{Role: "assistant", Content: answer}), nil
}

func toolCall(name string, args map[string]string) generate.ToolCall {
	b, _ := json.Marshal(args) // a map of strings always marshals
	return generate.ToolCall{Name: name, Arguments: string(b)}
}
