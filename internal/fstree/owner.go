package fstree

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// Owner gives files of a tree their owners. When the process may not (an
// unprivileged build) it stops trying and leaves the files owned by whoever
// made them: a runtime that maps ids (a rootless sandbox's user namespace
// maps the caller to the sandbox's user) still presents them as the
// intended owner's. The zero Owner is ready to use; it is not safe for
// concurrent use.
type Owner struct{ denied bool }

// Lchown changes the owner of path (not following a final symbolic link),
// or does nothing once the process was found not to be allowed to.
func (o *Owner) Lchown(path string, uid, gid int) error {
	if o.denied {
		return nil
	}
	err := os.Lchown(path, uid, gid)
	if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) {
		o.denied = true
		return nil
	}
	if err != nil {
		return fmt.Errorf("chown %s: %w", path, err)
	}
	return nil
}
