package machine

import (
	"os"

	"golang.org/x/sys/unix"
)

// markOpaque makes overlayfs hide lower layers' entries under dir. Root's
// overlays read trusted.* xattrs; those a user mounts (the local backend
// without root) read user.* ones, the only kind a user may set.
func markOpaque(dir string) error {
	name := "trusted.overlay.opaque"
	if os.Geteuid() != 0 {
		name = "user.overlay.opaque"
	}
	return unix.Lsetxattr(dir, name, []byte("y"), 0)
}
