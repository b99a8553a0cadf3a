package layer

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// tree lists every entry under dir as "path kind detail", sorted.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			out = append(out, rel+" dir "+fi.Mode().Perm().String())
		case unix.S_IFREG:
			b, _ := os.ReadFile(p)
			out = append(out, rel+" file "+strings.TrimSpace(string(b))+" "+fi.Mode().Perm().String())
		case unix.S_IFLNK:
			l, _ := os.Readlink(p)
			out = append(out, rel+" link "+l)
		case unix.S_IFCHR:
			out = append(out, rel+" chr "+strings.Repeat("0", int(st.Rdev)+1))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

func openDir(t *testing.T, dir string) int {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

func write(t *testing.T, p, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content+"\n"), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

// TestApply applies an upper layer onto a tree as overlayfs would read it:
// replacing, merging, deleting through whiteouts, replacing whole
// directories marked opaque, keeping hard links, modes and times, and
// copying symbolic links as links (never what they point at).
func TestApply(t *testing.T) {
	base := t.TempDir()
	src, dst := filepath.Join(base, "upper"), filepath.Join(base, "dst")
	secret := filepath.Join(base, "secret")
	write(t, secret, "do not copy", 0o600)

	// What the lower layers left.
	write(t, filepath.Join(dst, "keep", "old"), "old", 0o644)
	write(t, filepath.Join(dst, "keep", "changed"), "v1", 0o644)
	write(t, filepath.Join(dst, "gone"), "gone", 0o644)
	write(t, filepath.Join(dst, "opaque", "hidden"), "hidden", 0o644)
	write(t, filepath.Join(dst, "was-dir", "f"), "f", 0o644)
	write(t, filepath.Join(dst, "was-file"), "file", 0o644)

	// The upper layer.
	write(t, filepath.Join(src, "keep", "changed"), "v2", 0o600)
	write(t, filepath.Join(src, "keep", "new"), "new", 0o755)
	if err := unix.Mknod(filepath.Join(src, "gone"), unix.S_IFCHR, 0); err != nil {
		t.Skipf("cannot make a whiteout here: %v", err)
	}
	write(t, filepath.Join(src, "opaque", "visible"), "visible", 0o644)
	if err := unix.Setxattr(filepath.Join(src, "opaque"), "user.overlay.opaque", []byte("y"), 0); err != nil {
		t.Skipf("no user xattrs here: %v", err)
	}
	if err := unix.Setxattr(filepath.Join(src, "keep"), "user.overlay.origin", []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(src, "was-dir"), "now a file", 0o644)
	write(t, filepath.Join(src, "was-file", "g"), "now a dir", 0o644)
	write(t, filepath.Join(src, "links", "a"), "linked", 0o644)
	if err := os.Link(filepath.Join(src, "links", "a"), filepath.Join(src, "links", "b")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(src, "links", "secret")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(src, "ro"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(src, "ro", "f"), "in a read-only dir", 0o444)
	if err := os.Chmod(filepath.Join(src, "ro"), 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// For the temporary directory's removal, when not root.
		os.Chmod(filepath.Join(src, "ro"), 0o755)
		os.Chmod(filepath.Join(dst, "ro"), 0o755)
	})
	old := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	if err := os.Chtimes(filepath.Join(src, "keep", "new"), old, old); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(src, 0o751); err != nil {
		t.Fatal(err)
	}

	if err := Apply(context.Background(), openDir(t, src), openDir(t, dst)); err != nil {
		t.Fatal(err)
	}
	want := []string{
		". dir -rwxr-x--x",
		"gone chr 0",
		"keep dir -rwxr-xr-x",
		"keep/changed file v2 -rw-------",
		"keep/new file new -rwxr-xr-x",
		"keep/old file old -rw-r--r--",
		"links dir -rwxr-xr-x",
		"links/a file linked -rw-r--r--",
		"links/b file linked -rw-r--r--",
		"links/secret link " + secret,
		"opaque dir -rwxr-xr-x",
		"opaque/visible file visible -rw-r--r--",
		"ro dir -r-xr-xr-x",
		"ro/f file in a read-only dir -r--r--r--",
		"was-dir file now a file -rw-r--r--",
		"was-file dir -rwxr-xr-x",
		"was-file/g file now a dir -rw-r--r--",
	}
	if got := tree(t, dst); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("applied tree:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var a, b unix.Stat_t
	unix.Stat(filepath.Join(dst, "links", "a"), &a)
	unix.Stat(filepath.Join(dst, "links", "b"), &b)
	if a.Ino != b.Ino {
		t.Error("hard links were copied apart")
	}
	if fi, err := os.Stat(filepath.Join(dst, "keep", "new")); err != nil || !fi.ModTime().Equal(old) {
		t.Errorf("mtime of keep/new: %v %v, want %v", fi.ModTime(), err, old)
	}
	var v [1]byte
	if n, err := unix.Lgetxattr(filepath.Join(dst, "opaque"), "user.overlay.opaque", v[:]); err != nil || n != 1 || v[0] != 'y' {
		t.Errorf("opaque mark: %d %v", n, err)
	}
	if _, err := unix.Lgetxattr(filepath.Join(dst, "keep"), "user.overlay.origin", nil); err == nil {
		t.Error("overlay's bookkeeping xattr was copied")
	}
	if os.Geteuid() == 0 {
		// Owners: only root can give files away.
		if err := os.Lchown(filepath.Join(src, "keep", "changed"), 33, 44); err != nil {
			t.Fatal(err)
		}
		if err := Apply(context.Background(), openDir(t, src), openDir(t, dst)); err != nil {
			t.Fatal(err)
		}
		var st unix.Stat_t
		if err := unix.Stat(filepath.Join(dst, "keep", "changed"), &st); err != nil || st.Uid != 33 || st.Gid != 44 {
			t.Errorf("owner of keep/changed: %d:%d %v, want 33:44", st.Uid, st.Gid, err)
		}
	}
}

// TestApplyCancelled stops at the first entry once ctx is done.
func TestApplyCancelled(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	write(t, filepath.Join(src, "f"), "f", 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Apply(ctx, openDir(t, src), openDir(t, dst)); err != context.Canceled {
		t.Errorf("cancelled apply: %v", err)
	}
}

// TestRemoveAt removes a tree holding a symbolic link to a directory
// outside it, which must survive (and, as root, a read-only directory).
func TestRemoveAt(t *testing.T) {
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	write(t, filepath.Join(outside, "keep"), "keep", 0o644)
	write(t, filepath.Join(base, "tree", "ro", "f"), "f", 0o444)
	if err := os.Symlink(outside, filepath.Join(base, "tree", "link")); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		os.Chmod(filepath.Join(base, "tree", "ro"), 0o555)
	}
	if err := RemoveAt(openDir(t, base), "tree"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(base, "tree")); !os.IsNotExist(err) {
		t.Errorf("tree still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "keep")); err != nil {
		t.Errorf("removal followed the link: %v", err)
	}
	if err := RemoveAt(openDir(t, base), "tree"); err != nil {
		t.Errorf("removing a missing tree: %v", err)
	}
}

// TestApplySquash applies two layers in turn, as a squash does: the upper
// one's whiteout deletes the lower one's file, its opaque directory
// replaces the lower one's, and hard links across directories stay links.
func TestApplySquash(t *testing.T) {
	base := t.TempDir()
	lower, upper, dst := filepath.Join(base, "lower"), filepath.Join(base, "upper"), filepath.Join(base, "dst")
	write(t, filepath.Join(lower, "a", "gone"), "gone", 0o644)
	write(t, filepath.Join(lower, "a", "kept"), "kept", 0o644)
	write(t, filepath.Join(lower, "b", "old"), "old", 0o644)
	write(t, filepath.Join(upper, "b", "new"), "new", 0o644)
	if err := unix.Setxattr(filepath.Join(upper, "b"), "user.overlay.opaque", []byte("y"), 0); err != nil {
		t.Skipf("no user xattrs here: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(upper, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mknod(filepath.Join(upper, "a", "gone"), unix.S_IFCHR, 0); err != nil {
		t.Skipf("cannot make a whiteout here: %v", err)
	}
	write(t, filepath.Join(upper, "x", "one"), "linked", 0o644)
	if err := os.MkdirAll(filepath.Join(upper, "y"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(upper, "x", "one"), filepath.Join(upper, "y", "two")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	d := openDir(t, dst)
	for _, l := range []string{lower, upper} {
		if err := Apply(context.Background(), openDir(t, l), d); err != nil {
			t.Fatal(err)
		}
	}
	got := strings.Join(tree(t, dst), "\n")
	for _, want := range []string{"a/gone chr 0", "a/kept file kept", "b/new file new", "x/one file linked", "y/two file linked"} {
		if !strings.Contains(got, want) {
			t.Errorf("squashed tree lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "b/old") {
		t.Errorf("the opaque directory kept the lower layer's file:\n%s", got)
	}
	var one, two unix.Stat_t
	unix.Stat(filepath.Join(dst, "x", "one"), &one)
	unix.Stat(filepath.Join(dst, "y", "two"), &two)
	if one.Ino != two.Ino {
		t.Error("a hard link across directories was copied apart")
	}
}

// TestCopySwapped: a file swapped for a FIFO between being listed and
// being opened fails the copy at once (opening a FIFO to read would wait
// for a writer forever), and so does a directory swapped for another.
func TestCopySwapped(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	write(t, filepath.Join(src, "f"), "f", 0o644)
	s, d := openDir(t, src), openDir(t, dst)
	var st unix.Stat_t
	if err := unix.Fstatat(s, "f", &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(src, "f"))
	if err := unix.Mkfifo(filepath.Join(src, "f"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- (&applier{}).copyFile(s, d, "f", &st) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "changed while being copied") {
			t.Errorf("copy of a file swapped for a FIFO: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the copy of a file swapped for a FIFO hangs")
	}
	if err := os.Mkdir(filepath.Join(src, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fstatat(s, "dir", &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		t.Fatal(err)
	}
	os.Rename(filepath.Join(src, "dir"), filepath.Join(src, "moved"))
	os.Mkdir(filepath.Join(src, "dir"), 0o755)
	if fd, err := openSame(s, "dir", unix.O_RDONLY|unix.O_DIRECTORY, &st); err == nil {
		unix.Close(fd)
		t.Error("a directory swapped for another was opened as the one listed")
	}
}

// TestApplySparse: a sparse file is copied as one, its size kept and its
// data where it was; a terabyte of hole costs the copy nothing.
func TestApplySparse(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	f, err := os.Create(filepath.Join(src, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	const size = 1 << 40
	if _, err := f.WriteAt([]byte("middle"), 1<<30); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Skipf("no sparse files this large here: %v", err)
	}
	f.Close()
	if err := Apply(context.Background(), openDir(t, src), openDir(t, dst)); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(filepath.Join(dst, "sparse"), &st); err != nil {
		t.Fatal(err)
	}
	if st.Size != size || st.Blocks*512 > 1<<20 {
		t.Errorf("copy: size %d, %d bytes allocated; want %d bytes in at most 1 MiB", st.Size, st.Blocks*512, int64(size))
	}
	g, _ := os.Open(filepath.Join(dst, "sparse"))
	defer g.Close()
	b := make([]byte, 6)
	if _, err := g.ReadAt(b, 1<<30); err != nil || string(b) != "middle" {
		t.Errorf("data at 1 GiB: %q %v", b, err)
	}
}

// TestApplyTooDeep refuses a tree deeper than maxTreeDepth (each level
// holds descriptors while it is copied) instead of exhausting them.
func TestApplyTooDeep(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	fd, err := unix.Open(src, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	for range maxTreeDepth + 2 {
		if err := unix.Mkdirat(fd, "d", 0o755); err != nil {
			t.Fatal(err)
		}
		next, err := unix.Openat(fd, "d", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		fd = next
	}
	unix.Close(fd)
	err = Apply(context.Background(), openDir(t, src), openDir(t, dst))
	if err == nil || !strings.Contains(err.Error(), "directories deep") {
		t.Errorf("copy of a %d-deep tree: %v", maxTreeDepth+2, err)
	}
}

// TestApplyWithin fails once a layer gives more file data than its budget
// (holes not counted) and copies one within it.
func TestApplyWithin(t *testing.T) {
	src := t.TempDir()
	write(t, filepath.Join(src, "a"), strings.Repeat("x", 3000), 0o644)
	write(t, filepath.Join(src, "b"), strings.Repeat("y", 3000), 0o644)
	f, err := os.Create(filepath.Join(src, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(1 << 30)
	f.Close()
	within, over := t.TempDir(), t.TempDir()
	if err := ApplyWithin(context.Background(), openDir(t, src), openDir(t, within), 6002); err != nil {
		t.Errorf("within the budget: %v", err)
	}
	if err := ApplyWithin(context.Background(), openDir(t, src), openDir(t, over), 5000); !errors.Is(err, ErrTooLarge) {
		t.Errorf("over the budget: %v, want ErrTooLarge", err)
	}
}

// TestApplyLinkXattrs: the xattrs of a symbolic link (here trusted.*, which
// takes root; security.* labels are the other kind a link can carry) are
// copied onto the link, not onto what it points to, and overlay's
// bookkeeping on it is dropped.
func TestApplyLinkXattrs(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	write(t, filepath.Join(src, "f"), "f", 0o644)
	if err := os.Symlink("f", filepath.Join(src, "l")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Lsetxattr(filepath.Join(src, "l"), "trusted.verisim-test", []byte("v"), 0); err != nil {
		t.Skipf("cannot set trusted xattrs on a link here (takes root): %v", err)
	}
	if err := unix.Lsetxattr(filepath.Join(src, "l"), "trusted.overlay.origin", []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	if err := Apply(t.Context(), openDir(t, src), openDir(t, dst)); err != nil {
		t.Fatal(err)
	}
	v := make([]byte, 8)
	if n, err := unix.Lgetxattr(filepath.Join(dst, "l"), "trusted.verisim-test", v); err != nil || string(v[:n]) != "v" {
		t.Errorf("the link's xattr: %q, %v", v[:max(n, 0)], err)
	}
	if _, err := unix.Lgetxattr(filepath.Join(dst, "l"), "trusted.overlay.origin", nil); err == nil {
		t.Error("overlay's bookkeeping xattr on the link was copied")
	}
	if _, err := unix.Lgetxattr(filepath.Join(dst, "f"), "trusted.verisim-test", nil); err == nil {
		t.Error("the link's xattr landed on the file it points to")
	}
}
