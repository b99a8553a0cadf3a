package fstree

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestRemoveAllReadOnly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tree")
	deep := filepath.Join(dir, "pkg", "mod", "example.com@v1")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(deep, "go.mod"), []byte("module example.com\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	// Read-only from the bottom up, as the go command leaves its module
	// cache; and one directory its owner cannot even list.
	for _, d := range []string{deep, filepath.Dir(deep), filepath.Join(dir, "pkg")} {
		if err := os.Chmod(d, 0o555); err != nil {
			t.Fatal(err)
		}
	}
	locked := filepath.Join(dir, "locked")
	if err := os.MkdirAll(filepath.Join(locked, "inner"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(locked, 0o000); err != nil {
		t.Fatal(err)
	}
	if err := RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Fatalf("tree still there: %v", err)
	}
	if err := RemoveAll(dir); err != nil {
		t.Errorf("removing a missing tree: %v", err)
	}
}

// TestRemoveAllAsUser runs TestRemoveAllReadOnly as an ordinary user when
// the tests run as root, which no directory mode would stop.
func TestRemoveAllAsUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("TestRemoveAllReadOnly already runs as an ordinary user")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("needs setpriv (Debian: util-linux)")
	}
	// Not t.TempDir: its parent is root's alone.
	tmp, err := os.MkdirTemp("", "fstree-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o777); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", os.Args[0], "-test.run", "^TestRemoveAllReadOnly$", "-test.count=1")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
}
