package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/verisim/verisim/internal/fstree"
	"github.com/verisim/verisim/internal/sandbox"
	"github.com/verisim/verisim/internal/sandbox/guest"
	"github.com/verisim/verisim/internal/sandbox/layer"
	"github.com/verisim/verisim/internal/sandbox/wire"
)

// maxDepth is how many snapshot layers may stack before a fork squashes
// them into one, keeping overlay lookups short.
const maxDepth = 16

// snapMeta is kept beside a snapshot's layer as <id>.json.
type snapMeta struct {
	ID   string       `json:"id"`
	Spec sandbox.Spec `json:"spec"`
	// Parent is the sandbox the snapshot was taken of.
	Parent string `json:"parent"`
	Depth  int    `json:"depth"`
	// Rootless: taken by a runtime without root, whose layers mark opaque
	// directories with user.overlay.opaque and hold files of the ids its
	// user namespaces map; only such a runtime can fork it.
	Rootless bool `json:"rootless,omitempty"`
}

func (r *Runtime) layerDir(id string) string { return filepath.Join(r.state, "layers", id) }

// removeLayer removes a layer directory. A rootless runtime's snapshot
// layers hold files of the other ids its subordinate range maps, which the
// caller may not delete (or, with one id, directories no mode lets it
// into, deeper than fstree.RemoveAll's path-based pass reaches); what it
// cannot remove goes through a helper in a user namespace with the same
// maps.
func (r *Runtime) removeLayer(dir string) error {
	err := fstree.RemoveAll(dir)
	if err == nil || !r.rootless || !errors.Is(err, fs.ErrPermission) {
		return err
	}
	return r.runHelper(context.Background(), guest.MarkerRemove, []string{dir})
}

// Snapshot implements sandbox.Sandbox: it pauses the sandbox, copies its
// writable layer (only what changed; the workspace and image stay in their
// layers) into a new read-only layer, and lets it go on. With cgroups the
// host copies it with the sandbox frozen; a rootless sandbox (no freezer,
// and files the caller may not read) is paused by its init and copied by a
// helper (copyPaused).
func (b *box) Snapshot(ctx context.Context) (_ string, retErr error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.isClosed() {
		return "", sandbox.ErrClosed
	}
	if len(b.m.Spec.Views) > 0 {
		return "", fmt.Errorf("%w: the sandbox shows host directories copy-on-write, and snapshots do not keep those changes", sandbox.ErrUnsupported)
	}
	if !alive(b.m.InitPID, b.m.InitTick) {
		return "", fmt.Errorf("%w: %s has stopped", sandbox.ErrClosed, b.m.ID)
	}
	id := "s" + newID()
	// The copy's name says which process makes it, for GC.
	tmp := filepath.Join(b.rt.state, "layers", fmt.Sprintf(".tmp-%d-%s", os.Getpid(), id))
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return "", fmt.Errorf("snapshot %s: %w", b.m.ID, err)
	}
	defer func() {
		if retErr != nil {
			b.rt.removeLayer(tmp)
		}
	}()
	depth := 1
	if pm, err := b.rt.readSnap(b.m.Spec.Labels[labelSnapshot]); err == nil {
		depth = pm.Depth + 1
	}
	// Past maxDepth the snapshot layers under the sandbox are squashed
	// with its changes into one layer, so stacks stay shallow.
	chain := 0
	if depth > maxDepth {
		for chain < len(b.m.Spec.Layers) && b.rt.isSnapLayer(b.m.Spec.Layers[chain]) {
			chain++
		}
		depth = 1
	}
	// The layers to copy, deepest first, then the writable one (a copy
	// of the init's descriptor); and where to.
	var srcs []int
	defer func() {
		for _, fd := range srcs {
			unix.Close(fd)
		}
	}()
	for i := chain - 1; i >= 0; i-- {
		fd, err := unix.Open(b.m.Spec.Layers[i], unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return "", fmt.Errorf("snapshot %s: %w", b.m.ID, err)
		}
		srcs = append(srcs, fd)
	}
	upper, err := b.initFD(b.m.UpperFD)
	if err != nil {
		return "", fmt.Errorf("snapshot %s: open the writable layer: %w", b.m.ID, err)
	}
	srcs = append(srcs, upper)
	dst, err := unix.Open(tmp, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", fmt.Errorf("snapshot %s: %w", b.m.ID, err)
	}
	defer unix.Close(dst)
	if b.m.Cgroup != nil {
		err = b.copyFrozen(ctx, srcs, dst)
	} else {
		err = b.copyPaused(ctx, srcs, dst)
	}
	if err != nil {
		return "", fmt.Errorf("snapshot %s: %w", b.m.ID, err)
	}
	final := b.rt.layerDir(id)
	spec := b.m.Spec
	spec.Layers = append([]string{final}, spec.Layers[chain:]...)
	// Layers the sandbox owned now live as long as the snapshot needs them.
	spec.OwnedLayers = append([]string{final}, spec.OwnedLayers...)
	sm := &snapMeta{ID: id, Spec: spec, Parent: b.m.ID, Depth: depth, Rootless: b.rt.rootless}
	if err := writeJSONAtomic(final+".json", sm); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, final); err != nil {
		os.Remove(final + ".json")
		return "", err
	}
	if len(b.m.Spec.OwnedLayers) > 0 {
		b.m.Spec.OwnedLayers = nil
		_ = writeJSONAtomic(filepath.Join(b.dir, "meta.json"), b.m)
	}
	return id, nil
}

// copyFrozen freezes the sandbox's cgroups and applies srcs (the
// writable layer last) onto dst.
func (b *box) copyFrozen(ctx context.Context, srcs []int, dst int) (err error) {
	if err := b.m.Cgroup.freeze(true); err != nil {
		_ = b.m.Cgroup.freeze(false)
		return fmt.Errorf("freeze sandbox: %w", err)
	}
	defer func() {
		if terr := b.m.Cgroup.freeze(false); terr != nil && err == nil {
			err = fmt.Errorf("thaw sandbox: %w", terr)
		}
	}()
	for _, src := range srcs {
		if err := layer.Apply(ctx, src, dst); err != nil {
			return err
		}
	}
	return nil
}

// initFD copies the init's descriptor fd into this process
// (pidfd_getfd). Not /proc/<pid>/fd: a rootless init that has started a
// command as another user is no longer dumpable, which puts that out of
// the caller's reach; the caller owns the init's user namespace, which is
// what pidfd_getfd asks.
func (b *box) initFD(fd int) (int, error) {
	pidfd, err := unix.PidfdOpen(b.m.InitPID, 0)
	if err != nil {
		return -1, err
	}
	defer unix.Close(pidfd)
	// The pidfd pins the process: check it is still this sandbox's init.
	if !alive(b.m.InitPID, b.m.InitTick) {
		return -1, fmt.Errorf("%w: %s has stopped", sandbox.ErrClosed, b.m.ID)
	}
	return unix.PidfdGetfd(pidfd, fd, 0)
}

// copyPaused copies a rootless sandbox's writable layer: the init pauses
// the sandbox's processes (wire.OpPause) while a helper in a user namespace
// of its own, holding capabilities over the ids the sandbox maps, applies
// srcs (the writable layer last) onto dst. No descriptor of the host's
// reaches the sandbox.
func (b *box) copyPaused(ctx context.Context, srcs []int, dst int) error {
	nc, c, err := b.dial(ctx, &wire.Request{Op: wire.OpPause})
	if err != nil {
		return err
	}
	// Hanging up lets the sandbox go on.
	defer nc.Close()
	stop := closeOnDone(ctx, nc)
	defer stop()
	if _, err := response(c, ""); err != nil {
		return fmt.Errorf("pause the sandbox: %w", err)
	}
	// The helper's descriptors: copies, owned by *os.File.
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	for _, fd := range append([]int{dst}, srcs...) {
		d, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return err
		}
		files = append(files, os.NewFile(uintptr(d), "layer"))
	}
	// The writable layer cannot hold more than its tmpfs: a process
	// that runs on during the pause cannot make the copy grow past it.
	var fs unix.Statfs_t
	if err := unix.Fstatfs(srcs[len(srcs)-1], &fs); err != nil {
		return fmt.Errorf("size of the writable layer: %w", err)
	}
	limit := int64(fs.Blocks) * fs.Bsize
	return b.rt.runHelper(ctx, guest.MarkerCopy, []string{strconv.Itoa(len(srcs)), strconv.FormatInt(limit, 10)}, files...)
}

// isSnapLayer reports whether layer is one of this runtime's snapshots.
func (r *Runtime) isSnapLayer(layer string) bool {
	if filepath.Dir(layer) != filepath.Join(r.state, "layers") || !strings.HasPrefix(filepath.Base(layer), "s") {
		return false
	}
	_, err := os.Stat(layer + ".json")
	return err == nil
}

// labelSnapshot is set on forks to the snapshot they came from.
const labelSnapshot = "verisim.snapshot"

func (r *Runtime) readSnap(id string) (*snapMeta, error) {
	if id == "" || strings.ContainsAny(id, "/.") {
		return nil, fmt.Errorf("%w: %q", sandbox.ErrSnapshotNotFound, id)
	}
	b, err := os.ReadFile(r.layerDir(id) + ".json")
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s (see verisim sandbox snapshot)", sandbox.ErrSnapshotNotFound, id)
		}
		return nil, err
	}
	var m snapMeta
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", id, err)
	}
	return &m, nil
}

// Fork implements sandbox.Runtime.
func (r *Runtime) Fork(ctx context.Context, snapshot string, opts sandbox.ForkOptions) (sandbox.Sandbox, error) {
	sm, err := r.readSnap(snapshot)
	if err != nil {
		return nil, err
	}
	if sm.Rootless != r.rootless {
		if sm.Rootless {
			return nil, fmt.Errorf("snapshot %s was taken without root; fork it without root too, or take a new snapshot as root", snapshot)
		}
		return nil, fmt.Errorf("snapshot %s was taken as root; fork it as root, or take a new snapshot without root", snapshot)
	}
	spec := sm.Spec
	spec.OwnedLayers = nil
	spec.Labels = map[string]string{}
	for k, v := range sm.Spec.Labels {
		spec.Labels[k] = v
	}
	for k, v := range opts.Labels {
		spec.Labels[k] = v
	}
	spec.Labels[labelSnapshot] = snapshot
	spec.Keep = opts.Keep
	return r.create(ctx, spec)
}

// RemoveSnapshot implements sandbox.Runtime. Forks already running keep
// working only until they close; removing a snapshot under live forks is the
// caller's mistake, so it is refused.
func (r *Runtime) RemoveSnapshot(ctx context.Context, snapshot string) error {
	sm, err := r.readSnap(snapshot)
	if err != nil {
		return err
	}
	for _, l := range sm.Spec.OwnedLayers {
		users, err := r.layerSandboxes(l)
		if err != nil {
			return err
		}
		if len(users) > 0 {
			return fmt.Errorf("snapshot %s is in use by sandbox %s; remove it first", snapshot, strings.Join(users, ", "))
		}
	}
	if dep := r.layerUser(r.layerDir(snapshot), snapshot); dep != "" {
		return fmt.Errorf("snapshot %s is the base of snapshot %s; remove that first", snapshot, dep)
	}
	// The snapshot's own layer and layers handed to it (a workspace) go;
	// one a later snapshot still stands on is handed to that snapshot.
	var errs []error
	for _, l := range sm.Spec.OwnedLayers {
		if l != r.layerDir(snapshot) {
			if heir := r.layerUser(l, snapshot); heir != "" {
				if err := r.handOver(heir, l); err != nil {
					errs = append(errs, err)
				}
				continue
			}
		}
		if err := r.removeLayer(l); err != nil {
			errs = append(errs, err)
		}
	}
	if err := os.Remove(r.layerDir(snapshot) + ".json"); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// handOver makes snapshot heir the owner of layer.
func (r *Runtime) handOver(heir, layer string) error {
	sm, err := r.readSnap(heir)
	if err != nil {
		return err
	}
	sm.Spec.OwnedLayers = append(sm.Spec.OwnedLayers, layer)
	return writeJSONAtomic(r.layerDir(heir)+".json", sm)
}

// layerSandboxes lists live sandboxes whose layers include layer.
func (r *Runtime) layerSandboxes(layer string) ([]string, error) {
	ents, err := os.ReadDir(r.run)
	if err != nil {
		return nil, err
	}
	var users []string
	for _, e := range ents {
		if !isSandboxDir(e) {
			continue
		}
		m, err := readMeta(r.runDir(e.Name()))
		if err != nil || !alive(m.InitPID, m.InitTick) {
			continue
		}
		for _, l := range m.Spec.Layers {
			if l == layer {
				users = append(users, m.ID)
				break
			}
		}
	}
	return users, nil
}

// layerUser names a snapshot other than except whose layers include l, or
// returns "".
func (r *Runtime) layerUser(l, except string) string {
	ents, _ := os.ReadDir(filepath.Join(r.state, "layers"))
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || id == except {
			continue
		}
		sm, err := r.readSnap(id)
		if err != nil {
			continue
		}
		for _, x := range sm.Spec.Layers {
			if x == l {
				return id
			}
		}
	}
	return ""
}
