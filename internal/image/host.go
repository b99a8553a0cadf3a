package image

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/verisim/verisim/internal/sandbox"
)

// hostLayoutVersion changes whenever the generated host layer changes
// shape, so old cache entries are not reused.
const hostLayoutVersion = "host-layer-v2"

// usrDirs are the top-level directories a merged-/usr system makes symlinks
// into /usr; on other systems they are real directories, bound read-only.
var usrDirs = []string{"bin", "sbin", "lib", "lib32", "lib64", "libx32"}

// hostLayout is what the host image takes from the host besides /etc.
type hostLayout struct {
	links    map[string]string // top-level name → symlink target
	bindDirs []string          // top-level directories bound from the host
	dpkg     bool              // the host has /var/lib/dpkg
}

// resolveHost builds (or reuses) the host layer and binds /usr over it.
func (s *Store) resolveHost(ctx context.Context) (*Image, error) {
	key, layout, err := s.hostKey(ctx)
	if err != nil {
		return nil, fmt.Errorf("host image: %w", err)
	}
	rootfs, err := s.publish(ctx, publishOptions{
		kind: KindHost,
		id:   key,
		meta: meta{Ref: "host"},
		fill: func(ctx context.Context, rootfs string) error {
			return s.fillHostLayer(ctx, rootfs, layout)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("host image: %w", err)
	}
	im := &Image{Ref: "host", Layers: []string{rootfs}}
	im.Binds = append(im.Binds, sandbox.Bind{Source: filepath.Join(s.hostRoot, "usr"), Target: "/usr", ReadOnly: true})
	for _, d := range layout.bindDirs {
		im.Binds = append(im.Binds, sandbox.Bind{Source: filepath.Join(s.hostRoot, d), Target: "/" + d, ReadOnly: true})
	}
	if layout.dpkg {
		// dpkg -l and apt list read this; it is package metadata, not data.
		im.Binds = append(im.Binds, sandbox.Bind{Source: filepath.Join(s.hostRoot, "var/lib/dpkg"), Target: "/var/lib/dpkg", ReadOnly: true})
	}
	if loc := filepath.Join(rootfs, "usr/lib/locale"); isDir(loc) {
		// Locales compiled for the layer (a developer's machine has its
		// UTF-8 locale; a host without one would give every persona a
		// "Cannot set LC_CTYPE" warning), over the host's /usr.
		im.Binds = append(im.Binds, sandbox.Bind{Source: loc, Target: "/usr/lib/locale", ReadOnly: true})
	}
	return im, nil
}

// hostLocales are compiled into the host layer when the host has the
// locale sources but not the compiled locales.
var hostLocales = []struct{ name, input, charset string }{
	{"en_US.utf8", "en_US", "UTF-8"},
	{"en_GB.utf8", "en_GB", "UTF-8"},
}

// buildLocales fills dir (a /usr/lib/locale) with the host's compiled
// locales it lacks plus hostLocales, compiled with the host's localedef and
// locale sources. Without those it does nothing.
func (s *Store) buildLocales(ctx context.Context, dir string) error {
	localedef, err := exec.LookPath("localedef")
	if err != nil || !isDir(filepath.Join(s.hostRoot, "usr/share/i18n/locales")) {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	hostLoc := filepath.Join(s.hostRoot, "usr/lib/locale")
	if ents, err := os.ReadDir(hostLoc); err == nil {
		for _, e := range ents {
			if _, err := os.Lstat(filepath.Join(dir, e.Name())); err == nil {
				continue // the image has its own
			}
			if err := copyTree(ctx, filepath.Join(hostLoc, e.Name()), filepath.Join(dir, e.Name())); err != nil {
				return fmt.Errorf("copy locale %s: %w", e.Name(), err)
			}
		}
	}
	for _, l := range hostLocales {
		if _, err := os.Stat(filepath.Join(dir, l.name)); err == nil {
			continue
		}
		cmd := exec.CommandContext(ctx, localedef, "-i", l.input, "-f", l.charset, filepath.Join(dir, l.name))
		cmd.Env = []string{"PATH=/usr/bin:/bin", "I18NPATH=" + filepath.Join(s.hostRoot, "usr/share/i18n")}
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("compile locale %s: %v: %s", l.name, err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

// hostKey hashes everything the host layer is made from: /etc's file list
// with modes, sizes, times and link targets, and the top-level layout.
func (s *Store) hostKey(ctx context.Context) (string, hostLayout, error) {
	layout := hostLayout{links: map[string]string{}}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00", hostLayoutVersion, s.hostRoot)
	if fi, err := os.Stat(filepath.Join(s.hostRoot, "usr")); err != nil || !fi.IsDir() {
		return "", layout, fmt.Errorf("%s has no /usr directory", s.hostRoot)
	}
	for _, d := range usrDirs {
		p := filepath.Join(s.hostRoot, d)
		fi, err := os.Lstat(p)
		switch {
		case err != nil:
			continue
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return "", layout, err
			}
			layout.links[d] = target
			fmt.Fprintf(h, "link %s %s\x00", d, target)
		case fi.IsDir():
			layout.bindDirs = append(layout.bindDirs, d)
			fmt.Fprintf(h, "dir %s\x00", d)
		}
	}
	if fi, err := os.Stat(filepath.Join(s.hostRoot, "var/lib/dpkg")); err == nil && fi.IsDir() {
		layout.dpkg = true
		fmt.Fprintf(h, "dpkg\x00")
	}
	etc := filepath.Join(s.hostRoot, "etc")
	err := filepath.WalkDir(etc, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == etc {
				return err
			}
			fmt.Fprintf(h, "error %s\x00", p)
			return nil // an unreadable corner is skipped, here and in the copy
		}
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		fmt.Fprintf(h, "%s\x00%o\x00%d\x00%d\x00", p, fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		if fi.Mode()&fs.ModeSymlink != 0 {
			target, _ := os.Readlink(p)
			fmt.Fprintf(h, "%s\x00", target)
		}
		return nil
	})
	if err != nil {
		return "", layout, fmt.Errorf("scan %s: %w", etc, err)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], layout, nil
}

// skeleton is the top level of a Debian-like system, minus /usr's
// contents. Modes are st_mode permission bits (sticky and setgid
// included); group names resolve through the copied /etc/group.
var skeleton = []struct {
	path  string
	mode  uint32
	group string
	link  string // a symlink instead of a directory
	file  bool   // an empty file instead of a directory
}{
	{path: "boot", mode: 0o755},
	{path: "dev", mode: 0o755},
	{path: "home", mode: 0o755},
	{path: "media", mode: 0o755},
	{path: "mnt", mode: 0o755},
	{path: "opt", mode: 0o755},
	{path: "proc", mode: 0o555},
	{path: "root", mode: 0o700},
	{path: "run", mode: 0o755},
	{path: "run/lock", mode: 0o1777},
	{path: "srv", mode: 0o755},
	{path: "sys", mode: 0o555},
	{path: "tmp", mode: 0o1777},
	{path: "usr", mode: 0o755},
	{path: "var", mode: 0o755},
	{path: "var/backups", mode: 0o755},
	{path: "var/cache", mode: 0o755},
	{path: "var/cache/apt", mode: 0o755},
	{path: "var/cache/apt/archives", mode: 0o755},
	{path: "var/cache/debconf", mode: 0o755},
	{path: "var/lib", mode: 0o755},
	{path: "var/lib/apt", mode: 0o755},
	{path: "var/lib/apt/lists", mode: 0o755},
	{path: "var/lib/misc", mode: 0o755},
	{path: "var/local", mode: 0o2775, group: "staff"},
	{path: "var/lock", link: "/run/lock"},
	{path: "var/log", mode: 0o755},
	{path: "var/log/apt", mode: 0o755},
	{path: "var/log/btmp", mode: 0o660, group: "utmp", file: true},
	{path: "var/log/lastlog", mode: 0o664, group: "utmp", file: true},
	{path: "var/log/wtmp", mode: 0o664, group: "utmp", file: true},
	{path: "var/mail", mode: 0o2775, group: "mail"},
	{path: "var/opt", mode: 0o755},
	{path: "var/run", link: "/run"},
	{path: "var/spool", mode: 0o755},
	{path: "var/spool/mail", link: "../mail"},
	{path: "var/tmp", mode: 0o1777},
}

// fillHostLayer writes the host layer: a copy of /etc, the merged-/usr
// symlinks or mount points, and an empty but lived-in looking skeleton.
func (s *Store) fillHostLayer(ctx context.Context, rootfs string, layout hostLayout) error {
	if err := copyTree(ctx, filepath.Join(s.hostRoot, "etc"), filepath.Join(rootfs, "etc")); err != nil {
		return fmt.Errorf("copy /etc: %w", err)
	}
	groups := readGroups(filepath.Join(rootfs, "etc/group"))
	fallback := time.Now()
	if fi, err := os.Stat(filepath.Join(s.hostRoot, "etc")); err == nil {
		fallback = fi.ModTime()
	}
	// Times follow the host's own directories where it has them, so the
	// tree is not conspicuously new; times are set last, deepest first.
	type stamp struct {
		path string
		t    time.Time
	}
	var stamps []stamp
	for _, e := range skeleton {
		p := filepath.Join(rootfs, e.path)
		switch {
		case e.link != "":
			if err := os.Symlink(e.link, p); err != nil {
				return err
			}
		case e.file:
			if err := os.WriteFile(p, nil, 0o600); err != nil {
				return err
			}
		default:
			if err := os.Mkdir(p, 0o700); err != nil {
				return err
			}
		}
		if e.link == "" {
			if err := lchown(p, 0, groups[e.group]); err != nil {
				return err
			}
			if err := chmod(p, e.mode); err != nil {
				return err
			}
		}
		t := fallback
		if fi, err := os.Lstat(filepath.Join(s.hostRoot, e.path)); err == nil && !e.file {
			t = fi.ModTime()
		}
		stamps = append(stamps, stamp{p, t})
	}
	var mounts []string
	for d, target := range layout.links {
		if err := os.Symlink(target, filepath.Join(rootfs, d)); err != nil {
			return err
		}
		mounts = append(mounts, d)
	}
	for _, d := range layout.bindDirs {
		if err := os.Mkdir(filepath.Join(rootfs, d), 0o755); err != nil {
			return err
		}
		mounts = append(mounts, d)
	}
	if layout.dpkg {
		if err := os.Mkdir(filepath.Join(rootfs, "var/lib/dpkg"), 0o755); err != nil {
			return err
		}
		mounts = append(mounts, "var/lib/dpkg")
	}
	if isDir(filepath.Join(rootfs, "usr")) {
		if err := s.buildLocales(ctx, filepath.Join(rootfs, "usr/lib/locale")); err != nil {
			return err
		}
	}
	for _, d := range mounts {
		if fi, err := os.Lstat(filepath.Join(s.hostRoot, d)); err == nil {
			stamps = append(stamps, stamp{filepath.Join(rootfs, d), fi.ModTime()})
		}
	}
	for i := len(stamps) - 1; i >= 0; i-- {
		_ = setTimes(stamps[i].path, stamps[i].t, stamps[i].t)
	}
	_ = setTimes(rootfs, fallback, fallback)
	return nil
}

// unixMode converts fs.FileMode permission and special bits to st_mode bits.
func unixMode(m fs.FileMode) uint32 {
	mode := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		mode |= syscall.S_ISUID
	}
	if m&fs.ModeSetgid != 0 {
		mode |= syscall.S_ISGID
	}
	if m&fs.ModeSticky != 0 {
		mode |= syscall.S_ISVTX
	}
	return mode
}

// readGroups maps group names to ids from an /etc/group file.
func readGroups(file string) map[string]int {
	groups := map[string]int{}
	f, err := os.Open(file)
	if err != nil {
		return groups
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ":")
		if len(fields) < 3 {
			continue
		}
		if gid, err := strconv.Atoi(fields[2]); err == nil {
			groups[fields[0]] = gid
		}
	}
	return groups
}

// copyTree copies directories, regular files and symlinks from src to dst
// with their modes, owners and times. Sockets, FIFOs and devices are
// skipped, and so is anything this process may not read.
func copyTree(ctx context.Context, src, dst string) error {
	type stamp struct {
		path         string
		atime, mtime time.Time
	}
	var dirs []stamp
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == src {
				return err
			}
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		out := filepath.Join(dst, rel)
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		switch {
		case fi.IsDir():
			if err := os.Mkdir(out, 0o700); err != nil {
				return err
			}
			dirs = append(dirs, stamp{out, accessTime(fi), fi.ModTime()})
		case fi.Mode().IsRegular():
			if err := copyFile(p, out); err != nil {
				if errors.Is(err, fs.ErrPermission) {
					return nil
				}
				return err
			}
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if err := os.Symlink(target, out); err != nil {
				return err
			}
		default:
			return nil
		}
		uid, gid := fileOwner(fi)
		if err := lchown(out, uid, gid); err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			if err := chmod(out, unixMode(fi.Mode())); err != nil {
				return err
			}
		}
		if !fi.IsDir() {
			_ = setTimes(out, accessTime(fi), fi.ModTime())
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		_ = setTimes(dirs[i].path, dirs[i].atime, dirs[i].mtime)
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}
