package sandbox

import (
	"io/fs"
	"os"
	"syscall"
)

// maxPseudoRead bounds a read of a file that says it is empty: /proc and
// /sys files have content but no size.
const maxPseudoRead = 64 << 20

// OpenRegular opens path for a ReadFile, the backends' one way to: without
// blocking (a FIFO must not wait for a writer), a regular file only
// (ErrNotRegular; a directory is EISDIR), of at most MaxRead bytes
// (ErrTooLarge). limit is how much to read: what the file held when
// opened, so that one that grows as it is read does not stream without
// end, or maxPseudoRead for one that says it is empty.
func OpenRegular(path string) (f *os.File, limit int64, err error) {
	f, err = os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, 0, err
	}
	fi, err := f.Stat()
	switch {
	case err != nil:
	case fi.IsDir():
		err = &fs.PathError{Op: "read", Path: path, Err: syscall.EISDIR}
	case !fi.Mode().IsRegular():
		err = &fs.PathError{Op: "read", Path: path, Err: ErrNotRegular}
	case fi.Size() > MaxRead:
		err = &fs.PathError{Op: "read", Path: path, Err: ErrTooLarge}
	}
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	if limit = fi.Size(); limit == 0 {
		limit = maxPseudoRead
	}
	return f, limit, nil
}
