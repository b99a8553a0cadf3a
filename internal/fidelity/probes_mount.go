package fidelity

import (
	"fmt"
	"github.com/verisim/verisim/internal/lazyregexp"
	"slices"
	"strconv"
	"strings"
)

// Probes for the mount table, as /proc/self/mountinfo and `mount` show it.

const mountinfoScript = `
fact mountinfo
cat /proc/self/mountinfo`

// mountEntry is one line of /proc/PID/mountinfo.
type mountEntry struct {
	root, point, opts, fstype, source, super string
}

// parseMountinfo reads /proc/PID/mountinfo (proc(5)); malformed lines are
// skipped.
func parseMountinfo(text string) []mountEntry {
	var out []mountEntry
	for l := range strings.Lines(text) {
		f := strings.Fields(l)
		sep := slices.Index(f, "-")
		if sep < 6 || len(f) < sep+2 {
			continue
		}
		m := mountEntry{
			root:   unescapeMount(f[3]),
			point:  unescapeMount(f[4]),
			opts:   f[5],
			fstype: f[sep+1],
		}
		if len(f) > sep+2 {
			m.source = unescapeMount(f[sep+2])
		}
		if len(f) > sep+3 {
			m.super = unescapeMount(f[sep+3])
		}
		out = append(out, m)
	}
	return out
}

// unescapeMount undoes the kernel's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// hostRuntimeDirs hold the mounts a container runtime on a real host makes
// for its containers; seeing them is normal on a developer's machine.
var hostRuntimeDirs = []string{"/var/lib/docker/", "/run/docker/", "/var/lib/containers/", "/run/containerd/", "/var/lib/kubelet/", "/run/netns/", "/snap/", "/var/snap/", "/run/snapd/"}

// pointPattern normalises a mount point for comparison with a reference:
// ids and numbers differ between machines.
var idParts = lazyregexp.New(`[0-9a-f]{12,}|[0-9]+`)

func pointPattern(p string) string { return idParts.ReplaceAllString(p, "#") }

// mountTells returns why m gives the sandbox away, or "".
func mountTells(m mountEntry) string {
	if slices.ContainsFunc(hostRuntimeDirs, func(d string) bool { return strings.HasPrefix(m.point+"/", d) }) {
		return ""
	}
	for _, s := range []string{m.root, m.point, m.source, m.super} {
		switch {
		case runtimeWords.MatchString(s):
			return fmt.Sprintf("%s names %q", m.point, runtimeWords.FindString(s))
		case longHex.MatchString(s):
			return fmt.Sprintf("%s carries the id %s", m.point, clip(longHex.FindString(s), 16))
		case taskLike.MatchString(s):
			return fmt.Sprintf("%s carries the task-like name %q", m.point, clip(s, 40))
		}
	}
	if strings.HasPrefix(m.point, "/etc/") {
		return fmt.Sprintf("%s is mounted over a single file, as runtimes do", m.point)
	}
	if m.fstype == "overlay" {
		if dirs := overlayDirs(m.super); len(dirs) > 0 {
			return fmt.Sprintf("%s is an overlay of host directories (%s)", m.point, listMax(dirs, 2))
		}
	}
	if m.root != "/" && !strings.HasPrefix(m.root, "/@") && !strings.Contains(m.root, ":[") && m.fstype != "cgroup" && m.fstype != "cgroup2" {
		return fmt.Sprintf("%s is a bind mount of %s", m.point, clip(m.root, 60))
	}
	return ""
}

// overlayDirs lists the host directories an overlay's options name.
func overlayDirs(super string) []string {
	var dirs []string
	for _, o := range strings.Split(super, ",") {
		k, v, found := strings.Cut(o, "=")
		if !found || (k != "lowerdir" && k != "upperdir" && k != "workdir") {
			continue
		}
		for _, d := range strings.Split(v, ":") {
			if d != "" {
				dirs = append(dirs, d)
			}
		}
	}
	return dirs
}

// realRootTypes are filesystems a booted machine's root is on.
var realRootTypes = []string{"ext4", "ext3", "ext2", "btrfs", "xfs", "zfs", "f2fs", "bcachefs", "jfs", "reiserfs"}

// systemdMounts are pseudo filesystems systemd mounts at boot.
var systemdMounts = []string{"securityfs", "debugfs", "tracefs", "bpf", "pstore", "configfs", "fusectl", "hugetlbfs", "efivarfs", "binfmt_misc", "autofs"}

// kernelFS are pseudo filesystems compared against a reference.
var kernelFS = append([]string{"proc", "sysfs", "devpts", "tmpfs", "cgroup2", "cgroup", "mqueue", "devtmpfs"}, systemdMounts...)

func mountProbes() []Probe {
	return []Probe{
		{
			Name:     "mount-sources",
			Why:      "`cat /proc/self/mountinfo` or `mount` showing /var/lib/docker paths, layer ids, bind-mounted /etc/hosts or words like sandbox gives the runtime away.",
			Severity: Strong,
			Limitation: "overlayfs lists its layer directories in mountinfo, so a namespace backend can at best give them neutral names. " +
				"A microVM mounts a block device and shows no host paths.",
			keys:    []string{"mountinfo"},
			observe: script(mountinfoScript),
			judge:   judgeMountSources,
		},
		{
			Name:     "root-fs-type",
			Why:      "`df /` or `mount` showing overlay or tmpfs as the root filesystem instead of ext4/btrfs/xfs on a disk is a container.",
			Severity: Strong,
			Limitation: "The namespace backend's root is overlayfs; only a loop-mounted disk image or a microVM's virtio disk shows a " +
				"block-device filesystem.",
			keys:    []string{"mountinfo"},
			observe: script(mountinfoScript),
			judge:   judgeRootFS,
		},
		{
			Name:     "mount-types",
			Why:      "A mount table of a handful of entries without securityfs, debugfs, bpf or pstore lacks what systemd mounts at boot.",
			Severity: Weak,
			Limitation: "securityfs, debugfs, tracefs, bpf, pstore and efivarfs cannot be mounted from an unprivileged user namespace " +
				"(and would expose the host); a microVM's kernel mounts its own.",
			keys:    []string{"mountinfo"},
			observe: script(mountinfoScript),
			judge:   judgeMountTypes,
		},
		{
			Name:     "proc-masking",
			Why:      "Runtimes mask /proc/kcore, /proc/keys and friends with /dev/null and mount /sys or /proc/sys read-only; real machines do neither.",
			Severity: Strong,
			keys:     []string{"mountinfo"},
			observe:  script(mountinfoScript),
			judge:    judgeProcMasking,
		},
	}
}

func judgeMountSources(obs, ref Facts) verdict {
	mounts := parseMountinfo(obs["mountinfo"])
	if len(mounts) == 0 {
		return undecided("cannot read /proc/self/mountinfo")
	}
	forgiven := map[string]bool{}
	for _, m := range parseMountinfo(ref["mountinfo"]) {
		if mountTells(m) != "" {
			forgiven[pointPattern(m.point)] = true
		}
	}
	var tells []string
	for _, m := range mounts {
		if why := mountTells(m); why != "" && !forgiven[pointPattern(m.point)] {
			tells = append(tells, why)
		}
	}
	if len(tells) > 0 {
		return tell("%s", listMax(tells, 2))
	}
	return ok("%d mounts, none naming host paths or runtimes", len(mounts))
}

// rootMount returns the mount at /, the last one when several are stacked.
func rootMount(mounts []mountEntry) (mountEntry, bool) {
	for i := len(mounts) - 1; i >= 0; i-- {
		if mounts[i].point == "/" {
			return mounts[i], true
		}
	}
	return mountEntry{}, false
}

func judgeRootFS(obs, ref Facts) verdict {
	root, found := rootMount(parseMountinfo(obs["mountinfo"]))
	if !found {
		return undecided("no mount at / in mountinfo")
	}
	allowed := realRootTypes
	if refRoot, refFound := rootMount(parseMountinfo(ref["mountinfo"])); refFound {
		allowed = []string{refRoot.fstype}
	}
	if !slices.Contains(allowed, root.fstype) {
		return tell("/ is %s from %q", root.fstype, clip(root.source, 40))
	}
	return ok("/ is %s on %s", root.fstype, root.source)
}

func fsTypes(mounts []mountEntry) []string {
	var types []string
	for _, m := range mounts {
		if !slices.Contains(types, m.fstype) {
			types = append(types, m.fstype)
		}
	}
	slices.Sort(types)
	return types
}

func judgeMountTypes(obs, ref Facts) verdict {
	mounts := parseMountinfo(obs["mountinfo"])
	types := fsTypes(mounts)
	var problems []string
	if ref != nil {
		var missing []string
		for _, t := range fsTypes(parseMountinfo(ref["mountinfo"])) {
			if slices.Contains(kernelFS, t) && !slices.Contains(types, t) {
				missing = append(missing, t)
			}
		}
		if len(missing) > 0 {
			problems = append(problems, "lacks the reference's "+listMax(missing, 5))
		}
	} else {
		var missing []string
		for _, t := range []string{"proc", "sysfs", "devpts", "tmpfs", "mqueue"} {
			if !slices.Contains(types, t) {
				missing = append(missing, t)
			}
		}
		if !slices.Contains(types, "cgroup2") && !slices.Contains(types, "cgroup") {
			missing = append(missing, "cgroup")
		}
		if len(missing) > 0 {
			problems = append(problems, "no "+strings.Join(missing, ", "))
		}
		boot := 0
		for _, t := range systemdMounts {
			if slices.Contains(types, t) {
				boot++
			}
		}
		if boot < 3 {
			problems = append(problems, fmt.Sprintf("only %d of the pseudo filesystems systemd mounts at boot", boot))
		}
		if len(mounts) < 12 {
			problems = append(problems, fmt.Sprintf("only %d mounts", len(mounts)))
		}
	}
	return tellIf(problems, fmt.Sprintf("%d mounts of %d types", len(mounts), len(types)))
}

func judgeProcMasking(obs, _ Facts) verdict {
	mounts := parseMountinfo(obs["mountinfo"])
	if len(mounts) == 0 {
		return undecided("cannot read /proc/self/mountinfo")
	}
	var problems []string
	for _, m := range mounts {
		ro := slices.Contains(strings.Split(m.opts, ","), "ro")
		switch {
		case strings.HasPrefix(m.point, "/proc/") && m.point != "/proc/sys/fs/binfmt_misc" && m.point != "/proc/fs/nfsd":
			if m.point == "/proc/sys" && !ro {
				continue
			}
			problems = append(problems, fmt.Sprintf("%s is masked (%s)", m.point, m.fstype))
		case (m.point == "/sys" || m.point == "/proc") && ro:
			problems = append(problems, m.point+" is read-only")
		case m.point == "/sys/firmware" || (strings.HasPrefix(m.point, "/sys/") && m.fstype == "tmpfs" && m.point != "/sys/fs/cgroup"):
			problems = append(problems, fmt.Sprintf("%s is masked (%s)", m.point, m.fstype))
		}
	}
	if len(problems) > 0 {
		return tell("%s", listMax(problems, 3))
	}
	return ok("no masked or read-only kernel filesystems")
}
