package guest

import (
	"errors"
	"fmt"
	"os"
	"sort"
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
// of their threads has stopped (or, in vfork, waits on a stopped child:
// see unsettled). resume, always to be called, continues the
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
		now, err := procStates()
		if err != nil {
			_ = unix.Kill(-1, unix.SIGCONT)
			return
		}
		// Children before their parents: a shell that waits for stopped
		// children must not see its job stopped and take it for
		// suspended.
		var pids []int
		for pid, p := range now {
			if !stopped(before[pid].states) {
				pids = append(pids, p.pid)
			}
		}
		sort.Slice(pids, func(i, j int) bool {
			di, dj := depth(now, pids[i]), depth(now, pids[j])
			if di != dj {
				return di > dj
			}
			return pids[i] < pids[j]
		})
		for _, p := range pids {
			_ = unix.Kill(p, unix.SIGCONT)
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
		running := unsettled(now, sameVM)
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

// unsettled lists, sorted, the processes of procs that may still run:
// those with a thread neither stopped nor dead, but for a parent blocked
// in vfork. A vfork (dash runs every command this way; Go's os/exec and
// posix_spawn clone with CLONE_VFORK) leaves the parent in uninterruptible
// sleep, deaf to SIGSTOP, until the child execs or exits; a child stopped
// before it got there holds the parent so for as long as it is stopped.
// Such a parent runs nothing until then, so it counts as paused when each
// of its sleeping threads can be matched to a paused child sharing its
// memory (sameVM, kcmp's KCMP_VM: the mark of a vfork child before exec).
// The match repeats to a fixed point: a vfork child may itself wait on
// one.
func unsettled(procs map[string]procState, sameVM func(a, b int) bool) []string {
	settled := map[int]bool{}
	children := map[int][]int{}
	for _, p := range procs {
		children[p.ppid] = append(children[p.ppid], p.pid)
		if stopped(p.states) {
			settled[p.pid] = true
		}
	}
	for changed := true; changed; {
		changed = false
		for _, p := range procs {
			if settled[p.pid] || strings.Trim(p.states, "TtZXD") != "" {
				continue
			}
			waiting := strings.Count(p.states, "D")
			for _, c := range children[p.pid] {
				if waiting > 0 && settled[c] && sameVM(p.pid, c) {
					waiting--
				}
			}
			if waiting == 0 {
				settled[p.pid] = true
				changed = true
			}
		}
	}
	var out []string
	for name, p := range procs {
		if !settled[p.pid] {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// sameVM reports whether processes a and b share one address space, as a
// vfork child does its parent's until it execs (kcmp KCMP_VM; the init
// may inspect any process of its sandbox). An error counts as no.
func sameVM(a, b int) bool {
	const kcmpVM = 1 // KCMP_VM in <linux/kcmp.h>
	r, _, errno := unix.Syscall6(unix.SYS_KCMP, uintptr(a), uintptr(b), kcmpVM, 0, 0, 0)
	return errno == 0 && r == 0
}

// procState is a process's parent and the states of its threads.
type procState struct {
	pid, ppid int
	states    string
}

// depth counts pid's ancestors among procs.
func depth(procs map[string]procState, pid int) int {
	d := 0
	for seen := 0; seen < len(procs); seen++ {
		p, ok := procs[strconv.Itoa(pid)]
		if !ok {
			break
		}
		pid = p.ppid
		d++
	}
	return d
}

// procStates maps each process of the sandbox but the init to its parent
// and the states of its threads. It fails when /proc cannot be read: a
// pause must not take an unreadable /proc for a stopped sandbox.
func procStates() (map[string]procState, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	self := strconv.Itoa(os.Getpid())
	out := map[string]procState{}
	for _, e := range ents {
		name := e.Name()
		if name == self || name[0] < '0' || name[0] > '9' {
			continue
		}
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		tasks, err := os.ReadDir("/proc/" + name + "/task")
		if err != nil {
			continue // gone
		}
		p := procState{pid: pid}
		var states []byte
		for _, t := range tasks {
			b, err := os.ReadFile("/proc/" + name + "/task/" + t.Name() + "/stat")
			if err != nil {
				continue
			}
			// The state and the parent follow the command name, which
			// may hold anything but ends at the last ')'.
			i := strings.LastIndexByte(string(b), ')')
			if i < 0 || i+2 >= len(b) {
				continue
			}
			states = append(states, b[i+2])
			if f := strings.Fields(string(b[i+2:])); len(f) > 1 {
				p.ppid, _ = strconv.Atoi(f[1])
			}
		}
		if len(states) > 0 {
			p.states = string(states)
			out[name] = p
		}
	}
	return out, nil
}
