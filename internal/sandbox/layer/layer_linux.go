// Package layer applies overlayfs layers onto directory trees: how a
// sandbox's writable layer becomes a snapshot's read-only layer, and how
// a stack of snapshot layers is squashed into one.
//
// Every step is relative to a directory descriptor and follows no symbolic
// link, and what is opened must be what was listed (same device and inode,
// same type), so a layer whose files its sandbox may still be changing (a
// rootless sandbox is paused with signals, which a process can arrange to
// undo) cannot lead the copy out of the layer or stall it: a file swapped
// for a link is copied as the link it is, one swapped for a FIFO fails the
// copy. It runs on the host (root) and in a rootless runtime's copy helper,
// which holds a user namespace's capabilities over the ids a sandbox maps,
// whose files the host user could neither read nor chown.
package layer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Apply applies the overlay layer whose root directory is src onto the
// directory dst the way overlayfs would read src over it: entries replace
// dst's, whiteouts (0/0 character devices) delete dst's entry and stay as
// whiteouts (for the layers below), opaque directories replace dst's
// directory whole, other directories merge. dst's root takes src's root's
// attributes. It keeps modes, owners, times, hard links and xattrs (of
// symbolic links and device nodes too), the opaque-directory mark among
// them; overlay's bookkeeping xattrs that only make sense on an upper
// layer are dropped. src and dst may be O_PATH descriptors;
// Apply does not close them.
func Apply(ctx context.Context, src, dst int) error {
	return ApplyWithin(ctx, src, dst, 0)
}

// ErrTooLarge is returned by ApplyWithin when a layer holds more data
// than its budget.
var ErrTooLarge = errors.New("more data than the layer's filesystem can hold: it changed while being copied")

// ApplyWithin is Apply that fails with ErrTooLarge once more than maxBytes
// of file data (holes not counted) were copied from src; 0 means no limit.
// A layer that may change while it is copied (a rootless sandbox's, whose
// processes can arrange to run on) gets its filesystem's size: a process
// that keeps writing where the copy has not been yet cannot make the copy
// grow past what the layer could ever hold.
func ApplyWithin(ctx context.Context, src, dst int, maxBytes int64) error {
	s, err := reopenDir(src)
	if err != nil {
		return fmt.Errorf("open layer: %w", err)
	}
	defer unix.Close(s)
	d, err := reopenDir(dst)
	if err != nil {
		return fmt.Errorf("open destination: %w", err)
	}
	defer unix.Close(d)
	var st unix.Stat_t
	if err := unix.Fstat(s, &st); err != nil {
		return err
	}
	a := &applier{ctx: ctx, root: d, links: map[[2]uint64]string{}, limited: maxBytes > 0, left: maxBytes}
	if err := a.dir(s, d, &node{}); err != nil {
		return err
	}
	return setAttrs(s, d, &st)
}

type applier struct {
	ctx  context.Context
	root int
	// left is how many bytes of file data may still be copied, when
	// limited.
	limited bool
	left    int64
	// links maps a hard-linked source inode to its first copy's path
	// below root.
	links map[[2]uint64]string
}

// node is an entry's place in the tree, its path built only when needed
// (an error, a hard link): a deep tree must not cost the square of its
// depth in path strings.
type node struct {
	parent *node
	name   string
	depth  int
}

func (n *node) child(name string) *node { return &node{n, name, n.depth + 1} }

func (n *node) path() string {
	if n == nil || n.parent == nil {
		return ""
	}
	return path.Join(n.parent.path(), n.name)
}

// maxTreeDepth bounds how deep a copied tree may be: each level holds two
// descriptors until its directory is done.
const maxTreeDepth = 2048

func (a *applier) dir(src, dst int, at *node) error {
	if at.depth > maxTreeDepth {
		return fmt.Errorf("copy /%s: more than %d directories deep", at.path(), maxTreeDepth)
	}
	names, err := readNames(src)
	if err != nil {
		return fmt.Errorf("list /%s: %w", at.path(), err)
	}
	seen := make(map[string]bool, len(names))
	for _, name := range names {
		if err := a.ctx.Err(); err != nil {
			return err
		}
		// A directory renamed into place while it is read may list a
		// name twice; its first copy stands.
		if seen[name] {
			continue
		}
		seen[name] = true
		if err := a.entry(src, dst, name, at.child(name)); err != nil {
			return err
		}
	}
	return nil
}

func (a *applier) entry(src, dst int, name string, at *node) error {
	wrap := func(err error) error {
		if err == nil {
			return nil
		}
		return fmt.Errorf("copy /%s: %w", at.path(), err)
	}
	var st unix.Stat_t
	if err := unix.Fstatat(src, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return wrap(err)
	}
	var dt unix.Stat_t
	exists := unix.Fstatat(dst, name, &dt, unix.AT_SYMLINK_NOFOLLOW) == nil
	typ := st.Mode & unix.S_IFMT
	if typ == unix.S_IFDIR {
		s, err := openSame(src, name, unix.O_RDONLY|unix.O_DIRECTORY, &st)
		if err != nil {
			return wrap(err)
		}
		defer unix.Close(s)
		if !exists || dt.Mode&unix.S_IFMT != unix.S_IFDIR || opaque(s) {
			if exists {
				if err := RemoveAt(dst, name); err != nil {
					return wrap(err)
				}
			}
			// Writable by its maker until its own attributes come last.
			if err := unix.Mkdirat(dst, name, 0o700); err != nil {
				return wrap(err)
			}
		}
		d, err := unix.Openat(dst, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return wrap(err)
		}
		defer unix.Close(d)
		if err := a.dir(s, d, at); err != nil {
			return err
		}
		return wrap(setAttrs(s, d, &st))
	}
	if exists {
		if err := RemoveAt(dst, name); err != nil {
			return wrap(err)
		}
	}
	if st.Nlink > 1 {
		key := [2]uint64{st.Dev, st.Ino}
		if first, ok := a.links[key]; ok {
			return wrap(a.link(first, dst, name))
		}
		a.links[key] = at.path()
	}
	switch typ {
	case unix.S_IFREG:
		return wrap(a.copyFile(src, dst, name, &st))
	case unix.S_IFLNK:
		buf := make([]byte, unix.PathMax)
		n, err := unix.Readlinkat(src, name, buf)
		if err != nil {
			return wrap(err)
		}
		if err := unix.Symlinkat(string(buf[:n]), dst, name); err != nil {
			return wrap(err)
		}
	case unix.S_IFCHR, unix.S_IFBLK, unix.S_IFIFO, unix.S_IFSOCK:
		if err := unix.Mknodat(dst, name, st.Mode, int(st.Rdev)); err != nil {
			return wrap(err)
		}
	default:
		return wrap(fmt.Errorf("unknown file type %#o", typ))
	}
	if err := chown(unix.Fchownat(dst, name, int(st.Uid), int(st.Gid), unix.AT_SYMLINK_NOFOLLOW)); err != nil {
		return wrap(err)
	}
	if err := copyXattrsAt(src, dst, name); err != nil {
		return wrap(err)
	}
	if typ != unix.S_IFLNK {
		// chown clears set-id bits; the mode goes back after it.
		if err := unix.Fchmodat(dst, name, st.Mode&0o7777, 0); err != nil {
			return wrap(err)
		}
	}
	return wrap(unix.UtimesNanoAt(dst, name, []unix.Timespec{st.Atim, st.Mtim}, unix.AT_SYMLINK_NOFOLLOW))
}

// link makes name in dst a hard link to first, a path below the
// destination's root resolved without following any symbolic link.
func (a *applier) link(first string, dst int, name string) error {
	dir, base := path.Split(first)
	parent := a.root
	if dir != "" {
		fd, err := unix.Openat2(a.root, dir, &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		})
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		parent = fd
	}
	return unix.Linkat(parent, base, dst, name, 0)
}

// openSame opens name in dir without following a link or blocking (a
// FIFO put in its place), and fails unless it is the file st described:
// same device, inode and type.
func openSame(dir int, name string, flags int, st *unix.Stat_t) (int, error) {
	fd, err := unix.Openat(dir, name, flags|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	var got unix.Stat_t
	if err := unix.Fstat(fd, &got); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if got.Dev != st.Dev || got.Ino != st.Ino || got.Mode&unix.S_IFMT != st.Mode&unix.S_IFMT {
		unix.Close(fd)
		return -1, errors.New("changed while being copied")
	}
	*st = got
	return fd, nil
}

func (a *applier) copyFile(src, dst int, name string, st *unix.Stat_t) error {
	s, err := openSame(src, name, unix.O_RDONLY, st)
	if err != nil {
		return err
	}
	in := os.NewFile(uintptr(s), name)
	defer in.Close()
	d, err := unix.Openat(dst, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	out := os.NewFile(uintptr(d), name)
	if err := a.copyData(in, out, st.Size); err != nil {
		out.Close()
		return err
	}
	if err := setAttrs(s, d, st); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// copyData copies the first size bytes of in to out, leaving holes as
// holes: a sparse file costs its sandbox nothing (truncate -s 1P), and its
// copy must not cost the host a petabyte.
func (a *applier) copyData(in, out *os.File, size int64) error {
	fd := int(in.Fd())
	for off := int64(0); off < size; {
		data, err := unix.Seek(fd, off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break // a hole to the end
		}
		if err != nil {
			return err
		}
		if data >= size {
			break
		}
		hole, err := unix.Seek(fd, data, unix.SEEK_HOLE)
		if err != nil {
			return err
		}
		hole = min(hole, size)
		if a.limited {
			if hole-data > a.left {
				return ErrTooLarge
			}
			a.left -= hole - data
		}
		if _, err := in.Seek(data, io.SeekStart); err != nil {
			return err
		}
		if _, err := out.Seek(data, io.SeekStart); err != nil {
			return err
		}
		if _, err := io.CopyN(out, in, hole-data); err != nil {
			return err
		}
		off = hole
	}
	return out.Truncate(size)
}

// setAttrs gives dst (a regular file or directory) src's owner, xattrs,
// mode and times.
func setAttrs(src, dst int, st *unix.Stat_t) error {
	if err := chown(unix.Fchown(dst, int(st.Uid), int(st.Gid))); err != nil {
		return err
	}
	if err := copyXattrs(src, dst); err != nil {
		return err
	}
	if err := unix.Fchmod(dst, st.Mode&0o7777); err != nil {
		return err
	}
	return futimens(dst, []unix.Timespec{st.Atim, st.Mtim})
}

// chown passes err on, but for EINVAL: an owner the copier's user
// namespace does not map (it shows as the overflow id) cannot be given,
// and the copy keeps the copier's.
func chown(err error) error {
	if errors.Is(err, unix.EINVAL) {
		return nil
	}
	return err
}

// futimens sets the times of the file fd refers to (utimensat with a
// null path, which x/sys/unix does not offer).
func futimens(fd int, ts []unix.Timespec) error {
	_, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(fd), 0, uintptr(unsafe.Pointer(&ts[0])), 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// opaque reports an overlayfs opaque directory, marked by a root mount
// (trusted.) or a user namespace's (user.).
func opaque(fd int) bool {
	for _, name := range []string{"trusted.overlay.opaque", "user.overlay.opaque"} {
		var v [1]byte
		if n, err := unix.Fgetxattr(fd, name, v[:]); err == nil && n == 1 && v[0] == 'y' {
			return true
		}
	}
	return false
}

// copyXattrs copies the xattrs of the open file src to the open file dst.
func copyXattrs(src, dst int) error {
	return copyXattrsWith(
		func(b []byte) (int, error) { return unix.Flistxattr(src, b) },
		func(n string, b []byte) (int, error) { return unix.Fgetxattr(src, n, b) },
		func(n string, v []byte) error { return unix.Fsetxattr(dst, n, v, 0) })
}

// copyXattrsAt copies the xattrs of name in the directory src to name in
// the directory dst, a symbolic link or a device node, which are not to
// be opened: by path through /proc/self/fd/<dir>/<name> with the l-
// calls, which resolve the directory's descriptor and do not follow name.
// Only trusted.* and security.* can be there (the kernel keeps user.* to
// regular files and directories); a name gone meanwhile has none.
func copyXattrsAt(src, dst int, name string) error {
	s := fmt.Sprintf("/proc/self/fd/%d/%s", src, name)
	d := fmt.Sprintf("/proc/self/fd/%d/%s", dst, name)
	err := copyXattrsWith(
		func(b []byte) (int, error) { return unix.Llistxattr(s, b) },
		func(n string, b []byte) (int, error) { return unix.Lgetxattr(s, n, b) },
		func(n string, v []byte) error { return unix.Lsetxattr(d, n, v, 0) })
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	return err
}

// copyXattrsWith copies xattrs through list, get and set, but overlay's
// bookkeeping (all of trusted.overlay.* and user.overlay.* but the opaque
// mark).
func copyXattrsWith(list func([]byte) (int, error), get func(string, []byte) (int, error), set func(string, []byte) error) error {
	sz, err := list(nil)
	if err != nil || sz == 0 {
		if errors.Is(err, unix.ENOTSUP) {
			return nil
		}
		return err
	}
	buf := make([]byte, sz)
	if sz, err = list(buf); err != nil {
		return err
	}
	for _, name := range strings.Split(strings.TrimRight(string(buf[:sz]), "\x00"), "\x00") {
		if name == "" {
			continue
		}
		if (strings.HasPrefix(name, "trusted.overlay.") || strings.HasPrefix(name, "user.overlay.")) && !strings.HasSuffix(name, ".overlay.opaque") {
			continue
		}
		vsz, err := get(name, nil)
		if err != nil {
			continue
		}
		val := make([]byte, vsz)
		if vsz, err = get(name, val); err != nil {
			continue
		}
		if err := set(name, val[:vsz]); err != nil && !errors.Is(err, unix.ENOTSUP) {
			return fmt.Errorf("copy xattr %s: %w", name, err)
		}
	}
	return nil
}

// RemoveAt removes name in the directory dir and everything under it,
// following no symbolic link. A missing name is not an error.
func RemoveAt(dir int, name string) error {
	err := unix.Unlinkat(dir, name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	if !errors.Is(err, unix.EISDIR) {
		return err
	}
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	names, err := readNames(fd)
	for _, n := range names {
		if err == nil {
			err = RemoveAt(fd, n)
		}
	}
	unix.Close(fd)
	if err != nil {
		return err
	}
	return unix.Unlinkat(dir, name, unix.AT_REMOVEDIR)
}

// reopenDir opens the directory fd refers to for reading.
func reopenDir(fd int) (int, error) {
	return unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
}

// readNames lists the directory open for reading at fd, which it leaves
// open (its offset at the end).
func readNames(fd int) ([]string, error) {
	d, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(d), "")
	defer f.Close()
	return f.Readdirnames(-1)
}
