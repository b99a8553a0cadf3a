package image

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/verisim/verisim/internal/sandbox"
)

// Errors returned by Store; callers use errors.Is.
var (
	// ErrUnknownImage: the ref names no image kind this package knows.
	ErrUnknownImage = errors.New("unknown image")
	// ErrNotRootFS: a directory given as an image is not a root filesystem.
	ErrNotRootFS = errors.New("not a root filesystem")
	// ErrBadArchive: an image archive is unreadable, corrupt or unsafe.
	ErrBadArchive = errors.New("bad image archive")
	// ErrNoDebootstrap: Build needs debootstrap and it is not installed.
	ErrNoDebootstrap = errors.New("debootstrap is not installed; run scripts/install-deps.sh or apt-get install debootstrap")
)

// Image is a root filesystem as a sandbox mounts it: read-only layers,
// topmost first, with host directories bound over them.
type Image struct {
	// Ref is what the image was resolved from: "host", an absolute
	// directory or archive path, or a built image's name.
	Ref    string
	Layers []string
	Binds  []sandbox.Bind
}

// maxSymlinks bounds symlink hops in one lookup, like the kernel's ELOOP.
const maxSymlinks = 40

// ReadFile reads the file at the absolute in-image path as a sandbox would
// see it before anything is written: layers merged top-first with overlayfs
// whiteouts and opaque directories honoured, binds mounted over them, and
// symlinks resolved inside the image. A missing file gives an error wrapping
// fs.ErrNotExist.
func (im *Image) ReadFile(name string) ([]byte, error) {
	n, err := im.lookup(name)
	if err != nil {
		return nil, fmt.Errorf("read %s in image %s: %w", name, im.Ref, err)
	}
	if n.info.IsDir() {
		return nil, fmt.Errorf("read %s in image %s: is a directory", name, im.Ref)
	}
	data, err := os.ReadFile(n.host)
	if err != nil {
		return nil, fmt.Errorf("read %s in image %s: %w", name, im.Ref, err)
	}
	return data, nil
}

// node is one resolved in-image path.
type node struct {
	path string      // in-image, clean, absolute, symlink-free
	host string      // the host path that provides it (topmost)
	info fs.FileInfo // Lstat of host
	// dirs are the host directories merged into this one, topmost first.
	// Inside a bind it is just host, and whiteouts mean nothing there.
	dirs   []string
	inBind bool
}

func (im *Image) root() (*node, error) {
	var dirs []string
	for _, l := range im.Layers {
		fi, err := os.Stat(l)
		if err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("layer %s is not a directory", l)
		}
		dirs = append(dirs, l)
		if isOpaque(l) {
			break
		}
	}
	if b, ok := im.bindFor("/"); ok {
		return im.bindNode("/", b)
	}
	if len(dirs) == 0 {
		return nil, errors.New("image has no layers")
	}
	fi, err := os.Stat(dirs[0])
	if err != nil {
		return nil, err
	}
	return &node{path: "/", host: dirs[0], info: fi, dirs: dirs}, nil
}

// bindFor returns the bind whose target is the longest prefix of p.
func (im *Image) bindFor(p string) (sandbox.Bind, bool) {
	var best sandbox.Bind
	found := false
	for _, b := range im.Binds {
		t := path.Clean("/" + b.Target)
		if (p == t || strings.HasPrefix(p, t+"/") || t == "/") && (!found || len(t) > len(path.Clean("/"+best.Target))) {
			best, found = b, true
		}
	}
	return best, found
}

func (im *Image) bindNode(p string, b sandbox.Bind) (*node, error) {
	rel := strings.TrimPrefix(p, path.Clean("/"+b.Target))
	host := filepath.Join(b.Source, filepath.FromSlash(rel))
	fi, err := os.Lstat(host)
	if err != nil {
		return nil, err
	}
	return &node{path: p, host: host, info: fi, dirs: []string{host}, inBind: true}, nil
}

// child looks name up in the directory dir.
func (im *Image) child(dir *node, name string) (*node, error) {
	p := path.Join(dir.path, name)
	notExist := &fs.PathError{Op: "lstat", Path: p, Err: fs.ErrNotExist}
	if b, ok := im.bindFor(p); ok {
		n, err := im.bindNode(p, b)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, notExist
		}
		return n, err
	}
	if dir.inBind {
		// A path below a bind is always under that bind; bindFor found it.
		return nil, notExist
	}
	var n *node
	for _, d := range dir.dirs {
		h := filepath.Join(d, name)
		fi, err := os.Lstat(h)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				return nil, err
			}
			continue
		}
		if n == nil {
			if isWhiteout(fi) {
				return nil, notExist
			}
			n = &node{path: p, host: h, info: fi}
			if !fi.IsDir() {
				return n, nil
			}
			n.dirs = append(n.dirs, h)
		} else {
			// Lower layers merge in until a non-directory (or whiteout)
			// hides them.
			if !fi.IsDir() {
				break
			}
			n.dirs = append(n.dirs, h)
		}
		if isOpaque(h) {
			break
		}
	}
	if n == nil {
		return nil, notExist
	}
	return n, nil
}

// lookup resolves an absolute in-image path, following symlinks (also in the
// last component) inside the image.
func (im *Image) lookup(name string) (*node, error) {
	if !path.IsAbs(name) {
		return nil, fmt.Errorf("path %q is not absolute", name)
	}
	root, err := im.root()
	if err != nil {
		return nil, err
	}
	stack := []*node{root}
	todo := splitPath(name)
	hops := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		cur := stack[len(stack)-1]
		switch c {
		case ".":
			continue
		case "..":
			if len(stack) > 1 {
				stack = stack[:len(stack)-1]
			}
			continue
		}
		if !cur.info.IsDir() {
			return nil, &fs.PathError{Op: "lstat", Path: path.Join(cur.path, c), Err: errors.New("not a directory")}
		}
		n, err := im.child(cur, c)
		if err != nil {
			return nil, err
		}
		if n.info.Mode()&fs.ModeSymlink == 0 {
			stack = append(stack, n)
			continue
		}
		hops++
		if hops > maxSymlinks {
			return nil, &fs.PathError{Op: "lookup", Path: name, Err: errors.New("too many levels of symbolic links")}
		}
		target, err := os.Readlink(n.host)
		if err != nil {
			return nil, err
		}
		if path.IsAbs(target) {
			stack = stack[:1]
		}
		todo = append(splitPath(target), todo...)
	}
	return stack[len(stack)-1], nil
}

func splitPath(p string) []string {
	var out []string
	for _, c := range strings.Split(p, "/") {
		if c != "" {
			out = append(out, c)
		}
	}
	return out
}
