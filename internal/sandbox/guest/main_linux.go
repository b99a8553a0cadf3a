package guest

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/verisim/verisim/internal/sandbox/wire"
)

// In the init, the main goroutine keeps the process's main thread. The
// thread that starts commands must be another one: it moves into the
// commands' cgroup, and /proc/1/cgroup shows the main thread's.
func init() {
	if IsInit() {
		runtime.LockOSThread()
	}
}

// IsInit reports whether this process was started by a host as a sandbox's
// init. Binaries that can start sandboxes call it first thing in main (and in
// TestMain) and hand over to Main when it is true.
func IsInit() bool {
	switch os.Getenv(EnvMarker) {
	case "1", "pool", MarkerRemove, MarkerCopy:
		return true
	}
	return false
}

// Main runs the init and never returns. Errors before serving go to the
// host over FDStatus; the init then exits, which tears the sandbox down.
//
// Until it reports "ok", the init is the whole of a sandbox's creation, and
// the host's CPU is idle, so independent steps run side by side: reading
// and decoding the config overlaps with the mounts of prepare, and the
// cgroup namespace is entered on the spawner thread while finish builds
// the root.
func Main() {
	if m := os.Getenv(EnvMarker); m == MarkerRemove || m == MarkerCopy {
		helperMain(m)
	}
	// Started from an in-memory copy (rootless), the command name is a
	// descriptor number; it is systemd's on a booted machine.
	if name, err := unix.BytePtrFromString("systemd"); err == nil {
		_ = unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(name)), 0, 0, 0)
	}
	pooled := os.Getenv(EnvMarker) == "pool"
	lateMaps := os.Getenv(EnvLateIDMaps) != ""
	os.Clearenv()
	// Nothing the init holds may reach a command: not the socket it serves
	// (a command could answer the host's requests), not the lifeline, not
	// whatever the host process leaked to it.
	_ = unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	status := os.NewFile(FDStatus, "status")
	fail := func(err error) {
		fmt.Fprintf(status, "%v\n", err)
		os.Exit(1)
	}
	srv := newServer()
	go srv.spawnLoop()
	if err := defaultSignals(); err != nil {
		fail(err)
	}
	go srv.reap()
	type configResult struct {
		cfg Config
		err error
	}
	configReady := make(chan configResult, 1)
	go func() {
		var r configResult
		r.err = readConfig(&r.cfg)
		configReady <- r
	}()

	// The host started the init in its run directory. Until the config
	// arrives, do what needs no config. A rootless init whose id maps the
	// host writes with newuidmap starts unmapped and may not create a file
	// until they exist; the host writes them before the config, so such
	// an init prepares once the config is in.
	mapped := !lateMaps || idsMapped()
	if mapped {
		if err := prepare(); err != nil {
			fail(err)
		}
		if err := srv.keepProc(); err != nil {
			fail(err)
		}
	}
	// The host bound the socket (a first socket in a fresh network
	// namespace costs a millisecond); it keeps working after pivot_root.
	ln, err := fileListener(FDListener)
	if err != nil {
		fail(fmt.Errorf("listener: %w", err))
	}
	go func() {
		srv.serve(ln)
		os.Exit(0)
	}()
	// A pooled init, which has time until someone wants a sandbox, runs
	// one command through the whole server, so that the sandbox's first
	// command does not pay for the runtime's first-use costs (threads,
	// heap, codecs).
	if pooled {
		warmUp()
	}

	r := <-configReady
	if r.err != nil {
		fail(r.err)
	}
	if !mapped {
		if err := prepare(); err != nil {
			fail(err)
		}
		if err := srv.keepProc(); err != nil {
			fail(err)
		}
	}
	cfg := &r.cfg
	// The commands' cgroup is a host path: open it before finish pivots
	// away from the host's filesystem.
	var rootTasks, tasks *os.File
	if cfg.CommandTasks != "" {
		if rootTasks, err = os.OpenFile(cfg.CgroupRootTasks, os.O_WRONLY, 0); err != nil {
			fail(fmt.Errorf("sandbox's cgroup: %w", err))
		}
		if tasks, err = os.OpenFile(cfg.CommandTasks, os.O_WRONLY, 0); err != nil {
			fail(fmt.Errorf("commands' cgroup: %w", err))
		}
	}
	cgroups := make(chan error, 1)
	srv.spawner <- func() { cgroups <- enterCgroups(rootTasks, tasks, cfg.NewCgroupNS, cfg.CgroupFS) }
	upper, err := finish(cfg, func() error { return <-cgroups })
	if err != nil {
		fail(err)
	}
	if !cfg.Lifeline {
		unix.Close(FDLifeline)
	} else {
		lifeline := pollable(FDLifeline, "lifeline")
		go func() {
			// Nothing is ever written; Read returns when the creator is gone.
			var buf [1]byte
			_, _ = lifeline.Read(buf[:])
			os.Exit(0)
		}()
	}
	fmt.Fprintf(status, "ok %d\n", upper)
	status.Close()
	select {}
}

// enterCgroups runs on the spawner thread. The host moved the init into
// the sandbox's cgroups before it wrote the config (in the v1 pids
// hierarchy, into init.scope below the sandbox's). The thread joins the
// sandbox's own pids cgroup (rootTasks, when set), enters a new cgroup
// namespace (with newNS), rooted there, mounts the hierarchies named in fs
// at the staged /sys/fs/cgroup, and then joins the commands' cgroup
// (tasks), a login session's scope below that root: commands see their
// session's path, PID 1 its init.scope.
func enterCgroups(rootTasks, tasks *os.File, newNS bool, fs []string) error {
	join := func(f *os.File, what string) error {
		if f == nil {
			return nil
		}
		_, err := f.WriteString(strconv.Itoa(unix.Gettid()))
		f.Close()
		if err != nil {
			return fmt.Errorf("move the command spawner into the %s cgroup: %w", what, err)
		}
		return nil
	}
	if err := join(rootTasks, "sandbox's"); err != nil {
		return err
	}
	if newNS {
		if err := unix.Unshare(unix.CLONE_NEWCGROUP); err != nil {
			return fmt.Errorf("new cgroup namespace: %w", err)
		}
		if err := mountCgroupFS(fs); err != nil {
			return err
		}
	}
	return join(tasks, "commands'")
}

// idsMapped reports whether the init's user namespace has its id maps yet,
// in a rootless sandbox whose maps the host writes with newuidmap and then
// newgidmap while the init starts. The gid map is written last, so it
// tells whether both are there.
func idsMapped() bool {
	b, err := os.ReadFile("/proc/self/gid_map")
	return err != nil || len(strings.TrimSpace(string(b))) > 0
}

// readConfig reads the config the host writes on FDConfig.
func readConfig(cfg *Config) error {
	f := pollable(FDConfig, "config")
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return fmt.Errorf("read config: %w", err)
	}
	return cfg.UnmarshalJSON(b)
}

// warmUp runs /bin/true of the host (the root is not built yet) through
// the init's own socket, as the host would. Failing is harmless: it only
// saves time later.
func warmUp() {
	nc, err := dialUnix(SocketName)
	if err != nil {
		return
	}
	defer nc.Close()
	c := wire.NewConn(nc)
	if c.WriteJSON(wire.TypeRequest, wire.Request{Op: wire.OpExec, Args: []string{"/bin/true"}, Dir: "/"}) != nil {
		return
	}
	_ = c.Write(wire.TypeStdinEOF, nil)
	for {
		typ, _, err := c.Read()
		if err != nil || typ == wire.TypeExit {
			return
		}
	}
}

// pollable wraps a pipe the host passed in an *os.File that waits through
// the runtime's poller, as os.Pipe's do: a goroutine blocked in read(2) on
// a blocking descriptor holds a thread of its own, and each thread the init
// starts costs it CPU (the clone, its stacks' page faults) and its exit.
func pollable(fd int, name string) *os.File {
	_ = unix.SetNonblock(fd, true)
	return os.NewFile(uintptr(fd), name)
}
