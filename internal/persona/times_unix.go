//go:build unix

package persona

import (
	"time"

	"golang.org/x/sys/unix"
)

// setTimes sets the access and modification times of path itself, not of
// what a symlink points to.
func setTimes(path string, mtime time.Time) error {
	ts := unix.NsecToTimespec(mtime.UnixNano())
	return unix.UtimesNanoAt(unix.AT_FDCWD, path, []unix.Timespec{ts, ts}, unix.AT_SYMLINK_NOFOLLOW)
}
