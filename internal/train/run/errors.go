package run

import (
	"errors"
	"fmt"
)

// Errors a caller maps to its own statuses; match them with errors.Is.
var (
	// ErrUsage marks a run refused for its options or the files they
	// name: a missing model, an empty corpus, a resume that does not
	// match, an out directory that already holds a checkpoint.
	ErrUsage = errors.New("invalid training run")
	// ErrTasks marks a task suite, or a task in it, that cannot be used.
	ErrTasks = errors.New("unusable task suite")
)

// markedError is err, matched by errors.Is as mark too; its message is
// err's alone.
type markedError struct{ mark, err error }

func (e *markedError) Error() string        { return e.err.Error() }
func (e *markedError) Unwrap() error        { return e.err }
func (e *markedError) Is(target error) bool { return target == e.mark }

func usageErr(format string, args ...any) error {
	return &markedError{mark: ErrUsage, err: fmt.Errorf(format, args...)}
}

func tasksErr(err error) error {
	return &markedError{mark: ErrTasks, err: err}
}
