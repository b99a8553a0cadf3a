package harness

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"
)

// Declined is the output a command the user declined shows the model, and
// DeclinedExitCode its exit code (the shell's "cannot execute").
const (
	Declined         = "[the user declined to run this command]"
	DeclinedExitCode = 126
)

// AskFunc asks the user whether the agent may run command. An error means
// the user could not be asked (ctx ended, the terminal failed).
type AskFunc func(ctx context.Context, command string) (bool, error)

// ConfirmWorkspace returns ws with every command put to ask first. A
// declined command does not run; the model reads Declined and a non-zero
// exit code, so it is the model's observation, not an infrastructure
// failure. File operations pass straight through. Asks never overlap, even
// for parallel tool calls, so ask need not be safe for concurrent use.
func ConfirmWorkspace(ws Workspace, ask AskFunc) Workspace {
	return &confirmWorkspace{Workspace: ws, ask: ask}
}

type confirmWorkspace struct {
	Workspace
	ask AskFunc
	mu  sync.Mutex // one question on the terminal at a time
}

func (w *confirmWorkspace) Run(ctx context.Context, command string, timeout time.Duration, out io.Writer) (RunStatus, error) {
	w.mu.Lock()
	ok, err := w.ask(ctx, command)
	w.mu.Unlock()
	if err != nil {
		return RunStatus{}, fmt.Errorf("ask to run command: %w", err)
	}
	if !ok {
		if _, err := io.WriteString(out, Declined+"\n"); err != nil {
			return RunStatus{}, err
		}
		return RunStatus{ExitCode: DeclinedExitCode}, nil
	}
	return w.Workspace.Run(ctx, command, timeout, out)
}
