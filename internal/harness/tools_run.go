package harness

import (
	"context"
	"fmt"
	"strings"
	"time"
)

const (
	defaultCmdTimeout = 120 * time.Second
	maxCmdTimeout     = 600 * time.Second
	// The start of a command's output says what it is doing and the end how
	// it finished; the middle is dropped when there is too much.
	cmdOutputHead = 16 << 10
	cmdOutputTail = 16 << 10
)

type runArgs struct {
	Command        string `json:"command"`
	TimeoutSeconds int    `json:"timeout_seconds"`
}

func runTerminalCmdTool() Tool {
	params := []param{
		{"command", "string", "Shell command to run (bash where available) in the workspace root.", true},
		{"timeout_seconds", "integer", "Kill the command after this many seconds (default 120, at most 600).", false},
	}
	return define("run_terminal_cmd",
		"Run a shell command in the workspace root and return its combined stdout and stderr and its exit code. Long output is truncated in the middle. Stdin is empty; do not start interactive programs.",
		params, runTerminalCmd)
}

func runTerminalCmd(ctx context.Context, ws Workspace, a runArgs) (Result, error) {
	if strings.TrimSpace(a.Command) == "" {
		return modelError("command is empty"), nil
	}
	timeout := defaultCmdTimeout
	if a.TimeoutSeconds > 0 {
		timeout = min(time.Duration(a.TimeoutSeconds)*time.Second, maxCmdTimeout)
	}
	out := &capture{headMax: cmdOutputHead, tailMax: cmdOutputTail}
	st, err := ws.Run(ctx, a.Command, timeout, out)
	if err != nil {
		if isModelError(err) {
			return modelError("%s", describeError(ws.Root(), err)), nil
		}
		return Result{}, err
	}
	var b strings.Builder
	b.WriteString(strings.ToValidUTF8(out.String(), "\uFFFD"))
	if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
		b.WriteByte('\n')
	}
	if st.TimedOut {
		fmt.Fprintf(&b, "[command timed out after %d seconds and was killed]\n", int(timeout/time.Second))
	}
	fmt.Fprintf(&b, "[exit code: %d]", st.ExitCode)
	return Result{Output: b.String(), Truncated: out.truncated()}, nil
}
