package local

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/verisim/verisim/internal/sandbox/guest"
)

// InitBinary is the name of the dedicated init binary (cmd/verisim-init)
// New looks for beside the running executable.
const InitBinary = "verisim-init"

// initLink resolves which binary starts as init (see Options.InitPath) and
// returns a link to it called "systemd" in the run directory, and the
// binary. Each target
// gets its own link directory, so runtimes of different builds can share a
// run directory.
func initLink(runDir, initPath string, log *slog.Logger) (link, target string, err error) {
	target = "/proc/self/exe"
	switch {
	case initPath != "":
		abs, err := filepath.Abs(initPath)
		if err != nil {
			return "", "", err
		}
		if err := checkInit(abs); err != nil {
			return "", "", fmt.Errorf("sandbox init %s: %w", initPath, err)
		}
		target = abs
	default:
		exe, err := os.Executable()
		if err != nil {
			break
		}
		if exe, err = filepath.EvalSymlinks(exe); err != nil {
			break
		}
		cand := filepath.Join(filepath.Dir(exe), InitBinary)
		if _, err := os.Stat(cand); err != nil {
			log.Debug("no dedicated sandbox init; sandboxes start this binary as init", "looked_for", cand)
			break
		}
		if err := checkInit(cand); err != nil {
			log.Warn("ignoring the sandbox init beside verisim; sandboxes start this binary as init, about 1.5 ms slower", "init", cand, "err", err)
			break
		}
		target = cand
	}
	h := fnv.New64a()
	h.Write([]byte(target))
	dir := filepath.Join(runDir, "init-"+strconv.FormatUint(h.Sum64(), 16))
	link = filepath.Join(dir, "systemd")
	if l, err := os.Readlink(link); err == nil && l == target {
		return link, target, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	tmp := link + ".tmp" + strconv.Itoa(os.Getpid())
	os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		return "", "", err
	}
	if err := os.Rename(tmp, link); err != nil {
		os.Remove(tmp)
		return "", "", err
	}
	return link, target, nil
}

// checkInit runs path --protocol and compares the answer with this build's
// guest.Protocol.
func checkInit(path string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--protocol").Output()
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
			return err
		}
		return fmt.Errorf("%s --protocol: %w; is it verisim-init?", filepath.Base(path), err)
	}
	v, ok := strings.CutPrefix(strings.TrimSpace(string(out)), "verisim-init protocol ")
	if !ok {
		return fmt.Errorf("%s --protocol printed %.80q; is it verisim-init?", filepath.Base(path), strings.TrimSpace(string(out)))
	}
	if v != strconv.Itoa(guest.Protocol) {
		return fmt.Errorf("it speaks sandbox protocol %s and this verisim %d; build both from the same source (go build -o DIR ./cmd/verisim ./cmd/verisim-init)", v, guest.Protocol)
	}
	return nil
}

// sealedInit is a rootless runtime's init binary: a sealed in-memory copy
// (memfd) of it, started instead of the file. Root inside a sandbox with
// subordinate ids holds every capability of the sandbox's user namespace,
// ptrace over its init included, and through /proc/1/exe could otherwise
// reach the init's file when an id the namespace maps owns it (the
// caller's own verisim): chmod it for every local user to write, or mark
// it set-id, as in runc's CVE-2019-5736. The copy cannot be written; a
// mode or owner changed from inside is noticed before the next start,
// which makes a fresh copy. It costs a copy of the binary per runtime
// (3.6 ms for verisim-init, 20 ms for the whole verisim binary here).
type sealedInit struct {
	mu   sync.Mutex
	src  string
	f    *os.File
	path string
	log  *slog.Logger
}

// sealedFD is the lowest descriptor the copy takes: above the ones a
// child gets (0-2 and the init's ExtraFiles), so that exec of
// /proc/self/fd/<n> in the child still finds it.
const sealedFD = 100

func newSealedInit(src string, log *slog.Logger) (*sealedInit, error) {
	s := &sealedInit{src: src, log: log}
	if err := s.make(); err != nil {
		return nil, fmt.Errorf("copy the sandbox init into memory: %w", err)
	}
	return s, nil
}

func (s *sealedInit) make() error {
	in, err := os.Open(s.src)
	if err != nil {
		return err
	}
	defer in.Close()
	fd, err := unix.MemfdCreate("systemd", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return err
	}
	high, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, sealedFD)
	unix.Close(fd)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(high), "systemd")
	if _, err := io.Copy(f, in); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o500); err != nil {
		f.Close()
		return err
	}
	if _, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, unix.F_SEAL_SEAL|unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE); err != nil {
		f.Close()
		return err
	}
	if s.f != nil {
		s.f.Close()
	}
	s.f, s.path = f, "/proc/self/fd/"+strconv.Itoa(high)
	return nil
}

// exe returns the path to start the init by, making a fresh copy when the
// current one's mode or owner was changed.
func (s *sealedInit) exe() (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fi, err := s.f.Stat()
	if err != nil {
		return "", fmt.Errorf("the sandbox init's in-memory copy: %w", err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) == os.Geteuid() && fi.Mode()&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) == 0o500 {
		return s.path, nil
	}
	s.log.Warn("the sandbox init's in-memory copy was changed, from inside a sandbox; starting the next from a fresh copy", "mode", fi.Mode())
	if err := s.make(); err != nil {
		return "", fmt.Errorf("copy the sandbox init into memory: %w", err)
	}
	return s.path, nil
}

func (s *sealedInit) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.f.Close()
}
