package local

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/verisim/verisim/internal/sandbox"
)

// Controllers a sandbox uses. freezer (v1) or cgroup.freeze (v2) stops the
// sandbox while a snapshot is copied.
var controllers = []string{"memory", "pids", "cpu", "freezer"}

// cgroupSetup knows, per controller, where verisim's own cgroup is. A
// controller on the unified (v2) hierarchy is preferred; v1 is used where the
// controller is only mounted there (hybrid hosts).
type cgroupSetup struct {
	// v1 maps a controller to the directory sandboxes are created under.
	v1 map[string]string
	// v2 is the directory sandboxes are created under on the unified
	// hierarchy, "" when no controller we need is there.
	v2 string
	// v2ctrl lists the controllers used through v2.
	v2ctrl []string
}

// cgroupParent names the cgroup a runtime's sandboxes nest under after
// its run directory: runtimes with different run directories (two users of
// one host, concurrent test binaries) then never take each other's
// sandboxes for orphans when they collect garbage, which kills what it
// finds in a cgroup whose sandbox has no run directory.
func cgroupParent(runDir string) string {
	abs, err := filepath.Abs(runDir)
	if err != nil {
		abs = runDir
	}
	sum := sha256.Sum256([]byte(filepath.Clean(abs)))
	return "verisim-" + hex.EncodeToString(sum[:4])
}

// detectCgroups reads /proc/self/cgroup and /proc/self/mountinfo. Sandboxes
// nest under "<our cgroup>/<parent>" in every hierarchy used.
func detectCgroups(parent string) (*cgroupSetup, error) {
	own, err := ownCgroups()
	if err != nil {
		return nil, err
	}
	mounts, err := cgroupMounts()
	if err != nil {
		return nil, err
	}
	cs := &cgroupSetup{v1: map[string]string{}}
	if mp, ok := mounts[""]; ok {
		b, _ := os.ReadFile(filepath.Join(mp, own[""], "cgroup.controllers"))
		avail := strings.Fields(string(b))
		for _, c := range controllers {
			if c == "freezer" {
				continue // v2 freezes through cgroup.freeze, always there
			}
			for _, a := range avail {
				if a == c {
					cs.v2ctrl = append(cs.v2ctrl, c)
				}
			}
		}
		if len(cs.v2ctrl) > 0 {
			cs.v2 = filepath.Join(mp, own[""], parent)
		}
	}
	for _, c := range controllers {
		if cs.usesV2(c) {
			continue
		}
		if mp, ok := mounts[c]; ok {
			cs.v1[c] = filepath.Join(mp, own[c], parent)
		}
	}
	return cs, nil
}

func (cs *cgroupSetup) usesV2(c string) bool {
	if c == "freezer" {
		return cs.v2 != "" && cs.v1["freezer"] == ""
	}
	for _, x := range cs.v2ctrl {
		if x == c {
			return true
		}
	}
	return false
}

// ownCgroups maps a controller ("" for the unified hierarchy) to this
// process's cgroup path.
func ownCgroups() (map[string]string, error) {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("read own cgroups: %w", err)
	}
	defer f.Close()
	own := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			own[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			own[c] = parts[2]
		}
	}
	return own, sc.Err()
}

// mountEntry is one line of /proc/self/mountinfo, the fields used here.
type mountEntry struct {
	point, fstype string
	superOpts     []string
}

// cgroupFSMounts lists the cgroup and cgroup2 mounts, in mountinfo order.
func cgroupFSMounts() ([]mountEntry, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	defer f.Close()
	var out []mountEntry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		// Optional fields end at "-", then fstype, source, super options.
		sep := slices.Index(fields, "-")
		if sep < 5 || len(fields) < sep+4 {
			continue
		}
		if t := fields[sep+1]; t == "cgroup" || t == "cgroup2" {
			out = append(out, mountEntry{point: fields[4], fstype: t, superOpts: strings.Split(fields[sep+3], ",")})
		}
	}
	return out, sc.Err()
}

// cgroupMounts maps a controller ("" for cgroup2) to its mount point.
func cgroupMounts() (map[string]string, error) {
	ms, err := cgroupFSMounts()
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, e := range ms {
		if e.fstype == "cgroup2" {
			if _, ok := m[""]; !ok {
				m[""] = e.point
			}
			continue
		}
		for _, c := range controllers {
			if _, ok := m[c]; !ok && slices.Contains(e.superOpts, c) {
				m[c] = e.point
			}
		}
	}
	return m, nil
}

// favorDynmods adds "favordynmods" to the cgroup2 mount's options, keeping
// the options it has (a remount sets all of them).
func favorDynmods() error {
	ms, err := cgroupFSMounts()
	if err != nil {
		return err
	}
	for _, e := range ms {
		if e.fstype != "cgroup2" {
			continue
		}
		if slices.Contains(e.superOpts, "favordynmods") {
			return nil
		}
		opts := slices.DeleteFunc(slices.Clone(e.superOpts), func(o string) bool { return o == "rw" || o == "ro" })
		opts = append(opts, "favordynmods")
		if err := unix.Mount("", e.point, "", unix.MS_REMOUNT, strings.Join(opts, ",")); err != nil {
			return fmt.Errorf("remount %s with favordynmods: %w", e.point, err)
		}
		return nil
	}
	return fmt.Errorf("no cgroup2 mount")
}

// cgroup is one sandbox's set of cgroup directories.
type cgroup struct {
	// Dirs maps a controller to its directory; "" is the unified one.
	Dirs map[string]string `json:"dirs"`
	// Commands is the tasks file of the v1 pids cgroup commands run in
	// (see setSession), "" when they run in the sandbox's own.
	Commands string `json:"commands,omitempty"`
	// Root is the tasks file of the sandbox's v1 pids cgroup, where the
	// spawner thread unshares the cgroup namespace, "" with Commands.
	Root string `json:"root,omitempty"`
}

// create makes the sandbox's cgroups, with no limits yet; the v1 cpu
// hierarchy only when withCPU (each hierarchy costs a process migration).
// On error it removes what it made.
func (cs *cgroupSetup) create(id string, withCPU bool) (_ *cgroup, retErr error) {
	cg := &cgroup{Dirs: map[string]string{}}
	defer func() {
		if retErr != nil {
			cg.remove()
		}
	}()
	if cs.v2 != "" {
		if err := cs.prepareV2(); err != nil {
			return nil, err
		}
		d := filepath.Join(cs.v2, id)
		if err := mkdirIn(d, cs.prepareV2); err != nil {
			return nil, fmt.Errorf("create cgroup: %w", err)
		}
		cg.Dirs[""] = d
	}
	for c, base := range cs.v1 {
		if c == "cpu" && !withCPU {
			continue
		}
		d := filepath.Join(base, id)
		if err := mkdirIn(d, func() error { return os.MkdirAll(base, 0o755) }); err != nil {
			return nil, fmt.Errorf("create %s cgroup: %w", c, err)
		}
		cg.Dirs[c] = d
		if c == "pids" {
			// The init's own cgroup below the sandbox's (see setSession).
			if err := os.Mkdir(filepath.Join(d, initScope), 0o755); err != nil {
				return nil, fmt.Errorf("create %s cgroup: %w", c, err)
			}
		}
	}
	return cg, nil
}

// mkdirIn makes the cgroup directory d, running prepare to make its
// parent when that is missing. A runtime of another process sharing the
// run directory removes the parent when it closes with no sandbox left in
// it, which can happen between the two steps: then both run again.
func mkdirIn(d string, prepare func() error) error {
	for attempt := 1; ; attempt++ {
		err := os.Mkdir(d, 0o755)
		if !errors.Is(err, os.ErrNotExist) || attempt == 3 {
			return err
		}
		if err := prepare(); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
}

// setIdle gives the cgroup the least CPU weight (on) or the default (off).
func (cg *cgroup) setIdle(on bool) error {
	if d, ok := cg.Dirs["cpu"]; ok {
		shares := "1024"
		if on {
			shares = "2"
		}
		return writeFile(d, "cpu.shares", shares)
	}
	if d, ok := cg.Dirs[""]; ok {
		weight := "100"
		if on {
			weight = "1"
		}
		if err := writeFile(d, "cpu.weight", weight); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// setLimits writes lim into the cgroups and, on a v1 pids hierarchy,
// makes the login session's cgroup commands run in (see setSession); uid
// and session name it.
func (cg *cgroup) setLimits(cs *cgroupSetup, lim sandbox.Limits, uid uint32, session int) error {
	need := func(c string, what string) (string, error) {
		if d, ok := cg.Dirs[c]; ok {
			return d, nil
		}
		if cs.usesV2(c) {
			return cg.Dirs[""], nil
		}
		return "", fmt.Errorf("%s limit requested but the %s cgroup controller is not available on this host; drop the limit or enable the controller", what, c)
	}
	if lim.MemoryBytes > 0 {
		d, err := need("memory", "memory")
		if err != nil {
			return err
		}
		if cs.usesV2("memory") {
			err = writeFile(d, "memory.max", strconv.FormatInt(lim.MemoryBytes, 10))
			if err == nil {
				err = writeFile(d, "memory.swap.max", "0")
				if errors.Is(err, os.ErrNotExist) {
					err = nil
				}
			}
		} else {
			err = writeFile(d, "memory.limit_in_bytes", strconv.FormatInt(lim.MemoryBytes, 10))
			if err == nil {
				// Without swap accounting the file is absent; nothing to cap.
				if err2 := writeFile(d, "memory.memsw.limit_in_bytes", strconv.FormatInt(lim.MemoryBytes, 10)); err2 != nil && !errors.Is(err2, os.ErrNotExist) {
					err = err2
				}
			}
		}
		if err != nil {
			return fmt.Errorf("set memory limit: %w", err)
		}
	}
	if lim.PIDs > 0 {
		d, err := need("pids", "pids")
		if err != nil {
			return err
		}
		if cs.usesV2("pids") {
			if err := writeFile(d, "pids.max", strconv.FormatInt(lim.PIDs, 10)); err != nil {
				return fmt.Errorf("set pids limit: %w", err)
			}
		}
	}
	if d, ok := cg.Dirs["pids"]; ok {
		if err := cg.setSession(d, lim.PIDs, uid, session); err != nil {
			return fmt.Errorf("set pids limit: %w", err)
		}
	}
	if lim.CPUs > 0 {
		d, err := need("cpu", "cpu")
		if err != nil {
			return err
		}
		const period = 100000
		quota := int64(lim.CPUs * period)
		if cs.usesV2("cpu") {
			err = writeFile(d, "cpu.max", fmt.Sprintf("%d %d", quota, period))
		} else {
			err = writeFile(d, "cpu.cfs_period_us", strconv.Itoa(period))
			if err == nil {
				err = writeFile(d, "cpu.cfs_quota_us", strconv.FormatInt(quota, 10))
			}
		}
		if err != nil {
			return fmt.Errorf("set cpu limit: %w", err)
		}
	}
	return nil
}

// initHeadroom is how many tasks beyond the commands' limit the sandbox's
// v1 pids cgroup leaves to the init. The init is a Go program that starts
// threads as it needs them; if a fork bomb held every pid of one cgroup
// both shared, the init could not start a thread, and the Go runtime
// aborts when it cannot, taking the sandbox with it.
const initHeadroom = 64

// initScope is where PID 1 sits on a systemd machine.
const initScope = "init.scope"

// sessionScope is where a login session's processes sit on a systemd
// machine, relative to the root of the hierarchy.
func sessionScope(uid uint32, session int) (slice, scope string) {
	slice = fmt.Sprintf("user.slice/user-%d.slice", uid)
	return slice, fmt.Sprintf("%s/session-%d.scope", slice, session)
}

// setSession lays out the sandbox's v1 pids cgroup as a systemd machine's
// root: the init in init.scope (where create and add put it), commands in
// a login session's scope, user.slice/user-UID.slice/session-N.scope. The
// commands' pids limit (plus one for the init's spawner thread, which
// moves into the session so that every command is born there) sits on the
// user's slice, where systemd puts a user's TasksMax; the sandbox's own
// cgroup adds initHeadroom for the init's other threads. The spawner
// enters the sandbox's cgroup, unshares a cgroup namespace rooted there,
// then joins the session (guest.Config.CgroupRootTasks, CommandTasks):
// inside, a command's /proc/self/cgroup reads
// "pids:/user.slice/user-1000.slice/session-2.scope" as a login shell's
// does, and PID 1's "pids:/init.scope". A v1 hierarchy can place one
// thread of a process apart; v2 cannot outside threaded subtrees, so there
// everything stays in the sandbox's cgroup with the one limit.
func (cg *cgroup) setSession(d string, pids int64, uid uint32, session int) error {
	slice, scope := sessionScope(uid, session)
	if err := os.MkdirAll(filepath.Join(d, scope), 0o755); err != nil {
		return err
	}
	if pids > 0 {
		if err := writeFile(d, "pids.max", strconv.FormatInt(pids+1+initHeadroom, 10)); err != nil {
			return err
		}
		if err := writeFile(filepath.Join(d, slice), "pids.max", strconv.FormatInt(pids+1, 10)); err != nil {
			return err
		}
	}
	cg.Commands = filepath.Join(d, scope, "tasks")
	cg.Root = filepath.Join(d, "tasks")
	return nil
}

// prepareV2 enables our controllers for sandboxes on the unified hierarchy.
// A cgroup with processes in it cannot hand controllers to children (the
// "no internal processes" rule), so if verisim's own cgroup refuses, verisim
// moves itself into a leaf beside the sandboxes' parent and tries again, as
// container runtimes do. (Untested on the hybrid hosts CI runs on, which
// have no controller on the unified hierarchy.)
func (cs *cgroupSetup) prepareV2() error {
	parent := filepath.Dir(cs.v2)
	if err := os.MkdirAll(cs.v2, 0o755); err != nil {
		return fmt.Errorf("create cgroup %s: %w", cs.v2, err)
	}
	var ctl []string
	for _, c := range cs.v2ctrl {
		ctl = append(ctl, "+"+c)
	}
	enable := func(d string) error { return writeFile(d, "cgroup.subtree_control", strings.Join(ctl, " ")) }
	err := enable(parent)
	if errors.Is(err, unix.EBUSY) {
		leaf := filepath.Join(parent, "verisim-host")
		if merr := os.MkdirAll(leaf, 0o755); merr == nil && writeFile(leaf, "cgroup.procs", strconv.Itoa(os.Getpid())) == nil {
			err = enable(parent)
		}
	}
	if err == nil {
		err = enable(cs.v2)
	}
	if err != nil {
		return fmt.Errorf("delegate cgroup controllers under %s: %w (run verisim in a cgroup of its own, e.g. systemd-run --scope -p Delegate=yes)", parent, err)
	}
	return nil
}

// add moves pid into every cgroup of the sandbox.
func (cg *cgroup) add(pid int) error {
	s := strconv.Itoa(pid)
	for c, d := range cg.Dirs {
		if c == "pids" {
			d = filepath.Join(d, initScope)
		}
		if err := writeFile(d, "cgroup.procs", s); err != nil {
			return fmt.Errorf("join %s cgroup: %w", c, err)
		}
	}
	return nil
}

// oomKills is the count of processes the kernel killed for lack of memory.
func (cg *cgroup) oomKills() int {
	if d, ok := cg.Dirs["memory"]; ok {
		return counter(filepath.Join(d, "memory.oom_control"), "oom_kill")
	}
	if d, ok := cg.Dirs[""]; ok {
		return counter(filepath.Join(d, "memory.events"), "oom_kill")
	}
	return 0
}

func counter(file, key string) int {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key+" "); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// freeze stops (or with false, resumes) every process of the sandbox.
func (cg *cgroup) freeze(on bool) error {
	if d, ok := cg.Dirs["freezer"]; ok {
		state := "THAWED"
		if on {
			state = "FROZEN"
		}
		if err := writeFile(d, "freezer.state", state); err != nil {
			return err
		}
		return pollUntil(5*time.Second, func() bool {
			b, _ := os.ReadFile(filepath.Join(d, "freezer.state"))
			return strings.TrimSpace(string(b)) == state
		})
	}
	if d, ok := cg.Dirs[""]; ok {
		v := "0"
		if on {
			v = "1"
		}
		if err := writeFile(d, "cgroup.freeze", v); err != nil {
			return err
		}
		return pollUntil(5*time.Second, func() bool {
			return counter(filepath.Join(d, "cgroup.events"), "frozen") == map[bool]int{true: 1, false: 0}[on]
		})
	}
	return fmt.Errorf("no freezer cgroup")
}

// remove deletes the sandbox's cgroups once their processes are gone.
func (cg *cgroup) remove() error {
	var errs []error
	for c, d := range cg.Dirs {
		// The cgroups this package made below the sandbox's own go first,
		// deepest first, each at one rmdir; removeTree then lists only
		// what is left, which is nothing unless something else made it.
		for _, sub := range cg.subtree(c, d) {
			_ = unix.Rmdir(sub)
		}
		err := pollUntil(5*time.Second, func() bool {
			err := removeTree(d)
			if err == nil || errors.Is(err, os.ErrNotExist) {
				return true
			}
			// Still in use: for a moment after the init's exit the cgroup
			// may list processes of the sandbox (never any from outside
			// its PID namespace), or the caller did not stop them.
			pids, _ := pidsIn(d)
			for _, pid := range pids {
				_ = unix.Kill(pid, unix.SIGKILL)
			}
			return false
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("remove %s cgroup %s: processes still in it", c, d))
		}
	}
	return errors.Join(errs...)
}

// subtree lists the cgroups this package makes below the sandbox's cgroup
// d of controller c, deepest first: on the v1 pids hierarchy the commands'
// login-session scope with its slices, and the init's scope.
func (cg *cgroup) subtree(c, d string) []string {
	if c != "pids" {
		return nil
	}
	var out []string
	if cg.Commands != "" {
		for s := filepath.Dir(cg.Commands); s != d && strings.HasPrefix(s, d+"/"); s = filepath.Dir(s) {
			out = append(out, s)
		}
	}
	return append(out, filepath.Join(d, initScope))
}

// removeTree removes the cgroup directory d and the cgroups under it,
// deepest first. A cgroup directory holds only control files, which go
// with it, and child cgroups; one without children goes at the first try,
// without listing its control files.
func removeTree(d string) error {
	err := unix.Rmdir(d)
	if !errors.Is(err, unix.EBUSY) && !errors.Is(err, unix.ENOTEMPTY) {
		return err
	}
	ents, err := os.ReadDir(d)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.IsDir() {
			if err := removeTree(filepath.Join(d, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	return unix.Rmdir(d)
}

// dirFor is the directory holding controller c's files.
func (cg *cgroup) dirFor(c string) string {
	if d, ok := cg.Dirs[c]; ok {
		return d
	}
	return cg.Dirs[""]
}

// pids lists the processes still in the sandbox's cgroups, those in the
// cgroups under them included.
func (cg *cgroup) pids() []int {
	for _, d := range cg.Dirs {
		if out, ok := pidsIn(d); ok {
			return out
		}
	}
	return nil
}

// pidsIn lists the processes in cgroup d and the cgroups under it, and
// reports whether it could read d.
func pidsIn(d string) ([]int, bool) {
	if _, err := os.Stat(d); err != nil {
		return nil, false
	}
	var out []int
	err := filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
		if err != nil || !e.IsDir() {
			return nil
		}
		b, _ := os.ReadFile(filepath.Join(p, "cgroup.procs"))
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil && !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
		return nil
	})
	return out, err == nil
}

func writeFile(dir, name, v string) error {
	return os.WriteFile(filepath.Join(dir, name), []byte(v), 0o644)
}

// pollUntil calls cond until it is true or d passes, backing off from 50µs.
func pollUntil(d time.Duration, cond func() bool) error {
	deadline := time.Now().Add(d)
	wait := 50 * time.Microsecond
	for {
		if cond() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %v", d)
		}
		time.Sleep(wait)
		if wait < 10*time.Millisecond {
			wait *= 2
		}
	}
}
