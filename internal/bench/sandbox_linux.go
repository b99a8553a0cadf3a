package bench

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/verisim/verisim/internal/sandbox"
)

// Subjects of the sandbox benchmark.
const (
	SubjectVerisim     = "verisim"
	SubjectWarm        = "verisim warm"
	SubjectBwrap       = "bwrap"
	SubjectRunc        = "runc"
	SubjectRuncOverlay = "runc+overlay"
	SubjectForkExec    = "fork/exec"
)

// SandboxOptions configure the sandbox benchmark.
type SandboxOptions struct {
	// Runtime and Spec make verisim's sandboxes: the default machine with
	// its persona and limits.
	Runtime sandbox.Runtime
	Spec    sandbox.Spec
	// Warm, if set, is a runtime with a pool of started inits; it gets a
	// column of its own beside the cold one.
	Warm sandbox.Runtime
	// Runs per scenario (at least 100 for stable p99).
	Runs int
	// Peers to run beside verisim; missing ones are skipped with a note.
	Peers []string
	// WorkDir holds peer bundles and benchmark workspaces (on disk).
	WorkDir string
	// Idle is how many idle sandboxes the memory row holds at once.
	Idle int
	// ForkSizes are workspace sizes for the fork rows.
	ForkSizes []int64
	// Progress receives one line per finished cell.
	Progress io.Writer
}

// Sandbox runs the sandbox benchmark.
func Sandbox(ctx context.Context, o SandboxOptions) (*Table, error) {
	if o.Runs <= 0 {
		o.Runs = 100
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	// Every sandbox of the run shares the spec's layers; none may delete
	// them on close. They go when the run is over.
	owned := o.Spec.OwnedLayers
	o.Spec.OwnedLayers = nil
	defer func() {
		for _, l := range owned {
			os.RemoveAll(l)
		}
	}()
	t := &Table{Subjects: []string{SubjectVerisim}}
	if o.Warm != nil {
		t.Subjects = append(t.Subjects, SubjectWarm)
	}
	t.Subjects = append(t.Subjects, o.Peers...)
	warm := max(3, o.Runs/20)
	result := func(subject, scenario string, s Samples, err error) Cell {
		if err != nil {
			fmt.Fprintf(o.Progress, "%s / %s: %v\n", scenario, subject, err)
			return Cell{Note: "failed: " + firstLine(err.Error())}
		}
		fmt.Fprintf(o.Progress, "%s / %s: p50 %s ms, p99 %s ms\n", scenario, subject, ms(s.Quantile(0.5)), ms(s.Quantile(0.99)))
		return Cell{Samples: s}
	}
	cell := func(subject, scenario string, f func(context.Context) error) Cell {
		s, err := Time(ctx, o.Runs, warm, f)
		return result(subject, scenario, s, err)
	}

	// Peers share one read-only view of verisim's layers.
	merged := filepath.Join(o.WorkDir, "merged")
	if err := mountMerged(o.Spec.Layers, merged); err != nil {
		return nil, err
	}
	defer unmount(merged)

	// The headline row runs its subjects interleaved in blocks of 20, so
	// that "faster than bwrap in the same run" compares them under the same
	// conditions.
	lifecycle := Row{Scenario: "create → true → destroy", Cells: map[string]Cell{}}
	subjects := []string{SubjectVerisim}
	fs := []func(context.Context) error{Lifecycle(o.Runtime, o.Spec)}
	if o.Warm != nil {
		subjects = append(subjects, SubjectWarm)
		fs = append(fs, Lifecycle(o.Warm, o.Spec))
	}
	for _, p := range o.Peers {
		f, note := o.peer(p, merged)
		if f == nil {
			lifecycle.Cells[p] = Cell{Note: note}
			t.Notes = append(t.Notes, fmt.Sprintf("%s skipped: %s", p, note))
			continue
		}
		subjects = append(subjects, p)
		fs = append(fs, f)
	}
	samples, errs := TimeInterleaved(ctx, o.Runs, warm, 20, fs)
	for i, subj := range subjects {
		lifecycle.Cells[subj] = result(subj, lifecycle.Scenario, samples[i], errs[i])
	}
	t.Rows = append(t.Rows, lifecycle)
	t.Notes = append(t.Notes, LifecycleVerdict(lifecycle)...)

	execRow := Row{Scenario: "exec true in a running sandbox", Cells: map[string]Cell{}}
	sb, err := o.Runtime.Create(ctx, o.Spec)
	if err != nil {
		return nil, err
	}
	execRow.Cells[SubjectVerisim] = cell(SubjectVerisim, execRow.Scenario, func(ctx context.Context) error {
		_, err := sb.Run(ctx, sandbox.Cmd{Args: []string{"/bin/true"}})
		return err
	})
	sb.Close(ctx)
	if f, _ := o.peer(SubjectForkExec, merged); f != nil && contains(o.Peers, SubjectForkExec) {
		execRow.Cells[SubjectForkExec] = cell(SubjectForkExec, execRow.Scenario, f)
	}
	t.Rows = append(t.Rows, execRow)

	for _, size := range o.ForkSizes {
		row := Row{Scenario: fmt.Sprintf("fork from snapshot (%s workspace) → ready", humanSize(size)), Cells: map[string]Cell{}}
		rts := map[string]sandbox.Runtime{SubjectVerisim: o.Runtime}
		if o.Warm != nil {
			rts[SubjectWarm] = o.Warm
		}
		for subj, rt := range rts {
			c, err := o.forkCell(ctx, rt, subj, size, cell, row.Scenario)
			if err != nil {
				c = Cell{Note: "failed: " + firstLine(err.Error())}
			}
			row.Cells[subj] = c
		}
		t.Rows = append(t.Rows, row)
	}

	if o.Idle > 0 {
		row := Row{Scenario: fmt.Sprintf("memory per idle sandbox (%d at once)", o.Idle), Cells: map[string]Cell{}}
		v, err := o.idleMemory(ctx)
		if err != nil {
			row.Cells[SubjectVerisim] = Cell{Note: "failed: " + firstLine(err.Error())}
		} else {
			row.Cells[SubjectVerisim] = Cell{Value: v}
		}
		fmt.Fprintf(o.Progress, "%s / verisim: %s\n", row.Scenario, row.Cells[SubjectVerisim].Value)
		t.Rows = append(t.Rows, row)
	}
	return t, nil
}

// Lifecycle is one run of the headline scenario: create a sandbox from
// spec, run /bin/true in it, destroy it.
func Lifecycle(rt sandbox.Runtime, spec sandbox.Spec) func(context.Context) error {
	return func(ctx context.Context) error {
		sb, err := rt.Create(ctx, spec)
		if err != nil {
			return err
		}
		st, err := sb.Run(ctx, sandbox.Cmd{Args: []string{"/bin/true"}})
		cerr := sb.Close(ctx)
		if err == nil && st.Code != 0 {
			err = fmt.Errorf("true exited %d", st.Code)
		}
		if err == nil {
			err = cerr
		}
		return err
	}
}

// LifecycleVerdict compares the lifecycle row with the sandbox targets, a
// line each: verisim's p50 and p99 against 5 and 15 ms, and its p50 against
// bwrap's (faster) and runc's (at least 5× faster), for the peers measured.
func LifecycleVerdict(r Row) []string {
	v, ok := r.Cells[SubjectVerisim]
	if !ok || len(v.Samples) == 0 {
		return nil
	}
	met := func(ok bool) string {
		if ok {
			return "met"
		}
		return "not met"
	}
	p50, p99 := v.Samples.Quantile(0.5), v.Samples.Quantile(0.99)
	out := []string{fmt.Sprintf("target check, %s: verisim p50 %s ms (≤ 5: %s), p99 %s ms (≤ 15: %s)",
		r.Scenario, ms(p50), met(p50 <= 5*time.Millisecond), ms(p99), met(p99 <= 15*time.Millisecond))}
	if b, ok := r.Cells[SubjectBwrap]; ok && len(b.Samples) > 0 {
		bp := b.Samples.Quantile(0.5)
		rel := fmt.Sprintf("%.2f× faster", float64(bp)/float64(p50))
		if p50 > bp {
			rel = fmt.Sprintf("%.2f× slower", float64(p50)/float64(bp))
		}
		out = append(out, fmt.Sprintf("target check: bwrap p50 %s ms, verisim %s (faster than bwrap: %s)", ms(bp), rel, met(p50 < bp)))
	}
	if c, ok := r.Cells[SubjectRunc]; ok && len(c.Samples) > 0 {
		rp := c.Samples.Quantile(0.5)
		x := float64(rp) / float64(p50)
		out = append(out, fmt.Sprintf("target check: runc p50 %s ms, verisim %.2f× faster (≥ 5×: %s)", ms(rp), x, met(x >= 5)))
	}
	return out
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 60 {
		s = s[:60] + "…"
	}
	return s
}

func humanSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%g GB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%g MB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d B", n)
}

func unmount(dir string) { _ = unix.Unmount(dir, unix.MNT_DETACH) }

// mountMerged mounts the layers as one read-only overlay for the peers.
func mountMerged(layers []string, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	_ = unix.Unmount(dir, unix.MNT_DETACH)
	lower := strings.Join(layers, ":")
	if len(layers) == 1 {
		// A bind ignores MS_RDONLY; read-only takes a remount.
		if err := unix.Mount(layers[0], dir, "", unix.MS_BIND, ""); err != nil {
			return err
		}
		return unix.Mount("", dir, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, "")
	}
	if err := unix.Mount("overlay", dir, "overlay", unix.MS_RDONLY, "lowerdir="+lower); err != nil {
		return fmt.Errorf("mount merged view for peers: %w", err)
	}
	return nil
}

// peer returns the work a peer does for one lifecycle run, or a note why
// it cannot run.
func (o *SandboxOptions) peer(name, merged string) (func(context.Context) error, string) {
	switch name {
	case SubjectForkExec:
		return func(ctx context.Context) error { return exec.CommandContext(ctx, "/bin/true").Run() }, ""
	case SubjectBwrap:
		bwrap, err := exec.LookPath("bwrap")
		if err != nil {
			return nil, "bwrap not installed (apt-get install bubblewrap)"
		}
		args := []string{"--unshare-all", "--die-with-parent", "--ro-bind", merged, "/"}
		for _, b := range o.Spec.Binds {
			args = append(args, "--ro-bind", b.Source, b.Target)
		}
		args = append(args, "--proc", "/proc", "--dev", "/dev", "--hostname", o.Spec.Hostname,
			"--uid", strconv.Itoa(int(o.Spec.User.UID)), "--gid", strconv.Itoa(int(o.Spec.User.GID)), "/bin/true")
		return func(ctx context.Context) error {
			out, err := exec.CommandContext(ctx, bwrap, args...).CombinedOutput()
			if err != nil {
				return fmt.Errorf("bwrap: %v: %s", err, out)
			}
			return nil
		}, ""
	case SubjectRunc, SubjectRuncOverlay:
		runc, err := exec.LookPath("runc")
		if err != nil {
			return nil, "runc not installed (apt-get install runc)"
		}
		bundle := filepath.Join(o.WorkDir, "bundle-"+strings.ReplaceAll(name, "+", "-"))
		state := filepath.Join(o.WorkDir, "runc-state")
		if err := o.writeBundle(bundle, merged, name == SubjectRuncOverlay); err != nil {
			return nil, err.Error()
		}
		n := 0
		return func(ctx context.Context) error {
			n++
			id := fmt.Sprintf("vsbench-%d-%d", os.Getpid(), n)
			if name == SubjectRuncOverlay {
				up := filepath.Join(o.WorkDir, "ov-"+id)
				if err := os.MkdirAll(filepath.Join(up, "u"), 0o755); err != nil {
					return err
				}
				os.MkdirAll(filepath.Join(up, "w"), 0o755)
				opts := fmt.Sprintf("lowerdir=%s,upperdir=%s/u,workdir=%s/w", strings.Join(o.Spec.Layers, ":"), up, up)
				if err := unix.Mount("overlay", filepath.Join(bundle, "rootfs"), "overlay", 0, opts); err != nil {
					return fmt.Errorf("mount overlay: %w", err)
				}
				defer os.RemoveAll(up)
				defer unix.Unmount(filepath.Join(bundle, "rootfs"), 0)
			}
			out, err := exec.CommandContext(ctx, runc, "--root", state, "run", "--bundle", bundle, id).CombinedOutput()
			if err != nil {
				return fmt.Errorf("runc: %v: %s", err, out)
			}
			return nil
		}, ""
	}
	return nil, "unknown peer"
}

// writeBundle writes an OCI bundle doing the same work as verisim's
// sandbox: namespaces, the same layers and binds, the persona's user and
// the same cgroup limits.
func (o *SandboxOptions) writeBundle(bundle, merged string, overlay bool) error {
	root := filepath.Join(bundle, "rootfs")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	if !overlay {
		root = merged
	}
	mounts := []map[string]any{
		{"destination": "/proc", "type": "proc", "source": "proc"},
		{"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
		{"destination": "/dev/pts", "type": "devpts", "source": "devpts", "options": []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}},
	}
	for _, b := range o.Spec.Binds {
		mounts = append(mounts, map[string]any{"destination": b.Target, "type": "bind", "source": b.Source, "options": []string{"rbind", "ro"}})
	}
	res := map[string]any{}
	if l := o.Spec.Limits; l != (sandbox.Limits{}) {
		if l.MemoryBytes > 0 {
			res["memory"] = map[string]any{"limit": l.MemoryBytes}
		}
		if l.PIDs > 0 {
			res["pids"] = map[string]any{"limit": l.PIDs}
		}
		if l.CPUs > 0 {
			res["cpu"] = map[string]any{"quota": int64(l.CPUs * 100000), "period": 100000}
		}
	}
	cfg := map[string]any{
		"ociVersion": "1.0.2",
		"process": map[string]any{
			"terminal": false,
			"user":     map[string]any{"uid": o.Spec.User.UID, "gid": o.Spec.User.GID},
			"args":     []string{"/bin/true"},
			"env":      o.Spec.Env,
			"cwd":      "/",
		},
		"root":     map[string]any{"path": root, "readonly": !overlay},
		"hostname": o.Spec.Hostname,
		"mounts":   mounts,
		"linux": map[string]any{
			"namespaces": []map[string]string{{"type": "pid"}, {"type": "network"}, {"type": "ipc"}, {"type": "uts"}, {"type": "mount"}, {"type": "cgroup"}},
			"resources":  res,
		},
	}
	b, _ := json.MarshalIndent(cfg, "", " ")
	return os.WriteFile(filepath.Join(bundle, "config.json"), b, 0o644)
}

// forkCell snapshots a sandbox whose workspace holds size bytes and times
// forks of it until they are ready to run a command.
func (o *SandboxOptions) forkCell(ctx context.Context, rt sandbox.Runtime, subject string, size int64, cell func(string, string, func(context.Context) error) Cell, scenario string) (Cell, error) {
	ws, err := workspaceLayer(filepath.Join(o.WorkDir, fmt.Sprintf("ws-%d", size)), o.Spec, size)
	if err != nil {
		return Cell{}, err
	}
	spec := o.Spec
	spec.Layers = append([]string{ws}, spec.Layers...)
	sb, err := rt.Create(ctx, spec)
	if err != nil {
		return Cell{}, err
	}
	defer sb.Close(ctx)
	if _, err := sb.Run(ctx, sandbox.Cmd{Args: []string{"/bin/sh", "-c", "echo edited >> ~/src/bench/README"}}); err != nil {
		return Cell{}, err
	}
	snap, err := sb.Snapshot(ctx)
	if err != nil {
		return Cell{}, err
	}
	defer rt.RemoveSnapshot(context.WithoutCancel(ctx), snap)
	var forks []sandbox.Sandbox
	defer func() {
		for _, f := range forks {
			f.Close(context.WithoutCancel(ctx))
		}
	}()
	c := cell(subject, scenario, func(ctx context.Context) error {
		f, err := rt.Fork(ctx, snap, sandbox.ForkOptions{})
		if err != nil {
			return err
		}
		// Closing is not part of forking; it happens off the clock, in
		// batches, so it does not compete with the next fork.
		forks = append(forks, f)
		if len(forks) >= 10 {
			for _, f := range forks {
				f.Close(ctx)
			}
			forks = forks[:0]
		}
		return nil
	})
	return c, nil
}

// workspaceLayer makes (once) a layer whose ~/src/bench holds size bytes in
// files of at most 64 MB.
func workspaceLayer(dir string, spec sandbox.Spec, size int64) (string, error) {
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err == nil {
		return dir, nil
	}
	os.RemoveAll(dir)
	repo := filepath.Join(dir, strings.TrimPrefix(spec.User.Home, "/"), "src", "bench")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		return "", err
	}
	buf := make([]byte, 1<<20)
	_, _ = rand.Read(buf)
	const fileMax = 64 << 20
	for i, left := 0, size; left > 0; i++ {
		n := min(left, fileMax)
		f, err := os.Create(filepath.Join(repo, fmt.Sprintf("data-%03d.bin", i)))
		if err != nil {
			return "", err
		}
		w := bufio.NewWriterSize(f, 1<<20)
		for written := int64(0); written < n; {
			k := min(int64(len(buf)), n-written)
			w.Write(buf[:k])
			written += k
		}
		if err := w.Flush(); err != nil {
			f.Close()
			return "", err
		}
		f.Close()
		left -= n
	}
	if err := os.WriteFile(filepath.Join(repo, "README"), []byte("bench\n"), 0o644); err != nil {
		return "", err
	}
	for _, d := range []string{filepath.Join(dir, strings.TrimPrefix(spec.User.Home, "/")), repo} {
		filepath.Walk(d, func(p string, _ os.FileInfo, _ error) error {
			return os.Lchown(p, int(spec.User.UID), int(spec.User.GID))
		})
	}
	return dir, os.WriteFile(filepath.Join(dir, ".complete"), nil, 0o644)
}

// idleMemory holds o.Idle idle sandboxes and reports memory per sandbox:
// the drop in MemAvailable (processes, kernel objects, tmpfs) and the
// processes' own RSS and PSS.
func (o *SandboxOptions) idleMemory(ctx context.Context) (string, error) {
	dropCaches()
	before := memAvailable()
	var sbs []sandbox.Sandbox
	defer func() {
		for _, sb := range sbs {
			sb.Close(context.WithoutCancel(ctx))
		}
	}()
	for range o.Idle {
		sb, err := o.Runtime.Create(ctx, o.Spec)
		if err != nil {
			return "", err
		}
		sbs = append(sbs, sb)
	}
	time.Sleep(500 * time.Millisecond)
	dropCaches()
	after := memAvailable()
	rss, pss := 0, 0
	for _, pid := range initPIDs(sbs) {
		r, p := smaps(pid)
		rss += r
		pss += p
	}
	n := len(sbs)
	return fmt.Sprintf("%.1f MB (MemAvailable drop); RSS %.1f MB, PSS %.1f MB", float64(before-after)/float64(n)/1024, float64(rss)/float64(n)/1024, float64(pss)/float64(n)/1024), nil
}

// PIDer is implemented by sandboxes that know their init's host pid.
type PIDer interface{ InitPID() int }

func initPIDs(sbs []sandbox.Sandbox) []int {
	var out []int
	for _, sb := range sbs {
		if p, ok := sb.(PIDer); ok {
			out = append(out, p.InitPID())
		}
	}
	return out
}

func dropCaches() { _ = os.WriteFile("/proc/sys/vm/drop_caches", []byte("3"), 0) }

func memAvailable() int {
	return meminfo("/proc/meminfo", "MemAvailable:")
}

func meminfo(file, key string) int {
	b, _ := os.ReadFile(file)
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && f[0] == key {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}

func smaps(pid int) (rss, pss int) {
	f := "/proc/" + strconv.Itoa(pid) + "/smaps_rollup"
	return meminfo(f, "Rss:"), meminfo(f, "Pss:")
}
