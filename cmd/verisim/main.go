// Command verisim runs coding agents in realistic sandboxes and trains them
// with reinforcement learning. This package only parses flags and wires the
// internal packages together.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/verisim/verisim/internal/sandbox/guest"
)

func main() {
	// A sandbox's init is this binary re-executed; it must take over before
	// anything else runs.
	if guest.IsInit() {
		guest.Main()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	root, a := newRoot()
	err := root.ExecuteContext(ctx)
	a.close()
	stop()
	os.Exit(exitCode(err))
}

// Exit statuses of verisim itself. A command run in a sandbox passes its
// own status through, so these sit where shells and container tools put
// theirs.
const (
	exitUsage     = 2   // bad flags or arguments
	exitNotFound  = 120 // no such sandbox or snapshot
	exitImage     = 121 // unknown image or unreadable archive
	exitPersona   = 122 // persona file invalid
	exitRepo      = 123 // repository path missing or not a git checkout
	exitTimeout   = 124 // the command ran past --timeout
	exitFailure   = 125 // verisim itself failed
	exitTask      = 126 // a task file or suite cannot be used
	exitNoCommand = 127 // the command was not found
)

// exitError carries an exit status out of a command.
type exitError struct {
	code int
	err  error // nil when the status is a command's own
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// withCode gives err an exit status; with a nil err it is a command's own
// status, passed through silently.
func withCode(code int, err error) error {
	return &exitError{code: code, err: err}
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(os.Stderr, "verisim:", ee.err)
		}
		return ee.code
	}
	fmt.Fprintln(os.Stderr, "verisim:", err)
	if errors.Is(err, errUsage) {
		return exitUsage
	}
	return exitFailure
}

var errUsage = errors.New("usage")
