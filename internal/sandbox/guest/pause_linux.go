package guest

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/verisim/verisim/internal/sandbox/wire"
)

// pauseTimeout bounds the wait for every process to stop.
const pauseTimeout = 5 * time.Second

// pause serves OpPause: it stops every other process of the sandbox,
// answers, and keeps them stopped, and starts no command, until the host
// hangs up. The host copies a rootless sandbox's writable layer meanwhile:
// with no cgroup freezer, this is what holds the files still.
func (s *server) pause(c *wire.Conn) {
	s.paused.Lock()
	defer s.paused.Unlock()
	resume, err := pauseAll()
	defer resume()
	if err != nil {
		respondErr(c, &wire.Error{Code: wire.CodeInternal, Message: err.Error()})
		return
	}
	if c.WriteJSON(wire.TypeResponse, wire.Response{}) != nil {
		return
	}
	for {
		if _, _, err := c.Read(); err != nil {
			return
		}
	}
}

// pauseAll stops every process of the sandbox but the init (SIGSTOP to
// all, which from PID 1 reaches exactly its namespace) and waits until each
// of their threads has stopped. resume, always to be called, continues the
// processes it stopped: those stopped already (a suspended job, a tracee)
// stay stopped. Unlike a cgroup freezer this is visible (a parent may see
// its child stop and go on) and a process that arranged to be continued
// can run again: it keeps the copy consistent, it is not a security
// boundary (the copy itself follows no link and trusts no name).
func pauseAll() (resume func(), err error) {
	before, err := procStates()
	if err != nil {
		return func() {}, err
	}
	resume = func() {
		now, _ := procStates()
		for pid := range now {
			if stopped(before[pid]) {
				continue
			}
			if p, err := strconv.Atoi(pid); err == nil {
				_ = unix.Kill(p, unix.SIGCONT)
			}
		}
	}
	if err := unix.Kill(-1, unix.SIGSTOP); err != nil {
		if errors.Is(err, unix.ESRCH) {
			return func() {}, nil // nothing but the init
		}
		return resume, fmt.Errorf("stop the sandbox's processes: %w", err)
	}
	deadline := time.Now().Add(pauseTimeout)
	for {
		now, err := procStates()
		if err != nil {
			return resume, err
		}
		var running []string
		for pid, states := range now {
			if !stopped(states) {
				running = append(running, pid)
			}
		}
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

// stopped reports whether every thread of a process is stopped or dead.
func stopped(states string) bool {
	return states != "" && strings.Trim(states, "TtZX") == ""
}

// procStates maps each process of the sandbox but the init to the states
// of its threads. It fails when /proc cannot be read: a pause must not
// take an unreadable /proc for a stopped sandbox.
func procStates() (map[string]string, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	self := strconv.Itoa(os.Getpid())
	out := map[string]string{}
	for _, e := range ents {
		pid := e.Name()
		if pid == self || pid[0] < '0' || pid[0] > '9' {
			continue
		}
		tasks, err := os.ReadDir("/proc/" + pid + "/task")
		if err != nil {
			continue // gone
		}
		var states []byte
		for _, t := range tasks {
			b, err := os.ReadFile("/proc/" + pid + "/task/" + t.Name() + "/stat")
			if err != nil {
				continue
			}
			// The state follows the command name, which may hold
			// anything but ends at the last ')'.
			if i := strings.LastIndexByte(string(b), ')'); i >= 0 && i+2 < len(b) {
				states = append(states, b[i+2])
			}
		}
		if len(states) > 0 {
			out[pid] = string(states)
		}
	}
	return out, nil
}
