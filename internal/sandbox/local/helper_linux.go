package local

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/verisim/verisim/internal/sandbox/guest"
)

// runHelper runs the init binary as one of a rootless runtime's helpers
// (guest.MarkerRemove, guest.MarkerCopy) with args, and files at
// descriptors 4, 5, …. The helper gets a user namespace of its own, never
// a sandbox's, so nothing running in a sandbox can reach it or what it
// holds; it maps the ids this runtime's sandboxes map (the caller's as
// root, and the subordinate range when there is one), and ambient
// capabilities let it read, chown and delete their files.
func (r *Runtime) runHelper(ctx context.Context, mode string, args []string, files ...*os.File) error {
	mapsR, mapsW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer mapsW.Close()
	var out bytes.Buffer
	attr := &syscall.SysProcAttr{
		Cloneflags: unix.CLONE_NEWUSER,
		// SETFCAP and FSETID keep file capabilities and set-group-id
		// bits in a copy; all of them reach only the ids mapped.
		AmbientCaps: []uintptr{unix.CAP_DAC_OVERRIDE, unix.CAP_DAC_READ_SEARCH, unix.CAP_FOWNER, unix.CAP_CHOWN, unix.CAP_SETFCAP, unix.CAP_FSETID},
		// It dies with the caller (with the thread that started it, which
		// stays locked until it is waited for).
		Pdeathsig: unix.SIGKILL,
	}
	if r.subids == nil {
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd := exec.CommandContext(ctx, r.initPath, args...)
	cmd.Args[0] = "verisim-" + mode
	cmd.Env = []string{guest.EnvMarker + "=" + mode}
	cmd.ExtraFiles = append([]*os.File{mapsR}, files...)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = attr
	err = cmd.Start()
	mapsR.Close()
	if err != nil {
		return fmt.Errorf("start the %s helper: %w", mode, err)
	}
	if r.subids != nil {
		if err := r.subids.apply(cmd.Process.Pid, 0, 0); err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return err
		}
	}
	mapsW.Close()
	if err := cmd.Wait(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%s helper: %v: %s", mode, err, strings.TrimSpace(out.String()))
	}
	return nil
}
