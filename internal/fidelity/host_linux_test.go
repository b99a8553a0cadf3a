package fidelity

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/verisim/verisim/internal/sandbox"
)

// hostSandbox runs commands directly on this machine with os/exec: a test
// double of a sandbox with no isolation at all, so that probes can run on
// the test host. env and dir are the defaults a sandbox's spec would give
// (nil env inherits the test's environment).
type hostSandbox struct {
	env []string
	dir string
}

var _ sandbox.Sandbox = hostSandbox{}

func (hostSandbox) ID() string { return "host" }

func (h hostSandbox) As(*sandbox.User) sandbox.Files { return h }

func (h hostSandbox) Run(ctx context.Context, cmd sandbox.Cmd) (sandbox.ExitStatus, error) {
	if len(cmd.Args) == 0 {
		return sandbox.ExitStatus{}, errors.New("no command")
	}
	bin, err := exec.LookPath(cmd.Args[0])
	if err != nil {
		return sandbox.ExitStatus{}, fmt.Errorf("%s: %w", cmd.Args[0], sandbox.ErrCommandNotFound)
	}
	c := exec.Command(bin, cmd.Args[1:]...)
	c.Args[0] = cmd.Args[0]
	c.Env = cmd.Env
	if c.Env == nil {
		c.Env = h.env
	}
	if c.Env == nil {
		c.Env = os.Environ()
	}
	c.Dir = cmd.Dir
	if c.Dir == "" {
		c.Dir = h.dir
	}
	c.Stdin, c.Stdout, c.Stderr = cmd.Stdin, cmd.Stdout, cmd.Stderr
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		return sandbox.ExitStatus{}, fmt.Errorf("start %s: %w", cmd.Args[0], err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	var timeout <-chan time.Time
	if cmd.Timeout > 0 {
		timer := time.NewTimer(cmd.Timeout)
		defer timer.Stop()
		timeout = timer.C
	}
	timedOut := false
	select {
	case err = <-done:
	case <-timeout:
		timedOut = true
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		err = <-done
	case <-ctx.Done():
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		<-done
		return sandbox.ExitStatus{}, ctx.Err()
	}
	st := sandbox.ExitStatus{TimedOut: timedOut}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		ws := exitErr.Sys().(syscall.WaitStatus)
		st.Code = ws.ExitStatus()
		if ws.Signaled() {
			st.Signal = int(ws.Signal())
			st.Code = 128 + st.Signal
		}
	default:
		return sandbox.ExitStatus{}, err
	}
	return st, nil
}

func (hostSandbox) ReadFile(_ context.Context, path string) ([]byte, error) {
	return os.ReadFile(path)
}

func (hostSandbox) WriteFile(_ context.Context, path string, data []byte, perm fs.FileMode) error {
	return os.WriteFile(path, data, perm)
}

func (hostSandbox) ReadDir(_ context.Context, path string) ([]sandbox.FileInfo, error) {
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	out := make([]sandbox.FileInfo, 0, len(entries))
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			continue
		}
		out = append(out, fileInfo(info))
	}
	return out, nil
}

func (hostSandbox) Stat(_ context.Context, path string) (sandbox.FileInfo, error) {
	info, err := os.Lstat(path)
	if err != nil {
		return sandbox.FileInfo{}, err
	}
	fi := fileInfo(info)
	if info.Mode()&fs.ModeSymlink != 0 {
		fi.Link, _ = os.Readlink(path)
	}
	return fi, nil
}

func fileInfo(info fs.FileInfo) sandbox.FileInfo {
	return sandbox.FileInfo{Name: info.Name(), Size: info.Size(), Mode: info.Mode(), ModTime: info.ModTime()}
}

func (hostSandbox) Snapshot(context.Context) (string, error) { return "", sandbox.ErrUnsupported }

func (hostSandbox) Close(context.Context) error { return nil }
