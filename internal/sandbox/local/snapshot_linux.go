package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/verisim/verisim/internal/sandbox"
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
}

func (r *Runtime) layerDir(id string) string { return filepath.Join(r.state, "layers", id) }

// Snapshot implements sandbox.Sandbox: it freezes the sandbox, copies its
// writable layer (only what changed; the workspace and image stay in their
// layers) into a new read-only layer, and thaws it.
func (b *box) Snapshot(ctx context.Context) (_ string, retErr error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.isClosed() {
		return "", sandbox.ErrClosed
	}
	if len(b.m.Spec.Views) > 0 {
		return "", fmt.Errorf("%w: the sandbox shows host directories copy-on-write, and snapshots do not keep those changes", sandbox.ErrUnsupported)
	}
	if b.m.Cgroup == nil {
		// Without a freezer (no cgroups without root) the copy would run
		// while the sandbox's processes can swap files for symlinks to the
		// caller's own files, which the copy would then take in.
		return "", fmt.Errorf("%w: snapshots need root (a cgroup freezer)", sandbox.ErrUnsupported)
	}
	if !alive(b.m.InitPID, b.m.InitTick) {
		return "", fmt.Errorf("%w: %s has stopped", sandbox.ErrClosed, b.m.ID)
	}
	id := "s" + newID()
	// The copy's name says which process makes it, for GC.
	tmp := filepath.Join(b.rt.state, "layers", fmt.Sprintf(".tmp-%d-%s", os.Getpid(), id))
	defer func() {
		if retErr != nil {
			os.RemoveAll(tmp)
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
	if err := b.m.Cgroup.freeze(true); err != nil {
		_ = b.m.Cgroup.freeze(false)
		return "", fmt.Errorf("freeze sandbox for snapshot: %w", err)
	}
	var err error
	for i := chain - 1; i >= 0 && err == nil; i-- {
		err = applyLayer(ctx, b.m.Spec.Layers[i], tmp)
	}
	if err == nil {
		err = applyLayer(ctx, b.upperPath(), tmp)
	}
	if terr := b.m.Cgroup.freeze(false); terr != nil && err == nil {
		err = fmt.Errorf("thaw sandbox after snapshot: %w", terr)
	}
	if err != nil {
		return "", fmt.Errorf("snapshot %s: %w", b.m.ID, err)
	}
	final := b.rt.layerDir(id)
	spec := b.m.Spec
	spec.Layers = append([]string{final}, spec.Layers[chain:]...)
	// Layers the sandbox owned now live as long as the snapshot needs them.
	spec.OwnedLayers = append([]string{final}, spec.OwnedLayers...)
	sm := &snapMeta{ID: id, Spec: spec, Parent: b.m.ID, Depth: depth}
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
		if err := os.RemoveAll(l); err != nil {
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

// applyLayer applies the overlay layer src onto the directory tree dst the
// way overlayfs would read src over it: entries replace dst's, whiteouts
// (0/0 character devices) delete dst's entry and stay as whiteouts (for the
// layers below), opaque directories replace dst's directory whole, other
// directories merge. Onto a missing dst it is a plain copy. It keeps modes,
// owners, times, hard links and the opaque-directory xattr; overlay's
// bookkeeping xattrs that only make sense on an upper layer are dropped.
func applyLayer(ctx context.Context, src, dst string) error {
	links := map[uint64]string{}
	var walk func(s, d string) error
	walk = func(s, d string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		var st unix.Stat_t
		stat := unix.Lstat
		if s == src {
			// src may be a /proc/<pid>/fd/<n> link to the directory.
			stat = unix.Stat
		}
		if err := stat(s, &st); err != nil {
			return err
		}
		mode := st.Mode & unix.S_IFMT
		var dt unix.Stat_t
		dExists := unix.Lstat(d, &dt) == nil
		if mode == unix.S_IFDIR {
			merge := dExists && dt.Mode&unix.S_IFMT == unix.S_IFDIR && !isOpaque(s)
			if !merge {
				if dExists {
					if err := os.RemoveAll(d); err != nil {
						return err
					}
				}
				if err := unix.Mkdir(d, st.Mode&0o7777); err != nil {
					return err
				}
			}
			ents, err := os.ReadDir(s)
			if err != nil {
				return err
			}
			for _, e := range ents {
				if err := walk(filepath.Join(s, e.Name()), filepath.Join(d, e.Name())); err != nil {
					return err
				}
			}
		} else {
			if dExists {
				if err := os.RemoveAll(d); err != nil {
					return err
				}
			}
			if st.Nlink > 1 {
				if first, ok := links[st.Ino]; ok {
					return unix.Link(first, d)
				}
				links[st.Ino] = d
			}
			switch mode {
			case unix.S_IFREG:
				if err := copyFile(s, d, st.Mode&0o7777); err != nil {
					return err
				}
			case unix.S_IFLNK:
				target, err := os.Readlink(s)
				if err != nil {
					return err
				}
				if err := unix.Symlink(target, d); err != nil {
					return err
				}
			case unix.S_IFCHR, unix.S_IFBLK, unix.S_IFIFO, unix.S_IFSOCK:
				if err := unix.Mknod(d, st.Mode, int(st.Rdev)); err != nil {
					return err
				}
			}
		}
		if err := unix.Lchown(d, int(st.Uid), int(st.Gid)); err != nil {
			return err
		}
		if err := copyXattrs(s, d); err != nil {
			return err
		}
		if mode != unix.S_IFLNK {
			// chown clears set-id bits; put the mode back.
			if err := unix.Chmod(d, st.Mode&0o7777); err != nil {
				return err
			}
		}
		ts := []unix.Timespec{st.Atim, st.Mtim}
		return unix.UtimesNanoAt(unix.AT_FDCWD, d, ts, unix.AT_SYMLINK_NOFOLLOW)
	}
	return walk(src, dst)
}

func isOpaque(dir string) bool {
	for _, name := range []string{"trusted.overlay.opaque", "user.overlay.opaque"} {
		var v [1]byte
		if n, err := unix.Lgetxattr(dir, name, v[:]); err == nil && n == 1 && v[0] == 'y' {
			return true
		}
	}
	return false
}

func copyFile(src, dst string, perm uint32) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, os.FileMode(perm&0o777))
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func copyXattrs(src, dst string) error {
	sz, err := unix.Llistxattr(src, nil)
	if err != nil || sz == 0 {
		if errors.Is(err, unix.ENOTSUP) {
			return nil
		}
		return err
	}
	buf := make([]byte, sz)
	sz, err = unix.Llistxattr(src, buf)
	if err != nil {
		return err
	}
	for _, name := range strings.Split(strings.TrimRight(string(buf[:sz]), "\x00"), "\x00") {
		if name == "" {
			continue
		}
		if (strings.HasPrefix(name, "trusted.overlay.") || strings.HasPrefix(name, "user.overlay.")) && !strings.HasSuffix(name, ".overlay.opaque") {
			continue
		}
		vsz, err := unix.Lgetxattr(src, name, nil)
		if err != nil {
			continue
		}
		val := make([]byte, vsz)
		vsz, err = unix.Lgetxattr(src, name, val)
		if err != nil {
			continue
		}
		if err := unix.Lsetxattr(dst, name, val[:vsz], 0); err != nil && !errors.Is(err, unix.ENOTSUP) {
			return fmt.Errorf("copy xattr %s of %s: %w", name, src, err)
		}
	}
	return nil
}
