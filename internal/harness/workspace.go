package harness

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"sync"
	"syscall"
	"time"

	"github.com/verisim/verisim/internal/sandbox"
)

// Workspace is the machine a tool call acts on: a directory tree and a shell
// that runs in it. Paths are relative to Root unless absolute.
type Workspace interface {
	// Root is the directory relative paths start from and commands run in.
	Root() string
	// Run runs command with a shell in Root, writing stdout and stderr
	// merged to out (possibly from several goroutines at once; out need not
	// be safe for that, Run serialises the writes). The command is killed,
	// with all it started, when timeout passes (zero means no timeout). A
	// non-zero exit or a timeout is reported in RunStatus, not as an error;
	// err means the command could not be run or ctx ended.
	Run(ctx context.Context, command string, timeout time.Duration, out io.Writer) (RunStatus, error)
	// ReadFile returns the contents of a file, following symlinks.
	ReadFile(ctx context.Context, path string) ([]byte, error)
	// WriteFile replaces a file's contents, creating it and its parent
	// directories as needed. An existing file keeps its permissions.
	WriteFile(ctx context.Context, path string, data []byte) error
	// Remove removes a file, a symlink (not its target) or an empty
	// directory.
	Remove(ctx context.Context, path string) error
	// Stat describes path without following a final symlink.
	Stat(ctx context.Context, path string) (FileInfo, error)
	// ReadDir lists a directory, in no particular order; entries are
	// described without following symlinks.
	ReadDir(ctx context.Context, path string) ([]FileInfo, error)
}

// RunStatus is how a command ended.
type RunStatus struct {
	// ExitCode is the exit code, or 128+signal when killed by a signal.
	ExitCode int
	// TimedOut reports that the command was killed at its timeout.
	TimedOut bool
}

// FileInfo describes a file in a Workspace.
type FileInfo struct {
	Name string
	Size int64
	Mode fs.FileMode
}

// IsDir reports whether the file is a directory.
func (fi FileInfo) IsDir() bool { return fi.Mode.IsDir() }

// ErrOutsideRoot is returned for a path that resolves outside a workspace
// that is confined to its root.
var ErrOutsideRoot = errors.New("path is outside the workspace")

// shellScript runs its first argument with bash where there is one, so that
// models can use the bash-isms they usually write, and with sh otherwise.
const shellScript = `[ -x /bin/bash ] && exec /bin/bash -c "$1"; exec /bin/sh -c "$1"`

// shellArgs is the argv that runs command through shellScript.
func shellArgs(command string) []string {
	return []string{"/bin/sh", "-c", shellScript, "sh", command}
}

// lockedWriter serialises writes from a command's output streams.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// isModelError reports whether err from a Workspace file operation is the
// caller's mistake (a wrong path) rather than a failure of the workspace.
func isModelError(err error) bool {
	// What the path the model chose is or holds; not a failing machine
	// (EIO, EMFILE, ENOMEM, ...).
	for _, target := range []error{
		fs.ErrNotExist, fs.ErrExist, fs.ErrPermission, fs.ErrInvalid, ErrOutsideRoot,
		syscall.EISDIR, syscall.ENOTDIR, syscall.ENOTEMPTY, syscall.ENAMETOOLONG, syscall.ELOOP,
		syscall.EROFS, syscall.EFBIG, syscall.ENOSPC, syscall.EDQUOT, syscall.ETXTBSY, syscall.EMLINK,
		syscall.EXDEV, syscall.EBUSY, syscall.ENXIO, syscall.ENODEV,
		// No process could be started for the operation: the model's own
		// hold the sandbox's pids limit.
		syscall.EAGAIN,
	} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// describeError is the model-facing text for a model error from a
// Workspace file operation on path.
func describeError(path string, err error) string {
	switch {
	case errors.Is(err, ErrOutsideRoot):
		return path + ": path is outside the workspace"
	case errors.Is(err, fs.ErrNotExist):
		return path + ": no such file or directory"
	case errors.Is(err, syscall.EISDIR):
		return path + ": is a directory"
	case errors.Is(err, syscall.ENOTDIR):
		return path + ": not a directory"
	case errors.Is(err, fs.ErrPermission):
		return path + ": permission denied"
	case errors.Is(err, syscall.ENOTEMPTY):
		return path + ": directory not empty"
	case errors.Is(err, syscall.ELOOP):
		return path + ": too many levels of symbolic links"
	case errors.Is(err, sandbox.ErrNotRegular):
		return path + ": not a regular file"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return path + ": " + pe.Err.Error()
	}
	return err.Error()
}
