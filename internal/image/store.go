package image

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/verisim/verisim/internal/lazyregexp"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Kinds of entries a Store keeps.
const (
	KindHost    = "host"
	KindArchive = "oci"
	KindBuilt   = "built"
)

// Store resolves image refs and keeps the layers it generates under one
// directory. The zero value is not usable; call NewStore.
type Store struct {
	dir string

	// Seams for tests; NewStore sets the real machine's values.
	hostRoot    string // the host filesystem "host" images copy from
	aptDir      string // where Build reads apt sources for the mirror
	debootstrap string // the debootstrap command
}

// NewStore returns a Store rooted at dir (for example <state>/images). The
// directory is created when first needed.
func NewStore(dir string) *Store {
	// Absolute, because cleanup matches paths against the mount table.
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return &Store{dir: dir, hostRoot: "/", aptDir: "/etc/apt", debootstrap: "debootstrap"}
}

// Info describes one image a Store keeps.
type Info struct {
	Kind string // KindHost, KindArchive or KindBuilt
	// ID names the entry within its kind: a cache key, a config digest
	// ("sha256-…") or a built image's name.
	ID string
	// Ref is what resolves to it: "host", a built image's name, or the path
	// of the archive it was unpacked from (which may since have moved).
	Ref     string
	Path    string // the layer directory
	Size    int64  // bytes of file data, hard links counted once
	Created time.Time
}

// meta is image.json beside each entry's rootfs.
type meta struct {
	Kind     string    `json:"kind"`
	Ref      string    `json:"ref"`
	Created  time.Time `json:"created"`
	Digest   string    `json:"digest,omitempty"`
	Suite    string    `json:"suite,omitempty"`
	Packages []string  `json:"packages,omitempty"`
	Mirror   string    `json:"mirror,omitempty"`
}

var nameRE = lazyregexp.New(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// validName reports whether name may name a built image.
func validName(name string) error {
	if len(name) > 64 || !nameRE.MatchString(name) {
		return fmt.Errorf("invalid image name %q: use lowercase letters, digits and single dashes (at most 64)", name)
	}
	if name == "host" {
		return fmt.Errorf("invalid image name %q: reserved for the host image", name)
	}
	return nil
}

func isArchivePath(ref string) bool {
	for _, ext := range []string{".tar", ".tar.gz", ".tgz"} {
		if strings.HasSuffix(ref, ext) {
			return true
		}
	}
	return false
}

// Resolve turns ref into an Image:
//
//   - "host" (or ""): the host's own OS, read-only, without its users' data;
//   - a path ending in .tar, .tar.gz or .tgz: an OCI image archive, either
//     docker-save or OCI layout, flattened into one layer and cached;
//   - a path to a directory holding a root filesystem, used as it is;
//   - the name of an image made by Build.
//
// Anything else is an error wrapping ErrUnknownImage.
func (s *Store) Resolve(ctx context.Context, ref string) (*Image, error) {
	switch {
	case ref == "" || ref == "host":
		return s.resolveHost(ctx)
	case isArchivePath(ref):
		return s.resolveArchive(ctx, ref)
	}
	if nameRE.MatchString(ref) {
		rootfs := filepath.Join(s.dir, KindBuilt, ref, "rootfs")
		if fi, err := os.Stat(rootfs); err == nil && fi.IsDir() {
			return &Image{Ref: ref, Layers: []string{rootfs}}, nil
		}
	}
	if fi, err := os.Stat(ref); err == nil && fi.IsDir() {
		return resolveDir(ref)
	}
	return nil, fmt.Errorf("%w %q: use \"host\", a root filesystem directory, an OCI archive (.tar), or a name from \"verisim image build\"", ErrUnknownImage, ref)
}

func resolveDir(ref string) (*Image, error) {
	dir, err := filepath.Abs(ref)
	if err != nil {
		return nil, err
	}
	if err := checkRootFS(dir); err != nil {
		return nil, err
	}
	return &Image{Ref: dir, Layers: []string{dir}}, nil
}

// checkRootFS reports whether dir looks like a root filesystem.
func checkRootFS(dir string) error {
	_, errBin := os.Lstat(filepath.Join(dir, "bin"))
	usrBin, errUsrBin := os.Stat(filepath.Join(dir, "usr", "bin"))
	etc, errEtc := os.Stat(filepath.Join(dir, "etc"))
	hasBin := errBin == nil || (errUsrBin == nil && usrBin.IsDir())
	if !hasBin || errEtc != nil || !etc.IsDir() {
		return notRootFSError{dir}
	}
	return nil
}

// notRootFSError says which directory is not a root filesystem and what
// to do instead; it matches ErrNotRootFS.
type notRootFSError struct{ dir string }

func (e notRootFSError) Error() string {
	return e.dir + " is not a root filesystem (no /usr/bin or /etc); build one with `verisim image build`"
}

func (e notRootFSError) Is(target error) bool { return target == ErrNotRootFS }

// entryDir is where an entry of kind with id lives.
func (s *Store) entryDir(kind, id string) string {
	return filepath.Join(s.dir, kind, id)
}

// publishOptions say how publish makes one entry.
type publishOptions struct {
	kind, id string
	meta     meta
	// replace swaps out an existing entry instead of reusing it.
	replace bool
	// fill writes the root filesystem into rootfs, which exists and is empty.
	fill func(ctx context.Context, rootfs string) error
}

// publish returns the rootfs of an entry, making it first if it does not
// exist. It works in a temporary directory under the store and renames the
// result into place, under a lock so that concurrent callers (also in other
// processes) make it once. On failure nothing is left behind.
func (s *Store) publish(ctx context.Context, o publishOptions) (string, error) {
	final := s.entryDir(o.kind, o.id)
	rootfs := filepath.Join(final, "rootfs")
	if !o.replace && isDir(rootfs) {
		return rootfs, nil
	}
	unlock, err := lockPath(ctx, filepath.Join(s.dir, "locks", o.kind+"-"+o.id+".lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if !o.replace && isDir(rootfs) {
		return rootfs, nil // made while we waited for the lock
	}
	tmpRoot := filepath.Join(s.dir, "tmp")
	if err := os.MkdirAll(tmpRoot, 0o755); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(tmpRoot, o.kind+"-"+o.id+"-")
	if err != nil {
		return "", err
	}
	published := false
	defer func() {
		if !published {
			removeTree(tmp)
		}
	}()
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", err
	}
	tmpRootfs := filepath.Join(tmp, "rootfs")
	if err := os.Mkdir(tmpRootfs, 0o755); err != nil {
		return "", err
	}
	if err := o.fill(ctx, tmpRootfs); err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		return "", context.Cause(ctx)
	}
	m := o.meta
	m.Kind = o.kind
	if m.Created.IsZero() {
		m.Created = time.Now().UTC()
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(tmp, "image.json"), append(data, '\n'), 0o644); err != nil {
		return "", err
	}
	if o.replace && isDir(final) {
		if err := exchange(tmp, final); err != nil {
			return "", fmt.Errorf("replace %s: %w", final, err)
		}
		// tmp now holds the old entry; the deferred cleanup removes it.
		return rootfs, nil
	}
	if err := os.Rename(tmp, final); err != nil {
		if isDir(rootfs) {
			return rootfs, nil // someone without our lock won the race
		}
		return "", err
	}
	published = true
	return rootfs, nil
}

// removeTree removes dir after detaching anything mounted inside it.
func removeTree(dir string) {
	if err := unmountUnder(dir); err != nil {
		// Removing through a mount could reach the host; leave it.
		return
	}
	os.RemoveAll(dir)
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// List returns the images the store keeps, by kind then ID, with sizes.
// Walking the trees for their sizes takes a while for large images.
func (s *Store) List(ctx context.Context) ([]Info, error) {
	var out []Info
	for _, kind := range []string{KindBuilt, KindArchive, KindHost} {
		entries, err := os.ReadDir(filepath.Join(s.dir, kind))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if err := ctx.Err(); err != nil {
				return nil, context.Cause(ctx)
			}
			dir := filepath.Join(s.dir, kind, e.Name())
			data, err := os.ReadFile(filepath.Join(dir, "image.json"))
			if err != nil {
				continue // not one of ours
			}
			var m meta
			if err := json.Unmarshal(data, &m); err != nil {
				continue
			}
			rootfs := filepath.Join(dir, "rootfs")
			size, err := treeSize(ctx, rootfs)
			if err != nil {
				return nil, fmt.Errorf("size of %s: %w", rootfs, err)
			}
			out = append(out, Info{Kind: kind, ID: e.Name(), Ref: m.Ref, Path: rootfs, Size: size, Created: m.Created})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// treeSize sums the sizes of regular files under dir, counting each inode
// once.
func treeSize(ctx context.Context, dir string) (int64, error) {
	type key struct{ dev, ino uint64 }
	seen := map[key]bool{}
	var total int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		dev, ino, nlink := inode(fi)
		if nlink > 1 {
			k := key{dev, ino}
			if seen[k] {
				return nil
			}
			seen[k] = true
		}
		total += fi.Size()
		return nil
	})
	return total, err
}
