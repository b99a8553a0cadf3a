package local

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/verisim/verisim/internal/sandbox"
	"github.com/verisim/verisim/internal/sandbox/sandboxtest"
)

// TestSecurity runs the escape and exhaustion checks while 20 other
// sandboxes work, and then checks that none of them was disturbed.
func TestSecurity(t *testing.T) {
	rt := testRuntime(t)
	ctx := t.Context()

	const neighbours = 20
	var nbs []sandbox.Sandbox
	for i := range neighbours {
		sb, err := rt.Create(ctx, testSpec(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sb.Close(context.Background()) })
		nbs = append(nbs, sb)
		_ = i
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var nbErrs []string
	for i, sb := range nbs {
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				want := fmt.Sprintf("neighbour %d round %d", i, n)
				r := sandboxtest.Sh(t, sb, fmt.Sprintf("echo '%s' > mine.txt && cat mine.txt && ls /proc | grep -c '^[0-9]'", want))
				lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
				if len(lines) != 2 || lines[0] != want {
					mu.Lock()
					nbErrs = append(nbErrs, fmt.Sprintf("neighbour %d: %q", i, r.Stdout))
					mu.Unlock()
				}
			}
		})
	}

	t.Run("checks", func(t *testing.T) {
		t.Run("ForkBomb", func(t *testing.T) { t.Parallel(); testForkBomb(t, rt) })
		t.Run("MemoryHog", func(t *testing.T) { t.Parallel(); testMemoryHog(t, rt) })
		t.Run("DiskQuota", func(t *testing.T) { t.Parallel(); testDiskQuota(t, rt) })
		t.Run("CgroupEscape", func(t *testing.T) { t.Parallel(); testCgroupEscape(t, rt) })
		t.Run("BecomeRoot", func(t *testing.T) { t.Parallel(); testBecomeRoot(t, rt) })
		t.Run("HostWrites", func(t *testing.T) { t.Parallel(); testHostWrites(t, rt) })
		t.Run("SignalInit", func(t *testing.T) {
			t.Parallel()
			// As root inside, as graders run: the one user that may
			// signal PID 1 in a sandbox that maps the whole id range.
			testSignalInit(t, newSandbox(t, rt, nil), &sandbox.User{Name: "root", Home: "/root"})
		})
	})
	close(stop)
	wg.Wait()
	for _, e := range nbErrs {
		t.Error(e)
	}
}

func newSandbox(t *testing.T, rt *Runtime, mod func(*sandbox.Spec)) sandbox.Sandbox {
	t.Helper()
	spec := testSpec(t)
	if mod != nil {
		mod(&spec)
	}
	sb, err := rt.Create(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close(context.Background()) })
	return sb
}

func testForkBomb(t *testing.T, rt *Runtime) {
	sb := newSandbox(t, rt, func(s *sandbox.Spec) { s.Limits.PIDs = 64 })
	var out bytes.Buffer
	bombDone := make(chan struct{})
	var st sandbox.ExitStatus
	var err error
	go func() {
		defer close(bombDone)
		st, err = sb.Run(t.Context(), sandbox.Cmd{
			Args:    []string{"/bin/bash", "-c", "bomb() { bomb | bomb & }; bomb; sleep 5"},
			Timeout: 4 * time.Second, Stderr: &out,
		})
	}()
	// While the bomb holds every pid the commands may have, the init must
	// keep serving: these requests make it start goroutines and, now and
	// then, threads, which a shared limit would deny it.
	time.Sleep(time.Second)
	var reqs sync.WaitGroup
	for range 8 {
		reqs.Add(1)
		go func() {
			defer reqs.Done()
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			_, _ = sb.ReadFile(ctx, "/etc/hostname")
			_, _ = sb.Run(ctx, sandbox.Cmd{Args: []string{"/bin/true"}})
		}()
	}
	reqs.Wait()
	<-bombDone
	if err != nil {
		t.Fatal(err)
	}
	if !st.TimedOut {
		// bash got no pid for its sleep and exited before its timeout: no
		// tree was killed, and the bomb still runs. The init kills it.
		t.Logf("fork bomb ended with %+v", st)
		if err := sb.(*box).StopAll(t.Context()); err != nil {
			t.Fatalf("stop the fork bomb: %v", err)
		}
	}
	// The host still starts processes promptly.
	start := time.Now()
	if err := exec.Command("/bin/true").Run(); err != nil {
		t.Fatalf("host cannot start a process: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("host took %v to start a process", d)
	}
	b := sb.(*box)
	limit := func(dir string) string {
		pids, _ := os.ReadFile(filepath.Join(dir, "pids.max"))
		return strings.TrimSpace(string(pids))
	}
	if d := b.m.Cgroup.dirFor("pids"); rt.cg.usesV2("pids") {
		if got := limit(d); got != "64" {
			t.Errorf("pids.max = %q, want 64", got)
		}
	} else {
		// 64 for the commands and one for the init's spawner thread on
		// the user's slice; the sandbox's leaves the rest of the init room.
		slice, _ := sessionScope(b.m.Spec.User.UID, sessionNumber(b.m.ID))
		if got := limit(filepath.Join(d, slice)); got != "65" {
			t.Errorf("user slice's pids.max = %q, want 65", got)
		}
		if got, want := limit(d), strconv.Itoa(65+initHeadroom); got != want {
			t.Errorf("sandbox's pids.max = %q, want %s", got, want)
		}
	}
	if !strings.Contains(out.String(), "fork") && !strings.Contains(out.String(), "Resource temporarily unavailable") {
		t.Errorf("fork bomb never hit the limit; stderr: %.200q", out.String())
	}
	// The sandbox itself survives and works once the bomb is gone.
	if r := sandboxtest.Sh(t, sb, "echo alive"); r.Stdout != "alive\n" {
		t.Errorf("sandbox after fork bomb: %+v", r)
	}
}

func testMemoryHog(t *testing.T, rt *Runtime) {
	sb := newSandbox(t, rt, func(s *sandbox.Spec) { s.Limits.MemoryBytes = 64 << 20 })
	// awk doubles a string until memory runs out.
	const hog = `BEGIN { s = "x"; while (1) s = s s }`
	st, err := sb.Run(t.Context(), sandbox.Cmd{Args: []string{"/bin/sh", "-c", "awk '" + hog + "'; echo survived $?"}, Timeout: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if st.Code != 0 || st.TimedOut {
		t.Fatalf("the shell around the memory hog did not survive: %+v", st)
	}
	r := sandboxtest.Sh(t, sb, "echo alive")
	if r.Stdout != "alive\n" {
		t.Errorf("sandbox after OOM: %+v", r)
	}
	b := sb.(*box)
	if b.m.Cgroup.oomKills() == 0 {
		t.Errorf("no OOM kill recorded in the sandbox's cgroup")
	}
	// A command that is itself the hog reports OOMKilled.
	st, err = sb.Run(t.Context(), sandbox.Cmd{Args: []string{"awk", hog}, Timeout: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if !st.OOMKilled {
		t.Errorf("tail /dev/zero: %+v, want OOMKilled", st)
	}
	// Memory filled through a tmpfs belongs to no process: the OOM
	// killer must still pick a command (here the writer), never the init,
	// which would end the sandbox. Commands run at an OOM score that
	// counts a fifth of the memory limit: 100 MB here, more than this
	// init holds (built with -race, it is about 20 MB; verisim-init 4).
	sb = newSandbox(t, rt, func(s *sandbox.Spec) { s.Limits.MemoryBytes = 512 << 20 })
	if r := sandboxtest.Sh(t, sb, "sleep 0.2; cat /proc/self/oom_score_adj"); r.Stdout != "200\n" {
		t.Errorf("a command's OOM score adjustment: %q, want 200", r.Stdout)
	}
	// After a moment: the init writes a command's score as soon as it has
	// started, and a command that fills memory at once may come before
	// (see commandOOMScore).
	st, err = sb.Run(t.Context(), sandbox.Cmd{Args: []string{"/bin/sh", "-c", "sleep 0.2; exec dd if=/dev/zero of=/dev/shm/fill bs=1M count=600"}, Timeout: 60 * time.Second})
	if err != nil {
		t.Fatalf("filling /dev/shm past the memory limit: %v", err)
	}
	if !st.OOMKilled {
		t.Errorf("filling /dev/shm past the memory limit: %+v, want the writer OOM-killed", st)
	}
	if r := sandboxtest.Sh(t, sb, "rm /dev/shm/fill && echo alive"); r.Stdout != "alive\n" {
		t.Errorf("sandbox after a tmpfs filled its memory: %+v", r)
	}
}

func testDiskQuota(t *testing.T, rt *Runtime) {
	sb := newSandbox(t, rt, func(s *sandbox.Spec) { s.Limits.DiskBytes = 16 << 20 })
	r := sandboxtest.Sh(t, sb, "head -c 64M /dev/zero > big; echo $?; rm -f big")
	if !strings.Contains(r.Stderr, "No space left on device") || r.Stdout == "0\n" {
		t.Errorf("writing past the quota: exit %q, stderr %q", r.Stdout, r.Stderr)
	}
	if r := sandboxtest.Sh(t, sb, "echo fine > small && cat small"); r.Stdout != "fine\n" {
		t.Errorf("sandbox after ENOSPC: %+v", r)
	}
}

func testCgroupEscape(t *testing.T, rt *Runtime) {
	sb := newSandbox(t, rt, func(s *sandbox.Spec) { s.Limits.MemoryBytes = 128 << 20 })
	r := sandboxtest.Sh(t, sb, `
for f in /sys/fs/cgroup/cgroup.procs /sys/fs/cgroup/*/cgroup.procs /sys/fs/cgroup/memory/memory.limit_in_bytes; do
  echo $$ > "$f" 2>/dev/null && echo "wrote $f"
done
mount -t cgroup -o memory none /tmp 2>/dev/null && echo mounted
cat /proc/self/cgroup
echo PID1
cat /proc/1/cgroup`)
	if strings.Contains(r.Stdout, "wrote") || strings.Contains(r.Stdout, "mounted") {
		t.Errorf("sandbox changed cgroups: %q", r.Stdout)
	}
	b := sb.(*box)
	lim, _ := os.ReadFile(filepath.Join(b.m.Cgroup.dirFor("memory"), "memory.limit_in_bytes"))
	if strings.TrimSpace(string(lim)) != strconv.Itoa(128<<20) {
		t.Errorf("memory limit now %q", lim)
	}
	// Every process of the sandbox is still in its cgroup.
	var out bytes.Buffer
	sb.Run(t.Context(), sandbox.Cmd{Args: []string{"/bin/sh", "-c", "sleep 30 & echo $!"}, Stdout: &out})
	procs := b.m.Cgroup.pids()
	if len(procs) < 2 {
		t.Errorf("cgroup lists %v; want the init and the sleep", procs)
	}
	// Inside, the cgroup paths say nothing about verisim, and nothing
	// lies outside the namespace's root ("/.."). On a v1 pids hierarchy
	// a command sits in its login session's scope and PID 1 in init.scope.
	if strings.Contains(r.Stdout, "verisim") || strings.Contains(r.Stdout, b.m.ID) || strings.Contains(r.Stdout, "/..") {
		t.Errorf("/proc/self/cgroup or /proc/1/cgroup shows host cgroup names: %q", r.Stdout)
	}
	self, pid1, _ := strings.Cut(r.Stdout, "PID1\n")
	if !rt.cg.usesV2("pids") {
		_, scope := sessionScope(b.m.Spec.User.UID, sessionNumber(b.m.ID))
		if !strings.Contains(self, ":pids:/"+scope+"\n") {
			t.Errorf("a command's /proc/self/cgroup lacks pids:/%s:\n%s", scope, self)
		}
		if !strings.Contains(pid1, ":pids:/init.scope\n") {
			t.Errorf("PID 1's /proc/1/cgroup lacks pids:/init.scope:\n%s", pid1)
		}
		// The hierarchy is mounted, rooted at the sandbox's cgroup.
		ls := sandboxtest.Sh(t, sb, "ls /sys/fs/cgroup; ls -d /sys/fs/cgroup/pids/*.scope /sys/fs/cgroup/pids/*/*.slice")
		if ls.Stdout != "pids\n/sys/fs/cgroup/pids/init.scope\n/sys/fs/cgroup/pids/user.slice/user-1000.slice\n" {
			t.Errorf("/sys/fs/cgroup inside: %q", ls.Stdout)
		}
	}
}

func testBecomeRoot(t *testing.T, rt *Runtime) {
	sb := newSandbox(t, rt, nil)
	r := sandboxtest.Sh(t, sb, `
su -c 'id -u' root </dev/null 2>/dev/null
su -c 'id -u' </dev/null 2>/dev/null
sudo -n id -u 2>/dev/null
newgrp root </dev/null 2>/dev/null
for f in $(find / -xdev -perm -4000 -type f 2>/dev/null) /usr/bin/su /usr/bin/mount; do
  "$f" --help </dev/null >/dev/null 2>&1
done
id -u
`)
	if strings.TrimSpace(r.Stdout) != "1000" {
		t.Errorf("a command became root: %q", r.Stdout)
	}
	// No process in the sandbox runs as root but the init.
	r = sandboxtest.Sh(t, sb, `for p in /proc/[0-9]*; do u=$(awk '/^Uid:/{print $2}' $p/status 2>/dev/null); [ "$u" = 0 ] && basename $p; done`)
	if strings.TrimSpace(r.Stdout) != "1" {
		t.Errorf("root processes in the sandbox: %q", r.Stdout)
	}
}

// testSignalInit sends PID 1 every signal there is, as user as, and checks
// that the sandbox lives on: Go's runtime would end the init on many of
// them (SIGTERM, SIGQUIT, SIGSEGV sent with kill, ...), and the sandbox
// with it. It also checks that the init reaps an orphan.
func testSignalInit(t *testing.T, sb sandbox.Sandbox, as *sandbox.User) {
	t.Helper()
	var out, errb bytes.Buffer
	st, err := sb.Run(t.Context(), sandbox.Cmd{
		Args:   []string{"/bin/sh", "-c", `n=0; for i in $(seq 1 64); do kill -$i 1 && n=$((n+1)); done; sleep 0.2; echo "$n sent"`},
		User:   as,
		Stdout: &out, Stderr: &errb,
	})
	if err != nil || st.Code != 0 {
		t.Fatalf("signalling PID 1: %v, %+v, %q %q", err, st, out.String(), errb.String())
	}
	if strings.TrimSpace(out.String()) != "64 sent" {
		t.Fatalf("PID 1 not signalled: %q %q", out.String(), errb.String())
	}
	// The init lives: commands still run, and it still reaps: an orphan
	// that exits leaves no zombie behind.
	r := sandboxtest.Sh(t, sb, `(sleep 0.1 &); sleep 0.6; for p in /proc/[0-9]*; do s=$(awk '{print $3}' $p/stat 2>/dev/null); [ "$s" = Z ] && echo "zombie $(basename $p)"; done; echo done`)
	if r.Stdout != "done\n" {
		t.Errorf("after the signals: %q %q", r.Stdout, r.Stderr)
	}
}

func testHostWrites(t *testing.T, rt *Runtime) {
	layer := hostLayer(t)
	sb := newSandbox(t, rt, func(s *sandbox.Spec) { s.Layers = []string{layer} })
	before, _ := os.ReadFile(filepath.Join(layer, "etc/passwd"))
	r := sandboxtest.Sh(t, sb, "touch /usr/bin/evil 2>&1; echo x >> /etc/passwd 2>&1; echo rc=$?")
	if _, err := os.Stat("/usr/bin/evil"); err == nil {
		os.Remove("/usr/bin/evil")
		t.Fatal("sandbox wrote into the host's /usr")
	}
	after, _ := os.ReadFile(filepath.Join(layer, "etc/passwd"))
	if !bytes.Equal(before, after) {
		t.Errorf("sandbox changed its image layer")
	}
	_ = r
	// Even root inside cannot write the read-only /usr.
	var out bytes.Buffer
	sb.Run(t.Context(), sandbox.Cmd{Args: []string{"/bin/sh", "-c", "touch /usr/evil2 2>&1"}, User: &sandbox.User{}, Stdout: &out})
	if _, err := os.Stat("/usr/evil2"); err == nil {
		os.Remove("/usr/evil2")
		t.Fatal("root in the sandbox wrote into the host's /usr")
	}
}

// TestCloseLeavesNothing checks that a closed sandbox has no process,
// mount, cgroup or directory left.
func TestCloseLeavesNothing(t *testing.T) {
	rt := testRuntime(t)
	sb, err := rt.Create(t.Context(), testSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	sandboxtest.Sh(t, sb, "sleep 300 >/dev/null 2>&1 & echo data > f")
	b := sb.(*box)
	if err := sb.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	assertGone(t, rt, b.m)
}

func assertGone(t *testing.T, rt *Runtime, m *meta) {
	t.Helper()
	if alive(m.InitPID, m.InitTick) {
		t.Errorf("init %d still running", m.InitPID)
	}
	for c, d := range m.Cgroup.Dirs {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("%s cgroup %s still there", c, d)
		}
	}
	if _, err := os.Stat(rt.runDir(m.ID)); err == nil {
		t.Errorf("run directory still there")
	}
	f, _ := os.Open("/proc/self/mountinfo")
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.Contains(sc.Text(), m.ID) {
			t.Errorf("mount left: %s", sc.Text())
		}
	}
}

// TestGCAfterCrash kills a process that owns sandboxes with SIGKILL and
// checks that GC removes all it left.
func TestGCAfterCrash(t *testing.T) {
	rt := testRuntime(t)
	cmd := exec.Command(os.Args[0], "-test.run", "^TestCrashHelper$")
	cmd.Env = append(os.Environ(), "VERISIM_CRASH_STATE="+rt.state, "VERISIM_CRASH_RUN="+rt.run, "VERISIM_CRASH_LAYER="+hostLayer(t))
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	var ids []string
	for sc.Scan() {
		if id, ok := strings.CutPrefix(sc.Text(), "SANDBOX "); ok {
			ids = append(ids, id)
		}
		if sc.Text() == "READY" {
			break
		}
	}
	if len(ids) != 3 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper made %d sandboxes", len(ids))
	}
	var metas []*meta
	for _, id := range ids {
		m, err := readMeta(rt.runDir(id))
		if err != nil {
			t.Fatal(err)
		}
		metas = append(metas, m)
	}
	cmd.Process.Kill()
	cmd.Wait()

	rep, err := rt.GC(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("gc: %+v", rep)
	for _, m := range metas {
		if m.Keep {
			// A kept sandbox is meant to outlive its creator; gc leaves it.
			if !alive(m.InitPID, m.InitTick) {
				t.Errorf("kept sandbox %s died", m.ID)
			}
			sb, err := rt.Open(t.Context(), m.ID)
			if err != nil {
				t.Fatal(err)
			}
			if r := sandboxtest.Sh(t, sb, "cat f"); r.Stdout != "data\n" {
				t.Errorf("kept sandbox lost its state: %+v", r)
			}
			if err := sb.Close(t.Context()); err != nil {
				t.Error(err)
			}
		}
		assertGone(t, rt, m)
	}
	if rep.Sandboxes != 2 {
		t.Errorf("gc removed %d sandboxes, want 2", rep.Sandboxes)
	}
}

// TestCrashHelper is the process TestGCAfterCrash kills.
func TestCrashHelper(t *testing.T) {
	state := os.Getenv("VERISIM_CRASH_STATE")
	if state == "" {
		t.Skip("helper process for TestGCAfterCrash")
	}
	rt, err := New(Options{StateDir: state, RunDir: os.Getenv("VERISIM_CRASH_RUN")})
	if err != nil {
		t.Fatal(err)
	}
	spec := testSpec(t)
	spec.Layers = []string{os.Getenv("VERISIM_CRASH_LAYER")}
	for _, keep := range []bool{false, false, true} {
		spec.Keep = keep
		sb, err := rt.Create(context.Background(), spec)
		if err != nil {
			t.Fatal(err)
		}
		sandboxtest.Sh(t, sb, "echo data > f; sleep 300 >/dev/null 2>&1 &")
		fmt.Printf("SANDBOX %s\n", sb.ID())
	}
	fmt.Println("READY")
	time.Sleep(time.Minute)
}
