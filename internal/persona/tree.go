package persona

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/verisim/verisim/internal/fstree"
)

type nodeKind int

const (
	kindDir nodeKind = iota
	kindFile
	kindSymlink
)

// node is one file of a layer being built.
type node struct {
	kind     nodeKind
	data     []byte
	target   string
	mode     fs.FileMode
	uid, gid int
	// mtime of a directory may be zero: it then takes its newest child's,
	// as a directory's mtime is when an entry was last added.
	mtime time.Time
}

// tree is a layer being built, keyed by absolute path inside the image.
// Building in memory first keeps WriteLayer's output a pure function of the
// persona, the base and the clock.
type tree map[string]*node

func (t tree) dir(p string, mode fs.FileMode, uid, gid int, mtime time.Time) {
	t.add(p, &node{kind: kindDir, mode: mode, uid: uid, gid: gid, mtime: mtime})
}

func (t tree) file(p string, data []byte, mode fs.FileMode, uid, gid int, mtime time.Time) {
	t.add(p, &node{kind: kindFile, data: data, mode: mode, uid: uid, gid: gid, mtime: mtime})
}

func (t tree) symlink(p, target string, uid, gid int, mtime time.Time) {
	t.add(p, &node{kind: kindSymlink, target: target, mode: 0o777, uid: uid, gid: gid, mtime: mtime})
}

// add puts n at p, creating missing parents owned like n, mode 0755.
func (t tree) add(p string, n *node) {
	t[p] = n
	for dir := path.Dir(p); dir != p; p, dir = dir, path.Dir(dir) {
		if _, ok := t[dir]; ok {
			return
		}
		t[dir] = &node{kind: kindDir, mode: 0o755, uid: n.uid, gid: n.gid}
	}
}

// resolveDirTimes gives every directory without an mtime the time an
// entry was last added to it: its newest file's mtime or the creation of
// its newest subdirectory, which is taken to be the oldest file time
// inside that subdirectory. An empty one gets fallback.
func (t tree) resolveDirTimes(fallback time.Time) {
	paths := t.paths()
	depth := func(p string) int {
		if p == "/" {
			return 0
		}
		return strings.Count(p, "/")
	}
	// Deepest first, so children are resolved before their parents.
	sort.SliceStable(paths, func(i, j int) bool { return depth(paths[i]) > depth(paths[j]) })
	newest := map[string]time.Time{} // latest entry added to a directory
	born := map[string]time.Time{}   // earliest file time under a directory
	for _, p := range paths {
		n := t[p]
		entry := n.mtime
		if n.kind == kindDir {
			if n.mtime.IsZero() {
				n.mtime = fallback
				if c, ok := newest[p]; ok {
					n.mtime = c
				}
			}
			entry = n.mtime
			if b, ok := born[p]; ok && b.Before(entry) {
				entry = b
			}
		}
		if p == "/" {
			continue
		}
		parent := path.Dir(p)
		if entry.After(newest[parent]) {
			newest[parent] = entry
		}
		if b, ok := born[parent]; !ok || entry.Before(b) {
			born[parent] = entry
		}
	}
}

func (t tree) paths() []string {
	paths := make([]string, 0, len(t))
	for p := range t {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	return paths
}

// materialize writes t under root, which must exist and be empty.
func (t tree) materialize(root string) error {
	paths := t.paths()
	for _, p := range paths {
		n, host := t[p], filepath.Join(root, filepath.FromSlash(p))
		var err error
		switch {
		case p == "/":
		case n.kind == kindDir:
			err = os.Mkdir(host, 0o700)
		case n.kind == kindFile:
			err = os.WriteFile(host, n.data, 0o600)
		case n.kind == kindSymlink:
			err = os.Symlink(n.target, host)
		}
		if err != nil {
			return fmt.Errorf("write layer file %s: %w", p, err)
		}
	}
	return t.applyMeta(root)
}

// applyMeta gives the files of t under root their owner, mode and times.
func (t tree) applyMeta(root string) error {
	paths := t.paths()
	var own fstree.Owner
	for _, p := range paths {
		n, host := t[p], filepath.Join(root, filepath.FromSlash(p))
		if err := own.Lchown(host, n.uid, n.gid); err != nil {
			return err
		}
		if n.kind != kindSymlink {
			if err := os.Chmod(host, n.mode); err != nil {
				return fmt.Errorf("chmod %s: %w", p, err)
			}
		}
	}
	// Children before parents: writing a child would change its parent's mtime.
	for i := len(paths) - 1; i >= 0; i-- {
		n, host := t[paths[i]], filepath.Join(root, filepath.FromSlash(paths[i]))
		if err := setTimes(host, n.mtime); err != nil {
			return fmt.Errorf("set times of %s: %w", paths[i], err)
		}
	}
	return nil
}

// between is a time uniformly drawn in [from, to), to the nanosecond;
// from when the range is empty.
func between(r *rand.Rand, from, to time.Time) time.Time {
	d := to.Sub(from)
	if d <= 0 {
		return from
	}
	return from.Add(time.Duration(r.Int64N(int64(d))))
}

// after is a time drawn in [t+lo, t+hi).
func after(r *rand.Rand, t time.Time, lo, hi time.Duration) time.Time {
	return between(r, t.Add(lo), t.Add(hi))
}
