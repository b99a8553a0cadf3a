// Package localtest gives tests outside the sandbox packages a local
// sandbox runtime. A test binary that uses it must start the in-sandbox
// init when it is re-executed as one:
//
//	func TestMain(m *testing.M) {
//		if guest.IsInit() {
//			guest.Main()
//		}
//		os.Exit(m.Run())
//	}
package localtest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/verisim/verisim/internal/sandbox/local"
)

// Runtime returns a local runtime over fresh state and run directories,
// closed (with every sandbox it made) when the test ends, or skips the test
// when not root: CI runs as root, so there it always runs.
func Runtime(t testing.TB) *local.Runtime {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root for the local sandbox backend (CI runs as root)")
	}
	// The run directory goes on /dev/shm, a tmpfs everywhere, so that the
	// runtime need not mount one in the test's temporary directory.
	run, err := os.MkdirTemp("/dev/shm", "verisim-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(run) })
	rt, err := local.New(local.Options{StateDir: t.TempDir(), RunDir: run})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rt.Close(context.Background()); err != nil {
			t.Errorf("close runtime: %v", err)
		}
	})
	return rt
}

// Caches is a directory for layers that depend only on the toolchain and
// the user (a warm Go build cache takes a minute of CPU to fill), shared by
// every test binary of a run and by later runs: machine.WithCaches(Caches()).
func Caches() string {
	return filepath.Join(os.TempDir(), "verisim-test-caches")
}

// InitBinary builds cmd/verisim-init, the dedicated sandbox init, into a
// temporary directory and returns its path, for local.Options.InitPath. It
// skips the test when the go command is not there to build it.
func InitBinary(t testing.TB) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("needs the go command to build cmd/verisim-init")
	}
	out := filepath.Join(t.TempDir(), local.InitBinary)
	cmd := exec.Command(gobin, "build", "-o", out, "github.com/verisim/verisim/cmd/verisim-init")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build verisim-init: %v\n%s", err, b)
	}
	return out
}
