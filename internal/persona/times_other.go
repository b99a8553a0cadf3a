//go:build !unix

package persona

import (
	"os"
	"time"
)

// setTimes sets the times of path; symlinks keep theirs, as this platform
// has no way to change them.
func setTimes(path string, mtime time.Time) error {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		return nil
	}
	return os.Chtimes(path, mtime, mtime)
}
