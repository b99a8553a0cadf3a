package local

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/verisim/verisim/internal/sandbox"
	"github.com/verisim/verisim/internal/sandbox/guest"
	"github.com/verisim/verisim/internal/sandbox/local/subidtest"
	"github.com/verisim/verisim/internal/sandbox/sandboxtest"
)

func TestMain(m *testing.M) {
	if guest.IsInit() {
		guest.Main()
	}
	os.Exit(m.Run())
}

// testRuntime returns a runtime over a fresh state directory, or skips when
// the machine cannot run local sandboxes.
func testRuntime(t testing.TB) *Runtime {
	t.Helper()
	return testRuntimeWarm(t, 0)
}

func testRuntimeWarm(t testing.TB, warm int) *Runtime {
	t.Helper()
	if os.Geteuid() != 0 && os.Getenv("VERISIM_ROOTLESS_TEST") == "" {
		t.Skip("the local backend needs root here (CI runs as root); TestRootless covers it without")
	}
	// The run directory goes on /dev/shm, a tmpfs everywhere, so that
	// the runtime need not mount one in the test's temporary directory.
	run, err := os.MkdirTemp("/dev/shm", "verisim-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(run) })
	rt, err := New(Options{StateDir: t.TempDir(), RunDir: run, Warm: warm})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rt.Close(context.Background()); err != nil {
			t.Errorf("close runtime: %v", err)
		}
		// Nothing of the runtime's may be left: no run directory, no
		// cgroup, no init.
		for c, base := range rt.cg.allBases() {
			if _, err := os.Stat(base); err == nil {
				t.Errorf("%s cgroup %s left after close", c, base)
			}
		}
		if ents, _ := os.ReadDir(run); len(ents) > 1 {
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			t.Errorf("run directory not empty after close: %v", names)
		}
	})
	return rt
}

// hostLayer builds a minimal root filesystem layer that, with the host's
// /usr bound read-only, gives a working Debian-like userland: merged-/usr
// links, /etc with a user, a home directory.
func hostLayer(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	for _, l := range []string{"bin", "lib", "lib64", "sbin"} {
		if target, err := os.Readlink("/" + l); err == nil {
			if err := os.Symlink(target, filepath.Join(dir, l)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, d := range []string{"etc", "usr", "tmp", "proc", "sys", "dev", "run", "var/tmp", "home/dev", "root"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(filepath.Join(dir, "tmp"), 0o1777)
	files := map[string]string{
		"etc/passwd": "root:x:0:0:root:/root:/bin/bash\ndev:x:1000:1000:Dev:/home/dev:/bin/bash\n",
		"etc/group":  "root:x:0:\ntty:x:5:\ndev:x:1000:\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Debian reaches awk, which and friends through /etc/alternatives.
	if ents, err := os.ReadDir("/etc/alternatives"); err == nil {
		os.MkdirAll(filepath.Join(dir, "etc/alternatives"), 0o755)
		for _, e := range ents {
			if l, err := os.Readlink(filepath.Join("/etc/alternatives", e.Name())); err == nil {
				os.Symlink(l, filepath.Join(dir, "etc/alternatives", e.Name()))
			}
		}
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(filepath.Join(dir, "home/dev"), 1000, 1000); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func testSpec(t testing.TB) sandbox.Spec {
	return sandbox.Spec{
		Layers:   []string{hostLayer(t)},
		Binds:    []sandbox.Bind{{Source: "/usr", Target: "/usr", ReadOnly: true}},
		Hostname: "devbox",
		User:     sandbox.User{Name: "dev", UID: 1000, GID: 1000, Home: "/home/dev"},
		Env:      []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/home/dev", "USER=dev", "LANG=C.UTF-8"},
		Limits:   sandbox.Limits{MemoryBytes: 512 << 20, PIDs: 256, CPUs: 1, DiskBytes: 256 << 20},
	}
}

func TestConformance(t *testing.T) {
	for _, warm := range []int{0, 2} {
		t.Run(fmt.Sprintf("warm=%d", warm), func(t *testing.T) {
			rt := testRuntimeWarm(t, warm)
			sandboxtest.Run(t, sandboxtest.Harness{
				Runtime:  rt,
				Spec:     func(t *testing.T) sandbox.Spec { return testSpec(t) },
				Isolated: true,
			})
		})
	}
}

// Commands run at OOM score 200, and the children they start, and the
// init keeps its own; no host process is touched (a pooled init runs its
// warm-up command before pivot_root, when "/proc" is still the host's and
// a command's pid names a host process).
func TestCommandOOMScore(t *testing.T) {
	rt := testRuntimeWarm(t, 1)
	self, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		t.Skip("no /proc/self/ns/pid")
	}
	// Host processes (of this PID namespace) at 200: sandboxes' commands
	// are in namespaces of their own.
	at200 := func() map[string]bool {
		out := map[string]bool{}
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			if ns, err := os.Readlink("/proc/" + e.Name() + "/ns/pid"); err != nil || ns != self {
				continue
			}
			if b, err := os.ReadFile("/proc/" + e.Name() + "/oom_score_adj"); err == nil && strings.TrimSpace(string(b)) == "200" {
				out[e.Name()] = true
			}
		}
		return out
	}
	before := at200()
	for range 2 {
		sb, err := rt.Create(t.Context(), testSpec(t))
		if err != nil {
			t.Fatal(err)
		}
		// The init writes a command's score as soon as it has started;
		// a child started at once may come before (see commandOOMScore).
		r := sandboxtest.Sh(t, sb, "sleep 0.2; cat /proc/self/oom_score_adj /proc/$$/oom_score_adj")
		if f := strings.Fields(r.Stdout); len(f) != 2 || f[0] != "200" || f[1] != "200" {
			t.Errorf("OOM score adjustments of a command's child and the command: %q, want 200", r.Stdout)
		}
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/oom_score_adj", sb.(*box).InitPID())); err != nil || strings.TrimSpace(string(b)) == "200" {
			t.Errorf("the init's OOM score adjustment: %q, %v, want its own", b, err)
		}
		sb.Close(t.Context())
	}
	for pid := range at200() {
		if !before[pid] {
			t.Errorf("host process %s was given OOM score 200", pid)
		}
	}
}

// TestDeepForkChain snapshots and forks past maxDepth, deleting, replacing
// and recreating files on the way, and checks that the stack is squashed
// and the last fork sees exactly the state it should.
func TestDeepForkChain(t *testing.T) {
	testDeepForkChain(t, testRuntime(t), testSpec(t))
}

func testDeepForkChain(t *testing.T, rt *Runtime, spec sandbox.Spec) {
	ctx := t.Context()
	var sb sandbox.Sandbox
	sb, err := rt.Create(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	sandboxtest.Sh(t, sb, "mkdir -p keep gone swap && echo 0 > keep/n && echo x > gone/f && echo old > swap/f && ln notes hard 2>/dev/null; echo a > notes && ln notes hard")
	var snaps []string
	for i := 1; i <= maxDepth+3; i++ {
		script := fmt.Sprintf("echo %d > keep/n && echo %d >> log", i, i)
		switch i {
		case 3:
			script += " && rm -rf gone"
		case 5:
			script += " && rm -rf swap && mkdir swap && echo new > swap/g"
		case 7:
			script += " && mkdir gone && echo back > gone/again"
		}
		if r := sandboxtest.Sh(t, sb, script); r.Status.Code != 0 {
			t.Fatalf("step %d: %+v", i, r)
		}
		snap, err := sb.Snapshot(ctx)
		if err != nil {
			t.Fatalf("snapshot %d: %v", i, err)
		}
		snaps = append(snaps, snap)
		next, err := rt.Fork(ctx, snap, sandbox.ForkOptions{})
		if err != nil {
			t.Fatalf("fork %d: %v", i, err)
		}
		sb.Close(ctx)
		sb = next
	}
	defer sb.Close(ctx)
	r := sandboxtest.Sh(t, sb, "cat keep/n; ls gone swap; cat swap/g gone/again; wc -l < log; stat -c %h notes")
	want := fmt.Sprintf("%d\ngone:\nagain\n\nswap:\ng\nnew\nback\n%d\n2\n", maxDepth+3, maxDepth+3)
	if r.Stdout != want {
		t.Errorf("after %d forks: %q, want %q", maxDepth+3, r.Stdout, want)
	}
	layers := sb.(*box).m.Spec.Layers
	snapLayers := 0
	for _, l := range layers {
		if rt.isSnapLayer(l) {
			snapLayers++
		}
	}
	if snapLayers > maxDepth {
		t.Errorf("%d snapshot layers stacked; want at most %d", snapLayers, maxDepth)
	}
	sb.Close(ctx)
	for i := len(snaps) - 1; i >= 0; i-- {
		if err := rt.RemoveSnapshot(ctx, snaps[i]); err != nil {
			t.Errorf("remove %s: %v", snaps[i], err)
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(rt.state, "layers")); len(ents) != 0 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("layers left after removing every snapshot: %v", names)
	}
}

// TestRootless runs the conformance suite as an unprivileged user: the
// local backend then puts each sandbox in a user namespace that maps the
// sandbox's user to the caller, without cgroups.
func TestRootless(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("starts the rootless run as user nobody, which takes root")
	}
	if b, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err != nil || strings.TrimSpace(string(b)) == "0" {
		t.Skip("user namespaces are disabled on this kernel")
	}
	// The test binary, where nobody can run it.
	dir, err := os.MkdirTemp("", "verisim-rootless-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "local.test")
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	// Owned by the user that runs it, as an installed verisim would be:
	// root inside a sandbox then holds capabilities over the file.
	if err := os.Chown(bin, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	run := func(t *testing.T, cmd *exec.Cmd) {
		t.Helper()
		out, err := cmd.CombinedOutput()
		t.Logf("%s", out)
		if err != nil {
			t.Fatalf("rootless conformance run: %v", err)
		}
		if !strings.Contains(string(out), "--- PASS: TestRootlessHelper") {
			t.Fatal("the rootless run did not pass")
		}
	}
	env := []string{"PATH=/usr/bin:/bin", "TMPDIR=/tmp", "HOME=/tmp"}

	// The host has no subordinate ids for nobody: one id each way.
	t.Run("single id", func(t *testing.T) {
		cmd := exec.Command(bin, "-test.run", "^TestRootlessHelper$", "-test.v")
		cmd.Env = append(env, "VERISIM_ROOTLESS_TEST=1")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		run(t, cmd)
	})

	// With ranges in /etc/subuid and /etc/subgid (seen only by this run,
	// bound over the host's in a mount namespace of its own) and
	// newuidmap/newgidmap, a whole range is mapped.
	t.Run("subordinate ids", func(t *testing.T) {
		run(t, subidtest.Command(t, dir, append(env, "VERISIM_ROOTLESS_TEST=subids"), bin, "-test.run", "^TestRootlessHelper$", "-test.v"))
	})
}

// TestRootlessHelper is what TestRootless runs as nobody.
func TestRootlessHelper(t *testing.T) {
	if os.Getenv("VERISIM_ROOTLESS_TEST") == "" || os.Geteuid() == 0 {
		t.Skip("run by TestRootless")
	}
	rt := testRuntime(t)
	if !rt.rootless {
		t.Fatal("runtime is not rootless")
	}
	sandboxtest.Run(t, sandboxtest.Harness{
		Runtime: rt,
		Spec: func(t *testing.T) sandbox.Spec {
			s := testSpec(t)
			s.Limits = sandbox.Limits{DiskBytes: 64 << 20}
			return s
		},
		Isolated: true,
	})
	t.Run("signals to PID 1", func(t *testing.T) {
		// With one id, commands run as the init's user, and may signal it.
		testSignalInit(t, sandboxtest.New(t, sandboxtest.Harness{Runtime: rt, Spec: func(t *testing.T) sandbox.Spec {
			s := testSpec(t)
			s.Limits = sandbox.Limits{}
			return s
		}}), nil)
	})
	t.Run("commands hold no capabilities", func(t *testing.T) {
		sb := sandboxtest.New(t, sandboxtest.Harness{Runtime: rt, Spec: func(t *testing.T) sandbox.Spec {
			s := testSpec(t)
			s.Limits = sandbox.Limits{}
			return s
		}})
		r := sandboxtest.Sh(t, sb, "grep -E '^Cap(Eff|Prm|Amb)' /proc/self/status; id -u")
		want := "CapPrm:\t0000000000000000\nCapEff:\t0000000000000000\nCapAmb:\t0000000000000000\n1000\n"
		if r.Stdout != want {
			t.Errorf("got %q, want %q", r.Stdout, want)
		}
	})
	t.Run("ids", func(t *testing.T) {
		sb := sandboxtest.New(t, sandboxtest.Harness{Runtime: rt, Spec: func(t *testing.T) sandbox.Spec {
			s := testSpec(t)
			s.Limits = sandbox.Limits{DiskBytes: 64 << 20}
			s.User.Groups = []uint32{5}
			return s
		}})
		r := sandboxtest.Sh(t, sb, "wc -l < /proc/self/uid_map; id -G")
		var out bytes.Buffer
		_, rootErr := sb.Run(t.Context(), sandbox.Cmd{Args: []string{"sh", "-c", "id -u; touch /tmp/r; stat -c %u /tmp/r"}, User: &sandbox.User{Name: "root", UID: 0, GID: 0, Home: "/root"}, Stdout: &out})
		if os.Getenv("VERISIM_ROOTLESS_TEST") != "subids" {
			if rt.subids != nil {
				t.Fatal("subordinate ids in use without ranges")
			}
			if r.Stdout != "1\n1000\n" || rootErr == nil {
				t.Errorf("single-id map: %q, running as root: %v", r.Stdout, rootErr)
			}
			return
		}
		if rt.subids == nil {
			t.Fatal("the ranges were not found")
		}
		// The user's own id, the ids below it, the ids above it; the
		// user's groups; root inside (not on the host) owns its files.
		if r.Stdout != "3\n1000 5\n" || rootErr != nil || out.String() != "0\n0\n" {
			t.Errorf("subordinate ids: %q; as root: %q, %v", r.Stdout, out.String(), rootErr)
		}
	})
	rootlessSpec := func(t *testing.T) sandbox.Spec {
		s := testSpec(t)
		s.Limits = sandbox.Limits{DiskBytes: 64 << 20}
		return s
	}
	t.Run("deep fork chain", func(t *testing.T) { testDeepForkChain(t, rt, rootlessSpec(t)) })
	t.Run("snapshot", func(t *testing.T) { testRootlessSnapshot(t, rt, rootlessSpec(t)) })
	t.Run("deep locked directory", func(t *testing.T) {
		// Past PATH_MAX and mode 000: the caller's own tree, that only a
		// helper with CAP_DAC_OVERRIDE can remove.
		sb, err := rt.Create(t.Context(), rootlessSpec(t))
		if err != nil {
			t.Fatal(err)
		}
		defer sb.Close(context.Background())
		if r := sandboxtest.Sh(t, sb, `for i in $(seq 1100); do mkdir ddd && cd -P ddd || exit 1; done; mkdir x && touch x/f && chmod 000 x`); r.Status.Code != 0 {
			t.Fatalf("deep tree: %+v", r)
		}
		snap, err := sb.Snapshot(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if err := rt.RemoveSnapshot(t.Context(), snap); err != nil {
			t.Fatalf("remove snapshot: %v", err)
		}
		if ents, _ := os.ReadDir(filepath.Join(rt.state, "layers")); len(ents) != 0 {
			t.Errorf("layers left: %d", len(ents))
		}
	})
	t.Run("init binary out of reach", func(t *testing.T) {
		// Root inside (subordinate ids) may ptrace the init: /proc/1/exe
		// must not lead to the caller's own file.
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		before, err := os.Stat(exe)
		if err != nil {
			t.Fatal(err)
		}
		sb, err := rt.Create(t.Context(), rootlessSpec(t))
		if err != nil {
			t.Fatal(err)
		}
		defer sb.Close(context.Background())
		if r := sandboxtest.Sh(t, sb, "cat /proc/1/comm"); r.Stdout != "systemd\n" {
			t.Errorf("/proc/1/comm: %q", r.Stdout)
		}
		if rt.subids != nil {
			var out bytes.Buffer
			root := &sandbox.User{Name: "root", UID: 0, GID: 0, Home: "/root"}
			sb.Run(t.Context(), sandbox.Cmd{Args: []string{"sh", "-c", "chmod 4777 /proc/1/exe; chown 5:5 /proc/1/exe; true"}, User: root, Stdout: &out, Stderr: &out})
			t.Logf("as root inside: %s", out.String())
		}
		if after, err := os.Stat(exe); err != nil || after.Mode() != before.Mode() || after.Sys().(*syscall.Stat_t).Uid != before.Sys().(*syscall.Stat_t).Uid {
			t.Errorf("the init's file changed from inside: %v -> %v (%v)", before.Mode(), after.Mode(), err)
		}
		// The next sandbox starts from a fresh copy.
		next, err := rt.Create(t.Context(), rootlessSpec(t))
		if err != nil {
			t.Fatalf("create after tampering: %v", err)
		}
		next.Close(context.Background())
	})
	t.Run("limits need root", func(t *testing.T) {
		s := testSpec(t)
		if _, err := rt.Create(t.Context(), s); err == nil || !strings.Contains(err.Error(), "need root") {
			t.Errorf("create with memory limits: %v", err)
		}
	})
}

// testRootlessSnapshot: a rootless sandbox is snapshotted (paused by its
// init, copied by a helper) with a process running (stopped for the copy,
// running again after) and one suspended (still suspended after), and
// with a shell held in vfork by a child stopped before exec (taken as
// paused, not waited for), and with subordinate ids files of other users (root's unreadable directory,
// www-data's file) keep their owners in a fork; removing the snapshot
// leaves no layer behind, though the caller could not delete those files.
func testRootlessSnapshot(t *testing.T, rt *Runtime, spec sandbox.Spec) {
	ctx := t.Context()
	sb, err := rt.Create(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close(context.Background())
	root := &sandbox.User{Name: "root", UID: 0, GID: 0, Home: "/root"}
	subids := rt.subids != nil
	if subids {
		var out bytes.Buffer
		st, err := sb.Run(ctx, sandbox.Cmd{Args: []string{"sh", "-c", "mkdir -p /srv/secret && echo s > /srv/secret/key && chmod 700 /srv/secret && echo w > /srv/www && chown 33:33 /srv/www"}, User: root, Stdout: &out, Stderr: &out})
		if err != nil || st.Code != 0 {
			t.Fatalf("as root: %v %+v %s", err, st, out.String())
		}
	}
	// A running process that notes each SIGCONT, and one suspended
	// before the snapshot.
	pids := strings.Fields(sandboxtest.Sh(t, sb, `echo mine > note
setsid sh -c 'trap "echo cont >> /tmp/conts" CONT; : > /tmp/trapped; while :; do sleep 0.05; done' >/dev/null 2>&1 &
echo $!
until test -e /tmp/trapped; do sleep 0.01; done
setsid sleep 60 >/dev/null 2>&1 &
kill -STOP $! && echo $!`).Stdout)
	if len(pids) != 2 {
		t.Fatalf("background processes: %q", pids)
	}
	// A shell (dash vforks each command) held in vfork by a child stopped
	// before it could exec: the parent sleeps uninterruptibly and never
	// shows stopped; the pause must take it as paused, not time out. A
	// long PATH that the child walks before exec widens the window.
	vfork := strings.Fields(sandboxtest.Sh(t, sb, `PATH=$(seq -s '' -f '/n%g:' 8000)$PATH setsid dash -c 'while :; do env true; done' >/dev/null 2>&1 &
p=$!
n=0
while [ $n -lt 200000 ]; do
  n=$((n+1))
  c=; read -r c _ < /proc/$p/task/$p/children; [ -n "$c" ] || continue
  kill -STOP $c 2>/dev/null || continue
  cs=; read -r cs < /proc/$c/stat 2>/dev/null; cs=${cs##*) }
  if [ "${cs%% *}" = T ]; then
    st=; read -r st < /proc/$p/stat; st=${st##*) }
    if [ "${st%% *}" = D ]; then echo $p $c; exit; fi
  fi
  kill -CONT $c 2>/dev/null
done`).Stdout)
	if len(vfork) != 2 {
		t.Fatalf("no child caught in vfork before exec: %q", vfork)
	}
	snap, err := sb.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Continued, the child execs and exits, and the shell, running again,
	// reaps it.
	if r := sandboxtest.Sh(t, sb, "kill -CONT "+vfork[1]+"; for i in $(seq 100); do test -e /proc/"+vfork[1]+" || break; sleep 0.02; done; test -e /proc/"+vfork[1]+" && echo blocked; kill "+vfork[0]); r.Stdout != "" {
		t.Errorf("the vfork parent %s did not reap its child %s once continued", vfork[0], vfork[1])
	}
	r := sandboxtest.Sh(t, sb, "for i in $(seq 40); do test -s /tmp/conts && break; sleep 0.05; done; cat /tmp/conts; ps -o stat= -p "+pids[0]+","+pids[1])
	if f := strings.Fields(r.Stdout); len(f) != 3 || f[0] != "cont" || !strings.HasPrefix(f[1], "S") || !strings.HasPrefix(f[2], "T") {
		t.Errorf("after the snapshot: %q; want the running process stopped and continued once (cont, S) and the suspended one still stopped (T)", r.Stdout)
	}
	f, err := rt.Fork(ctx, snap, sandbox.ForkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r := sandboxtest.Sh(t, f, "cat note"); r.Stdout != "mine\n" {
		t.Errorf("fork sees %q", r.Stdout)
	}
	if subids {
		var out bytes.Buffer
		st, err := f.Run(ctx, sandbox.Cmd{Args: []string{"sh", "-c", "stat -c '%u %a' /srv/secret /srv/www && cat /srv/secret/key"}, User: root, Stdout: &out, Stderr: &out})
		if want := "0 700\n33 644\ns\n"; err != nil || st.Code != 0 || out.String() != want {
			t.Errorf("fork, as root: %v %+v %q, want %q", err, st, out.String(), want)
		}
	}
	f.Close(ctx)
	if err := rt.RemoveSnapshot(ctx, snap); err != nil {
		t.Fatalf("remove snapshot: %v", err)
	}
	if ents, _ := os.ReadDir(filepath.Join(rt.state, "layers")); len(ents) != 0 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("layers left after removing the snapshot: %v", names)
	}
}

// TestView shows a host directory copy-on-write: the sandbox's user reads
// and changes it, the host directory stays as it was, and a snapshot is
// refused rather than silently losing the view's changes.
func TestView(t *testing.T) {
	rt := testRuntime(t)
	host := t.TempDir()
	os.WriteFile(filepath.Join(host, "keep.txt"), []byte("original\n"), 0o644)
	os.WriteFile(filepath.Join(host, "gone.txt"), []byte("delete me\n"), 0o644)
	for _, p := range []string{host, filepath.Join(host, "keep.txt"), filepath.Join(host, "gone.txt")} {
		if err := os.Chown(p, 1000, 1000); err != nil {
			t.Fatal(err)
		}
	}
	spec := testSpec(t)
	spec.Views = []sandbox.View{{Source: host, Target: "/home/dev/src/proj"}}
	spec.Dir = "/home/dev/src/proj"
	sb, err := rt.Create(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close(context.Background())
	var out bytes.Buffer
	st, err := sb.Run(t.Context(), sandbox.Cmd{
		Args:   []string{"/bin/sh", "-c", `cat keep.txt && echo changed > keep.txt && rm gone.txt && echo new > new.txt && stat -c '%U %a' . && ls && if grep -q "$0" /proc/self/mountinfo; then echo host path shows; else echo; fi`, host},
		Stdout: &out, Stderr: &out,
	})
	if err != nil || st.Code != 0 {
		t.Fatalf("in the view: %v %+v\n%s", err, st, out.String())
	}
	if want := "original\ndev 755\nkeep.txt\nnew.txt\n\n"; out.String() != want {
		t.Errorf("in the view:\n%s\nwant:\n%s", out.String(), want)
	}
	for name, want := range map[string]string{"keep.txt": "original\n", "gone.txt": "delete me\n"} {
		if b, err := os.ReadFile(filepath.Join(host, name)); err != nil || string(b) != want {
			t.Errorf("host %s: %q %v, want it untouched", name, b, err)
		}
	}
	if _, err := os.Stat(filepath.Join(host, "new.txt")); err == nil {
		t.Error("a file made in the view appeared on the host")
	}
	if _, err := sb.Snapshot(t.Context()); !errors.Is(err, sandbox.ErrUnsupported) {
		t.Errorf("snapshot of a sandbox with a view: %v, want ErrUnsupported", err)
	}
}

// TestGCLeavesOtherRuntimesAlone: a runtime collecting garbage must not
// take another runtime's live sandbox (another run directory, same host and
// cgroup) for an orphan.
func TestGCLeavesOtherRuntimesAlone(t *testing.T) {
	a, b := testRuntime(t), testRuntime(t)
	sb, err := a.Create(t.Context(), testSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close(context.Background())
	if _, err := b.GC(t.Context()); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if st, err := sb.Run(t.Context(), sandbox.Cmd{Args: []string{"echo", "alive"}, Stdout: &out}); err != nil || st.Code != 0 || out.String() != "alive\n" {
		t.Fatalf("after another runtime's GC: %v %+v %q", err, st, out.String())
	}
}

// TestGCCaches: gc removes a cached layer only when no sandbox or snapshot
// uses it and no machine has used it for a week.
func TestGCCaches(t *testing.T) {
	rt := testRuntime(t)
	layers := filepath.Join(rt.state, "layers")
	old := time.Now().Add(-8 * 24 * time.Hour)
	mk := func(name string, mtime time.Time) string {
		p := filepath.Join(layers, name)
		if err := os.MkdirAll(filepath.Join(p, "home", "dev"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "home", "dev", ".bashrc"), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return p
	}
	stale := mk("persona-0123456789abcdef", old)
	staleGo := mk("gocache-0123456789abcdef", old)
	recent := mk("persona-fedcba9876543210", time.Now().Add(-6*24*time.Hour))
	underSnap := mk("persona-00000000000000aa", old)
	// A snapshot whose spec stacks on underSnap keeps it.
	snap := mk("s0000000000000001", time.Now())
	b, err := json.Marshal(snapMeta{ID: "s0000000000000001", Spec: sandbox.Spec{Layers: []string{snap, underSnap}}, Depth: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(snap+".json", b, 0o644); err != nil {
		t.Fatal(err)
	}
	// So does a running sandbox that uses one.
	underBox := mk("gocache-00000000000000bb", old)
	spec := testSpec(t)
	spec.Layers = append([]string{underBox}, spec.Layers...)
	sb, err := rt.Create(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close(context.Background())
	// Layers being built: by this process (kept, however long it takes)
	// and by one that is gone (removed).
	// Its times copied from an old layer, as a snapshot copy's are.
	building := mk(fmt.Sprintf("gocache-00000000000000cc.tmp-%d-1a2b3c", os.Getpid()), old)
	orphan := mk("persona-00000000000000dd.tmp-999999999-1a2b3c", time.Now())
	lock := filepath.Join(layers, "gocache-0123456789abcdef.lock")
	if err := os.WriteFile(lock, nil, 0o600); err != nil {
		t.Fatal(err)
	}

	rep, err := rt.GC(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Caches != 2 {
		t.Errorf("gc removed %d cached layers, want 2: %+v", rep.Caches, rep)
	}
	for _, p := range []string{stale, staleGo, orphan} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s unused for 8 days: still there (%v)", filepath.Base(p), err)
		}
	}
	for _, p := range []string{recent, underSnap, underBox, snap, snap + ".json", lock, building} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s should stay: %v", filepath.Base(p), err)
		}
	}
	ents, _ := os.ReadDir(layers)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") && e.Name() != filepath.Base(building) {
			t.Errorf("gc left %s", e.Name())
		}
	}
	// A builder that marks a layer used while gc moves it aside gets it
	// back.
	touched := mk("persona-00000000000000ee", time.Now())
	if removed, err := removeCache(touched); removed || err != nil {
		t.Errorf("removeCache of a layer just used: removed %v, %v", removed, err)
	}
	if _, err := os.Stat(filepath.Join(touched, "home", "dev", ".bashrc")); err != nil {
		t.Errorf("layer used meanwhile not put back whole: %v", err)
	}
	if r := sandboxtest.Sh(t, sb, "echo ok"); r.Stdout != "ok\n" {
		t.Errorf("sandbox after gc: %+v", r)
	}
}
