package local

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// subIDs are the subordinate id ranges /etc/subuid and /etc/subgid grant
// the user running verisim without root, applied through the setuid
// helpers newuidmap and newgidmap (Debian's uidmap package), as rootless
// container runtimes do. With them a rootless sandbox maps a whole range
// of ids, not only its user's.
type subIDs struct {
	uid, gid             idRange
	newuidmap, newgidmap string
}

type idRange struct{ start, count uint32 }

// findSubIDs looks up the caller's ranges; nil when the helpers or the
// ranges are missing, and then sandboxes map the user's id alone.
func findSubIDs() *subIDs {
	nu, err1 := exec.LookPath("newuidmap")
	ng, err2 := exec.LookPath("newgidmap")
	if err1 != nil || err2 != nil {
		return nil
	}
	names := []string{strconv.Itoa(os.Geteuid())}
	if u, err := user.LookupId(names[0]); err == nil {
		names = append(names, u.Username)
	}
	uid, ok1 := subRange("/etc/subuid", names)
	gid, ok2 := subRange("/etc/subgid", names)
	if !ok1 || !ok2 {
		return nil
	}
	return &subIDs{uid: uid, gid: gid, newuidmap: nu, newgidmap: ng}
}

// subRange returns the largest range file grants any of names ("name or
// id:start:count" lines).
func subRange(file string, names []string) (idRange, bool) {
	f, err := os.Open(file)
	if err != nil {
		return idRange{}, false
	}
	defer f.Close()
	var best idRange
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.Split(strings.TrimSpace(sc.Text()), ":")
		if len(parts) != 3 {
			continue
		}
		found := false
		for _, n := range names {
			found = found || parts[0] == n
		}
		start, err1 := strconv.ParseUint(parts[1], 10, 32)
		count, err2 := strconv.ParseUint(parts[2], 10, 32)
		if found && err1 == nil && err2 == nil && uint32(count) > best.count {
			best = idRange{uint32(start), uint32(count)}
		}
	}
	return best, best.count > 0
}

// mapping maps id (the sandbox user's) to host, and the ids around it,
// from 0 up to 65535 as far as r reaches, to r: newuidmap's arguments
// after the pid.
func (r idRange) mapping(id, host uint32) []string {
	args := []string{fmtU(id), fmtU(host), "1"}
	below := min(id, r.count)
	if below > 0 {
		args = append(args, "0", fmtU(r.start), fmtU(below))
	}
	if r.count > below && id < 65535 {
		above := min(r.count-below, 65535-id)
		args = append(args, fmtU(id+1), fmtU(r.start+below), fmtU(above))
	}
	return args
}

func fmtU(v uint32) string { return strconv.FormatUint(uint64(v), 10) }

// apply writes the maps of process pid, whose sandbox user is uid:gid.
func (s *subIDs) apply(pid int, uid, gid uint32) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, m := range []struct {
		helper string
		args   []string
	}{
		{s.newuidmap, s.uid.mapping(uid, uint32(os.Geteuid()))},
		{s.newgidmap, s.gid.mapping(gid, uint32(os.Getegid()))},
	} {
		out, err := exec.CommandContext(ctx, m.helper, append([]string{strconv.Itoa(pid)}, m.args...)...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s %d %s: %v: %s (check the ranges in /etc/subuid and /etc/subgid)", m.helper, pid, strings.Join(m.args, " "), err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

// maps reports whether the file at path (following links) belongs to an
// id a sandbox maps, the caller's or one of its range: root inside such a
// sandbox holds capabilities over it.
func (s *subIDs) maps(path string) bool {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return true // unknown: assume the worst
	}
	return int(st.Uid) == os.Geteuid() || (st.Uid >= s.uid.start && st.Uid-s.uid.start < s.uid.count)
}
