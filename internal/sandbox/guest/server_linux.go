package guest

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/verisim/verisim/internal/sandbox"
	"github.com/verisim/verisim/internal/sandbox/proctree"
	"github.com/verisim/verisim/internal/sandbox/wire"
)

// outputGrace is how long a command's output is still read after it exits,
// for descendants that keep its stdout open (a daemon started with `&`).
const outputGrace = 200 * time.Millisecond

const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

type server struct {
	mu sync.Mutex
	// waiting maps the pid of a command to where its wait status goes.
	waiting map[int]chan unix.WaitStatus

	// spawner carries work to the one thread that starts commands: a
	// namespace entered with unshare belongs to the calling thread only,
	// so every command must be forked from the thread that entered it.
	spawner chan func()
	// paused is held by a pause, and read-held around each start of a
	// command (outside mu): none starts while the sandbox is paused.
	paused sync.RWMutex
	// started wakes the reaper, without waiting, after a command starts.
	started chan struct{}
	// proc is a descriptor on the sandbox's own /proc (0 until prepare
	// has mounted it): before pivot_root the init's "/proc" is the host's,
	// where a command's pid names another process.
	proc atomic.Int32
}

func newServer() *server {
	return &server{waiting: map[int]chan unix.WaitStatus{}, spawner: make(chan func()), started: make(chan struct{}, 1)}
}

// spawnLoop owns the spawner thread for the life of the init. It sets the
// init's OOM score before it starts any command, beside the init's set-up
// (see commandOOMScore). Commands forked from it must not inherit the
// ambient capabilities a rootless init is started with, so it clears them
// on its thread first.
func (s *server) spawnLoop() {
	runtime.LockOSThread()
	// "self" is the init whichever /proc this is (the host's, before
	// pivot_root).
	_ = os.WriteFile("/proc/self/oom_score_adj", []byte("-1000"), 0)
	_ = unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
	for f := range s.spawner {
		f()
	}
}

// onSpawner runs f on the spawner thread. Commands are started through
// startProcess, which waits out a pause before it takes mu (the reaper and
// signals need mu meanwhile).
func (s *server) onSpawner(f func() error) error {
	done := make(chan error, 1)
	s.spawner <- func() { done <- f() }
	return <-done
}

// commandOOMScore is the OOM score adjustment every command starts with,
// what a shell in a desktop's terminal gets from systemd's user manager
// (user services run at 200). The kernel's OOM killer must pick a command,
// never the init: the init asks for -1000 for itself, which takes
// CAP_SYS_RESOURCE (a host's root may lack it, and then the init stays at
// 0). The OOM killer counts 200 as a fifth of the memory cgroup's limit, so
// a command outranks the init (a few MB) whatever its own size (a command
// filling a tmpfs holds almost no memory of its own) under any limit above
// some 25 MB; where the init holds CAP_SYS_RESOURCE, its write also makes
// 200 the least the command may lower itself to. Go's fork runs no code of ours
// in the child, so the spawner writes the score as soon as the command has
// started: until then (microseconds; longer on a loaded machine) the
// command, and a child it starts at once, hold the init's score. Where that
// is -1000 they cannot be OOM-killed meanwhile; where it is 0, a command
// that fills the memory cgroup within that time can still get the init
// killed. (The init taking 200 itself while it forks, for the command to
// inherit, was tried: on a loaded machine the init held it long enough to
// be the one killed.)
const commandOOMScore = "200"

func (s *server) forkExec(path string, args []string, attr *syscall.ProcAttr) (pid int, err error) {
	err = s.onSpawner(func() error {
		var ferr error
		if pid, ferr = syscall.ForkExec(path, args, attr); ferr != nil {
			return ferr
		}
		if proc := int(s.proc.Load()); proc > 0 {
			if fd, err := unix.Openat(proc, strconv.Itoa(pid)+"/oom_score_adj", unix.O_WRONLY|unix.O_CLOEXEC, 0); err == nil {
				_, _ = unix.Write(fd, []byte(commandOOMScore))
				unix.Close(fd)
			}
		}
		return nil
	})
	return pid, err
}

// keepProc keeps a descriptor on the sandbox's /proc, which prepare has
// staged at "proc".
func (s *server) keepProc() error {
	fd, err := unix.Open("proc", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open the sandbox's /proc: %w", err)
	}
	s.proc.Store(int32(fd))
	return nil
}

// reap collects every child and orphan of PID 1, blocked in wait4 on a
// thread of its own: no signal is involved (SIGCHLD is left at its
// default, see defaultSignals), so a command's exit reaches the server
// through one wake-up. Commands are registered under mu in the same
// critical section that forks them, so a status for a pid not registered
// is an orphan's, and is dropped. When PID 1 has no child, no other
// process is left in its namespace (orphans are handed to it), and none
// appears before the next command starts, which wakes the reaper.
func (s *server) reap() {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, 0, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil || pid <= 0 {
			<-s.started
			continue
		}
		s.mu.Lock()
		if ch, ok := s.waiting[pid]; ok {
			delete(s.waiting, pid)
			ch <- ws
		}
		s.mu.Unlock()
	}
}

// defaultSignals gives the kernel's default action back to the signals on
// which Go's runtime would end the init if a process sent them: SIGHUP,
// SIGINT and SIGTERM, which it treats as a request to exit, and SIGQUIT,
// SIGABRT, SIGSEGV and the rest, which it treats as a crash. A PID
// namespace's init never receives a signal it leaves at its default from
// inside its namespace, so no command can end the sandbox by signalling
// PID 1, even where it runs as the init's user (a rootless sandbox with
// one id). A fault of the init's own still ends it, as the runtime would
// (the init recovers no panic). SIGCHLD goes back to its default too: no
// handler runs at each command's exit (the reaper waits instead), and,
// being the default rather than ignored, it keeps exited children for
// wait4. Commands start with every signal at its default, as before:
// they inherit a default, and Go resets the signals it handles at fork.
func defaultSignals() error {
	// An all-zero struct sigaction is SIG_DFL with no flags and an empty
	// mask, whatever an architecture's field order; 64 bytes hold the
	// largest.
	var act [64]byte
	for _, sig := range []unix.Signal{
		unix.SIGHUP, unix.SIGINT, unix.SIGTERM, unix.SIGQUIT, unix.SIGILL, unix.SIGTRAP, unix.SIGABRT,
		unix.SIGBUS, unix.SIGFPE, unix.SIGSEGV, unix.SIGSTKFLT, unix.SIGSYS, unix.SIGCHLD,
	} {
		if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0); e != 0 {
			return fmt.Errorf("reset %v to its default action: %w", sig, e)
		}
	}
	return nil
}

func (s *server) serve(ln *listener) {
	for {
		c, err := ln.accept()
		if err != nil {
			if errors.Is(err, os.ErrClosed) {
				return
			}
			continue
		}
		go s.handle(c)
	}
}

func (s *server) handle(nc *os.File) {
	defer nc.Close()
	c := wire.NewConn(nc)
	var req wire.Request
	if err := c.ReadJSON(wire.TypeRequest, &req); err != nil {
		return
	}
	var fileOp func(*wire.Conn, *wire.Request)
	switch req.Op {
	case wire.OpExec:
		s.exec(c, &req)
	case wire.OpRead:
		fileOp = readFile
	case wire.OpWrite:
		fileOp = writeFile
	case wire.OpReadDir, wire.OpStat:
		fileOp = statFiles
	case wire.OpSignal:
		s.signal(c, &req)
	case wire.OpPause:
		s.pause(c)
	case wire.OpKillAll:
		s.killAll(c)
	default:
		respondErr(c, &wire.Error{Code: wire.CodeInvalid, Message: fmt.Sprintf("unknown op %q", req.Op)})
	}
	if fileOp == nil {
		return
	}
	if !req.AsUser {
		fileOp(c, &req)
		return
	}
	if err := asUser(req.UID, req.GID, req.Groups, func() { fileOp(c, &req) }); err != nil {
		if req.Op == wire.OpWrite {
			// The host sends the data before it reads the reply.
			drain(c)
		}
		// The init's failure, not the path's: no code the caller would
		// take for the path's answer.
		respondErr(c, &wire.Error{Code: wire.CodeInternal, Message: err.Error()})
	}
}

// asUser runs f on a thread of its own that acts on files as uid, gid and
// groups (its filesystem ids and supplementary groups) with none of the
// init's capabilities in effect, so that f's opens, creates and renames
// get the permissions a command of that user gets. These credentials are
// the thread's alone, and are put back before the thread goes back to the
// runtime; a thread that cannot be put back ends with the goroutine.
func asUser(uid, gid uint32, groups []uint32, f func()) error {
	runtime.LockOSThread()
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var caps [2]unix.CapUserData
	if err := unix.Capget(&hdr, &caps[0]); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("read the init's capabilities: %w", err)
	}
	oldGroups, err := unix.Getgroups()
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("read the init's groups: %w", err)
	}
	gs := make([]int, len(groups))
	for i, g := range groups {
		gs[i] = int(g)
	}
	setGroups := true
	if err := unix.Setgroups(gs); err != nil {
		// A user namespace that maps one id denies setgroups; its init
		// never had other groups to give up.
		if !errors.Is(err, unix.EPERM) || len(groups) > 0 {
			runtime.UnlockOSThread()
			return fmt.Errorf("act as user %d: %w", uid, err)
		}
		setGroups = false
	}
	// setfsuid and setfsgid answer with the previous id whether or not
	// they took; asking again with an invalid id reads the current one.
	oldGID, _ := unix.SetfsgidRetGid(int(gid))
	oldUID, _ := unix.SetfsuidRetUid(int(uid))
	none := caps
	none[0].Effective, none[1].Effective = 0, 0
	nowGID, _ := unix.SetfsgidRetGid(-1)
	nowUID, _ := unix.SetfsuidRetUid(-1)
	if nowGID != int(gid) || nowUID != int(uid) || unix.Capset(&hdr, &none[0]) != nil {
		// Left locked: the thread ends with this goroutine.
		return fmt.Errorf("act as user %d: %w", uid, unix.EPERM)
	}
	f()
	restored := unix.Capset(&hdr, &caps[0]) == nil
	_, _ = unix.SetfsuidRetUid(oldUID)
	_, _ = unix.SetfsgidRetGid(oldGID)
	nowGID, _ = unix.SetfsgidRetGid(-1)
	nowUID, _ = unix.SetfsuidRetUid(-1)
	if restored && nowUID == oldUID && nowGID == oldGID && (!setGroups || unix.Setgroups(oldGroups) == nil) {
		runtime.UnlockOSThread()
	}
	return nil
}

// killAll kills every other process of the sandbox (kill(-1) from PID 1
// reaches all of its namespace) until none is left, at most 10 s: one
// forked meanwhile is killed by the next round. The reaper collects them;
// the answer comes once /proc lists only the init.
func (s *server) killAll(c *wire.Conn) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		_ = unix.Kill(-1, unix.SIGKILL)
		ents, err := os.ReadDir("/proc")
		if err != nil {
			respondErr(c, wireErr(err))
			return
		}
		left := 0
		for _, e := range ents {
			if pid, err := strconv.Atoi(e.Name()); err == nil && pid != 1 {
				left++
			}
		}
		if left == 0 {
			_ = c.WriteJSON(wire.TypeResponse, wire.Response{})
			return
		}
		if time.Now().After(deadline) {
			respondErr(c, &wire.Error{Code: wire.CodeInternal, Message: fmt.Sprintf("%d processes still running after SIGKILL", left)})
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// signal sends a signal to the process tree of a running command. It is
// how a host that gives up on a command stops it: the connection of the
// command itself may be stuck behind stdin the command never reads.
func (s *server) signal(c *wire.Conn, req *wire.Request) {
	s.mu.Lock()
	_, running := s.waiting[req.PID]
	s.mu.Unlock()
	if !running || req.Signal <= 0 {
		respondErr(c, &wire.Error{Code: wire.CodeNotFound, Message: fmt.Sprintf("no running command with pid %d", req.PID)})
		return
	}
	killTree(req.PID, unix.Signal(req.Signal))
	_ = c.WriteJSON(wire.TypeResponse, wire.Response{})
}

func respondErr(c *wire.Conn, e *wire.Error) {
	_ = c.WriteJSON(wire.TypeResponse, wire.Response{Error: e})
}

// wireErr gives a filesystem error its stable code, and its errno.
func wireErr(err error) *wire.Error {
	code := wire.CodeInternal
	var errno syscall.Errno
	errors.As(err, &errno)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		code = wire.CodeNotFound
	case errors.Is(err, fs.ErrExist):
		code = wire.CodeExists
	case errors.Is(err, fs.ErrPermission):
		code = wire.CodePermission
	case errors.Is(err, syscall.ENOTDIR):
		code = wire.CodeNotDir
	case errors.Is(err, syscall.EISDIR):
		code = wire.CodeIsDir
	case errors.Is(err, syscall.ENOSPC):
		code = wire.CodeNoSpace
	case errors.Is(err, sandbox.ErrNotRegular):
		code = wire.CodeNotRegular
	case errors.Is(err, sandbox.ErrTooLarge):
		code = wire.CodeTooLarge
	}
	return &wire.Error{Code: code, Message: err.Error(), Errno: int(errno)}
}

// lookPath finds a command the way a shell would with the command's PATH.
func lookPath(name string, env []string, dir string) (string, error) {
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if isExecutable(p) {
			return p, nil
		}
		return "", fmt.Errorf("%s: no such executable", name)
	}
	path := defaultPath
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			d = "."
		}
		p := filepath.Join(d, name)
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if isExecutable(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: command not found", name)
}

func isExecutable(p string) bool {
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		return false
	}
	return st.Mode&unix.S_IFMT != unix.S_IFDIR && st.Mode&0o111 != 0
}

func (s *server) exec(c *wire.Conn, req *wire.Request) {
	if len(req.Args) == 0 {
		respondErr(c, &wire.Error{Code: wire.CodeInvalid, Message: "empty command"})
		return
	}
	dir := req.Dir
	if dir == "" {
		dir = "/"
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		respondErr(c, &wire.Error{Code: wire.CodeNotFound, Message: fmt.Sprintf("working directory %s does not exist", dir)})
		return
	}
	path, err := lookPath(req.Args[0], req.Env, dir)
	if err != nil {
		respondErr(c, &wire.Error{Code: wire.CodeCommandNotFound, Message: err.Error()})
		return
	}
	statusCh := make(chan unix.WaitStatus, 1)
	p, err := s.startProcess(path, req, dir, statusCh)
	if err != nil {
		respondErr(c, wireErr(err))
		return
	}
	defer p.closeHost()

	if err := c.WriteJSON(wire.TypeResponse, wire.Response{PID: p.pid}); err != nil {
		killTree(p.pid, unix.SIGKILL)
		<-statusCh
		return
	}

	var outWG sync.WaitGroup
	pump := func(typ byte, f *os.File) {
		defer outWG.Done()
		buf := make([]byte, wire.ChunkSize)
		for {
			n, err := f.Read(buf)
			if n > 0 {
				if c.Write(typ, buf[:n]) != nil {
					return
				}
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				// Cut off because a descendant holds the output open:
				// what the command wrote before it exited is still in
				// the pipe, and must not be lost to a slow wake-up.
				drainPipe(f, func(b []byte) { _ = c.Write(typ, b) })
				return
			}
			if err != nil {
				return
			}
		}
	}
	for _, o := range p.outputs {
		outWG.Add(1)
		go pump(o.typ, o.f)
	}

	// Frames from the host: stdin, resizes, signals. A closed connection
	// means the caller is gone: the command's tree is killed.
	hostGone := make(chan struct{})
	go func() {
		defer close(hostGone)
		for {
			typ, payload, err := c.Read()
			if err != nil {
				return
			}
			switch typ {
			case wire.TypeStdin:
				if p.stdin != nil {
					_, _ = p.stdin.Write(payload)
				}
			case wire.TypeStdinEOF:
				if p.stdin != nil && !p.tty {
					p.stdin.Close()
				} else if p.tty {
					// ^D at the start of a line is a terminal's EOF.
					_, _ = p.stdin.Write([]byte{4})
				}
			case wire.TypeResize:
				var ws wire.WinSize
				if ws.UnmarshalJSON(payload) == nil && p.tty {
					setWinsize(p.stdin, ws)
				}
			}
		}
	}()

	var timeout <-chan time.Time
	if req.TimeoutMS > 0 {
		t := time.NewTimer(time.Duration(req.TimeoutMS) * time.Millisecond)
		defer t.Stop()
		timeout = t.C
	}
	var exit wire.Exit
	var ws unix.WaitStatus
	for waiting := true; waiting; {
		select {
		case ws = <-statusCh:
			waiting = false
		case <-timeout:
			exit.TimedOut = true
			killTree(p.pid, unix.SIGKILL)
			timeout = nil
		case <-hostGone:
			killTree(p.pid, unix.SIGKILL)
			hostGone = nil
		}
	}
	if exit.TimedOut {
		// Whatever the command left running dies with it.
		killTree(p.pid, unix.SIGKILL)
	}
	switch {
	case ws.Signaled():
		exit.Signal = int(ws.Signal())
		exit.Code = 128 + exit.Signal
	default:
		exit.Code = ws.ExitStatus()
	}
	waitOutput(&outWG, p)
	_ = c.WriteJSON(wire.TypeExit, exit)
}

// waitOutput waits for the command's output to drain, at most outputGrace
// past its exit, then cuts it off.
func waitOutput(wg *sync.WaitGroup, p *proc) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(outputGrace):
		for _, o := range p.outputs {
			_ = o.f.SetReadDeadline(time.Now())
		}
		<-done
	}
}

// drainPipe reads what is buffered in the non-blocking pipe f without
// waiting (the poller refuses reads past a deadline; Control does not).
func drainPipe(f *os.File, emit func([]byte)) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	buf := make([]byte, wire.ChunkSize)
	_ = rc.Control(func(fd uintptr) {
		for {
			n, err := unix.Read(int(fd), buf)
			if n <= 0 || err != nil {
				return
			}
			emit(buf[:n])
		}
	})
}

// killTree signals the command's process group and every process in its
// session, which catches children that changed process group.
func killTree(pid int, sig unix.Signal) { proctree.Kill(pid, sig) }

type output struct {
	typ byte
	f   *os.File
}

type proc struct {
	pid     int
	stdin   *os.File
	tty     bool
	outputs []output
	// closers are host ends to close when the command is done.
	closers []io.Closer
}

func (p *proc) closeHost() {
	for _, c := range p.closers {
		c.Close()
	}
}

// startProcess forks the command and registers statusCh for its exit, both
// under mu so the reaper cannot see the exit first.
func (s *server) startProcess(path string, req *wire.Request, dir string, statusCh chan unix.WaitStatus) (*proc, error) {
	env := req.Env
	if env == nil {
		env = []string{"PATH=" + defaultPath}
	}
	attr := &syscall.SysProcAttr{Setsid: true}
	// Switch user only when it is another user: in a rootless sandbox the
	// init already is the sandbox's user, and nothing else is mapped.
	if int(req.UID) != os.Getuid() || int(req.GID) != os.Getgid() || len(req.Groups) > 0 {
		attr.Credential = &syscall.Credential{Uid: req.UID, Gid: req.GID, Groups: req.Groups}
	}
	p := &proc{}
	var childFiles []*os.File
	ok := false
	defer func() {
		for _, f := range childFiles {
			f.Close()
		}
		if !ok {
			p.closeHost()
		}
	}()
	if req.TTY != nil {
		ptm, pts, err := openPTY(req.UID, req.TTY)
		if err != nil {
			return nil, err
		}
		p.tty = true
		p.stdin = ptm
		p.closers = append(p.closers, ptm)
		p.outputs = []output{{wire.TypeStdout, ptm}}
		childFiles = []*os.File{pts, pts, pts}
		attr.Setctty = true
		attr.Ctty = 0
	} else {
		inR, inW, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		outR, outW, err := os.Pipe()
		if err != nil {
			inR.Close()
			inW.Close()
			return nil, err
		}
		errR, errW, err := os.Pipe()
		if err != nil {
			inR.Close()
			inW.Close()
			outR.Close()
			outW.Close()
			return nil, err
		}
		p.stdin = inW
		p.closers = append(p.closers, inW, outR, errR)
		p.outputs = []output{{wire.TypeStdout, outR}, {wire.TypeStderr, errR}}
		childFiles = []*os.File{inR, outW, errW}
	}
	fds := make([]uintptr, len(childFiles))
	for i, f := range childFiles {
		fds[i] = f.Fd()
	}
	// No command starts while the sandbox is paused for a snapshot.
	s.paused.RLock()
	s.mu.Lock()
	pid, err := s.forkExec(path, req.Args, &syscall.ProcAttr{Dir: dir, Env: env, Files: fds, Sys: attr})
	if err == nil {
		s.waiting[pid] = statusCh
	}
	s.mu.Unlock()
	s.paused.RUnlock()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", req.Args[0], err)
	}
	select {
	case s.started <- struct{}{}:
	default:
	}
	p.pid = pid
	ok = true
	return p, nil
}

// setWinsize resizes the terminal of master f. It goes through Control:
// File.Fd would switch f to blocking mode, and the output pump relies on
// read deadlines.
func setWinsize(f *os.File, ws wire.WinSize) {
	if rc, err := f.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) {
			_ = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: ws.Rows, Col: ws.Cols})
		})
	}
}

// openPTY opens a terminal pair on the sandbox's own devpts, with the slave
// owned by the user the way a login terminal is.
func openPTY(uid uint32, ws *wire.WinSize) (ptm, pts *os.File, err error) {
	ptm, pts, err = pty.Open()
	if err != nil {
		return nil, nil, fmt.Errorf("open pty: %w", err)
	}
	_ = pts.Chown(int(uid), 5)
	if ws != nil {
		setWinsize(ptm, *ws)
	}
	return ptm, pts, nil
}

func readFile(c *wire.Conn, req *wire.Request) {
	f, limit, err := sandbox.OpenRegular(req.Path)
	if err != nil {
		respondErr(c, wireErr(err))
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		respondErr(c, wireErr(err))
		return
	}
	if err := c.WriteJSON(wire.TypeResponse, wire.Response{Size: fi.Size()}); err != nil {
		return
	}
	_ = c.WriteStream(wire.TypeData, wire.TypeDataEnd, io.LimitReader(f, limit))
}

// writeFile receives content into a temporary file beside the target and
// renames it into place, so a broken transfer never leaves half a file.
func writeFile(c *wire.Conn, req *wire.Request) {
	dir := filepath.Dir(req.Path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(req.Path)+".*")
	if err != nil {
		drain(c)
		respondErr(c, wireErr(err))
		return
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	var werr error
	for {
		typ, payload, err := c.Read()
		if err != nil {
			return
		}
		if typ == wire.TypeDataEnd {
			break
		}
		if typ == wire.TypeData && werr == nil {
			_, werr = tmp.Write(payload)
		}
	}
	if werr == nil {
		werr = tmp.Chown(int(req.UID), int(req.GID))
	}
	if werr == nil {
		werr = tmp.Chmod(fs.FileMode(req.Mode).Perm())
	}
	if werr == nil {
		werr = tmp.Close()
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), req.Path)
	}
	if werr != nil {
		respondErr(c, wireErr(werr))
		return
	}
	ok = true
	_ = c.WriteJSON(wire.TypeResponse, wire.Response{})
}

func drain(c *wire.Conn) {
	for {
		typ, _, err := c.Read()
		if err != nil || typ == wire.TypeDataEnd {
			return
		}
	}
}

func statFiles(c *wire.Conn, req *wire.Request) {
	info := func(name string, fi fs.FileInfo) wire.FileInfo {
		w := wire.FileInfo{Name: name, Size: fi.Size(), Mode: uint32(fi.Mode()), ModTime: fi.ModTime().UnixNano()}
		if fi.Mode()&fs.ModeSymlink != 0 {
			w.Link, _ = os.Readlink(filepath.Join(req.Path, name))
		}
		return w
	}
	if req.Op == wire.OpStat {
		fi, err := os.Lstat(req.Path)
		if err != nil {
			respondErr(c, wireErr(err))
			return
		}
		w := info(filepath.Base(req.Path), fi)
		if fi.Mode()&fs.ModeSymlink != 0 {
			w.Link, _ = os.Readlink(req.Path)
		}
		_ = c.WriteJSON(wire.TypeResponse, wire.Response{Files: []wire.FileInfo{w}})
		return
	}
	ents, err := os.ReadDir(req.Path)
	if err != nil {
		respondErr(c, wireErr(err))
		return
	}
	// In responses of at most half a frame each, counting every byte of a
	// name or link as an escape (six bytes) and 100 for the rest.
	var files []wire.FileInfo
	size := 0
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			continue
		}
		w := info(e.Name(), fi)
		n := 6*(len(w.Name)+len(w.Link)) + 100
		if size+n > wire.MaxFrame/2 && len(files) > 0 {
			if c.WriteJSON(wire.TypeResponse, wire.Response{Files: files, More: true}) != nil {
				return
			}
			files, size = nil, 0
		}
		files = append(files, w)
		size += n
	}
	_ = c.WriteJSON(wire.TypeResponse, wire.Response{Files: files})
}
