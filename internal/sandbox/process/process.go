// Package process is a sandbox backend with no isolation at all: each
// sandbox is a temporary directory and its commands are plain child
// processes of verisim, running as the calling user with the host's files,
// processes and network in full view. It exists for machines where the local
// backend cannot run (no root, not Linux) and says so loudly when created.
//
// Paths are host paths. The sandbox's home directory (and default working
// directory) is a fresh directory under the sandbox's root; HOME points
// there. Image layers, binds, hostname, users and limits are ignored, with a
// warning. Snapshots copy the sandbox's root directory.
//
// Runtime and Sandbox are safe for concurrent use.
package process

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"

	"github.com/verisim/verisim/internal/atomicfile"
	"github.com/verisim/verisim/internal/sandbox"
	"github.com/verisim/verisim/internal/sandbox/proctree"
)

// Runtime is the process backend.
type Runtime struct {
	dir string
	log *slog.Logger
}

var _ sandbox.Runtime = (*Runtime)(nil)

// New returns a runtime keeping sandboxes and snapshots under dir.
func New(dir string, log *slog.Logger) (*Runtime, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	for _, d := range []string{"sandboxes", "snapshots"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return nil, fmt.Errorf("process runtime: %w", err)
		}
	}
	closeInherited()
	return &Runtime{dir: dir, log: log}, nil
}

// Name implements sandbox.Runtime.
func (r *Runtime) Name() string { return "process" }

func newID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Create implements sandbox.Runtime.
func (r *Runtime) Create(ctx context.Context, spec sandbox.Spec) (sandbox.Sandbox, error) {
	if len(spec.Views) > 0 {
		removeAll(spec.OwnedLayers)
		return nil, fmt.Errorf("%w: copy-on-write views of host directories need the local backend", sandbox.ErrUnsupported)
	}
	id := newID()
	root := filepath.Join(r.dir, "sandboxes", id)
	if err := os.MkdirAll(filepath.Join(root, "home"), 0o700); err != nil {
		removeAll(spec.OwnedLayers)
		return nil, fmt.Errorf("create sandbox directory: %w", err)
	}
	return r.open(id, root, spec), nil
}

func removeAll(paths []string) {
	for _, p := range paths {
		os.RemoveAll(p)
	}
}

func (r *Runtime) open(id, root string, spec sandbox.Spec) *box {
	r.log.Warn("process backend: NO ISOLATION; commands run as you, on your files and network", "sandbox", id)
	if spec.Limits != (sandbox.Limits{}) {
		r.log.Warn("process backend ignores resource limits", "sandbox", id)
	}
	home := filepath.Join(root, "home")
	env := make([]string, 0, len(spec.Env)+1)
	for _, kv := range spec.Env {
		if !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "PWD=") {
			env = append(env, kv)
		}
	}
	if len(env) == 0 {
		env = append(env, "PATH="+os.Getenv("PATH"))
	}
	env = append(env, "HOME="+home)
	return &box{rt: r, id: id, root: root, home: home, spec: spec, env: env}
}

// Fork implements sandbox.Runtime by copying the snapshot's directory.
func (r *Runtime) Fork(ctx context.Context, snapshot string, opts sandbox.ForkOptions) (_ sandbox.Sandbox, retErr error) {
	src := filepath.Join(r.dir, "snapshots", filepath.Base(snapshot))
	if _, err := os.Stat(src); err != nil {
		return nil, fmt.Errorf("%w: %s", sandbox.ErrSnapshotNotFound, snapshot)
	}
	id := newID()
	root := filepath.Join(r.dir, "sandboxes", id)
	if err := copyDir(src, root); err != nil {
		os.RemoveAll(root)
		return nil, fmt.Errorf("fork %s: %w", snapshot, err)
	}
	spec := sandbox.Spec{Env: nil}
	if b, err := os.ReadFile(src + ".env"); err == nil {
		spec.Env = strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	}
	return r.open(id, root, spec), nil
}

// RemoveSnapshot implements sandbox.Runtime.
func (r *Runtime) RemoveSnapshot(ctx context.Context, snapshot string) error {
	p := filepath.Join(r.dir, "snapshots", filepath.Base(snapshot))
	if _, err := os.Stat(p); err != nil {
		return fmt.Errorf("%w: %s", sandbox.ErrSnapshotNotFound, snapshot)
	}
	os.Remove(p + ".env")
	return os.RemoveAll(p)
}

// Host returns a sandbox that is this machine itself: commands run in
// home with env, files are the host's, and Close deletes nothing. It is for
// recording what a real machine looks like (verisim fidelity capture).
func (r *Runtime) Host(home string, env []string) sandbox.Sandbox {
	return &box{rt: r, id: "host", home: home, env: env, host: true}
}

type box struct {
	rt         *Runtime
	id         string
	root, home string
	spec       sandbox.Spec
	env        []string
	// host marks the host itself: nothing to delete on Close.
	host bool

	mu     sync.Mutex
	closed bool
	procs  map[*exec.Cmd]struct{}
	// sids are the sessions of every command started, whose leftovers
	// Close kills.
	sids []int
}

func (b *box) ID() string { return b.id }

// Run implements sandbox.Sandbox.
func (b *box) Run(ctx context.Context, c sandbox.Cmd) (sandbox.ExitStatus, error) {
	if len(c.Args) == 0 {
		return sandbox.ExitStatus{}, fmt.Errorf("empty command")
	}
	env := c.Env
	if env == nil {
		env = b.env
	}
	path := c.Args[0]
	if !strings.Contains(path, "/") {
		p, err := lookPath(path, env)
		if err != nil {
			return sandbox.ExitStatus{}, fmt.Errorf("%w: %s", sandbox.ErrCommandNotFound, path)
		}
		path = p
	}
	cmd := exec.Command(path, c.Args[1:]...)
	cmd.Args[0] = c.Args[0]
	cmd.Env = env
	cmd.Dir = c.Dir
	if cmd.Dir == "" {
		cmd.Dir = b.home
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	var ptm, pts *os.File
	if c.TTY != nil {
		m, tty, err := pty.Open()
		if err != nil {
			return sandbox.ExitStatus{}, fmt.Errorf("open pty: %w", err)
		}
		defer m.Close()
		defer tty.Close()
		pts = tty
		_ = pty.Setsize(m, &pty.Winsize{Rows: c.TTY.Rows, Cols: c.TTY.Cols})
		cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
		cmd.SysProcAttr.Setctty = true
		cmd.SysProcAttr.Ctty = 0
		ptm = m
	} else {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = c.Stdin, c.Stdout, c.Stderr
		if cmd.Stdout == nil {
			cmd.Stdout = io.Discard
		}
		if cmd.Stderr == nil {
			cmd.Stderr = io.Discard
		}
		// Descendants that keep the output open do not hold Run forever.
		cmd.WaitDelay = 200 * time.Millisecond
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return sandbox.ExitStatus{}, sandbox.ErrClosed
	}
	if err := cmd.Start(); err != nil {
		b.mu.Unlock()
		return sandbox.ExitStatus{}, fmt.Errorf("start %s: %w", c.Args[0], err)
	}
	if b.procs == nil {
		b.procs = map[*exec.Cmd]struct{}{}
	}
	b.procs[cmd] = struct{}{}
	b.sids = append(b.sids, cmd.Process.Pid)
	b.mu.Unlock()
	defer func() {
		// A session with nothing left in it is forgotten, so that Close
		// never signals a later, unrelated session that reuses its id.
		empty := len(proctree.Session(cmd.Process.Pid)) == 0
		b.mu.Lock()
		delete(b.procs, cmd)
		if empty {
			b.sids = slices.DeleteFunc(b.sids, func(sid int) bool { return sid == cmd.Process.Pid })
		}
		b.mu.Unlock()
	}()

	var copyWG sync.WaitGroup
	if ptm != nil {
		// Only the command holds the terminal now, so its output ends when
		// the command and its children are done with it.
		pts.Close()
		copyWG.Add(1)
		go func() {
			defer copyWG.Done()
			if c.Stdout != nil {
				_, _ = io.Copy(c.Stdout, ptm)
			} else {
				_, _ = io.Copy(io.Discard, ptm)
			}
		}()
		if c.Stdin != nil {
			go func() { _, _ = io.Copy(ptm, c.Stdin) }()
		}
		if c.Resize != nil {
			resizeDone := make(chan struct{})
			defer close(resizeDone)
			go func() {
				for {
					select {
					case ws, ok := <-c.Resize:
						if !ok {
							return
						}
						_ = pty.Setsize(ptm, &pty.Winsize{Rows: ws.Rows, Cols: ws.Cols})
					case <-resizeDone:
						return
					}
				}
			}()
		}
	}

	waitErr := make(chan error, 1)
	go func() { waitErr <- cmd.Wait() }()
	var timeout <-chan time.Time
	if c.Timeout > 0 {
		t := time.NewTimer(c.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var st sandbox.ExitStatus
	var err error
	select {
	case err = <-waitErr:
	case <-timeout:
		st.TimedOut = true
		killGroup(cmd)
		err = <-waitErr
	case <-ctx.Done():
		killGroup(cmd)
		<-waitErr
		return sandbox.ExitStatus{}, ctx.Err()
	}
	if st.TimedOut {
		killGroup(cmd)
	}
	if ptm != nil {
		done := make(chan struct{})
		go func() { copyWG.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(200 * time.Millisecond):
			// A background child still holds the terminal: cut it off.
			ptm.Close()
			<-done
		}
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) && !errors.Is(err, exec.ErrWaitDelay) {
		return st, err
	}
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		st.Signal = int(ws.Signal())
		st.Code = 128 + st.Signal
	} else {
		st.Code = ws.ExitStatus()
	}
	return st, nil
}

func killGroup(cmd *exec.Cmd) { proctree.Kill(cmd.Process.Pid, syscall.SIGKILL) }

func lookPath(name string, env []string) (string, error) {
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, d := range filepath.SplitList(path) {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

func (b *box) check() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return sandbox.ErrClosed
	}
	return nil
}

// As implements sandbox.Sandbox: the process backend has no users of its
// own, and its file operations act as the host's user whatever u.
func (b *box) As(*sandbox.User) sandbox.Files { return b }

// ReadFile implements sandbox.Sandbox, reading what sandbox.OpenRegular
// allows.
func (b *box) ReadFile(ctx context.Context, path string) ([]byte, error) {
	if err := b.check(); err != nil {
		return nil, err
	}
	f, limit, err := sandbox.OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit))
}

// WriteFile implements sandbox.Sandbox; the file is replaced whole.
func (b *box) WriteFile(ctx context.Context, path string, data []byte, perm fs.FileMode) error {
	if err := b.check(); err != nil {
		return err
	}
	return atomicfile.Write(path, data, perm)
}

func info(name string, fi fs.FileInfo, full string) sandbox.FileInfo {
	out := sandbox.FileInfo{Name: name, Size: fi.Size(), Mode: fi.Mode(), ModTime: fi.ModTime()}
	if fi.Mode()&fs.ModeSymlink != 0 {
		out.Link, _ = os.Readlink(full)
	}
	return out
}

// ReadDir implements sandbox.Sandbox.
func (b *box) ReadDir(ctx context.Context, path string) ([]sandbox.FileInfo, error) {
	if err := b.check(); err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	out := make([]sandbox.FileInfo, 0, len(ents))
	for _, e := range ents {
		if fi, err := e.Info(); err == nil {
			out = append(out, info(e.Name(), fi, filepath.Join(path, e.Name())))
		}
	}
	return out, nil
}

// Stat implements sandbox.Sandbox.
func (b *box) Stat(ctx context.Context, path string) (sandbox.FileInfo, error) {
	if err := b.check(); err != nil {
		return sandbox.FileInfo{}, err
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return sandbox.FileInfo{}, err
	}
	return info(filepath.Base(path), fi, path), nil
}

// Snapshot implements sandbox.Sandbox by copying the sandbox's directory.
func (b *box) Snapshot(ctx context.Context) (string, error) {
	if err := b.check(); err != nil {
		return "", err
	}
	if b.host {
		return "", fmt.Errorf("%w: snapshot of the host", sandbox.ErrUnsupported)
	}
	id := "s" + newID()
	dst := filepath.Join(b.rt.dir, "snapshots", id)
	if err := copyDir(b.root, dst); err != nil {
		os.RemoveAll(dst)
		return "", fmt.Errorf("snapshot: %w", err)
	}
	if err := atomicfile.Write(dst+".env", []byte(strings.Join(b.spec.Env, "\n")+"\n"), 0o600); err != nil {
		os.RemoveAll(dst)
		return "", err
	}
	return id, nil
}

// Close implements sandbox.Sandbox.
func (b *box) Close(ctx context.Context) error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	for cmd := range b.procs {
		killGroup(cmd)
	}
	sids := b.sids
	b.mu.Unlock()
	for _, sid := range sids {
		proctree.Kill(sid, syscall.SIGKILL)
	}
	if b.host {
		return nil
	}
	// Layers are not used here, but the sandbox owns them all the same.
	removeAll(b.spec.OwnedLayers)
	return os.RemoveAll(b.root)
}

// copyDir copies a directory tree of regular files, directories and
// symlinks, keeping modes and times.
func copyDir(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if err := os.MkdirAll(target, fi.Mode().Perm()); err != nil {
				return err
			}
		case fi.Mode()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(l, target)
		case fi.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if err := os.WriteFile(target, data, fi.Mode().Perm()); err != nil {
				return err
			}
		default:
			return nil
		}
		return os.Chtimes(target, fi.ModTime(), fi.ModTime())
	})
}
