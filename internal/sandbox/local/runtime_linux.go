package local

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
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

	"github.com/verisim/verisim/internal/atomicfile"
	"github.com/verisim/verisim/internal/fstree"
	"github.com/verisim/verisim/internal/sandbox"
	"github.com/verisim/verisim/internal/sandbox/guest"
)

// Options configure a Runtime.
type Options struct {
	// StateDir holds what outlives a sandbox: snapshot layers.
	StateDir string
	// RunDir holds one small directory per live sandbox (layer links, the
	// init's socket, meta.json). It must be a tmpfs, as /run is on most
	// hosts: creating a sandbox makes a dozen metadata changes there, which
	// cost 10-40x more on a journalling disk filesystem. When it is not,
	// New mounts a small tmpfs on it (the way "ip netns" treats /run/netns).
	RunDir string
	// Warm keeps this many inits started ahead of time, each already in
	// fresh namespaces and cgroups, so that Create only has to configure
	// one. It suits long-running callers that create many sandboxes; the
	// pool is refilled in the background and emptied by Close. 0 starts
	// every init on demand.
	Warm int
	// FavorDynmods remounts the cgroup2 hierarchy with "favordynmods"
	// (Linux 6.1+) unless it has it. Moving a process between cgroups
	// otherwise waits for an RCU grace period now and then: measured here,
	// creating and joining a sandbox's cgroups took p99 12 ms without it and
	// 0.4 ms with it. It is a host-wide setting, made for container hosts;
	// fork and exit get marginally slower.
	FavorDynmods bool
	// InitPath is the binary started as each sandbox's init. Empty means
	// verisim-init beside the running executable when it is there and
	// speaks this build's protocol (a small static binary that starts
	// about 1.5 ms sooner than the whole verisim binary), and the running
	// executable re-executed otherwise. A path given here must pass the
	// same check.
	InitPath string
	Logger   *slog.Logger
}

// Runtime is the local backend.
type Runtime struct {
	state string
	run   string
	log   *slog.Logger
	cg    *cgroupSetup
	// rootless is set when verisim is not root: sandboxes get a user
	// namespace mapping the sandbox's user to the caller and no cgroups.
	rootless bool
	// subids, when rootless and the user has subordinate ranges, map a
	// whole range of ids instead of the user's alone.
	subids *subIDs

	pool       chan *initProc
	poolMu     sync.Mutex
	poolClosed bool
	poolWG     sync.WaitGroup
	// initPath names the binary to start as init: a link called
	// "systemd", so that /proc/1/comm inside reads like a real machine's.
	initPath string
	// initTarget is the binary the link leads to.
	initTarget string
	// sealed, rootless, is the in-memory copy of initTarget that
	// sandboxes start from.
	sealed *sealedInit
}

// Init names the binary sandboxes start as init: the path of verisim-init,
// or "/proc/self/exe" when this binary re-executes itself.
func (r *Runtime) Init() string { return r.initTarget }

var _ sandbox.Runtime = (*Runtime)(nil)

// New checks the host and returns a Runtime.
func New(opts Options) (*Runtime, error) {
	if opts.StateDir == "" || opts.RunDir == "" {
		return nil, fmt.Errorf("local runtime: state and run directories are required")
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	rootless := os.Geteuid() != 0
	var cg *cgroupSetup
	if !rootless {
		var err error
		if cg, err = detectCgroups(cgroupParent(opts.RunDir)); err != nil {
			return nil, err
		}
	} else if opts.Warm > 0 {
		// A user namespace's uid map is fixed at clone time, before anyone
		// says which user the sandbox is for.
		log.Info("rootless: no warm pool")
		opts.Warm = 0
	}
	if opts.FavorDynmods && !rootless {
		if err := favorDynmods(); err != nil {
			log.Warn("cgroup2 favordynmods not set; sandbox creation may stall now and then", "err", err)
		}
	}
	if err := os.MkdirAll(filepath.Join(opts.StateDir, "layers"), 0o700); err != nil {
		return nil, fmt.Errorf("create state directory: %w", err)
	}
	// Layers keep their files' set-id bits: no other user may reach them,
	// whatever mode an older verisim or the user gave the directory.
	if err := os.Chmod(filepath.Join(opts.StateDir, "layers"), 0o700); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	if err := ensureTmpfs(opts.RunDir, rootless); err != nil {
		return nil, err
	}
	initPath, initTarget, err := initLink(opts.RunDir, opts.InitPath, log)
	if err != nil {
		return nil, err
	}
	r := &Runtime{state: opts.StateDir, run: opts.RunDir, log: log, cg: cg, initPath: initPath, initTarget: initTarget, rootless: rootless}
	if rootless {
		if r.subids = findSubIDs(); r.subids == nil {
			log.Info("rootless: no newuidmap/newgidmap or no /etc/subuid and /etc/subgid ranges; sandboxes map the caller's ids alone")
		}
		// Only with subordinate ids is there a root inside that could
		// reach the init's file, and only if an id it maps owns it.
		if r.subids != nil && r.subids.maps(initTarget) {
			if r.sealed, err = newSealedInit(initTarget, log); err != nil {
				return nil, err
			}
		}
	}
	if opts.Warm > 0 {
		r.pool = make(chan *initProc, opts.Warm)
		for range opts.Warm {
			r.refill()
		}
	}
	return r, nil
}

// ensureTmpfs makes dir exist and, when root can, be a tmpfs.
func ensureTmpfs(dir string, rootless bool) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create run directory: %w", err)
	}
	if rootless {
		return nil
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fmt.Errorf("stat run directory: %w", err)
	}
	if st.Type == unix.TMPFS_MAGIC {
		return nil
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0700,size=64m"); err != nil {
		return fmt.Errorf("mount tmpfs on run directory %s: %w", dir, err)
	}
	return nil
}

// Name implements sandbox.Runtime.
func (r *Runtime) Name() string { return "local" }

func newID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// meta is what the host keeps about a sandbox, in <run dir>/meta.json.
type meta struct {
	ID       string       `json:"id"`
	Spec     sandbox.Spec `json:"spec"`
	InitPID  int          `json:"init_pid"`
	InitTick uint64       `json:"init_start"` // start time in clock ticks, against pid reuse
	UpperFD  int          `json:"upper_fd"`
	Creator  int          `json:"creator_pid"`
	Keep     bool         `json:"keep"`
	Cgroup   *cgroup      `json:"cgroup"`
	Created  time.Time    `json:"created"`
	// Pooled marks an init waiting in the warm pool, not yet a sandbox.
	Pooled bool `json:"pooled,omitempty"`
}

func (r *Runtime) runDir(id string) string { return filepath.Join(r.run, id) }

// isSandboxDir tells run directories from the runtime's own files there.
func isSandboxDir(e os.DirEntry) bool { return e.IsDir() && len(e.Name()) == 12 }

// Create implements sandbox.Runtime.
func (r *Runtime) Create(ctx context.Context, spec sandbox.Spec) (sandbox.Sandbox, error) {
	return r.create(ctx, spec)
}

func (r *Runtime) create(ctx context.Context, spec sandbox.Spec) (_ *box, retErr error) {
	defer func() {
		// A sandbox that never was owns nothing: its layers go too.
		if retErr != nil {
			for _, l := range spec.OwnedLayers {
				r.removeLayer(l)
			}
		}
	}()
	if spec.Network != "" && spec.Network != sandbox.NetworkLoopback {
		return nil, fmt.Errorf("network policy %q is not supported; use %q", spec.Network, sandbox.NetworkLoopback)
	}
	if len(spec.Layers) == 0 {
		return nil, fmt.Errorf("sandbox spec has no image layers")
	}
	for _, l := range spec.Layers {
		if !filepath.IsAbs(l) {
			return nil, fmt.Errorf("image layer %q is not an absolute path", l)
		}
	}
	if r.rootless {
		if spec.Limits.MemoryBytes > 0 || spec.Limits.PIDs > 0 || spec.Limits.CPUs > 0 {
			return nil, fmt.Errorf("memory, pids and cpus limits need cgroups, which need root; run as root or keep only the disk limit (--limits disk=10g)")
		}
		if spec.User.UID == 0 {
			return nil, fmt.Errorf("without root a sandbox's user cannot be root; give it a persona user")
		}
	}
	ip, err := r.takeInit(spec.Limits.CPUs > 0, spec.User)
	if err != nil {
		return nil, err
	}
	if r.pool != nil {
		defer r.refill()
	}
	defer func() {
		if retErr != nil {
			ip.discard()
		}
	}()
	if ip.cg != nil {
		if err := ip.cg.setLimits(r.cg, spec.Limits, spec.User.UID, sessionNumber(ip.id)); err != nil {
			return nil, err
		}
	}
	names := make([]string, len(spec.Layers))
	for i, l := range spec.Layers {
		names[i] = strconv.Itoa(i)
		if err := os.Symlink(l, filepath.Join(ip.dir, names[i])); err != nil {
			return nil, err
		}
	}
	views := make([]guest.View, len(spec.Views))
	for i, v := range spec.Views {
		views[i] = guest.View{Source: "v" + strconv.Itoa(i), Target: v.Target}
		if err := os.Symlink(v.Source, filepath.Join(ip.dir, views[i].Source)); err != nil {
			return nil, err
		}
	}
	binds := make([]guest.Bind, len(spec.Binds))
	for i, b := range spec.Binds {
		binds[i] = guest.Bind{Source: b.Source, Target: b.Target, ReadOnly: b.ReadOnly}
	}
	var commandTasks, rootTasks string
	var cgroupFS []string
	if ip.cg != nil && ip.cg.Commands != "" {
		// Only the pids hierarchy is shown: the memory one would show
		// a limit that /proc/meminfo, the host's, contradicts.
		commandTasks, rootTasks, cgroupFS = ip.cg.Commands, ip.cg.Root, []string{"pids"}
	}
	cfg := guest.Config{
		Layers:          names,
		DiskBytes:       spec.Limits.DiskBytes,
		Hostname:        spec.Hostname,
		Binds:           binds,
		Views:           views,
		LastPID:         lastPID(ip.id),
		Lifeline:        !spec.Keep,
		NewCgroupNS:     !r.rootless,
		CommandTasks:    commandTasks,
		CgroupRootTasks: rootTasks,
		CgroupFS:        cgroupFS,
		Rootless:        r.rootless,
	}
	if u := spec.User; u.UID != 0 && u.Name != "" {
		// Logged in a few hours ago, by the sandbox's own clock.
		cfg.Session = &guest.Session{User: u.Name, UID: u.UID, GID: u.GID, Since: time.Now().Add(-time.Duration(2+lastPID(ip.id)%5) * time.Hour).Unix()}
	}
	b, _ := json.Marshal(cfg)
	if _, err := ip.cfgW.Write(b); err != nil {
		// The init is gone; its status line says why, if it got to say.
		if _, serr := readStatus(ctx, ip.statR); serr != nil {
			return nil, serr
		}
		return nil, fmt.Errorf("configure sandbox init: %w", err)
	}
	ip.cfgW.Close()
	// meta.json is written while the init builds the sandbox, naming the
	// descriptor the init will keep its upper directory at.
	m := &meta{
		ID: ip.id, Spec: spec, InitPID: ip.cmd.Process.Pid, InitTick: ip.tick,
		UpperFD: guest.FDUpper, Creator: os.Getpid(), Keep: spec.Keep, Cgroup: ip.cg, Created: time.Now().UTC(),
	}
	if err := writeJSONAtomic(filepath.Join(ip.dir, "meta.json"), m); err != nil {
		return nil, err
	}
	upperFD, err := readStatus(ctx, ip.statR)
	ip.statR.Close()
	if err != nil {
		return nil, err
	}
	if upperFD != m.UpperFD {
		m.UpperFD = upperFD
		if err := writeJSONAtomic(filepath.Join(ip.dir, "meta.json"), m); err != nil {
			return nil, err
		}
	}
	if spec.Keep {
		// A kept sandbox outlives this process; its init ignores the
		// lifeline.
		ip.lifeW.Close()
		ip.lifeW = nil
	}
	return &box{rt: r, m: m, dir: ip.dir, sock: filepath.Join(ip.dir, guest.SocketName), done: ip.done, lifeline: ip.lifeW}, nil
}

// sessionNumber is the number of the persona's login session, as logind
// counts them: a few logins since boot.
func sessionNumber(id string) int {
	n, _ := strconv.ParseUint(id[6:8], 16, 8)
	return 2 + int(n%7)
}

// lastPID picks where the sandbox's PID counter starts: a value a desktop
// reaches within hours of booting, different per sandbox, and below the
// kernel's pid_max (which caps namespaces too before Linux 6.14).
func lastPID(id string) int {
	n, _ := strconv.ParseUint(id[:6], 16, 32)
	return 2000 + int(n%uint64(lastPIDSpan()))
}

// lastPIDSpan is how far above 2000 a sandbox's first PIDs may start: 40000,
// less where the host's pid_max (read once) is lower.
var lastPIDSpan = sync.OnceValue(func() int {
	span := 40000
	if b, err := os.ReadFile("/proc/sys/kernel/pid_max"); err == nil {
		if limit, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && limit-3000 < 2000+span {
			span = max(1000, limit-3000-2000)
		}
	}
	return span
})

// initProc is a started init waiting for its config: in fresh namespaces,
// in its own (still unlimited) cgroups, with an empty run directory.
type initProc struct {
	id    string
	dir   string
	cmd   *exec.Cmd
	tick  uint64
	done  chan struct{}
	cg    *cgroup
	cfgW  *os.File
	statR *os.File
	lifeW *os.File
}

// takeInit returns a pooled init, or starts one.
func (r *Runtime) takeInit(withCPU bool, u sandbox.User) (*initProc, error) {
	if r.pool == nil {
		return r.startInit(false, withCPU, u)
	}
	select {
	case ip := <-r.pool:
		if alive(ip.cmd.Process.Pid, ip.tick) {
			if err := ip.cg.setIdle(false); err != nil {
				ip.discard()
				return nil, err
			}
			return ip, nil
		}
		ip.discard()
	default:
	}
	return r.startInit(false, withCPU, u)
}

// refill starts one init for the pool, unless the runtime is closing. It
// is called once a sandbox is created, so that a refill does not compete
// with it.
func (r *Runtime) refill() {
	r.poolMu.Lock()
	defer r.poolMu.Unlock()
	if r.poolClosed {
		return
	}
	r.poolWG.Add(1)
	go func() {
		defer r.poolWG.Done()
		ip, err := r.startInit(true, true, sandbox.User{})
		if err != nil {
			r.log.Warn("warm sandbox pool: start init", "err", err)
			return
		}
		select {
		case r.pool <- ip:
		default:
			ip.discard()
		}
	}()
}

// Close stops the warm pool and kills the inits waiting in it, and removes
// the cgroups sandboxes of this run directory nest under if none is left
// in them. Sandboxes already created are not affected.
func (r *Runtime) Close(ctx context.Context) error {
	if r.sealed != nil {
		defer r.sealed.close()
	}
	defer func() {
		// Each run directory has its own parent cgroup (cgroupParent);
		// one left empty would stay behind for every run directory ever
		// used. A runtime sharing it that creates a sandbox next makes
		// it again.
		for _, base := range r.cg.allBases() {
			_ = os.Remove(base)
		}
	}()
	if r.pool == nil {
		return nil
	}
	r.poolMu.Lock()
	r.poolClosed = true
	r.poolMu.Unlock()
	r.poolWG.Wait()
	for {
		select {
		case ip := <-r.pool:
			ip.discard()
		default:
			return nil
		}
	}
}

// startInit starts an init process early, so that its runtime start-up
// (the larger part of creating a sandbox) overlaps with the host preparing
// its cgroups. The init waits for its config before it touches anything.
// An init for the pool (idle) gets the least CPU weight until it is taken,
// so refills never slow sandboxes in use.
func (r *Runtime) startInit(idle, withCPU bool, u sandbox.User) (_ *initProc, retErr error) {
	ip := &initProc{id: newID()}
	var toClose []*os.File
	defer func() {
		for _, f := range toClose {
			f.Close()
		}
		if retErr != nil {
			ip.discard()
		}
	}()
	ip.dir = r.runDir(ip.id)
	if err := os.Mkdir(ip.dir, 0o700); err != nil {
		return nil, fmt.Errorf("create run directory: %w", err)
	}
	for _, d := range []string{"rw", "root", "proc", "dev", "sys", "run"} {
		if err := os.Mkdir(filepath.Join(ip.dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	ln, err := listenUnix(filepath.Join(ip.dir, guest.SocketName))
	if err != nil {
		return nil, fmt.Errorf("listen for the sandbox init: %w", err)
	}
	toClose = append(toClose, ln)
	cfgR, cfgW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	ip.cfgW = cfgW
	toClose = append(toClose, cfgR)
	statR, statW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	ip.statR = statR
	toClose = append(toClose, statW)
	lifeR, lifeW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	ip.lifeW = lifeW
	toClose = append(toClose, lifeR)
	marker := "1"
	if idle {
		marker = "pool"
	}
	exe := r.initPath
	if r.sealed != nil {
		if exe, err = r.sealed.exe(); err != nil {
			return nil, err
		}
	}
	ip.cmd = &exec.Cmd{
		Path:       exe,
		Args:       []string{"/sbin/init"},
		Env:        []string{guest.EnvMarker + "=" + marker},
		Dir:        ip.dir,
		ExtraFiles: []*os.File{cfgR, statW, lifeR, ln},
		SysProcAttr: &syscall.SysProcAttr{
			Cloneflags: unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWNET,
			Setsid:     true,
		},
	}
	if r.rootless {
		a := ip.cmd.SysProcAttr
		a.Cloneflags |= unix.CLONE_NEWUSER
		// The init is not uid 0 in its namespace, so exec would drop the
		// capabilities it needs to build the sandbox; ambient ones survive.
		// It clears them before starting any command.
		a.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_CHOWN, unix.CAP_DAC_OVERRIDE, unix.CAP_FOWNER, unix.CAP_SYS_CHROOT}
		if r.subids == nil {
			// One id each way: the sandbox's user is the caller.
			a.UidMappings = []syscall.SysProcIDMap{{ContainerID: int(u.UID), HostID: os.Geteuid(), Size: 1}}
			a.GidMappings = []syscall.SysProcIDMap{{ContainerID: int(u.GID), HostID: os.Getegid(), Size: 1}}
		} else {
			// The maps are written by newuidmap and newgidmap once the
			// init runs (it waits for them before touching a file); the
			// init then also switches to the other users it maps.
			a.AmbientCaps = append(a.AmbientCaps, unix.CAP_SETUID, unix.CAP_SETGID)
			ip.cmd.Env = append(ip.cmd.Env, guest.EnvLateIDMaps+"=1")
		}
	}
	if err := ip.cmd.Start(); err != nil {
		ip.cmd = nil
		return nil, fmt.Errorf("start sandbox init: %w", err)
	}
	ip.done = make(chan struct{})
	go func() { _ = ip.cmd.Wait(); close(ip.done) }()
	if r.rootless && r.subids != nil {
		if err := r.subids.apply(ip.cmd.Process.Pid, u.UID, u.GID); err != nil {
			return nil, err
		}
	}

	var cg *cgroup
	if r.cg != nil {
		var err error
		if cg, err = r.cg.create(ip.id, withCPU || idle); err != nil {
			return nil, err
		}
		ip.cg = cg
		if idle {
			if err := cg.setIdle(true); err != nil {
				return nil, err
			}
		}
		if err := cg.add(ip.cmd.Process.Pid); err != nil {
			return nil, err
		}
	}
	ip.tick = startTick(ip.cmd.Process.Pid)
	// GC must see who owns this init even before it becomes a sandbox.
	m := &meta{ID: ip.id, InitPID: ip.cmd.Process.Pid, InitTick: ip.tick, Creator: os.Getpid(), Cgroup: cg, Created: time.Now().UTC(), Pooled: true}
	if err := writeJSONAtomic(filepath.Join(ip.dir, "meta.json"), m); err != nil {
		return nil, err
	}
	return ip, nil
}

// listenUnix binds a listening unix socket at path.
func listenUnix(path string) (*os.File, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if err := unix.Listen(fd, 128); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
}

// discard kills the init and removes what was made for it.
func (ip *initProc) discard() {
	if ip.cmd != nil && ip.cmd.Process != nil {
		_ = ip.cmd.Process.Kill()
		<-ip.done
	}
	for _, f := range []*os.File{ip.cfgW, ip.statR, ip.lifeW} {
		if f != nil {
			f.Close()
		}
	}
	if ip.cg != nil {
		ip.cg.remove()
	}
	if ip.dir != "" {
		os.RemoveAll(ip.dir)
	}
}

// readStatus waits for the init's "ok <upper fd>" line or its error.
func readStatus(ctx context.Context, f *os.File) (int, error) {
	if dl, ok := ctx.Deadline(); ok {
		_ = f.SetReadDeadline(dl)
	} else {
		_ = f.SetReadDeadline(time.Now().Add(30 * time.Second))
	}
	var buf [4096]byte
	n := 0
	for n < len(buf) {
		k, err := f.Read(buf[n:])
		n += k
		if strings.Contains(string(buf[:n]), "\n") {
			break
		}
		if err != nil {
			if n == 0 {
				return 0, fmt.Errorf("sandbox init died before it was ready: %w", err)
			}
			break
		}
	}
	line := strings.TrimSpace(string(buf[:n]))
	if fd, ok := strings.CutPrefix(line, "ok "); ok {
		return strconv.Atoi(fd)
	}
	return 0, fmt.Errorf("sandbox init: %s", line)
}

// startTick reads a process's start time, to tell it from a later process
// that reused its pid.
func startTick(pid int) uint64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0
	}
	n, _ := strconv.ParseUint(f[19], 10, 64)
	return n
}

func alive(pid int, tick uint64) bool {
	return pid > 0 && startTick(pid) == tick && tick != 0
}

func writeJSONAtomic(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return atomicfile.Write(path, b, 0o600)
}

func readMeta(dir string) (*meta, error) {
	b, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if err != nil {
		return nil, err
	}
	var m meta
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	return &m, nil
}

// Open attaches to a live sandbox by id, from any process.
func (r *Runtime) Open(ctx context.Context, id string) (sandbox.Sandbox, error) {
	dir := r.runDir(filepath.Base(id))
	m, err := readMeta(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s (see verisim sandbox ls)", sandbox.ErrNotFound, id)
		}
		return nil, err
	}
	if m.Pooled {
		return nil, fmt.Errorf("%w: %s", sandbox.ErrNotFound, id)
	}
	if !alive(m.InitPID, m.InitTick) {
		return nil, fmt.Errorf("%w: %s has stopped; run verisim sandbox gc to remove its remains", sandbox.ErrNotFound, id)
	}
	return &box{rt: r, m: m, dir: dir, sock: filepath.Join(dir, guest.SocketName)}, nil
}

// Remove implements sandbox.Manager.
func (r *Runtime) Remove(ctx context.Context, id string) error {
	dir := r.runDir(filepath.Base(id))
	m, err := readMeta(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w: %s (see verisim sandbox ls)", sandbox.ErrNotFound, id)
		}
		return err
	}
	return (&box{rt: r, m: m, dir: dir}).destroy(ctx)
}

// List returns the sandboxes with a run directory, live or not.
func (r *Runtime) List(ctx context.Context) ([]sandbox.Info, error) {
	ents, err := os.ReadDir(r.run)
	if err != nil {
		return nil, err
	}
	var out []sandbox.Info
	for _, e := range ents {
		if !isSandboxDir(e) {
			continue
		}
		m, err := readMeta(r.runDir(e.Name()))
		if err != nil {
			out = append(out, sandbox.Info{ID: e.Name(), State: "broken"})
			continue
		}
		if m.Pooled {
			continue
		}
		st := "running"
		if !alive(m.InitPID, m.InitTick) {
			st = "stopped"
		}
		out = append(out, sandbox.Info{ID: m.ID, State: st, Created: m.Created, Keep: m.Keep, Labels: m.Spec.Labels, PID: m.InitPID})
	}
	return out, nil
}

// GC removes what crashed processes left behind: sandboxes whose creator is
// gone (unless kept), stopped sandboxes, their cgroups and run directories,
// stray cgroups and half-written snapshots.
func (r *Runtime) GC(ctx context.Context) (sandbox.GCReport, error) {
	var rep sandbox.GCReport
	ents, err := os.ReadDir(r.run)
	if err != nil {
		return rep, err
	}
	known := map[string]bool{}
	for _, e := range ents {
		if !isSandboxDir(e) {
			continue
		}
		dir := r.runDir(e.Name())
		m, err := readMeta(dir)
		if err != nil {
			// Half-created: nothing was written yet; its init (if any)
			// died with its lifeline. A young one may be a create in
			// flight in another process.
			if olderThan(dir, gcGrace) && os.RemoveAll(dir) == nil {
				rep.Dirs++
			}
			continue
		}
		live := alive(m.InitPID, m.InitTick)
		if live && (m.Keep || processAlive(m.Creator)) {
			known[m.ID] = true
			continue
		}
		b := &box{rt: r, m: m, dir: dir}
		if live {
			rep.Processes++
		}
		if err := b.destroy(ctx); err != nil {
			rep.Errors = append(rep.Errors, err.Error())
			continue
		}
		rep.Sandboxes++
	}
	// Cgroups with no run directory: kill what is inside and remove them.
	for c, base := range r.cg.allBases() {
		cgs, _ := os.ReadDir(base)
		for _, e := range cgs {
			if !e.IsDir() || known[e.Name()] {
				continue
			}
			if _, err := os.Stat(r.runDir(e.Name())); err == nil {
				continue
			}
			cg := &cgroup{Dirs: map[string]string{c: filepath.Join(base, e.Name())}}
			for _, pid := range cg.pids() {
				_ = unix.Kill(pid, unix.SIGKILL)
				rep.Processes++
			}
			if cg.remove() == nil {
				rep.Cgroups++
			}
		}
	}
	r.gcLayers(&rep)
	return rep, nil
}

// gcGrace is how old an unreferenced or half-written entry must be before
// GC takes it for a crash's leftover rather than work in flight.
const gcGrace = time.Minute

func olderThan(path string, d time.Duration) bool {
	fi, err := os.Lstat(path)
	return err == nil && time.Since(fi.ModTime()) > d
}

// unchangedFor reports whether path's inode has not changed for d. Unlike
// its modification time, which a layer copy sets back to its source's, the
// change time cannot be set.
func unchangedFor(path string, d time.Duration) bool {
	var st unix.Stat_t
	if unix.Lstat(path, &st) != nil {
		return false
	}
	return time.Since(time.Unix(st.Ctim.Unix())) > d
}

// tmpKeep is how long GC leaves a temporary layer whose maker still
// lives (its pid may since name another process).
const tmpKeep = 24 * time.Hour

// removeCache removes the cached layer p, reporting whether it did. It
// first moves the layer out of the builders' sight, then looks again: a
// builder that marked it used in the meantime (package machine's cacheHit
// sets its modification time) gets it back; one that looks later builds it
// afresh. A removal cut short leaves a ".tmp-" name the next collection
// finishes.
func removeCache(p string) (bool, error) {
	gone := p + ".tmp-gc"
	if err := os.Rename(p, gone); err != nil {
		return false, fmt.Errorf("remove cached layer %s: %w", p, err)
	}
	if !olderThan(gone, cacheKeep) {
		err := os.Rename(gone, p)
		if err == nil {
			return false, nil
		}
		if !errors.Is(err, os.ErrExist) && !errors.Is(err, unix.ENOTEMPTY) {
			return false, fmt.Errorf("put back cached layer %s: %w", p, err)
		}
		// Built again meanwhile: the one moved aside is a spare.
	}
	if err := fstree.RemoveAll(gone); err != nil {
		return false, fmt.Errorf("remove cached layer %s: %w", p, err)
	}
	return true, nil
}

// cacheKeep is how long a cached layer (a persona's, a warm Go build
// cache) that no sandbox or snapshot uses is kept after a machine last
// used it (package machine marks each use in its modification time).
const cacheKeep = 7 * 24 * time.Hour

// gcLayers removes half-written layers (snapshot copies, persona layers in
// the making), workspaces no sandbox or snapshot uses, snapshot records
// whose layer is gone, and cached layers no sandbox or snapshot uses that
// no machine has used for cacheKeep: those a persona edit, a new layer
// format or another Go release left behind.
func (r *Runtime) gcLayers(rep *sandbox.GCReport) {
	dir := filepath.Join(r.state, "layers")
	ents, _ := os.ReadDir(dir)
	used := map[string]bool{}
	if runs, err := os.ReadDir(r.run); err == nil {
		for _, e := range runs {
			if m, err := readMeta(r.runDir(e.Name())); err == nil {
				for _, l := range m.Spec.Layers {
					used[l] = true
				}
			}
		}
	}
	for _, e := range ents {
		if id, ok := strings.CutSuffix(e.Name(), ".json"); ok {
			if sm, err := r.readSnap(id); err == nil {
				for _, l := range sm.Spec.Layers {
					used[l] = true
				}
			}
		}
	}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		name := e.Name()
		var remove bool
		switch {
		case strings.Contains(name, ".tmp-"):
			// A snapshot copy (".tmp-<pid>-<id>") or a layer being built
			// ("<layer>.tmp-<pid>-<random>") goes with the process that
			// makes it; other temporary names (a cache gc moved aside,
			// an older verisim's layer builds) once they are not fresh.
			_, tag, _ := strings.Cut(name, ".tmp-")
			if pid, err := strconv.Atoi(strings.SplitN(tag, "-", 2)[0]); err == nil {
				remove = !processAlive(pid) || unchangedFor(p, tmpKeep)
			} else {
				remove = olderThan(p, gcGrace)
			}
		case strings.HasPrefix(name, "ws-"):
			remove = !used[p] && olderThan(p, gcGrace)
		case strings.HasSuffix(name, ".json"):
			_, err := os.Stat(strings.TrimSuffix(p, ".json"))
			remove = os.IsNotExist(err)
		case (strings.HasPrefix(name, "persona-") || strings.HasPrefix(name, "gocache-")) && e.IsDir():
			if !used[p] && olderThan(p, cacheKeep) {
				removed, err := removeCache(p)
				if err != nil {
					rep.Errors = append(rep.Errors, err.Error())
				}
				if removed {
					rep.Caches++
				}
			}
			continue
		}
		if !remove {
			continue
		}
		if err := r.removeLayer(p); err != nil {
			rep.Errors = append(rep.Errors, fmt.Sprintf("remove %s: %v", p, err))
		} else {
			rep.Dirs++
		}
	}
}

func (cs *cgroupSetup) allBases() map[string]string {
	m := map[string]string{}
	if cs == nil {
		return m
	}
	for c, d := range cs.v1 {
		m[c] = d
	}
	if cs.v2 != "" {
		m[""] = cs.v2
	}
	return m
}

func processAlive(pid int) bool {
	return pid > 0 && unix.Kill(pid, 0) == nil
}
