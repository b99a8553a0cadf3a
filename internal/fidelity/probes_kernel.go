package fidelity

import (
	"fmt"
	"github.com/verisim/verisim/internal/lazyregexp"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Probes for what the kernel reports about the process: cgroups, limits,
// privileges, devices and the network.

// cgwalkFunc prints "<cgroup path> <file> <value>" for each named control
// file from the shell's cgroup up to the (namespace's) root, for cgroup v2
// and the v1 memory and cpu hierarchies.
const cgwalkFunc = `
cgwalk() {
	while IFS= read -r line; do
		hier=${line%%:*}; rest=${line#*:}; ctrl=${rest%%:*}; p=${rest#*:}
		case "$hier:$ctrl" in
		0:) dir=/sys/fs/cgroup ;;
		*:*memory*) dir=/sys/fs/cgroup/memory ;;
		*:*cpu,*|*:cpu) dir=/sys/fs/cgroup/cpu ;;
		*) continue ;;
		esac
		while :; do
			for f in "$@"; do
				[ -r "$dir${p%/}/$f" ] && printf '%s %s %s\n' "${p:-/}" "$f" "$(cat "$dir${p%/}/$f" 2>/dev/null)"
			done
			{ [ -z "$p" ] || [ "$p" = / ]; } && break
			p=${p%/*}
		done
	done < /proc/self/cgroup
}
`

// statusScript prints the privilege lines of the shell's /proc/self/status.
const statusScript = `
fact status
while IFS= read -r l; do case "$l" in NoNewPrivs:*|Seccomp:*|Cap*) printf '%s\n' "$l";; esac; done < /proc/self/status
fact cap_last_cap
cat /proc/sys/kernel/cap_last_cap 2>/dev/null
fact uid
id -u`

// dockerCapBnd is Docker's default capability bounding set.
const dockerCapBnd = 0x00000000a80425fb

// cgroupRuntime matches cgroup paths that container runtimes create.
var cgroupRuntime = lazyregexp.New(`(?i)docker|containerd|kubepods|libpod|lxc|crio|machine\.slice|garden|verisim|sandbox|actions_job|buildkit`)

func kernelProbes() []Probe {
	return []Probe{
		{
			Name:     "cgroup-self",
			Why:      "`cat /proc/self/cgroup` shows docker/kubepods paths or a bare '/' where a login shell sits in /user.slice/…/session-N.scope.",
			Severity: Strong,
			keys:     []string{"cgroup"},
			observe: script(`
fact cgroup
cat /proc/self/cgroup`),
			judge: func(obs, ref Facts) verdict { return judgeCgroup("the shell", obs, ref) },
		},
		{
			Name:     "pid1-cgroup",
			Why:      "On a systemd machine PID 1 sits in /init.scope; in a cgroup namespace it sits at '/', and in plain containers under the runtime's path.",
			Severity: Strong,
			keys:     []string{"cgroup"},
			observe: script(`
fact cgroup
cat /proc/1/cgroup 2>/dev/null`),
			judge: func(obs, ref Facts) verdict { return judgeCgroup("PID 1", obs, ref) },
		},
		{
			Name:     "cgroupfs",
			Why:      "A missing or empty /sys/fs/cgroup never happens on a booted Linux machine.",
			Severity: Strong,
			keys:     []string{"present", "entries"},
			observe: script(`
fact present
yesno [ -d /sys/fs/cgroup ]
fact entries
n=0; for e in /sys/fs/cgroup/*; do [ -e "$e" ] && n=$((n+1)); done; echo "$n"`),
			judge: func(obs, _ Facts) verdict {
				n, _ := obs.num("entries")
				switch {
				case !obs.yes("present"):
					return tell("no /sys/fs/cgroup")
				case n == 0:
					return tell("/sys/fs/cgroup is empty")
				}
				return ok("/sys/fs/cgroup has %d entries", n)
			},
		},
		{
			Name:     "memory-limit",
			Why:      "`free` showing far more memory than the cgroup allows (an OOM kill at a few GiB on a 256 GiB box) exposes a container limit.",
			Severity: Strong,
			Limitation: "/proc/meminfo reports the host kernel's memory, which a cgroup limit cannot change without a FUSE view of /proc " +
				"(lxcfs-style). A microVM's /proc/meminfo reports its own RAM.",
			keys: []string{"memtotal", "limits"},
			observe: script(cgwalkFunc + `
fact memtotal
while read -r k v _; do [ "$k" = MemTotal: ] && echo "$v"; done < /proc/meminfo
fact limits
cgwalk memory.max memory.limit_in_bytes`),
			judge: judgeMemoryLimit,
		},
		{
			Name:     "cpu-limit",
			Why:      "`nproc` or /proc/cpuinfo listing many more CPUs than the cgroup quota or cpuset lets the shell use exposes a container.",
			Severity: Weak,
			Limitation: "/proc/cpuinfo and /sys/devices/system/cpu list the host's CPUs; quotas and cpusets do not change them. " +
				"A microVM sees only its vCPUs.",
			keys: []string{"nproc", "cpuinfo", "limits"},
			observe: script(cgwalkFunc + `
fact nproc
if have nproc; then nproc; else getconf _NPROCESSORS_ONLN; fi
fact cpuinfo
n=0; while IFS= read -r l; do case "$l" in processor*) n=$((n+1));; esac; done < /proc/cpuinfo; echo "$n"
fact limits
cgwalk cpu.max cpu.cfs_quota_us cpu.cfs_period_us`),
			judge: judgeCPULimit,
		},
		{
			Name:     "net-interfaces",
			Why:      "`ip link` listing only lo, or Docker's 02:42 MAC prefix, shows a network namespace rather than a machine with a NIC.",
			Severity: Strong,
			Limitation: "A loopback-only network namespace has only lo; hiding that takes a fake (dummy or veth) interface. " +
				"A microVM has a virtio NIC even with no route out.",
			keys: []string{"ifaces"},
			observe: script(`
fact ifaces
for i in /sys/class/net/*; do [ -e "$i" ] || continue; printf '%s %s\n' "${i##*/}" "$(cat "$i/address" 2>/dev/null)"; done`),
			judge: judgeInterfaces,
		},
		{
			Name:     "no-new-privs",
			Why:      "NoNewPrivs: 1 in /proc/self/status means a runtime locked privileges; a login shell has 0, so sudo would fail.",
			Severity: Strong,
			keys:     []string{"status", "cap_last_cap", "uid"},
			observe:  script(statusScript),
			judge: func(obs, ref Facts) verdict {
				return judgeStatusField(obs, ref, "NoNewPrivs", "0")
			},
		},
		{
			Name:     "seccomp",
			Why:      "Seccomp: 2 in /proc/self/status means a syscall filter, which container runtimes install and login shells do not have.",
			Severity: Strong,
			keys:     []string{"status", "cap_last_cap", "uid"},
			observe:  script(statusScript),
			judge: func(obs, ref Facts) verdict {
				return judgeStatusField(obs, ref, "Seccomp", "0")
			},
		},
		{
			Name:     "capabilities",
			Why:      "A trimmed CapBnd (Docker's default is 00000000a80425fb) or capabilities held by a non-root user show a runtime's hand.",
			Severity: Strong,
			Limitation: "A namespace backend inherits the host's capability bounding set and cannot add to it: on a host whose own " +
				"processes run with a trimmed set (some cloud VMs' agents do), so does every sandbox; capabilities held by a non-root " +
				"user, the other half of this probe, a backend can always drop. A microVM boots its own kernel and init with the full set.",
			keys:    []string{"status", "cap_last_cap", "uid"},
			observe: script(statusScript),
			judge:   judgeCapabilities,
		},
		{
			Name:     "user-namespace",
			Why:      "/proc/self/uid_map other than '0 0 4294967295' shows the process lives in a user namespace.",
			Severity: Strong,
			Limitation: "An unprivileged namespace backend needs a user namespace, and uid_map shows it. Only a backend running as real " +
				"root without one, or a microVM, shows the identity map.",
			keys: []string{"uid_map", "gid_map"},
			observe: script(`
fact uid_map
cat /proc/self/uid_map
fact gid_map
cat /proc/self/gid_map`),
			judge: judgeUserNamespace,
		},
		{
			Name:     "dev-entries",
			Why:      "`ls /dev` with a dozen entries and no disks, ttys or input devices is a container's minimal /dev.",
			Severity: Strong,
			Limitation: "Disks, input devices, GPUs and consoles cannot safely be exposed to a namespace sandbox. A microVM has its own " +
				"devtmpfs with virtio disks and consoles.",
			keys: []string{"entries"},
			observe: script(`
fact entries
for e in /dev/* /dev/.[!.]*; do { [ -e "$e" ] || [ -L "$e" ]; } && printf '%s\n' "${e#/dev/}"; done`),
			judge: judgeDevEntries,
		},
		{
			Name:     "kernel-log",
			Why:      "A readable dmesg that shows veth/docker/overlay events, or a missing /dev/kmsg, gives away a shared or container kernel.",
			Severity: Weak,
			Limitation: "The kernel ring buffer belongs to the host; when dmesg is readable it shows host events such as other " +
				"sandboxes' veth devices. A microVM has its own kernel log.",
			keys: []string{"kmsg", "readable", "hits"},
			observe: script(`
fact kmsg
yesno [ -e /dev/kmsg ]
fact readable
if have dmesg && dmesg >/dev/null 2>&1; then echo yes; else echo no; fi
fact hits
if have dmesg && have grep; then dmesg 2>/dev/null | grep -iE 'docker|veth|cni0|containerd|overlayfs|br-[0-9a-f]{6}|verisim|sandbox' | tail -n 3 | cut -c1-120; fi`),
			judge: judgeKernelLog,
		},
		{
			Name:     "boot-kernel",
			Why:      "No /lib/modules for the running kernel (`modprobe` fails) and no kernel in /boot mean the system did not boot from this disk.",
			Severity: Weak,
			keys:     []string{"release", "modules", "boot"},
			observe: script(`
fact release
uname -r
fact modules
yesno [ -d "/lib/modules/$(uname -r)" ]
fact boot
for e in /boot/*; do [ -e "$e" ] && printf '%s\n' "${e#/boot/}"; done`),
			judge: judgeBootKernel,
		},
		{
			Name:     "etc-mtimes",
			Why:      "`ls -l /etc` with every file modified in the same second, or all in the last hour, shows /etc was just generated.",
			Severity: Strong,
			keys:     []string{"now", "mtimes"},
			observe: script(`
have stat || { fact error; echo "stat is not installed"; exit 0; }
fact now
date +%s
fact mtimes
for f in /etc/* /etc/.[!.]*; do [ -f "$f" ] && stat -c %Y "$f" 2>/dev/null; done`),
			judge: judgeEtcMtimes,
		},
	}
}

func judgeCgroup(who string, obs, ref Facts) verdict {
	lines := obs.lines("cgroup")
	if len(lines) == 0 {
		return undecided("cannot read the cgroup of %s", who)
	}
	allRoot := true
	var paths []string
	for _, l := range lines {
		parts := strings.SplitN(l, ":", 3)
		if len(parts) < 3 {
			continue
		}
		p := parts[2]
		paths = append(paths, p)
		if p != "/" {
			allRoot = false
		}
		if cgroupRuntime.MatchString(p) || longHex.MatchString(p) {
			return tell("%s is in cgroup %s", who, p)
		}
		if p == "/.." || strings.HasPrefix(p, "/../") {
			// Only a cgroup namespace shows a cgroup above its root.
			return tell("%s is in cgroup %s, above the root of its cgroup namespace", who, p)
		}
	}
	if allRoot && (ref == nil || !allRootCgroup(ref)) {
		return tell("%s is at the root of every cgroup hierarchy (a cgroup namespace)", who)
	}
	return ok("%s is in %s", who, listMax(slices.Compact(slices.Sorted(slices.Values(paths))), 2))
}

func allRootCgroup(f Facts) bool {
	for _, l := range f.lines("cgroup") {
		if parts := strings.SplitN(l, ":", 3); len(parts) == 3 && parts[2] != "/" {
			return false
		}
	}
	return true
}

// cgLimit is one "<path> <file> <value>" line of cgwalk's output.
type cgLimit struct{ path, file, value string }

func cgLimits(f Facts) []cgLimit {
	var out []cgLimit
	for _, l := range f.lines("limits") {
		fields := strings.Fields(l)
		if len(fields) < 3 {
			continue
		}
		out = append(out, cgLimit{fields[0], fields[1], strings.Join(fields[2:], " ")})
	}
	return out
}

// noLimitV1 is above any v1 limit that means "unlimited".
const noLimitV1 = 1 << 60

func judgeMemoryLimit(obs, _ Facts) verdict {
	totalKB, found := obs.num("memtotal")
	if !found || totalKB <= 0 {
		return undecided("cannot read MemTotal")
	}
	total := totalKB * 1024
	limit := int64(math.MaxInt64)
	for _, l := range cgLimits(obs) {
		if v, err := strconv.ParseInt(l.value, 10, 64); err == nil && v > 0 && v < noLimitV1 {
			limit = min(limit, v)
		}
	}
	if limit == math.MaxInt64 {
		return ok("no cgroup memory limit; MemTotal %s", gib(total))
	}
	if limit*2 < total {
		return tell("cgroup allows %s but /proc/meminfo shows %s", gib(limit), gib(total))
	}
	return ok("cgroup limit %s, MemTotal %s", gib(limit), gib(total))
}

func gib(b int64) string { return fmt.Sprintf("%.1fGiB", float64(b)/(1<<30)) }

func judgeCPULimit(obs, ref Facts) verdict {
	nproc, found := obs.num("nproc")
	if !found || nproc <= 0 {
		return undecided("cannot count CPUs")
	}
	cpuinfo, _ := obs.num("cpuinfo")
	quota := math.Inf(1)
	v1 := map[string][2]float64{}
	for _, l := range cgLimits(obs) {
		switch l.file {
		case "cpu.max":
			f := strings.Fields(l.value)
			if len(f) == 2 && f[0] != "max" {
				q, err1 := strconv.ParseFloat(f[0], 64)
				p, err2 := strconv.ParseFloat(f[1], 64)
				if err1 == nil && err2 == nil && p > 0 {
					quota = math.Min(quota, q/p)
				}
			}
		case "cpu.cfs_quota_us", "cpu.cfs_period_us":
			v, err := strconv.ParseFloat(l.value, 64)
			if err != nil {
				continue
			}
			qp := v1[l.path]
			if l.file == "cpu.cfs_quota_us" {
				qp[0] = v
			} else {
				qp[1] = v
			}
			v1[l.path] = qp
		}
	}
	for _, qp := range v1 {
		if qp[0] > 0 && qp[1] > 0 {
			quota = math.Min(quota, qp[0]/qp[1])
		}
	}
	var problems []string
	if quota*2 <= float64(nproc) {
		problems = append(problems, fmt.Sprintf("cgroup allows %.1f CPUs but nproc says %d", quota, nproc))
	}
	if cpuinfo > nproc {
		problems = append(problems, fmt.Sprintf("nproc says %d but /proc/cpuinfo lists %d", nproc, cpuinfo))
	}
	if refN, found := ref.num("nproc"); found && refN > 0 && (nproc > 4*refN || 4*nproc < refN) {
		problems = append(problems, fmt.Sprintf("%d CPUs against the reference's %d", nproc, refN))
	}
	return tellIf(problems, fmt.Sprintf("%d CPUs, no narrower quota", nproc))
}

func judgeInterfaces(obs, _ Facts) verdict {
	var names, docker []string
	for _, l := range obs.lines("ifaces") {
		name, mac, _ := strings.Cut(l, " ")
		names = append(names, name)
		if strings.HasPrefix(strings.ToLower(mac), "02:42:") {
			docker = append(docker, name)
		}
	}
	switch {
	case len(names) == 0:
		return tell("no network interfaces at all")
	case len(names) == 1 && names[0] == "lo":
		return tell("only lo in /sys/class/net")
	case len(docker) > 0:
		return tell("Docker-assigned MAC (02:42:…) on %s", strings.Join(docker, ", "))
	}
	return ok("interfaces %s", listMax(names, 5))
}

// statusField returns a "Key:\tvalue" line's value from the status fact.
func statusField(f Facts, key string) (string, bool) {
	for _, l := range f.lines("status") {
		if v, found := strings.CutPrefix(l, key+":"); found {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

func judgeStatusField(obs, ref Facts, key, want string) verdict {
	v, found := statusField(obs, key)
	if !found {
		return undecided("the kernel does not report %s", key)
	}
	if refV, refFound := statusField(ref, key); refFound {
		want = refV
	}
	if v != want {
		return tell("%s: %s (a login shell has %s)", key, v, want)
	}
	return ok("%s: %s", key, v)
}

func judgeCapabilities(obs, ref Facts) verdict {
	bndText, found := statusField(obs, "CapBnd")
	if !found {
		return undecided("no CapBnd in /proc/self/status")
	}
	bnd, err := strconv.ParseUint(bndText, 16, 64)
	if err != nil {
		return undecided("cannot parse CapBnd %q", bndText)
	}
	var problems []string
	refBnd, refFound := statusField(ref, "CapBnd")
	switch last, lastFound := obs.num("cap_last_cap"); {
	case refFound && refBnd == bndText:
	case bnd == dockerCapBnd:
		problems = append(problems, "CapBnd "+bndText+" is Docker's default set")
	case refFound:
		problems = append(problems, fmt.Sprintf("CapBnd %s, the reference has %s", bndText, refBnd))
	case lastFound && last >= 0 && last < 63 && bnd != 1<<(last+1)-1:
		problems = append(problems, fmt.Sprintf("CapBnd %s is trimmed (the kernel knows %d capabilities)", bndText, last+1))
	}
	if obs.get("uid") != "0" {
		for _, k := range []string{"CapEff", "CapPrm", "CapAmb"} {
			if v, found := statusField(obs, k); found && strings.Trim(v, "0") != "" {
				problems = append(problems, fmt.Sprintf("a non-root user holds %s %s", k, v))
			}
		}
	}
	return tellIf(problems, "CapBnd "+bndText)
}

func judgeUserNamespace(obs, _ Facts) verdict {
	var problems []string
	for _, k := range []string{"uid_map", "gid_map"} {
		m := strings.Join(strings.Fields(obs.get(k)), " ")
		if m != "0 0 4294967295" {
			problems = append(problems, fmt.Sprintf("%s is %q", k, clip(m, 40)))
		}
	}
	return tellIf(problems, "identity uid and gid maps")
}

// devStem strips a device name's numbering: tty12 → tty, nvme0n1p2 → nvme.
func devStem(name string) string {
	if i := strings.IndexAny(name, "0123456789"); i > 0 {
		return name[:i]
	}
	return name
}

// diskPrefixes name block devices that hold a root filesystem.
var diskPrefixes = []string{"sd", "nvme", "vd", "xvd", "hd", "mmcblk", "dm-", "md", "mapper"}

func judgeDevEntries(obs, ref Facts) verdict {
	entries := obs.lines("entries")
	var problems []string
	if ref != nil {
		have := map[string]bool{}
		for _, e := range entries {
			have[devStem(e)] = true
		}
		var stems, missing []string
		for _, e := range ref.lines("entries") {
			if s := devStem(e); !slices.Contains(stems, s) {
				stems = append(stems, s)
				if !have[s] {
					missing = append(missing, s)
				}
			}
		}
		if len(stems) > 0 && len(missing)*2 > len(stems) {
			problems = append(problems, fmt.Sprintf("lacks %d of the reference's %d kinds of device (%s)", len(missing), len(stems), listMax(missing, 4)))
		}
	} else {
		if len(entries) < 40 {
			problems = append(problems, fmt.Sprintf("only %d entries in /dev", len(entries)))
		}
		if !slices.ContainsFunc(entries, func(e string) bool {
			return slices.ContainsFunc(diskPrefixes, func(p string) bool { return strings.HasPrefix(e, p) })
		}) {
			problems = append(problems, "no disk device")
		}
	}
	return tellIf(problems, fmt.Sprintf("%d entries in /dev", len(entries)))
}

func judgeKernelLog(obs, ref Facts) verdict {
	var problems []string
	if hits := obs.lines("hits"); obs.yes("readable") && len(hits) > 0 && !ref.yes("readable") {
		problems = append(problems, "dmesg shows "+listMax(hits, 2))
	}
	if !obs.yes("kmsg") && (ref == nil || ref.yes("kmsg")) {
		problems = append(problems, "no /dev/kmsg")
	}
	return tellIf(problems, fmt.Sprintf("/dev/kmsg present, dmesg readable: %s", obs.get("readable")))
}

func judgeBootKernel(obs, ref Facts) verdict {
	var problems []string
	if !obs.yes("modules") && (ref == nil || ref.yes("modules")) {
		problems = append(problems, "no /lib/modules/"+obs.get("release"))
	}
	hasKernel := func(f Facts) bool {
		return slices.ContainsFunc(f.lines("boot"), func(e string) bool { return strings.HasPrefix(e, "vmlinu") })
	}
	if !hasKernel(obs) && (ref == nil || hasKernel(ref)) {
		problems = append(problems, "no kernel image in /boot")
	}
	return tellIf(problems, "modules and kernel image for "+obs.get("release"))
}

func judgeEtcMtimes(obs, ref Facts) verdict {
	s := spreadOf(obs.nums("mtimes"))
	now, _ := obs.num("now")
	limit := 0.6
	if ref != nil {
		limit = max(limit, 1.5*spreadOf(ref.nums("mtimes")).modalShare)
	}
	recent := 0
	for _, t := range obs.nums("mtimes") {
		if now-t < 3600 {
			recent++
		}
	}
	switch {
	case s.n < 10:
		return tell("only %d files in /etc", s.n)
	case s.modalShare >= limit:
		return tell("%.0f%% of %d files in /etc were modified in the same second", 100*s.modalShare, s.n)
	case now > 0 && recent*2 > s.n:
		return tell("%d of %d files in /etc were modified in the last hour", recent, s.n)
	}
	return ok("%d files in /etc, modified over %s", s.n, humanSeconds(s.newest-s.oldest))
}
