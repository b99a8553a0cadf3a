package local

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

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
