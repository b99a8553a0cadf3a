package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"syscall"
	"time"

	"github.com/verisim/verisim/internal/sandbox"
)

// sandboxWorkspace is a directory inside a sandbox: the training workspace.
type sandboxWorkspace struct {
	sb sandbox.Sandbox
	// files are sb's, acting as its user: the model's file tools get the
	// permissions its commands get.
	files sandbox.Files
	root  string
}

// SandboxWorkspace returns the workspace rooted at the absolute path root
// inside sb. The sandbox is the boundary, so absolute paths anywhere in it
// are allowed, with the permissions of the sandbox's user. The caller
// keeps ownership of sb.
func SandboxWorkspace(sb sandbox.Sandbox, root string) Workspace {
	return &sandboxWorkspace{sb: sb, files: sb.As(nil), root: path.Clean(root)}
}

func (w *sandboxWorkspace) Root() string { return w.root }

func (w *sandboxWorkspace) abs(p string) (string, error) {
	if p == "" {
		return "", fmt.Errorf("empty path: %w", fs.ErrInvalid)
	}
	if path.IsAbs(p) {
		return path.Clean(p), nil
	}
	return path.Join(w.root, p), nil
}

func (w *sandboxWorkspace) Run(ctx context.Context, command string, timeout time.Duration, out io.Writer) (RunStatus, error) {
	lw := &lockedWriter{w: out}
	st, err := w.sb.Run(ctx, sandbox.Cmd{
		Args:    shellArgs(command),
		Dir:     w.root,
		Stdout:  lw,
		Stderr:  lw,
		Timeout: timeout,
	})
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			// The model removed or moved its workspace: its doing, not
			// the sandbox's failure.
			return RunStatus{}, &fs.PathError{Op: "run in", Path: w.root, Err: fs.ErrNotExist}
		}
		if errors.Is(err, syscall.EAGAIN) {
			// No process could be started: the model's own processes
			// hold the sandbox's pids limit. A terminal's shell says so.
			_, _ = io.WriteString(lw, "sh: fork: Resource temporarily unavailable\n")
			return RunStatus{ExitCode: 2}, nil
		}
		return RunStatus{}, fmt.Errorf("run command in sandbox %s: %w", w.sb.ID(), err)
	}
	return RunStatus{ExitCode: st.Code, TimedOut: st.TimedOut}, nil
}

func (w *sandboxWorkspace) ReadFile(ctx context.Context, p string) ([]byte, error) {
	full, err := w.abs(p)
	if err != nil {
		return nil, err
	}
	return w.files.ReadFile(ctx, full)
}

func (w *sandboxWorkspace) WriteFile(ctx context.Context, p string, data []byte) error {
	full, err := w.abs(p)
	if err != nil {
		return err
	}
	perm := fs.FileMode(0o644)
	if fi, err := w.files.Stat(ctx, full); err == nil && fi.Mode.IsRegular() {
		perm = fi.Mode.Perm()
	}
	err = w.files.WriteFile(ctx, full, data, perm)
	if err == nil {
		return nil
	}
	// The sandbox does not create parents: do it once, and only when the
	// parent is what is missing.
	dir := path.Dir(full)
	if _, serr := w.files.Stat(ctx, dir); serr == nil {
		return err
	}
	if err := w.command(ctx, "mkdir", "-p", "--", dir); err != nil {
		return err
	}
	return w.files.WriteFile(ctx, full, data, perm)
}

func (w *sandboxWorkspace) Remove(ctx context.Context, p string) error {
	full, err := w.abs(p)
	if err != nil {
		return err
	}
	fi, err := w.files.Stat(ctx, full)
	if err != nil {
		return err
	}
	if fi.Mode.IsDir() {
		return w.command(ctx, "rmdir", "--", full)
	}
	return w.command(ctx, "rm", "-f", "--", full)
}

// command runs a helper for an operation Sandbox lacks; a failure is
// reported as fs.ErrPermission, the likeliest reason, with its output.
func (w *sandboxWorkspace) command(ctx context.Context, args ...string) error {
	out := &capture{headMax: 4 << 10}
	st, err := w.sb.Run(ctx, sandbox.Cmd{Args: args, Dir: "/", Stdout: out, Stderr: out, Timeout: time.Minute})
	if errors.Is(err, syscall.EAGAIN) {
		// The model's processes hold the pids limit (see Run).
		return &fs.PathError{Op: args[0], Path: args[len(args)-1], Err: syscall.EAGAIN}
	}
	if err != nil {
		return fmt.Errorf("%s in sandbox %s: %w", args[0], w.sb.ID(), err)
	}
	if st.Code != 0 {
		return fmt.Errorf("%s: %s: %w", args[0], strings.TrimSpace(out.String()), fs.ErrPermission)
	}
	return nil
}

func (w *sandboxWorkspace) Stat(ctx context.Context, p string) (FileInfo, error) {
	full, err := w.abs(p)
	if err != nil {
		return FileInfo{}, err
	}
	fi, err := w.files.Stat(ctx, full)
	if err != nil {
		return FileInfo{}, err
	}
	return FileInfo{Name: fi.Name, Size: fi.Size, Mode: fi.Mode}, nil
}

func (w *sandboxWorkspace) ReadDir(ctx context.Context, p string) ([]FileInfo, error) {
	full, err := w.abs(p)
	if err != nil {
		return nil, err
	}
	ents, err := w.files.ReadDir(ctx, full)
	if err != nil {
		return nil, err
	}
	out := make([]FileInfo, len(ents))
	for i, e := range ents {
		out[i] = FileInfo{Name: e.Name, Size: e.Size, Mode: e.Mode}
	}
	return out, nil
}
