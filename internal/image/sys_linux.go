//go:build linux

package image

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// isWhiteout reports an overlayfs whiteout: a character device 0/0.
func isWhiteout(fi fs.FileInfo) bool {
	if fi.Mode()&fs.ModeCharDevice == 0 {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Rdev == 0
}

// isOpaque reports an overlayfs opaque directory, marked with either the
// privileged or the unprivileged ("userxattr") attribute.
func isOpaque(dir string) bool {
	buf := make([]byte, 8)
	for _, attr := range []string{"trusted.overlay.opaque", "user.overlay.opaque"} {
		n, err := unix.Lgetxattr(dir, attr, buf)
		if err == nil && n == 1 && buf[0] == 'y' {
			return true
		}
	}
	return false
}

// lockPath takes an exclusive flock on path, waiting until it is free or
// ctx is done. The returned func releases it.
func lockPath(ctx context.Context, p string) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	// flock(2) cannot be interrupted by ctx, so poll a non-blocking one.
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", p, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("wait for lock %s: %w", p, context.Cause(ctx))
		case <-tick.C:
		}
	}
}

// lchown sets ownership without following a symlink; only root may.
func lchown(p string, uid, gid int) error {
	if os.Geteuid() != 0 {
		return nil
	}
	return os.Lchown(p, uid, gid)
}

// chmod sets all 12 permission bits (setuid, setgid, sticky included).
func chmod(p string, perm uint32) error {
	return unix.Fchmodat(unix.AT_FDCWD, p, perm&0o7777, 0)
}

// setTimes sets access and modification times without following symlinks.
func setTimes(p string, atime, mtime time.Time) error {
	if mtime.IsZero() {
		return nil
	}
	if atime.IsZero() {
		atime = mtime
	}
	ts := []unix.Timespec{
		{Sec: atime.Unix(), Nsec: int64(atime.Nanosecond())},
		{Sec: mtime.Unix(), Nsec: int64(mtime.Nanosecond())},
	}
	return unix.UtimesNanoAt(unix.AT_FDCWD, p, ts, unix.AT_SYMLINK_NOFOLLOW)
}

// mknod makes a device node or FIFO. Devices need privilege; the error is
// the caller's to judge.
func mknod(p string, mode uint32, major, minor int64) error {
	return unix.Mknod(p, mode, int(unix.Mkdev(uint32(major), uint32(minor))))
}

func lsetxattr(p, name string, value []byte) error {
	return unix.Lsetxattr(p, name, value, 0)
}

// fileOwner returns the owner of fi.
func fileOwner(fi fs.FileInfo) (uid, gid int) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid), int(st.Gid)
	}
	return 0, 0
}

// inode identifies a file to count hard links once.
func inode(fi fs.FileInfo) (dev, ino uint64, nlink uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev), st.Ino, uint64(st.Nlink)
	}
	return 0, 0, 1
}

// unmountUnder detaches every mount at or below dir, deepest first. Tools
// like debootstrap mount /proc, /sys and even bind the host's /dev into
// their target; removing the tree with those mounted would reach the host.
func unmountUnder(dir string) error {
	// The mount table holds absolute paths without symlinks.
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	defer f.Close()
	var mounts []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMountinfo(fields[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			mounts = append(mounts, mp)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	sort.Slice(mounts, func(i, j int) bool { return len(mounts[i]) > len(mounts[j]) })
	for _, mp := range mounts {
		if err := unix.Unmount(mp, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("unmount %s: %w", mp, err)
		}
	}
	return nil
}

// unescapeMountinfo undoes the octal escapes (\040 for space) of mountinfo.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// setProcessGroup makes cmd the leader of a new process group and kills the
// whole group when ctx is cancelled, so no child of it outlives the call.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = 10 * time.Second
}

// exchange atomically swaps the directories a and b.
func exchange(a, b string) error {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOSYS) {
		return err
	}
	// The filesystem cannot swap; fall back to two renames.
	old := b + ".old"
	if err := os.Rename(b, old); err != nil {
		return err
	}
	if err := os.Rename(a, b); err != nil {
		os.Rename(old, b)
		return err
	}
	return os.Rename(old, a)
}

// changeTime is fi's ctime in nanoseconds, which no one can set back.
func changeTime(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ctim.Nano()
	}
	return 0
}

// accessTime is fi's atime.
func accessTime(fi fs.FileInfo) time.Time {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return time.Unix(st.Atim.Unix())
	}
	return fi.ModTime()
}

// oNoFollow makes open fail on a symlink instead of following it.
const oNoFollow = syscall.O_NOFOLLOW
