package image

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Whiteout names of the OCI image layer format.
const (
	whiteoutPrefix = ".wh."
	opaqueMarker   = ".wh..wh..opq"
)

// secureJoin resolves the slash-separated path unsafe under root as if root
// were "/": symlinks are followed but can never lead out of root (an
// absolute target restarts at root, ".." stops at it). Components that do
// not exist are joined as they are. The result is a host path inside root.
func secureJoin(root, unsafe string) (string, error) {
	var done []string // resolved, symlink-free components
	todo := splitPath(unsafe)
	hops := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case ".":
			continue
		case "..":
			if len(done) > 0 {
				done = done[:len(done)-1]
			}
			continue
		}
		p := filepath.Join(root, filepath.Join(done...), c)
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
				return "", err
			}
			done = append(done, c)
			continue
		}
		hops++
		if hops > maxSymlinks {
			return "", &fs.PathError{Op: "resolve", Path: unsafe, Err: syscall.ELOOP}
		}
		target, err := os.Readlink(p)
		if err != nil {
			return "", err
		}
		if path.IsAbs(target) {
			done = done[:0]
		}
		todo = append(splitPath(target), todo...)
	}
	return filepath.Join(root, filepath.Join(done...)), nil
}

// cleanEntryName turns a tar entry name into a clean path relative to the
// root ("." for the root itself), refusing names that climb out of it.
func cleanEntryName(name string) (string, error) {
	if strings.IndexByte(name, 0) >= 0 {
		return "", fmt.Errorf("%w: entry name %q contains NUL", ErrBadArchive, name)
	}
	p := path.Clean("/" + name)
	for _, c := range strings.Split(name, "/") {
		if c == ".." {
			return "", fmt.Errorf("%w: entry %q escapes the root", ErrBadArchive, name)
		}
	}
	if p == "/" {
		return ".", nil
	}
	return p[1:], nil
}

// layerWriter applies one layer onto a root filesystem.
type layerWriter struct {
	root    string
	asRoot  bool
	written map[string]bool // paths (relative to root) this layer made, and their parents
	dirs    []dirTime       // directory times, set last so children don't disturb them
}

type dirTime struct {
	path         string
	atime, mtime time.Time
}

// errReader remembers whether a read error came from the archive rather
// than from writing files.
type errReader struct {
	r   io.Reader
	err error
}

func (e *errReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && err != io.EOF {
		e.err = err
	}
	return n, err
}

// unpackLayer applies the tar stream r onto root: entries are written with
// their modes, owners (when running as root), times, symlinks and hard
// links; OCI whiteouts delete what lower layers put there. Nothing is ever
// written outside root, whatever the archive holds. Errors caused by the
// archive's content wrap ErrBadArchive.
func unpackLayer(ctx context.Context, root string, r io.Reader) error {
	w := &layerWriter{root: root, asRoot: os.Geteuid() == 0, written: map[string]bool{}}
	tr := tar.NewReader(r)
	for {
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("%w: read tar: %v", ErrBadArchive, err)
		}
		if err := w.apply(hdr, tr); err != nil {
			return err
		}
	}
	// Deepest first is the reverse of creation order.
	for i := len(w.dirs) - 1; i >= 0; i-- {
		d := w.dirs[i]
		_ = setTimes(d.path, d.atime, d.mtime)
	}
	return nil
}

// rel returns p (inside root) relative to root, slash-separated.
func (w *layerWriter) rel(p string) string {
	if p == w.root {
		return "."
	}
	return filepath.ToSlash(strings.TrimPrefix(p, w.root+string(filepath.Separator)))
}

func (w *layerWriter) markWritten(p string) {
	for r := w.rel(p); r != "." && r != "/" && r != ""; r = path.Dir(r) {
		if w.written[r] {
			return
		}
		w.written[r] = true
	}
}

func (w *layerWriter) apply(hdr *tar.Header, tr *tar.Reader) error {
	name, err := cleanEntryName(hdr.Name)
	if err != nil {
		return err
	}
	if name == "." {
		return nil // the root's own entry; its directory is ours
	}
	dir, base := path.Split(name)
	parent, err := secureJoin(w.root, dir)
	if err != nil {
		return fmt.Errorf("%w: entry %q: %v", ErrBadArchive, hdr.Name, err)
	}
	if base == opaqueMarker {
		if err := w.mkdirAll(parent); err != nil {
			return fmt.Errorf("entry %q: %w", hdr.Name, err)
		}
		w.markWritten(parent)
		return w.clearLower(parent)
	}
	if strings.HasPrefix(base, whiteoutPrefix) {
		victim := strings.TrimPrefix(base, whiteoutPrefix)
		if victim == "" || victim == "." || victim == ".." {
			return fmt.Errorf("%w: bad whiteout entry %q", ErrBadArchive, hdr.Name)
		}
		return removeAll(filepath.Join(parent, victim))
	}
	if err := w.mkdirAll(parent); err != nil {
		return fmt.Errorf("entry %q: %w", hdr.Name, err)
	}
	target := filepath.Join(parent, base)

	switch hdr.Typeflag {
	case tar.TypeDir:
		fi, err := os.Lstat(target)
		if err == nil && !fi.IsDir() {
			if err := removeAll(target); err != nil {
				return err
			}
		}
		if err != nil || !fi.IsDir() {
			if err := os.Mkdir(target, 0o700); err != nil {
				return err
			}
		}
	case tar.TypeReg: // the reader reports old-style regular files (TypeRegA) as TypeReg
		if err := removeAll(target); err != nil {
			return err
		}
		f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL|oNoFollow, 0o600)
		if err != nil {
			return err
		}
		src := &errReader{r: tr}
		_, err = io.Copy(f, src)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if src.err != nil {
			return fmt.Errorf("%w: read %q: %v", ErrBadArchive, hdr.Name, src.err)
		}
		if err != nil {
			return err
		}
	case tar.TypeSymlink:
		if hdr.Linkname == "" {
			return fmt.Errorf("%w: symlink %q has no target", ErrBadArchive, hdr.Name)
		}
		if err := removeAll(target); err != nil {
			return err
		}
		if err := os.Symlink(hdr.Linkname, target); err != nil {
			return err
		}
	case tar.TypeLink:
		return w.hardlink(hdr, target)
	case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
		if err := removeAll(target); err != nil {
			return err
		}
		if hdr.Typeflag == tar.TypeChar && hdr.Devmajor == 0 && hdr.Devminor == 0 {
			return nil // an overlayfs-style whiteout: the removal was all
		}
		mode := uint32(syscall.S_IFIFO)
		switch hdr.Typeflag {
		case tar.TypeChar:
			mode = syscall.S_IFCHR
		case tar.TypeBlock:
			mode = syscall.S_IFBLK
		}
		if err := mknod(target, mode|uint32(hdr.Mode&0o777), hdr.Devmajor, hdr.Devminor); err != nil {
			if hdr.Typeflag != tar.TypeFifo && (errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES)) {
				return nil // devices need privilege; the sandbox supplies /dev
			}
			return err
		}
	default:
		return nil // PAX globals, GNU volume headers and such carry no file
	}
	w.markWritten(target)
	return w.setMeta(hdr, target)
}

// setMeta gives target the owner, extended attributes, mode and times of hdr.
func (w *layerWriter) setMeta(hdr *tar.Header, target string) error {
	if w.asRoot {
		if err := lchown(target, hdr.Uid, hdr.Gid); err != nil {
			return fmt.Errorf("chown %s: %w", hdr.Name, err)
		}
	}
	for k, v := range hdr.PAXRecords {
		attr, ok := strings.CutPrefix(k, "SCHILY.xattr.")
		if !ok || !allowedXattr(attr) {
			continue
		}
		// Best effort: filesystems and privileges vary, and a missing
		// attribute does not make the tree wrong enough to fail.
		_ = lsetxattr(target, attr, []byte(v))
	}
	if hdr.Typeflag != tar.TypeSymlink {
		// After chown, which clears setuid and setgid bits.
		if err := chmod(target, uint32(hdr.Mode)); err != nil {
			return err
		}
	}
	if hdr.Typeflag == tar.TypeDir {
		w.dirs = append(w.dirs, dirTime{path: target, atime: hdr.AccessTime, mtime: hdr.ModTime})
		return nil
	}
	// Times are cosmetic; a filesystem that refuses them is no reason to fail.
	_ = setTimes(target, hdr.AccessTime, hdr.ModTime)
	return nil
}

// allowedXattr keeps attributes that belong to files (capabilities, user
// data) and drops those that would change how overlayfs reads the layer.
func allowedXattr(attr string) bool {
	switch {
	case attr == "security.capability":
		return true
	case strings.HasPrefix(attr, "user.overlay."):
		return false
	case strings.HasPrefix(attr, "user."):
		return true
	}
	return false
}

func (w *layerWriter) hardlink(hdr *tar.Header, target string) error {
	lname, err := cleanEntryName(hdr.Linkname)
	if err != nil || lname == "." {
		return fmt.Errorf("%w: hard link %q to %q escapes the root", ErrBadArchive, hdr.Name, hdr.Linkname)
	}
	ldir, lbase := path.Split(lname)
	lparent, err := secureJoin(w.root, ldir)
	if err != nil {
		return fmt.Errorf("%w: hard link %q: %v", ErrBadArchive, hdr.Name, err)
	}
	old := filepath.Join(lparent, lbase)
	fi, err := os.Lstat(old)
	if err != nil {
		return fmt.Errorf("%w: hard link %q to missing %q", ErrBadArchive, hdr.Name, hdr.Linkname)
	}
	if fi.IsDir() {
		return fmt.Errorf("%w: hard link %q to directory %q", ErrBadArchive, hdr.Name, hdr.Linkname)
	}
	if old == target {
		return nil
	}
	if err := removeAll(target); err != nil {
		return err
	}
	if err := os.Link(old, target); err != nil {
		return err
	}
	w.markWritten(target)
	return nil
}

// mkdirAll makes the directory p (inside root, symlink-free as secureJoin
// returned it) and its missing parents, like a tar entry-less parent.
func (w *layerWriter) mkdirAll(p string) error {
	if p == w.root {
		return nil
	}
	fi, err := os.Lstat(p)
	if err == nil {
		if fi.IsDir() {
			return nil
		}
		return &fs.PathError{Op: "mkdir", Path: w.rel(p), Err: syscall.ENOTDIR}
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := w.mkdirAll(filepath.Dir(p)); err != nil {
		return err
	}
	if err := os.Mkdir(p, 0o755); err != nil {
		return err
	}
	w.markWritten(p)
	return nil
}

// clearLower empties dir of what lower layers put there, keeping what this
// layer already wrote (an opaque marker may come after its siblings).
func (w *layerWriter) clearLower(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if !w.written[w.rel(p)] {
			if err := removeAll(p); err != nil {
				return err
			}
			continue
		}
		if e.IsDir() {
			if err := w.clearLower(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// removeAll removes p without following a symlink at p.
func removeAll(p string) error {
	err := os.RemoveAll(p)
	if err != nil && errors.Is(err, syscall.ENOTDIR) {
		return nil
	}
	return err
}
