// Package proctree signals a command's whole process tree: its process group
// and every process of its session, which catches children that moved to a
// process group of their own. Commands are started as session leaders
// (setsid), so the session id is the command's pid.
package proctree

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Kill sends sig to the process group sid and to every process whose
// session is sid. It never signals PID 1.
func Kill(sid int, sig syscall.Signal) {
	if sid <= 1 {
		return
	}
	_ = syscall.Kill(-sid, sig)
	for _, pid := range Session(sid) {
		_ = syscall.Kill(pid, sig)
	}
}

// Session lists the live (not zombie) processes whose session id is sid,
// from /proc; it is empty where there is no /proc.
func Session(sid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == 1 {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// Fields after the command name, which may contain spaces.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 4 {
			continue
		}
		// f[0] is the state; a zombie is dead already.
		if s, _ := strconv.Atoi(f[3]); s == sid && f[0] != "Z" {
			out = append(out, pid)
		}
	}
	return out
}
