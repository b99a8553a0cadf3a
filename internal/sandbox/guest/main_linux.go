package guest

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"runtime"

	"golang.org/x/sys/unix"
)

// IsInit reports whether this process was started by a host as a sandbox's
// init. Binaries that can start sandboxes call it first thing in main (and in
// TestMain) and hand over to Main when it is true.
func IsInit() bool { return os.Getenv(EnvMarker) == "1" }

// Main runs the init and never returns. Errors before serving go to the
// host over FDStatus; the init then exits, which tears the sandbox down.
func Main() {
	// Namespaces entered with unshare belong to the calling thread only.
	// The main goroutine keeps this thread and starts every command, so
	// that all of them are born in the namespaces set up here.
	runtime.LockOSThread()
	os.Clearenv()
	status := os.NewFile(FDStatus, "status")
	fail := func(err error) {
		fmt.Fprintf(status, "%v\n", err)
		os.Exit(1)
	}
	var cfg Config
	cfgFile := os.NewFile(FDConfig, "config")
	b, err := io.ReadAll(cfgFile)
	if err != nil {
		fail(fmt.Errorf("read config: %w", err))
	}
	cfgFile.Close()
	if err := json.Unmarshal(b, &cfg); err != nil {
		fail(fmt.Errorf("decode config: %w", err))
	}
	// The kernel's OOM killer must pick a command, never the init.
	_ = os.WriteFile("/proc/self/oom_score_adj", []byte("-1000"), 0)
	// Reaping must be in place before the first child can exit.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, unix.SIGCHLD)
	// Catch, not ignore: an ignored signal stays ignored in every command
	// started later, a caught one is reset to its default at exec.
	signal.Notify(make(chan os.Signal, 1), unix.SIGHUP, unix.SIGINT, unix.SIGTERM, unix.SIGTTOU, unix.SIGTTIN)

	if err := os.Chdir(cfg.Dir); err != nil {
		fail(fmt.Errorf("enter run directory: %w", err))
	}
	// The host bound the socket (a first socket in a fresh network
	// namespace costs a millisecond); it keeps working after pivot_root.
	ln, err := net.FileListener(os.NewFile(FDListener, "listener"))
	if err != nil {
		fail(fmt.Errorf("listener: %w", err))
	}
	if cfg.NewCgroupNS {
		if err := unix.Unshare(unix.CLONE_NEWCGROUP); err != nil {
			fail(fmt.Errorf("new cgroup namespace: %w", err))
		}
	}
	upper, err := setup(&cfg)
	if err != nil {
		fail(err)
	}
	srv := newServer()
	go srv.reap(sigs)
	go func() {
		srv.serve(ln)
		os.Exit(0)
	}()
	if cfg.Lifeline {
		lifeline := os.NewFile(FDLifeline, "lifeline")
		go func() {
			// Nothing is ever written; Read returns when the creator is gone.
			var buf [1]byte
			_, _ = lifeline.Read(buf[:])
			os.Exit(0)
		}()
	}
	fmt.Fprintf(status, "ok %d\n", upper)
	status.Close()
	srv.spawnLoop()
}
