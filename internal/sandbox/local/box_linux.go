package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/verisim/verisim/internal/sandbox"
	"github.com/verisim/verisim/internal/sandbox/wire"
)

// box is one local sandbox.
type box struct {
	rt   *Runtime
	m    *meta
	dir  string
	sock string
	// done closes when the init exits; nil when this process did not start
	// it (Open, GC).
	done     chan struct{}
	lifeline *os.File

	closeOnce sync.Once
	closeErr  error
	closed    chan struct{}
	initOnce  sync.Once
	// mu serialises snapshots with each other and with Close: a snapshot
	// freezes the sandbox and hands its owned layers on.
	mu sync.Mutex
}

var _ sandbox.Sandbox = (*box)(nil)

func (b *box) ID() string { return b.m.ID }

func (b *box) isClosed() bool {
	b.initOnce.Do(func() { b.closed = make(chan struct{}) })
	select {
	case <-b.closed:
		return true
	default:
		return false
	}
}

// dial opens a connection to the init and sends req.
func (b *box) dial(ctx context.Context, req *wire.Request) (net.Conn, *wire.Conn, error) {
	if b.isClosed() {
		return nil, nil, sandbox.ErrClosed
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", b.sock)
	if err != nil {
		if b.isClosed() {
			return nil, nil, sandbox.ErrClosed
		}
		return nil, nil, fmt.Errorf("reach sandbox %s: %w", b.m.ID, err)
	}
	c := wire.NewConn(nc)
	if err := c.WriteJSON(wire.TypeRequest, req); err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("send to sandbox %s: %w", b.m.ID, err)
	}
	return nc, c, nil
}

// closeOnDone closes nc when ctx ends, so blocked reads return.
func closeOnDone(ctx context.Context, nc net.Conn) (stop func() bool) {
	return context.AfterFunc(ctx, func() { nc.Close() })
}

// request sends req on a new connection that closes when ctx ends; done
// releases it.
func (b *box) request(ctx context.Context, req *wire.Request) (c *wire.Conn, done func(), err error) {
	nc, c, err := b.dial(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	stop := closeOnDone(ctx, nc)
	return c, func() { stop(); nc.Close() }, nil
}

func response(c *wire.Conn, path string) (*wire.Response, error) {
	var resp wire.Response
	if err := c.ReadJSON(wire.TypeResponse, &resp); err != nil {
		return nil, fmt.Errorf("read reply from sandbox: %w", err)
	}
	if resp.Error != nil {
		return nil, toError(resp.Error, path)
	}
	return &resp, nil
}

// toError maps a wire error to the error a caller tests with errors.Is.
func toError(e *wire.Error, path string) error {
	var base error
	switch e.Code {
	case wire.CodeNotFound:
		base = fs.ErrNotExist
	case wire.CodeExists:
		base = fs.ErrExist
	case wire.CodePermission:
		base = fs.ErrPermission
	case wire.CodeCommandNotFound:
		return fmt.Errorf("%w: %s", sandbox.ErrCommandNotFound, e.Message)
	case wire.CodeNotDir:
		base = unix.ENOTDIR
	case wire.CodeIsDir:
		base = unix.EISDIR
	case wire.CodeNoSpace:
		base = unix.ENOSPC
	case wire.CodeNotRegular:
		base = sandbox.ErrNotRegular
	case wire.CodeTooLarge:
		base = sandbox.ErrTooLarge
	default:
		if e.Errno == 0 {
			return errors.New(e.Message)
		}
		base = unix.Errno(e.Errno)
	}
	if path != "" {
		return &fs.PathError{Op: "sandbox", Path: path, Err: base}
	}
	return fmt.Errorf("%s: %w", e.Message, base)
}

// Run implements sandbox.Sandbox.
func (b *box) Run(ctx context.Context, cmd sandbox.Cmd) (sandbox.ExitStatus, error) {
	// The OOM-kill count before the command can possibly start.
	ooms := -1
	if b.m.Cgroup != nil {
		ooms = b.m.Cgroup.oomKills()
	}
	req := b.execRequest(&cmd)
	if b.rt.rootless && b.rt.subids == nil && req.UID != b.m.Spec.User.UID {
		return sandbox.ExitStatus{}, fmt.Errorf("sandbox %s maps only its user's id (%d), not %d: running as another user without root needs subordinate ids (install uidmap and grant this user ranges in /etc/subuid and /etc/subgid) or root", b.m.ID, b.m.Spec.User.UID, req.UID)
	}
	nc, c, err := b.dial(ctx, req)
	if err != nil {
		return sandbox.ExitStatus{}, err
	}
	defer nc.Close()
	stop := closeOnDone(ctx, nc)
	defer stop()
	started, err := response(c, "")
	if err != nil {
		if ctx.Err() != nil {
			return sandbox.ExitStatus{}, ctx.Err()
		}
		return sandbox.ExitStatus{}, err
	}
	// Giving up on the command kills its tree through a connection of its
	// own: this one may be stuck behind stdin the command never reads.
	stop()
	stop = context.AfterFunc(ctx, func() {
		kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = b.signal(kctx, started.PID, unix.SIGKILL)
		nc.Close()
	})
	defer stop()

	var wg sync.WaitGroup
	if cmd.Stdin == nil {
		_ = c.Write(wire.TypeStdinEOF, nil)
	} else {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.WriteStream(wire.TypeStdin, wire.TypeStdinEOF, cmd.Stdin)
		}()
	}
	resizeStop := make(chan struct{})
	if cmd.Resize != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case ws, ok := <-cmd.Resize:
					if !ok {
						return
					}
					_ = c.WriteJSON(wire.TypeResize, wire.WinSize{Rows: ws.Rows, Cols: ws.Cols})
				case <-resizeStop:
					return
				}
			}
		}()
	}

	var exit wire.Exit
	var readErr error
frames:
	for {
		typ, payload, err := c.Read()
		if err != nil {
			readErr = err
			break
		}
		switch typ {
		case wire.TypeStdout:
			if cmd.Stdout != nil {
				_, _ = cmd.Stdout.Write(payload)
			}
		case wire.TypeStderr:
			if cmd.Stderr != nil {
				_, _ = cmd.Stderr.Write(payload)
			}
		case wire.TypeExit:
			readErr = json.Unmarshal(payload, &exit)
			break frames
		}
	}
	close(resizeStop)
	nc.Close()
	if _, isFile := cmd.Stdin.(*os.File); !isFile {
		// A terminal or pipe may never reach EOF; like os/exec, the copy
		// from an *os.File is not waited for once the command is done.
		wg.Wait()
	}
	if ctx.Err() != nil {
		// Given up on: whatever ended the command, it was the caller.
		return sandbox.ExitStatus{}, ctx.Err()
	}
	if readErr != nil {
		if b.isClosed() {
			return sandbox.ExitStatus{}, sandbox.ErrClosed
		}
		return sandbox.ExitStatus{}, fmt.Errorf("sandbox %s: lost the command: %w", b.m.ID, readErr)
	}
	st := sandbox.ExitStatus{Code: exit.Code, Signal: exit.Signal, TimedOut: exit.TimedOut}
	if exit.Signal == int(unix.SIGKILL) && ooms >= 0 && b.m.Cgroup.oomKills() > ooms {
		st.OOMKilled = true
	}
	return st, nil
}

func (b *box) execRequest(cmd *sandbox.Cmd) *wire.Request {
	u := b.m.Spec.User
	if cmd.User != nil {
		u = *cmd.User
	}
	env := cmd.Env
	if env == nil {
		env = b.m.Spec.Env
	}
	dir := cmd.Dir
	if dir == "" {
		dir = b.m.Spec.Dir
	}
	if dir == "" {
		dir = u.Home
	}
	req := &wire.Request{Op: wire.OpExec, Args: cmd.Args, Env: env, Dir: dir, UID: u.UID, GID: u.GID, Groups: u.Groups}
	if b.rt.rootless && b.rt.subids == nil {
		// Only the user's own ids are mapped into a rootless sandbox
		// without subordinate ranges.
		req.Groups = nil
	}
	if cmd.Timeout > 0 {
		req.TimeoutMS = max(1, cmd.Timeout.Milliseconds())
	}
	if cmd.TTY != nil {
		req.TTY = &wire.WinSize{Rows: cmd.TTY.Rows, Cols: cmd.TTY.Cols}
	}
	return req
}

// StopAll implements sandbox.Stopper: the init kills every other process
// of the sandbox, starting none.
func (b *box) StopAll(ctx context.Context) error {
	c, done, err := b.request(ctx, &wire.Request{Op: wire.OpKillAll})
	if err != nil {
		return err
	}
	defer done()
	_, err = response(c, "")
	return err
}

// signal sends sig to the process tree of the command with pid.
func (b *box) signal(ctx context.Context, pid int, sig unix.Signal) error {
	c, done, err := b.request(ctx, &wire.Request{Op: wire.OpSignal, PID: pid, Signal: int(sig)})
	if err != nil {
		return err
	}
	defer done()
	_, err = response(c, "")
	return err
}

// fileOps are a sandbox's file operations acting as root (as nil) or as
// user as, with its permissions.
type fileOps struct {
	b  *box
	as *sandbox.User
}

// As implements sandbox.Sandbox.
func (b *box) As(u *sandbox.User) sandbox.Files {
	if u == nil {
		u = &b.m.Spec.User
	}
	u = &sandbox.User{UID: u.UID, GID: u.GID, Groups: u.Groups}
	if b.rt.rootless && b.rt.subids == nil {
		// Only the user's own ids are mapped.
		u.Groups = nil
	}
	return fileOps{b: b, as: u}
}

// request makes a file op's request, with the identity it acts as.
func (o fileOps) request(op, path string) *wire.Request {
	req := &wire.Request{Op: op, Path: path}
	if o.as != nil {
		req.AsUser, req.UID, req.GID, req.Groups = true, o.as.UID, o.as.GID, o.as.Groups
	}
	return req
}

// ReadFile implements sandbox.Sandbox.
func (b *box) ReadFile(ctx context.Context, path string) ([]byte, error) {
	return fileOps{b: b}.ReadFile(ctx, path)
}

// WriteFile implements sandbox.Sandbox.
func (b *box) WriteFile(ctx context.Context, path string, data []byte, perm fs.FileMode) error {
	return fileOps{b: b}.WriteFile(ctx, path, data, perm)
}

// ReadDir implements sandbox.Sandbox.
func (b *box) ReadDir(ctx context.Context, path string) ([]sandbox.FileInfo, error) {
	return fileOps{b: b}.ReadDir(ctx, path)
}

// Stat implements sandbox.Sandbox.
func (b *box) Stat(ctx context.Context, path string) (sandbox.FileInfo, error) {
	return fileOps{b: b}.Stat(ctx, path)
}

func (o fileOps) ReadFile(ctx context.Context, path string) ([]byte, error) {
	c, done, err := o.b.request(ctx, o.request(wire.OpRead, path))
	if err != nil {
		return nil, err
	}
	defer done()
	resp, err := response(c, path)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, min(resp.Size, sandbox.MaxRead))
	for {
		typ, payload, err := c.Read()
		if err != nil {
			return nil, fmt.Errorf("read %s from sandbox: %w", path, err)
		}
		if typ == wire.TypeDataEnd {
			return out, nil
		}
		if len(out)+len(payload) > sandbox.MaxRead {
			return nil, &fs.PathError{Op: "read", Path: path, Err: sandbox.ErrTooLarge}
		}
		out = append(out, payload...)
	}
}

// WriteFile writes as the identity the op acts as; the file is then the
// spec's user's when root writes it, and the writer's own otherwise.
func (o fileOps) WriteFile(ctx context.Context, path string, data []byte, perm fs.FileMode) error {
	req := o.request(wire.OpWrite, path)
	req.Mode = uint32(perm)
	if o.as == nil {
		u := o.b.m.Spec.User
		req.UID, req.GID = u.UID, u.GID
	}
	c, done, err := o.b.request(ctx, req)
	if err != nil {
		return err
	}
	defer done()
	for off := 0; off < len(data); off += wire.ChunkSize {
		end := min(off+wire.ChunkSize, len(data))
		if err := c.Write(wire.TypeData, data[off:end]); err != nil {
			return fmt.Errorf("write %s to sandbox: %w", path, err)
		}
	}
	if err := c.Write(wire.TypeDataEnd, nil); err != nil {
		return fmt.Errorf("write %s to sandbox: %w", path, err)
	}
	_, err = response(c, path)
	return err
}

func (o fileOps) files(ctx context.Context, op, path string) ([]sandbox.FileInfo, error) {
	c, done, err := o.b.request(ctx, o.request(op, path))
	if err != nil {
		return nil, err
	}
	defer done()
	var out []sandbox.FileInfo
	for {
		resp, err := response(c, path)
		if err != nil {
			return nil, err
		}
		for _, f := range resp.Files {
			out = append(out, sandbox.FileInfo{Name: f.Name, Size: f.Size, Mode: fs.FileMode(f.Mode), ModTime: time.Unix(0, f.ModTime), Link: f.Link})
		}
		if !resp.More {
			return out, nil
		}
	}
}

func (o fileOps) ReadDir(ctx context.Context, path string) ([]sandbox.FileInfo, error) {
	return o.files(ctx, wire.OpReadDir, path)
}

func (o fileOps) Stat(ctx context.Context, path string) (sandbox.FileInfo, error) {
	fi, err := o.files(ctx, wire.OpStat, path)
	if err != nil {
		return sandbox.FileInfo{}, err
	}
	return fi[0], nil
}

// Close implements sandbox.Sandbox.
func (b *box) Close(ctx context.Context) error {
	b.isClosed()
	b.closeOnce.Do(func() {
		close(b.closed)
		b.mu.Lock()
		defer b.mu.Unlock()
		b.closeErr = b.destroy(ctx)
	})
	return b.closeErr
}

// destroy kills the init (and with it every process of the sandbox), then
// removes the cgroups and the run directory. It runs to the end even when
// ctx is cancelled.
func (b *box) destroy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	var errs []error
	if b.done != nil {
		_ = unix.Kill(b.m.InitPID, unix.SIGKILL)
		select {
		case <-b.done:
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("sandbox %s: init did not exit", b.m.ID))
		}
	} else if alive(b.m.InitPID, b.m.InitTick) {
		_ = unix.Kill(b.m.InitPID, unix.SIGKILL)
		if err := pollUntil(10*time.Second, func() bool { return !alive(b.m.InitPID, b.m.InitTick) }); err != nil {
			errs = append(errs, fmt.Errorf("sandbox %s: init did not exit", b.m.ID))
		}
	}
	if b.lifeline != nil {
		b.lifeline.Close()
	}
	if b.m.Cgroup != nil {
		// remove kills what a cgroup may still list of the init's children
		// for a moment after it exits.
		if err := b.m.Cgroup.remove(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, l := range b.m.Spec.OwnedLayers {
		if err := b.rt.removeLayer(l); err != nil {
			errs = append(errs, err)
		}
	}
	if err := os.RemoveAll(b.dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// InitPID is the host pid of the sandbox's init, for measurements.
func (b *box) InitPID() int { return b.m.InitPID }
