// Package atomicfile writes files whole or not at all: the data goes to a
// temporary file in the same directory, which is renamed over the target
// only once it is completely written and closed.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write replaces path with data, with permissions perm.
func Write(path string, data []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(perm)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}
