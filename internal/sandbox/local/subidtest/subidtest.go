// Package subidtest runs commands the way a user without root runs
// verisim: as the user nobody, with subordinate id ranges for it, so that
// tests running as root (as CI does) cover the rootless local backend with
// its full id mapping.
package subidtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Command returns a command that runs args with env as the user nobody,
// for whom ranges are bound over /etc/subuid and /etc/subgid in a mount
// namespace of the command's own (the host's files stay as they are). dir,
// readable by everyone, holds the ranges file. It skips t without root,
// user namespaces or the helpers it needs (newuidmap, newgidmap, unshare,
// setpriv), as Require does.
func Command(t testing.TB, dir string, env []string, args ...string) *exec.Cmd {
	t.Helper()
	Require(t)
	ranges := filepath.Join(dir, "subids")
	if err := os.WriteFile(ranges, []byte("nobody:100000:65536\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"/etc/subuid", "/etc/subgid"} {
		if _, err := os.Stat(f); os.IsNotExist(err) {
			// A mount point for the bind; empty, as the host had none.
			if err := os.WriteFile(f, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Remove(f) })
		}
	}
	script := `mount --bind "$1" /etc/subuid && mount --bind "$1" /etc/subgid && shift && exec setpriv --reuid=65534 --regid=65534 --clear-groups "$@"`
	full := append([]string{"-m", "--propagation", "private", "sh", "-c", script, "sh", ranges, "env"}, env...)
	return exec.Command("unshare", append(full, args...)...)
}

// Require skips t unless Command can run: without root, user namespaces
// or the helpers.
func Require(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("becomes the user nobody, which takes root (CI runs as root)")
	}
	if b, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err != nil || strings.TrimSpace(string(b)) == "0" {
		t.Skip("user namespaces are disabled on this kernel")
	}
	for _, c := range []string{"newuidmap", "newgidmap", "unshare", "setpriv"} {
		if _, err := exec.LookPath(c); err != nil {
			t.Skipf("needs %s (Debian: uidmap, util-linux; scripts/test.sh installs them)", c)
		}
	}
}
