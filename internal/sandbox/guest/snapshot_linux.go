package guest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/verisim/verisim/internal/sandbox/layer"
	"github.com/verisim/verisim/internal/sandbox/wire"
)

// upperFD is the init's descriptor of the writable layer's upper
// directory, once finish has opened it (0 before).
var upperFD atomic.Int32

// maxSnapshotFDs bounds the descriptors one snapshot request may pass:
// the destination and the snapshot layers a squash applies first.
const maxSnapshotFDs = 64

// pauseTimeout bounds the wait for every process to stop.
const pauseTimeout = 5 * time.Second

// snapshot serves OpSnapshot: it answers at once, receives the
// destination directory and the layers to apply before the writable one
// (a squash, deepest first) as descriptors, stops every other process of
// the sandbox, applies the layers and the writable layer onto the
// destination, lets the processes go on and answers again.
func (s *server) snapshot(c *wire.Conn, nc *os.File) {
	upper := int(upperFD.Load())
	if upper <= 0 {
		respondErr(c, &wire.Error{Code: wire.CodeInvalid, Message: "the sandbox is not built yet"})
		return
	}
	if err := c.WriteJSON(wire.TypeResponse, wire.Response{}); err != nil {
		return
	}
	fds, err := recvFDs(nc)
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	if err == nil && len(fds) == 0 {
		err = errors.New("no destination directory passed")
	}
	if err != nil {
		respondErr(c, &wire.Error{Code: wire.CodeInvalid, Message: "snapshot: " + err.Error()})
		return
	}
	resume, err := pauseAll()
	defer resume()
	if err != nil {
		respondErr(c, &wire.Error{Code: wire.CodeInternal, Message: "snapshot: " + err.Error()})
		return
	}
	ctx := context.Background()
	dst := fds[0]
	for _, src := range append(fds[1:], upper) {
		if err := layer.Apply(ctx, src, dst); err != nil {
			respondErr(c, wireErr(fmt.Errorf("snapshot: %w", err)))
			return
		}
	}
	_ = c.WriteJSON(wire.TypeResponse, wire.Response{})
}

// recvFDs reads the one byte the host sends with its descriptors. The
// host sends it only after the init's first response, so nothing of it
// can sit in the connection's read buffer.
func recvFDs(nc *os.File) ([]int, error) {
	rc, err := nc.SyscallConn()
	if err != nil {
		return nil, err
	}
	var (
		n, oobn int
		rerr    error
		buf     [1]byte
		oob     = make([]byte, unix.CmsgSpace(4*maxSnapshotFDs))
	)
	err = rc.Read(func(fd uintptr) bool {
		n, oobn, _, _, rerr = unix.Recvmsg(int(fd), buf[:], oob, unix.MSG_CMSG_CLOEXEC)
		return !errors.Is(rerr, unix.EAGAIN)
	})
	if err == nil {
		err = rerr
	}
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, errors.New("the host closed the connection")
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return nil, err
	}
	var fds []int
	for i := range msgs {
		got, err := unix.ParseUnixRights(&msgs[i])
		if err != nil {
			continue
		}
		fds = append(fds, got...)
	}
	return fds, nil
}

// pauseAll stops every process of the sandbox but the init (SIGSTOP to
// all, which from PID 1 reaches exactly its namespace) and waits until
// each has stopped. resume, always to be called, continues them. Unlike a
// cgroup freezer this is visible: a parent may see its child stop and go
// on.
func pauseAll() (resume func(), err error) {
	if err := unix.Kill(-1, unix.SIGSTOP); err != nil {
		if errors.Is(err, unix.ESRCH) {
			return func() {}, nil // nothing but the init
		}
		return func() {}, fmt.Errorf("stop the sandbox's processes: %w", err)
	}
	resume = func() { _ = unix.Kill(-1, unix.SIGCONT) }
	deadline := time.Now().Add(pauseTimeout)
	for {
		running := runningPIDs()
		if len(running) == 0 {
			return resume, nil
		}
		if time.Now().After(deadline) {
			return resume, fmt.Errorf("processes %s did not stop within %v", strings.Join(running, ", "), pauseTimeout)
		}
		// One forked since the signal, or one that was in a system call.
		_ = unix.Kill(-1, unix.SIGSTOP)
		time.Sleep(200 * time.Microsecond)
	}
}

// runningPIDs lists the sandbox's processes, the init's aside, that are
// neither stopped nor dead.
func runningPIDs() []string {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := strconv.Itoa(os.Getpid())
	var out []string
	for _, e := range ents {
		name := e.Name()
		if name == self || name[0] < '0' || name[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + name + "/stat")
		if err != nil {
			continue // gone
		}
		// The state follows the command name, which may hold anything
		// but ends at the last ')'.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 || i+2 >= len(b) {
			continue
		}
		switch b[i+2] {
		case 'T', 't', 'Z', 'X':
		default:
			out = append(out, name)
		}
	}
	return out
}
