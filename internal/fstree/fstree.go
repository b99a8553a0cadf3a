// Package fstree holds small helpers for directory trees: removing trees
// that their own permissions would keep (a Go module cache, for one, makes
// its directories read-only, which stops os.RemoveAll for any user but
// root), and giving built trees their owners where the process may.
package fstree

import (
	"io/fs"
	"os"
	"path/filepath"
)

// RemoveAll removes dir and everything under it, first making every
// directory in it writable and searchable by its owner. Like os.RemoveAll,
// it returns nil when dir does not exist.
func RemoveAll(dir string) error {
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			if info, ierr := d.Info(); ierr == nil && info.Mode().Perm()&0o700 != 0o700 {
				_ = os.Chmod(path, info.Mode().Perm()|0o700)
			}
		}
		return nil
	})
	return os.RemoveAll(dir)
}
