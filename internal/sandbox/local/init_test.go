package local_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/verisim/verisim/internal/sandbox"
	"github.com/verisim/verisim/internal/sandbox/local"
	"github.com/verisim/verisim/internal/sandbox/local/localtest"
	"github.com/verisim/verisim/internal/sandbox/sandboxtest"
)

// TestInitBinary runs the conformance suite with the dedicated init
// (cmd/verisim-init, as installed beside verisim) in place of the test
// binary re-executed, and checks that an init from another build is
// refused.
func TestInitBinary(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the local backend needs root here (CI runs as root)")
	}
	bin := localtest.InitBinary(t)
	newRuntime := func(t *testing.T, initPath string) (*local.Runtime, error) {
		run, err := os.MkdirTemp("/dev/shm", "verisim-test-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(run) })
		rt, err := local.New(local.Options{StateDir: t.TempDir(), RunDir: run, InitPath: initPath})
		if err == nil {
			t.Cleanup(func() { rt.Close(context.Background()) })
		}
		return rt, err
	}
	rt, err := newRuntime(t, bin)
	if err != nil {
		t.Fatal(err)
	}
	sandboxtest.Run(t, sandboxtest.Harness{
		Runtime:  rt,
		Spec:     func(t *testing.T) sandbox.Spec { return local.TestSpec(t) },
		Isolated: true,
	})
	t.Run("comm", func(t *testing.T) {
		sb := sandboxtest.New(t, sandboxtest.Harness{Runtime: rt, Spec: func(t *testing.T) sandbox.Spec { return local.TestSpec(t) }})
		if r := sandboxtest.Sh(t, sb, "cat /proc/1/comm /proc/1/cmdline | tr '\\0' ' '"); r.Stdout != "systemd\n/sbin/init " {
			t.Errorf("PID 1 reads %q, want systemd and /sbin/init", r.Stdout)
		}
	})

	for _, c := range []struct{ name, script, want string }{
		{"other build", "echo 'verisim-init protocol 999'", "speaks sandbox protocol 999"},
		{"not an init", "echo hello", "is it verisim-init?"},
		{"fails", "exit 3", "is it verisim-init?"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fake := filepath.Join(t.TempDir(), local.InitBinary)
			if err := os.WriteFile(fake, []byte("#!/bin/sh\n"+c.script+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			_, err := newRuntime(t, fake)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("New with %s: err = %v, want it to say %q", c.name, err, c.want)
			}
		})
	}
	t.Run("missing", func(t *testing.T) {
		_, err := newRuntime(t, filepath.Join(t.TempDir(), "nope"))
		if err == nil || !strings.Contains(err.Error(), "no such file") {
			t.Fatalf("err = %v", err)
		}
	})
}
