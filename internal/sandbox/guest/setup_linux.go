package guest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The init builds the sandbox in two steps. prepare does what no config is
// needed for, as soon as the init starts (for a pooled init, long before
// anyone asks for a sandbox); finish does the rest once the config arrives.
// Both run in fresh mount, PID, UTS, IPC and network namespaces, working in
// the host-side run directory that holds the layer links and the empty
// directories "rw", "root", and "proc", "dev", "sys" and "run" where the
// system mounts are staged before they are moved into the new root.

// stagedMounts are the system mounts prepare makes and finish moves into
// place.
var stagedMounts = []string{"proc", "dev", "sys", "run"}

// prepare makes mounts private, mounts the writable layer's tmpfs, stages
// /proc, /dev, /sys and /run, and brings up lo.
func prepare() error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	if err := unix.Mount("tmpfs", "rw", "tmpfs", unix.MS_NODEV, "mode=0755"); err != nil {
		return fmt.Errorf("mount writable layer: %w", err)
	}
	for _, d := range []string{"rw/u", "rw/w"} {
		if err := unix.Mkdir(d, 0o755); err != nil {
			return fmt.Errorf("mkdir %s: %w", d, err)
		}
	}
	if err := mountSystem(); err != nil {
		return err
	}
	if err := loopbackUp(); err != nil {
		return fmt.Errorf("bring up loopback: %w", err)
	}
	return nil
}

// finish builds the root filesystem from cfg, moves the staged mounts into
// it (once staged returns: other threads may still be adding to them),
// pivots into it and sets the machine's identity. It returns the
// descriptor of the writable layer's upper directory.
func finish(cfg *Config, staged func() error) (upperFD int, err error) {
	if cfg.DiskBytes > 0 {
		if err := unix.Mount("", "rw", "", unix.MS_REMOUNT|unix.MS_NODEV, fmt.Sprintf("mode=0755,size=%d", cfg.DiskBytes)); err != nil {
			return -1, fmt.Errorf("size writable layer: %w", err)
		}
	}
	if len(cfg.Layers) == 0 {
		return -1, fmt.Errorf("no image layers")
	}
	// The root directory's attributes come from the writable layer; give
	// it the image's times rather than this moment's.
	var st unix.Stat_t
	if err := unix.Stat(cfg.Layers[len(cfg.Layers)-1], &st); err == nil {
		_ = unix.UtimesNano("rw/u", []unix.Timespec{st.Atim, st.Mtim})
	}
	// The source name shows up as the device of "/" in mountinfo.
	opts := "lowerdir=" + strings.Join(cfg.Layers, ":") + ",upperdir=rw/u,workdir=rw/w"
	if cfg.Rootless {
		opts += ",userxattr"
	}
	if err := unix.Mount("overlay", "root", "overlay", 0, opts); err != nil {
		return -1, fmt.Errorf("mount overlay root: %w", err)
	}
	fd, err := unix.Open("rw/u", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open writable layer: %w", err)
	}
	// At FDUpper, which the host can name before the init reports it.
	upperFD, err = unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, FDUpper)
	unix.Close(fd)
	if err != nil {
		return -1, fmt.Errorf("open writable layer: %w", err)
	}
	for i, v := range cfg.Views {
		if err := mountView(i, v, cfg.Rootless); err != nil {
			return -1, err
		}
	}
	for _, b := range cfg.Binds {
		if err := bind(b); err != nil {
			return -1, err
		}
	}
	if err := populateSession("run", cfg.Session); err != nil {
		return -1, err
	}
	if cfg.LastPID > 0 {
		if err := os.WriteFile("proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(cfg.LastPID)), 0); err != nil {
			return -1, fmt.Errorf("set the PID counter: %w", err)
		}
	}
	if err := staged(); err != nil {
		return -1, err
	}
	for _, d := range stagedMounts {
		target := filepath.Join("root", d)
		if err := os.MkdirAll(target, 0o755); err != nil {
			return -1, err
		}
		if err := unix.Mount(d, target, "", unix.MS_MOVE, ""); err != nil {
			return -1, fmt.Errorf("move /%s into place: %w", d, err)
		}
	}
	if err := unix.Chdir("root"); err != nil {
		return -1, err
	}
	// pivot_root(".", ".") stacks the old root under the new one; detaching
	// it leaves no directory or mount behind that would need a name.
	if err := unix.PivotRoot(".", "."); err != nil {
		return -1, fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return -1, fmt.Errorf("detach old root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return -1, err
	}
	if cfg.Hostname != "" {
		if err := unix.Sethostname([]byte(cfg.Hostname)); err != nil {
			return -1, fmt.Errorf("set hostname: %w", err)
		}
	}
	return upperFD, nil
}

// mountView mounts an overlay at the view's target whose only lower layer
// is the host directory; its upper directory takes the source's owner,
// mode and times, which the mount's root shows.
func mountView(i int, v View, rootless bool) error {
	up := fmt.Sprintf("rw/v%d", i)
	for _, d := range []string{up, up + "/u", up + "/w"} {
		if err := unix.Mkdir(d, 0o755); err != nil {
			return fmt.Errorf("view %s: mkdir %s: %w", v.Target, d, err)
		}
	}
	var st unix.Stat_t
	if err := unix.Stat(v.Source, &st); err != nil {
		return fmt.Errorf("view %s: %w", v.Target, err)
	}
	if err := unix.Chown(up+"/u", int(st.Uid), int(st.Gid)); err != nil && !rootless {
		return fmt.Errorf("view %s: %w", v.Target, err)
	}
	_ = unix.Chmod(up+"/u", st.Mode&0o7777)
	_ = unix.UtimesNano(up+"/u", []unix.Timespec{st.Atim, st.Mtim})
	target := filepath.Join("root", v.Target)
	if err := os.MkdirAll(target, 0o755); err != nil {
		return fmt.Errorf("view %s: %w", v.Target, err)
	}
	opts := "lowerdir=" + v.Source + ",upperdir=" + up + "/u,workdir=" + up + "/w"
	if rootless {
		opts += ",userxattr"
	}
	if err := unix.Mount("overlay", target, "overlay", 0, opts); err != nil {
		return fmt.Errorf("mount view at %s: %w", v.Target, err)
	}
	return nil
}

func bind(b Bind) error {
	target := filepath.Join("root", b.Target)
	if err := os.MkdirAll(target, 0o755); err != nil {
		return fmt.Errorf("bind %s: %w", b.Target, err)
	}
	if err := unix.Mount(b.Source, target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s at %s: %w", b.Source, b.Target, err)
	}
	if b.ReadOnly {
		// Keep the flags the source mount already has; adding them is
		// required on a locked mount and harmless elsewhere.
		var st unix.Statfs_t
		flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_RDONLY)
		if err := unix.Statfs(target, &st); err == nil {
			flags |= uintptr(st.Flags) & (unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC | unix.MS_NOATIME | unix.MS_RELATIME | unix.MS_NODIRATIME)
		}
		if err := unix.Mount("", target, "", flags, ""); err != nil {
			return fmt.Errorf("make bind %s read-only: %w", b.Target, err)
		}
	}
	return nil
}

// mountSystem stages /proc, /dev, /sys and /run, shaped like those of an
// ordinary Linux machine.
func mountSystem() error {
	type m struct {
		src, target, fstype string
		flags               uintptr
		data                string
	}
	mounts := []m{
		{"proc", "proc", "proc", unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC, ""},
		// Read-write like a booted machine's; only root could write, and
		// commands run as the persona's user.
		{"sysfs", "sys", "sysfs", unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC, ""},
		{"udev", "dev", "tmpfs", unix.MS_NOSUID, "mode=0755,size=10m"},
		{"tmpfs", "run", "tmpfs", unix.MS_NOSUID | unix.MS_NODEV, "mode=0755,size=10%"},
	}
	for _, x := range mounts {
		if err := unix.Mount(x.src, x.target, x.fstype, x.flags, x.data); err != nil {
			return fmt.Errorf("mount /%s: %w", x.target, err)
		}
	}
	if err := populateDev("dev"); err != nil {
		return err
	}
	err := unix.Mount("devpts", "dev/pts", "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,gid=5,mode=620,ptmxmode=0666")
	if errors.Is(err, unix.EINVAL) {
		// In a user namespace the tty group is not mapped.
		err = unix.Mount("devpts", "dev/pts", "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,mode=620,ptmxmode=0666")
	}
	if err != nil {
		return fmt.Errorf("mount /dev/pts: %w", err)
	}
	if err := unix.Mount("tmpfs", "dev/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777"); err != nil {
		return fmt.Errorf("mount /dev/shm: %w", err)
	}
	if err := unix.Mount("mqueue", "dev/mqueue", "mqueue", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /dev/mqueue: %w", err)
	}
	return populateRun("run")
}

// populateRun fills /run the way a booted systemd machine has it.
func populateRun(run string) error {
	dirs := []struct {
		path string
		mode uint32
	}{{"lock", 0o1777}, {"user", 0o755}, {"systemd", 0o755}, {"systemd/system", 0o755}, {"systemd/sessions", 0o755}, {"systemd/users", 0o755}, {"mount", 0o755}}
	old := unix.Umask(0)
	defer unix.Umask(old)
	for _, d := range dirs {
		if err := unix.Mkdir(filepath.Join(run, d.path), d.mode); err != nil {
			return fmt.Errorf("mkdir /run/%s: %w", d.path, err)
		}
	}
	return nil
}

// populateSession records a logged-in user in /run: their runtime
// directory and a utmp with the boot and their terminal session.
func populateSession(run string, s *Session) error {
	if s == nil {
		return os.WriteFile(filepath.Join(run, "utmp"), nil, 0o664)
	}
	ud := filepath.Join(run, "user", strconv.Itoa(int(s.UID)))
	if err := unix.Mkdir(ud, 0o700); err != nil {
		return err
	}
	if err := unix.Chown(ud, int(s.UID), int(s.GID)); err != nil {
		return err
	}
	rec := utmpRecord(7, 0, "pts/0", "ts/0", s.User, "", s.Since)
	boot := utmpRecord(2, 0, "~", "~~", "reboot", "", s.Since-int64(90+s.Since%240))
	return os.WriteFile(filepath.Join(run, "utmp"), append(boot, rec...), 0o664)
}

// utmpRecord encodes a struct utmp as glibc lays it out on 64-bit Linux
// (384 bytes).
func utmpRecord(typ int16, pid int32, line, id, user, host string, sec int64) []byte {
	b := make([]byte, 384)
	binary.LittleEndian.PutUint16(b[0:], uint16(typ))
	binary.LittleEndian.PutUint32(b[4:], uint32(pid))
	copy(b[8:40], line)
	copy(b[40:44], id)
	copy(b[44:76], user)
	copy(b[76:332], host)
	// ut_exit (4 bytes) and ut_session (4) stay zero.
	binary.LittleEndian.PutUint32(b[340:], uint32(sec))
	return b
}

func bindDevice(src, dst string) error {
	if err := os.WriteFile(dst, nil, 0o666); err != nil {
		return err
	}
	return unix.Mount(src, dst, "", unix.MS_BIND, "")
}

// populateDev creates the device nodes and links every Linux machine has.
func populateDev(dev string) error {
	nodes := []struct {
		name         string
		major, minor uint32
		mode         uint32
	}{
		{"null", 1, 3, 0o666},
		{"zero", 1, 5, 0o666},
		{"full", 1, 7, 0o666},
		{"random", 1, 8, 0o666},
		{"urandom", 1, 9, 0o666},
		{"tty", 5, 0, 0o666},
		{"kmsg", 1, 11, 0o600},
	}
	old := unix.Umask(0)
	defer unix.Umask(old)
	for _, n := range nodes {
		p := filepath.Join(dev, n.name)
		err := unix.Mknod(p, unix.S_IFCHR|n.mode, int(unix.Mkdev(n.major, n.minor)))
		if errors.Is(err, unix.EPERM) {
			// In a user namespace devices cannot be made, only bound
			// from the host (which is still in view here).
			err = bindDevice("/dev/"+n.name, p)
			if err != nil && n.name == "kmsg" {
				continue
			}
		}
		if err != nil {
			return fmt.Errorf("make /dev/%s: %w", n.name, err)
		}
	}
	for _, d := range []struct {
		name string
		mode uint32
	}{{"pts", 0o755}, {"shm", 0o1777}, {"mqueue", 0o1777}, {"hugepages", 0o755}} {
		if err := unix.Mkdir(filepath.Join(dev, d.name), d.mode); err != nil {
			return fmt.Errorf("mkdir /dev/%s: %w", d.name, err)
		}
	}
	links := [][2]string{
		{"pts/ptmx", "ptmx"},
		{"/proc/self/fd", "fd"},
		{"/proc/self/fd/0", "stdin"},
		{"/proc/self/fd/1", "stdout"},
		{"/proc/self/fd/2", "stderr"},
		{"/proc/kcore", "core"},
	}
	for _, l := range links {
		if err := unix.Symlink(l[0], filepath.Join(dev, l[1])); err != nil {
			return fmt.Errorf("link /dev/%s: %w", l[1], err)
		}
	}
	return nil
}

// mountCgroupFS mounts the sandbox's own cgroup hierarchies at the staged
// sys/fs/cgroup, as a hybrid machine has them: a read-only tmpfs holding a
// directory per v1 hierarchy. It must run on a thread in the sandbox's
// cgroup namespace, which each mount shows as its root.
func mountCgroupFS(controllers []string) error {
	if len(controllers) == 0 {
		return nil
	}
	const dir = "sys/fs/cgroup"
	const flags = unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC
	if err := unix.Mount("tmpfs", dir, "tmpfs", flags, "mode=755,size=4k"); err != nil {
		return fmt.Errorf("mount /sys/fs/cgroup: %w", err)
	}
	for _, c := range controllers {
		d := filepath.Join(dir, c)
		if err := unix.Mkdir(d, 0o555); err != nil {
			return fmt.Errorf("mount /sys/fs/cgroup/%s: %w", c, err)
		}
		if err := unix.Mount("cgroup", d, "cgroup", flags, c); err != nil {
			return fmt.Errorf("mount /sys/fs/cgroup/%s: %w", c, err)
		}
	}
	if err := unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_RDONLY|flags, "mode=755,size=4k"); err != nil {
		return fmt.Errorf("mount /sys/fs/cgroup read-only: %w", err)
	}
	return nil
}

// loopbackUp sets IFF_UP on "lo", the only interface of a new network
// namespace.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP | unix.IFF_RUNNING)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}
