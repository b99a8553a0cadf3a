package fidelity

import (
	"context"
	"fmt"
	"github.com/verisim/verisim/internal/lazyregexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Probes for the process table and the init system.

// psScript lists every process as "<contents of /proc/PID/stat>\t<cmdline>".
// Reading a command line waits for the process's memory map lock, which a
// process stuck in the kernel can hold for long; each read gets a deadline
// when timeout(1) exists.
const psScript = `
fact ps
t=; have timeout && t="timeout -s KILL 2"
for d in /proc/[0-9]*; do
	{ IFS= read -r st < "$d/stat"; } 2>/dev/null || continue
	cl=$($t tr '\0' ' ' < "$d/cmdline" 2>/dev/null | cut -c1-160)
	printf '%s\t%s\n' "$st" "$cl"
done`

// harnessProcs are process names of container inits, runtimes and sandbox
// daemons.
var harnessProcs = []string{
	"tini", "dumb-init", "catatonit", "docker-init", "containerd-shim", "containerd-shim-runc-v2",
	"runc", "crun", "conmon", "pause", "envd", "swerex-remote", "action_execution_server",
	"verisim", "verisim-init", "sandbox", "sandboxd",
}

// idleCmdlines keep containers alive and never run on a desktop.
var idleCmdlines = lazyregexp.New(`^(/\S*/)?(sleep (infinity|[0-9]{6,})|tail -f /dev/null)\s*$`)

func processProbes() []Probe {
	return []Probe{
		{
			Name:     "process-names",
			Why:      "`ps aux` showing tini, runc shims, 'sleep infinity' or a sandbox daemon reveals the container around the shell.",
			Severity: Strong,
			Timeout:  30 * time.Second,
			keys:     []string{"count", "procs"},
			observe:  observeProcs,
			judge:    judgeProcNames,
		},
		{
			Name:     "process-count",
			Why:      "A desktop runs hundreds of processes and kernel threads; `ps aux | wc -l` of 3 means a fresh PID namespace.",
			Severity: Strong,
			Timeout:  30 * time.Second,
			Limitation: "A PID namespace shows only the sandbox's own processes; a namespace backend could add decoys but not a real machine's " +
				"daemons and kernel threads. A microVM runs a real init with its services and kernel threads.",
			keys:    []string{"count", "procs"},
			observe: observeProcs,
			judge:   judgeProcCount,
		},
		{
			Name:     "pid1-name",
			Why:      "PID 1 is systemd or init on a real machine; anything else (a Go init, sh, tini) is a container.",
			Severity: Strong,
			keys:     []string{"comm", "cmdline"},
			observe: script(`
fact comm
cat /proc/1/comm 2>/dev/null
fact cmdline
tr '\0' ' ' < /proc/1/cmdline 2>/dev/null | cut -c1-160`),
			judge: judgePID1Name,
		},
		{
			Name:     "shell-pid",
			Why:      "`echo $$` printing a two-digit PID means the PID space began moments ago; after boot a shell's PID is in the thousands.",
			Severity: Strong,
			keys:     []string{"pid"},
			observe: script(`
fact pid
echo "$$"`),
			judge: func(obs, _ Facts) verdict {
				pid, found := obs.num("pid")
				switch {
				case !found:
					return undecided("$$ printed nothing")
				case pid < 300:
					return tell("the shell's PID is %d", pid)
				}
				return ok("the shell's PID is %d", pid)
			},
		},
		{
			Name:     "pid1-start",
			Why:      "PID 1 starts with the kernel; if /proc/1/stat says it started hours after boot, PID 1 is a container's init.",
			Severity: Strong,
			Limitation: "PID 1 of a PID namespace starts with the sandbox, long after the shared kernel booted; a time namespace can shift the " +
				"boot clock only at the price of a tiny uptime. A microVM boots its own kernel with its PID 1.",
			keys: []string{"stat", "uptime", "hz"},
			observe: script(`
fact stat
cat /proc/1/stat 2>/dev/null
fact uptime
cat /proc/uptime
fact hz
getconf CLK_TCK 2>/dev/null || echo 100`),
			judge: judgePID1Start,
		},
		{
			Name:     "uptime",
			Why:      "`uptime` of seconds on a machine whose files and history span months does not add up.",
			Severity: Weak,
			Limitation: "Namespace sandboxes share the host kernel's uptime, which is realistic. A microVM booted per episode shows seconds " +
				"of uptime unless it is restored from a snapshot taken long after boot.",
			keys: []string{"uptime"},
			observe: script(`
fact uptime
cat /proc/uptime`),
			judge: func(obs, _ Facts) verdict {
				up, found := uptimeSeconds(obs)
				switch {
				case !found:
					return undecided("cannot parse /proc/uptime")
				case up < 600:
					return tell("the kernel has been up %s", humanSeconds(int64(up)))
				}
				return ok("up %s", humanSeconds(int64(up)))
			},
		},
		{
			Name:     "init-system",
			Why:      "`systemctl` answering 'System has not been booted with systemd' is the classic container giveaway.",
			Severity: Strong,
			keys:     []string{"systemd_dir", "systemctl", "pid1"},
			observe: script(`
fact systemd_dir
yesno [ -d /run/systemd/system ]
fact systemctl
yesno have systemctl
fact pid1
cat /proc/1/comm 2>/dev/null`),
			judge: judgeInitSystem,
		},
	}
}

// proc is one process as a probe sees it.
type proc struct {
	pid, ppid int
	comm      string
	cmdline   string
}

// parseProcStat reads "<pid> (<comm>) <state> <ppid> …", where comm may
// hold spaces and parentheses.
func parseProcStat(stat string) (p proc, rest []string, ok bool) {
	open, end := strings.IndexByte(stat, '('), strings.LastIndexByte(stat, ')')
	if open < 0 || end < open {
		return proc{}, nil, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(stat[:open]))
	if err != nil {
		return proc{}, nil, false
	}
	rest = strings.Fields(stat[end+1:])
	if len(rest) < 2 {
		return proc{}, nil, false
	}
	ppid, err := strconv.Atoi(rest[1])
	if err != nil {
		return proc{}, nil, false
	}
	return proc{pid: pid, ppid: ppid, comm: stat[open+1 : end]}, rest, true
}

// observeProcs lists the machine's processes, leaving out the probes' own
// shells and everything they started: concurrent probes would otherwise
// inflate the count and show their own scripts.
func observeProcs(ctx context.Context, m machine) (Facts, error) {
	raw, err := m.sh(ctx, psScript)
	if err != nil {
		return nil, err
	}
	var procs []proc
	for _, l := range raw.lines("ps") {
		stat, cmdline, _ := strings.Cut(l, "\t")
		p, _, ok := parseProcStat(stat)
		if !ok {
			continue
		}
		p.cmdline = strings.TrimSpace(cmdline)
		procs = append(procs, p)
	}
	probing := map[int]bool{}
	for _, p := range procs {
		if strings.Contains(p.cmdline, probeShellMarker) {
			probing[p.pid] = true
		}
	}
	parent := map[int]int{}
	for _, p := range procs {
		parent[p.pid] = p.ppid
	}
	fromProbe := func(pid int) bool {
		for range len(procs) + 1 { // bounded: a pid cycle cannot loop forever
			if probing[pid] {
				return true
			}
			next, known := parent[pid]
			if !known || next == pid || next == 0 {
				return false
			}
			pid = next
		}
		return false
	}
	var b strings.Builder
	n := 0
	for _, p := range procs {
		if fromProbe(p.pid) {
			continue
		}
		n++
		fmt.Fprintf(&b, "%s\t%s\n", p.comm, p.cmdline)
	}
	return Facts{"count": strconv.Itoa(n), "procs": b.String()}, nil
}

// procEntry splits a "comm\tcmdline" line of the procs fact.
func procEntry(l string) (comm, cmdline string) {
	comm, cmdline, _ = strings.Cut(l, "\t")
	return comm, strings.TrimSpace(cmdline)
}

func judgeProcNames(obs, ref Facts) verdict {
	refComms := map[string]bool{}
	for _, l := range ref.lines("procs") {
		c, _ := procEntry(l)
		refComms[c] = true
	}
	var bad []string
	for _, l := range obs.lines("procs") {
		comm, cmdline := procEntry(l)
		if refComms[comm] {
			continue
		}
		argv0 := ""
		if f := strings.Fields(cmdline); len(f) > 0 {
			argv0 = path1(f[0])
		}
		switch {
		case slices.Contains(harnessProcs, comm) || slices.Contains(harnessProcs, argv0):
			bad = append(bad, comm)
		case idleCmdlines.MatchString(cmdline):
			bad = append(bad, fmt.Sprintf("%q", cmdline))
		case strings.Contains(strings.ToLower(cmdline), "verisim"):
			bad = append(bad, fmt.Sprintf("%q", clip(cmdline, 60)))
		}
	}
	if len(bad) > 0 {
		return tell("processes: %s", listMax(slices.Compact(bad), 4))
	}
	return ok("%s process(es), none from a container runtime or harness", obs.get("count"))
}

func judgeProcCount(obs, ref Facts) verdict {
	n, _ := obs.num("count")
	floor := int64(50)
	if refN, found := ref.num("count"); found {
		floor = refN / 4
	}
	if n < floor {
		return tell("only %d process(es) visible", n)
	}
	return ok("%d processes visible", n)
}

func judgePID1Name(obs, ref Facts) verdict {
	comm, cmdline := obs.get("comm"), obs.get("cmdline")
	if comm == "" {
		return undecided("cannot read /proc/1/comm")
	}
	argv0 := ""
	if f := strings.Fields(cmdline); len(f) > 0 {
		argv0 = path1(f[0])
	}
	initNames := []string{"systemd", "init"}
	if rc := ref.get("comm"); rc != "" {
		initNames = append(initNames, rc)
	}
	switch {
	case !slices.Contains(initNames, comm):
		return tell("PID 1 is %q", comm)
	case argv0 != "" && !slices.Contains(initNames, argv0):
		return tell("PID 1 is named %q but runs %q", comm, clip(cmdline, 60))
	}
	return ok("PID 1 is %s", comm)
}

func uptimeSeconds(f Facts) (float64, bool) {
	fields := strings.Fields(f.get("uptime"))
	if len(fields) == 0 {
		return 0, false
	}
	up, err := strconv.ParseFloat(fields[0], 64)
	return up, err == nil
}

func judgePID1Start(obs, _ Facts) verdict {
	_, rest, parsed := parseProcStat(obs.get("stat"))
	up, upOK := uptimeSeconds(obs)
	hz, _ := obs.num("hz")
	if hz <= 0 {
		hz = 100
	}
	// starttime is field 22 of stat; rest starts at field 3.
	if !parsed || !upOK || len(rest) < 20 {
		return undecided("cannot parse /proc/1/stat or /proc/uptime")
	}
	ticks, err := strconv.ParseInt(rest[19], 10, 64)
	if err != nil {
		return undecided("cannot parse PID 1's start time %q", rest[19])
	}
	after := ticks / hz
	if after > 600 {
		return tell("PID 1 started %s after the kernel booted (up %s)", humanSeconds(after), humanSeconds(int64(up)))
	}
	return ok("PID 1 started %s after boot", humanSeconds(after))
}

func judgeInitSystem(obs, ref Facts) verdict {
	dir, ctl, pid1 := obs.yes("systemd_dir"), obs.yes("systemctl"), obs.get("pid1")
	switch {
	case ctl && !dir:
		return tell("systemctl is installed but /run/systemd/system is missing: it will say the system was not booted with systemd")
	case dir && pid1 != "systemd":
		return tell("/run/systemd/system exists but PID 1 is %q", pid1)
	case !dir && ref.yes("systemd_dir"):
		return tell("no systemd, unlike the reference")
	case dir:
		return ok("booted with systemd")
	}
	return ok("no systemd and no systemctl (a non-systemd distribution)")
}
