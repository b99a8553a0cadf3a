package image

import (
	"context"
	"errors"
	"fmt"
	"github.com/verisim/verisim/internal/lazyregexp"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// BuildOptions say what Build puts into an image.
type BuildOptions struct {
	// Suite is the Debian release; "" means bookworm.
	Suite string
	// Packages are installed on top of the minimal base.
	Packages []string
	// Log receives debootstrap's output as it runs; nil discards it.
	Log io.Writer
}

var (
	suiteRE   = lazyregexp.New(`^[a-z][a-z0-9.-]*$`)
	packageRE = lazyregexp.New(`^[a-z0-9][a-z0-9+.-]+$`)
)

// Build makes a Debian root filesystem with debootstrap and keeps it under
// name, replacing an image of that name (so do not rebuild an image that
// running sandboxes use). Packages come from the first Debian mirror in the
// machine's apt sources. It needs root and debootstrap, and downloads about
// 200 MB. A failed or cancelled build leaves nothing behind.
func (s *Store) Build(ctx context.Context, name string, opts BuildOptions) (*Image, error) {
	if err := validName(name); err != nil {
		return nil, err
	}
	suite := opts.Suite
	if suite == "" {
		suite = "bookworm"
	}
	if !suiteRE.MatchString(suite) {
		return nil, fmt.Errorf("invalid suite %q", suite)
	}
	for _, p := range opts.Packages {
		if !packageRE.MatchString(p) {
			return nil, fmt.Errorf("invalid package name %q", p)
		}
	}
	debootstrap, err := s.findDebootstrap()
	if err != nil {
		return nil, err
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("building an image with debootstrap needs root")
	}
	mirror, err := debianMirror(s.aptDir)
	if err != nil {
		return nil, fmt.Errorf("find a Debian mirror: %w", err)
	}
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	rootfs, err := s.publish(ctx, publishOptions{
		kind:    KindBuilt,
		id:      name,
		replace: true,
		meta:    meta{Ref: name, Suite: suite, Packages: opts.Packages, Mirror: mirror},
		fill: func(ctx context.Context, rootfs string) error {
			args := []string{"--variant=minbase"}
			if len(opts.Packages) > 0 {
				args = append(args, "--include="+strings.Join(opts.Packages, ","))
			}
			args = append(args, suite, rootfs, mirror)
			fmt.Fprintf(log, "$ %s %s\n", debootstrap, strings.Join(args, " "))
			cmd := exec.CommandContext(ctx, debootstrap, args...)
			tail := &tailBuffer{max: 4096}
			out := io.MultiWriter(log, tail)
			cmd.Stdout, cmd.Stderr = out, out
			setProcessGroup(cmd)
			runErr := cmd.Run()
			// debootstrap mounts /proc and /sys (and in containers binds
			// /dev) into its target; a killed one leaves them there.
			if err := unmountUnder(rootfs); err != nil {
				return fmt.Errorf("after debootstrap: %w", err)
			}
			if runErr != nil {
				if ctx.Err() != nil {
					return context.Cause(ctx)
				}
				return fmt.Errorf("debootstrap %s from %s: %w\n%s", suite, mirror, runErr, tail.String())
			}
			if err := checkRootFS(rootfs); err != nil {
				return err
			}
			if err := tidyDebootstrap(rootfs); err != nil {
				return err
			}
			// A minimal Debian has no compiled locale but C.utf8; a
			// developer's machine has its UTF-8 locale.
			return s.buildLocales(ctx, filepath.Join(rootfs, "usr/lib/locale"))
		},
	})
	if err != nil {
		return nil, fmt.Errorf("build image %s: %w", name, err)
	}
	return &Image{Ref: name, Layers: []string{rootfs}}, nil
}

// findDebootstrap looks in PATH and then the sbin directories, which a
// non-login root shell may not have in PATH.
func (s *Store) findDebootstrap() (string, error) {
	if p, err := exec.LookPath(s.debootstrap); err == nil {
		return p, nil
	}
	if !strings.Contains(s.debootstrap, "/") {
		for _, dir := range []string{"/usr/sbin", "/sbin"} {
			p := dir + "/" + s.debootstrap
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
				return p, nil
			}
		}
	}
	return "", ErrNoDebootstrap
}

// tailBuffer keeps the last max bytes written to it, for error messages.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}

// tidyDebootstrap removes what debootstrap leaves that a machine installed
// the usual way would not have: the downloaded packages, its own log, and
// the build machine's hostname and resolver (the sandbox sets its own).
func tidyDebootstrap(rootfs string) error {
	debs, err := filepath.Glob(filepath.Join(rootfs, "var/cache/apt/archives/*.deb"))
	if err != nil {
		return err
	}
	for _, p := range append(debs, filepath.Join(rootfs, "var/log/bootstrap.log"), filepath.Join(rootfs, "etc/resolv.conf")) {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return os.WriteFile(filepath.Join(rootfs, "etc/hostname"), []byte("localhost\n"), 0o644)
}
