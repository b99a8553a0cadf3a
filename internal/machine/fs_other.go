//go:build !unix

package machine

import "os"

// lockFile does nothing where there is no flock: the builder is then only
// safe within one process, and sandboxes run on Linux anyway.
func lockFile(string) (func(), error) { return func() {}, nil }

// owner is unknown where files have no unix owner.
func owner(os.FileInfo) (uid, gid int, ok bool) { return 0, 0, false }
