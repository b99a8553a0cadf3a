package machine

import "golang.org/x/sys/unix"

// markOpaque makes overlayfs hide lower layers' entries under dir.
func markOpaque(dir string) error {
	return unix.Lsetxattr(dir, "trusted.overlay.opaque", []byte("y"), 0)
}
