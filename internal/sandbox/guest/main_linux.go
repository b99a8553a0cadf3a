package guest

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"

	"golang.org/x/sys/unix"

	"github.com/verisim/verisim/internal/sandbox/wire"
)

// IsInit reports whether this process was started by a host as a sandbox's
// init. Binaries that can start sandboxes call it first thing in main (and in
// TestMain) and hand over to Main when it is true.
func IsInit() bool { v := os.Getenv(EnvMarker); return v == "1" || v == "pool" }

// Main runs the init and never returns. Errors before serving go to the
// host over FDStatus; the init then exits, which tears the sandbox down.
func Main() {
	pooled := os.Getenv(EnvMarker) == "pool"
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
	// The kernel's OOM killer must pick a command, never the init.
	_ = os.WriteFile("/proc/self/oom_score_adj", []byte("-1000"), 0)
	// Reaping must be in place before the first child can exit.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, unix.SIGCHLD)
	// Catch, not ignore: an ignored signal stays ignored in every command
	// started later, a caught one is reset to its default at exec.
	signal.Notify(make(chan os.Signal, 1), unix.SIGHUP, unix.SIGINT, unix.SIGTERM, unix.SIGTTOU, unix.SIGTTIN)
	// The host bound the socket (a first socket in a fresh network
	// namespace costs a millisecond); it keeps working after pivot_root.
	ln, err := net.FileListener(os.NewFile(FDListener, "listener"))
	if err != nil {
		fail(fmt.Errorf("listener: %w", err))
	}
	srv := newServer()
	go srv.reap(sigs)
	go srv.spawnLoop()
	go func() {
		srv.serve(ln)
		os.Exit(0)
	}()

	// The host started the init in its run directory. Until the config
	// arrives, do what needs no config. A pooled init, which has time until
	// someone wants a sandbox, also runs one command through the whole
	// server, so that the sandbox's first command does not pay for the
	// runtime's first-use costs (threads, heap, codecs).
	if err := prepare(); err != nil {
		fail(err)
	}
	if pooled {
		warmUp()
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
	if cfg.NewCgroupNS {
		if err := srv.onSpawner(func() error { return unix.Unshare(unix.CLONE_NEWCGROUP) }); err != nil {
			fail(fmt.Errorf("new cgroup namespace: %w", err))
		}
	}
	upper, err := finish(&cfg)
	if err != nil {
		fail(err)
	}
	if !cfg.Lifeline {
		unix.Close(FDLifeline)
	} else {
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
	select {}
}

// warmUp runs /bin/true of the host (the root is not built yet) through
// the init's own socket, as the host would. Failing is harmless: it only
// saves time later.
func warmUp() {
	nc, err := net.Dial("unix", SocketName)
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
