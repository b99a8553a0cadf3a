package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// dirWorkspace is a directory on this machine: the user's checkout.
type dirWorkspace struct {
	root string // absolute, as given
	real string // root with symlinks resolved
}

// DirWorkspace returns the workspace of the directory root on this machine.
// Commands run as plain child processes in root, with this process's
// environment; file operations refuse paths that resolve outside root.
func DirWorkspace(root string) (Workspace, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", root, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", root, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", root, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("workspace %s: not a directory", root)
	}
	return &dirWorkspace{root: abs, real: real}, nil
}

func (w *dirWorkspace) Root() string { return w.root }

// within returns p relative to base when p is base or below it.
func within(base, p string) (string, bool) {
	rel, err := filepath.Rel(base, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return rel, true
}

// resolve maps a workspace path to a host path whose directories are free of
// symlinks and inside the root. The final component is resolved too when
// followFinal is set; otherwise it is left as is, so that Stat and Remove act
// on a symlink itself.
func (w *dirWorkspace) resolve(p string, followFinal bool) (string, error) {
	if p == "" {
		return "", fmt.Errorf("empty path: %w", fs.ErrInvalid)
	}
	rel, ok := "", false
	if filepath.IsAbs(p) {
		clean := filepath.Clean(p)
		if rel, ok = within(w.root, clean); !ok {
			rel, ok = within(w.real, clean)
		}
	} else {
		rel, ok = within(w.real, filepath.Join(w.real, p))
	}
	if !ok {
		return "", fmt.Errorf("%s: %w", p, ErrOutsideRoot)
	}
	if rel == "." {
		return w.real, nil
	}
	full := filepath.Join(w.real, rel)

	// Resolve the deepest existing ancestor; components below it do not
	// exist yet and so cannot be symlinks.
	dir, rest := filepath.Dir(full), filepath.Base(full)
	for {
		realDir, err := filepath.EvalSymlinks(dir)
		if err == nil {
			full = filepath.Join(realDir, rest)
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("resolve %s: %w", p, err)
		}
		dir, rest = filepath.Dir(dir), filepath.Join(filepath.Base(dir), rest)
	}
	if _, ok := within(w.real, full); !ok {
		return "", fmt.Errorf("%s: %w", p, ErrOutsideRoot)
	}
	if !followFinal {
		return full, nil
	}
	fi, err := os.Lstat(full)
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return full, nil // missing or not a link: the operation reports it
	}
	target, err := filepath.EvalSymlinks(full)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%s: dangling symlink: %w", p, fs.ErrNotExist)
	}
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", p, err)
	}
	if _, ok := within(w.real, target); !ok {
		return "", fmt.Errorf("%s: %w", p, ErrOutsideRoot)
	}
	return target, nil
}

func (w *dirWorkspace) ReadFile(ctx context.Context, p string) ([]byte, error) {
	full, err := w.resolve(p, true)
	if err != nil {
		return nil, err
	}
	return os.ReadFile(full)
}

func (w *dirWorkspace) WriteFile(ctx context.Context, p string, data []byte) error {
	full, err := w.resolve(p, true)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return err
	}
	return os.WriteFile(full, data, 0o644)
}

func (w *dirWorkspace) Remove(ctx context.Context, p string) error {
	full, err := w.resolve(p, false)
	if err != nil {
		return err
	}
	if full == w.real {
		return fmt.Errorf("%s: cannot remove the workspace root: %w", p, fs.ErrInvalid)
	}
	return os.Remove(full)
}

func (w *dirWorkspace) Stat(ctx context.Context, p string) (FileInfo, error) {
	full, err := w.resolve(p, false)
	if err != nil {
		return FileInfo{}, err
	}
	fi, err := os.Lstat(full)
	if err != nil {
		return FileInfo{}, err
	}
	return FileInfo{Name: filepath.Base(p), Size: fi.Size(), Mode: fi.Mode()}, nil
}

func (w *dirWorkspace) ReadDir(ctx context.Context, p string) ([]FileInfo, error) {
	full, err := w.resolve(p, true)
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(full)
	if err != nil {
		return nil, err
	}
	out := make([]FileInfo, 0, len(ents))
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			continue // removed since listed
		}
		out = append(out, FileInfo{Name: e.Name(), Size: fi.Size(), Mode: fi.Mode()})
	}
	return out, nil
}

// waitDelay bounds how long Run waits for output after the command's
// process group was killed, in case a descendant left the group holding the
// output pipe open.
const waitDelay = 2 * time.Second

func (w *dirWorkspace) Run(ctx context.Context, command string, timeout time.Duration, out io.Writer) (RunStatus, error) {
	runCtx, cancel := ctx, context.CancelFunc(func() {})
	if timeout > 0 {
		runCtx, cancel = context.WithTimeout(ctx, timeout)
	}
	defer cancel()
	args := shellArgs(command)
	cmd := exec.CommandContext(runCtx, args[0], args[1:]...)
	cmd.Dir = w.real
	// One writer for both streams: exec gives the command a single pipe, so
	// the output keeps its order.
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.WaitDelay = waitDelay
	killGroupOnCancel(cmd)
	err := cmd.Run()
	if ctx.Err() != nil {
		return RunStatus{}, fmt.Errorf("run command: %w", context.Cause(ctx))
	}
	st := RunStatus{TimedOut: errors.Is(runCtx.Err(), context.DeadlineExceeded)}
	var exitErr *exec.ExitError
	switch {
	case err == nil, errors.Is(err, exec.ErrWaitDelay):
	case errors.As(err, &exitErr):
		st.ExitCode = exitCode(exitErr.ProcessState)
	default:
		return RunStatus{}, fmt.Errorf("run command: %w", err)
	}
	return st, nil
}
