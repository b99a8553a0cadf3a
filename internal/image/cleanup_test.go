package image

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// A failed debootstrap can leave the host's /dev bound inside its target;
// removing the target must not delete through that mount.
func TestRemoveTreeUnmounts(t *testing.T) {
	base := t.TempDir()
	writeFiles(t, base, map[string]string{"host/dev/keep": "host file", "target/dev/": "", "target/file": "x"})
	if err := unix.Mount(filepath.Join(base, "host"), filepath.Join(base, "target/dev"), "", unix.MS_BIND, ""); err != nil {
		t.Skipf("bind mounts need CAP_SYS_ADMIN: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(filepath.Join(base, "target/dev"), unix.MNT_DETACH) })
	// Through a relative path and a symlink, as a caller might name it.
	if err := os.Symlink(base, filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(base)
	removeTree("link/target")
	if _, err := os.Stat(filepath.Join(base, "target")); !os.IsNotExist(err) {
		t.Errorf("target still exists: %v", err)
	}
	if got, err := os.ReadFile(filepath.Join(base, "host/dev/keep")); err != nil || string(got) != "host file" {
		t.Errorf("removing the target deleted through its mount: %q, %v", got, err)
	}
}
