// Package sandboxtest is the conformance suite every sandbox backend must
// pass. A backend's test calls Run with a Harness that builds its runtime
// and specs.
package sandboxtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/verisim/verisim/internal/sandbox"
)

// Harness describes the backend under test.
type Harness struct {
	Runtime sandbox.Runtime
	// Spec returns a spec for a fresh sandbox whose default user can write
	// to its home directory.
	Spec func(t *testing.T) sandbox.Spec
	// Isolated is true for backends that promise isolation: a sandbox sees
	// neither host files, host processes nor host network.
	Isolated bool
}

// Run runs the suite.
func Run(t *testing.T, h Harness) {
	t.Run("Exec", func(t *testing.T) { testExec(t, h) })
	t.Run("Files", func(t *testing.T) { testFiles(t, h) })
	t.Run("Timeout", func(t *testing.T) { testTimeout(t, h) })
	t.Run("Cancel", func(t *testing.T) { testCancel(t, h) })
	t.Run("TTY", func(t *testing.T) { testTTY(t, h) })
	t.Run("SnapshotFork", func(t *testing.T) { testSnapshotFork(t, h) })
	t.Run("Close", func(t *testing.T) { testClose(t, h) })
	t.Run("Concurrent", func(t *testing.T) { testConcurrent(t, h) })
	if h.Isolated {
		t.Run("Isolation", func(t *testing.T) { testIsolation(t, h) })
	}
}

// New creates a sandbox from h and closes it when the test ends.
func New(t *testing.T, h Harness) sandbox.Sandbox {
	t.Helper()
	sb, err := h.Runtime.Create(t.Context(), h.Spec(t))
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	t.Cleanup(func() {
		if err := sb.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return sb
}

// Result is the outcome of Sh.
type Result struct {
	Stdout, Stderr string
	Status         sandbox.ExitStatus
}

// Sh runs a shell script in sb as its default user.
func Sh(t *testing.T, sb sandbox.Sandbox, script string) Result {
	t.Helper()
	var out, errb bytes.Buffer
	st, err := sb.Run(t.Context(), sandbox.Cmd{Args: []string{"/bin/sh", "-c", script}, Stdout: &out, Stderr: &errb})
	if err != nil {
		t.Fatalf("run %q: %v", script, err)
	}
	return Result{out.String(), errb.String(), st}
}

func testExec(t *testing.T, h Harness) {
	sb := New(t, h)
	cases := []struct {
		name, script, stdin string
		wantOut, wantErr    string
		wantCode            int
	}{
		{"stdout", "echo hello", "", "hello\n", "", 0},
		{"stderr", "echo oops >&2; exit 3", "", "", "oops\n", 3},
		{"stdin", "tr a-z A-Z", "shout\n", "SHOUT\n", "", 0},
		{"big output", "head -c 1000000 /dev/zero | tr '\\0' x | wc -c", "", "1000000\n", "", 0},
		{"signal", "kill -TERM $$", "", "", "", 128 + 15},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			cmd := sandbox.Cmd{Args: []string{"/bin/sh", "-c", c.script}, Stdout: &out, Stderr: &errb}
			if c.stdin != "" {
				cmd.Stdin = strings.NewReader(c.stdin)
			}
			st, err := sb.Run(t.Context(), cmd)
			if err != nil {
				t.Fatal(err)
			}
			if out.String() != c.wantOut || errb.String() != c.wantErr || st.Code != c.wantCode {
				t.Errorf("got out=%q err=%q code=%d, want out=%q err=%q code=%d", out.String(), errb.String(), st.Code, c.wantOut, c.wantErr, c.wantCode)
			}
		})
	}
	t.Run("env and dir", func(t *testing.T) {
		var out bytes.Buffer
		_, err := sb.Run(t.Context(), sandbox.Cmd{Args: []string{"sh", "-c", `echo "$GREETING"; pwd`}, Env: []string{"PATH=/usr/bin:/bin", "GREETING=hi there"}, Dir: "/", Stdout: &out})
		if err != nil {
			t.Fatal(err)
		}
		if out.String() != "hi there\n/\n" {
			t.Errorf("got %q", out.String())
		}
	})
	t.Run("output of a command whose child keeps stdout open", func(t *testing.T) {
		// The child holds the pipe past the command's exit: the command's
		// own output must arrive whole, and Run must not wait for the child.
		start := time.Now()
		r := Sh(t, sb, "head -c 200000 /dev/zero | tr '\\0' y; sleep 30 & echo; echo done")
		if got := strings.Count(r.Stdout, "y"); got != 200000 || !strings.HasSuffix(r.Stdout, "\ndone\n") {
			t.Errorf("got %d bytes of y and tail %q", got, r.Stdout[max(0, len(r.Stdout)-10):])
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("Run waited %v for the background child", d)
		}
	})
	t.Run("only stdio is inherited", func(t *testing.T) {
		// ls's own directory descriptor is 3; nothing else may be open.
		r := Sh(t, sb, "ls /proc/self/fd | tr '\\n' ' '")
		if r.Stdout != "0 1 2 3 " {
			t.Errorf("a command inherits descriptors %q, want only 0 1 2 (3 is ls's)", r.Stdout)
		}
	})
	t.Run("command not found", func(t *testing.T) {
		_, err := sb.Run(t.Context(), sandbox.Cmd{Args: []string{"no-such-command-xyz"}})
		if !errors.Is(err, sandbox.ErrCommandNotFound) {
			t.Errorf("got %v, want ErrCommandNotFound", err)
		}
	})
	t.Run("default user home", func(t *testing.T) {
		r := Sh(t, sb, `test -w "$HOME" && echo writable`)
		if r.Stdout != "writable\n" {
			t.Errorf("home not writable: %+v", r)
		}
	})
}

func testFiles(t *testing.T, h Harness) {
	sb := New(t, h)
	ctx := t.Context()
	home := strings.TrimSpace(Sh(t, sb, "pwd").Stdout)
	p := filepath.Join(home, "notes.txt")
	data := bytes.Repeat([]byte("line of text\n"), 10000)
	if err := sb.WriteFile(ctx, p, data, 0o640); err != nil {
		t.Fatal(err)
	}
	got, err := sb.ReadFile(ctx, p)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes, err %v; want %d bytes", len(got), err, len(data))
	}
	fi, err := sb.Stat(ctx, p)
	if err != nil || fi.Size != int64(len(data)) || fi.Mode.Perm() != 0o640 || fi.Mode.IsDir() {
		t.Errorf("stat = %+v, %v", fi, err)
	}
	if r := Sh(t, sb, "wc -l < notes.txt"); strings.TrimSpace(r.Stdout) != "10000" {
		t.Errorf("command sees %q lines", r.Stdout)
	}
	ents, err := sb.ReadDir(ctx, home)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range ents {
		found = found || e.Name == "notes.txt"
	}
	if !found {
		t.Errorf("ReadDir(%s) lacks notes.txt: %+v", home, ents)
	}
	if _, err := sb.ReadFile(ctx, filepath.Join(home, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want fs.ErrNotExist", err)
	}
	if _, err := sb.Stat(ctx, "/no/such/dir"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing stat: %v, want fs.ErrNotExist", err)
	}
	if err := sb.WriteFile(ctx, "/no/such/dir/f", nil, 0o644); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("write into missing dir: %v, want fs.ErrNotExist", err)
	}
	// A directory larger than one protocol frame.
	if r := Sh(t, sb, `mkdir big && cd big && seq 1 20000 | xargs touch && n=$(printf '%0240d' 0) && for i in $(seq 1 3000); do : > "$i$n"; done`); r.Status.Code != 0 {
		t.Fatalf("make a large directory: %+v", r)
	}
	if ents, err := sb.ReadDir(ctx, filepath.Join(home, "big")); err != nil || len(ents) != 23000 {
		t.Errorf("ReadDir of 23000 entries: %d, %v", len(ents), err)
	}
	// Only regular files are read: a FIFO would block the read, /dev/zero
	// never end it.
	Sh(t, sb, "mkfifo fifo")
	for _, p := range []string{filepath.Join(home, "fifo"), "/dev/zero"} {
		done := make(chan error, 1)
		go func() {
			_, err := sb.ReadFile(ctx, p)
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, sandbox.ErrNotRegular) || !errors.Is(err, fs.ErrInvalid) {
				t.Errorf("ReadFile(%s): %v, want ErrNotRegular", p, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("ReadFile(%s) did not return", p)
		}
	}
	// A sparse file says it is huge and costs nothing: ReadFile refuses it
	// rather than fill the host's memory.
	Sh(t, sb, "truncate -s 1T sparse")
	for _, files := range []sandbox.Files{sb, sb.As(nil)} {
		if _, err := files.ReadFile(ctx, filepath.Join(home, "sparse")); !errors.Is(err, sandbox.ErrTooLarge) {
			t.Errorf("ReadFile of a 1 TiB sparse file: %v, want ErrTooLarge", err)
		}
	}
	// As the sandbox's user, the file operations have its permissions
	// (where the backend has users), and what they write is its.
	files := sb.As(nil)
	mine := filepath.Join(home, "mine.txt")
	if err := files.WriteFile(ctx, mine, []byte("x"), 0o600); err != nil {
		t.Fatalf("write as the user in its home: %v", err)
	}
	if got, err := files.ReadFile(ctx, mine); err != nil || string(got) != "x" {
		t.Errorf("read back as the user: %q, %v", got, err)
	}
	if r := Sh(t, sb, "test -O mine.txt && echo mine"); r.Stdout != "mine\n" {
		t.Errorf("a file written as the user belongs to %q", Sh(t, sb, "stat -c %U mine.txt").Stdout)
	}
	if !h.Isolated {
		return
	}
	st, err := sb.Run(ctx, sandbox.Cmd{Args: []string{"/bin/sh", "-c", "mkdir -p /srv/private && echo x > /srv/private/secret && chmod 600 /srv/private/secret && chmod 700 /srv/private"}, User: &sandbox.User{}})
	if err != nil || st.Code != 0 {
		// A rootless sandbox with one id has no root.
		t.Logf("no directory of root's to test with: %+v, %v", st, err)
		return
	}
	if got, err := sb.ReadFile(ctx, "/srv/private/secret"); err != nil || string(got) != "x\n" {
		t.Errorf("read root's file as root: %q, %v", got, err)
	}
	for _, p := range []string{"/srv/private/secret", "/srv/private"} {
		var err error
		if p == "/srv/private" {
			_, err = files.ReadDir(ctx, p)
		} else {
			_, err = files.ReadFile(ctx, p)
		}
		if !errors.Is(err, fs.ErrPermission) {
			t.Errorf("read %s as the user: %v, want fs.ErrPermission", p, err)
		}
	}
	if err := files.WriteFile(ctx, "/srv/private/planted", []byte("x"), 0o644); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("write into root's directory as the user: %v, want fs.ErrPermission", err)
	}
	if err := files.WriteFile(ctx, "/srv/private/secret", []byte("y"), 0o644); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("replace root's file as the user: %v, want fs.ErrPermission", err)
	}
}

func testTimeout(t *testing.T, h Harness) {
	sb := New(t, h)
	start := time.Now()
	var out bytes.Buffer
	// A duration no other test uses, to count only this test's sleeps.
	nap := fmt.Sprint(1000 + time.Now().UnixNano()%9000)
	st, err := sb.Run(t.Context(), sandbox.Cmd{
		Args:    []string{"/bin/sh", "-c", "sleep " + nap + " & sleep " + nap + " & echo started; wait"},
		Timeout: 300 * time.Millisecond, Stdout: &out,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !st.TimedOut || st.Signal == 0 {
		t.Errorf("status %+v, want timed out by a signal", st)
	}
	if out.String() != "started\n" {
		t.Errorf("output %q", out.String())
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("timeout took %v", d)
	}
	// The background sleeps died with the command.
	r := Sh(t, sb, "ps -eo args 2>/dev/null | grep -c '^sleep "+nap+"' || true")
	if strings.TrimSpace(r.Stdout) != "0" {
		t.Errorf("leftover processes after timeout: %q", r.Stdout)
	}
}

func testCancel(t *testing.T, h Harness) {
	sb := New(t, h)
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		time.Sleep(100 * time.Millisecond)
		cancel()
	}()
	_, err := sb.Run(ctx, sandbox.Cmd{Args: []string{"sleep", "300"}})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
	// The sandbox stays usable.
	if r := Sh(t, sb, "echo still here"); r.Stdout != "still here\n" {
		t.Errorf("after cancel: %+v", r)
	}

	// Cancelling kills the command even while stdin it never reads is
	// still pending.
	nap := fmt.Sprint(1000 + time.Now().UnixNano()%9000)
	ctx, cancel = context.WithCancel(t.Context())
	go func() {
		time.Sleep(300 * time.Millisecond)
		cancel()
	}()
	_, err = sb.Run(ctx, sandbox.Cmd{Args: []string{"sleep", nap}, Stdin: bytes.NewReader(make([]byte, 8<<20))})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("with pending stdin: got %v, want context.Canceled", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		r := Sh(t, sb, "ps -eo args 2>/dev/null | grep -c '^sleep "+nap+"' || true")
		if strings.TrimSpace(r.Stdout) == "0" {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("the cancelled command is still running")
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func testTTY(t *testing.T, h Harness) {
	sb := New(t, h)
	var out bytes.Buffer
	st, err := sb.Run(t.Context(), sandbox.Cmd{
		Args:   []string{"/bin/sh", "-c", "test -t 0 && test -t 1 && stty size"},
		TTY:    &sandbox.WinSize{Rows: 33, Cols: 101},
		Stdout: &out,
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.Code != 0 || !strings.Contains(out.String(), "33 101") {
		t.Errorf("tty: code %d, output %q", st.Code, out.String())
	}
}

func testSnapshotFork(t *testing.T, h Harness) {
	sb := New(t, h)
	ctx := t.Context()
	if r := Sh(t, sb, "echo base > state.txt && mkdir -p d && echo x > d/x && rm -f .profile"); r.Status.Code != 0 {
		t.Fatalf("prepare: %+v", r)
	}
	snap, err := sb.Snapshot(ctx)
	if errors.Is(err, sandbox.ErrUnsupported) {
		t.Skip("backend has no snapshots")
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Runtime.RemoveSnapshot(context.Background(), snap) })
	// The original goes on changing without affecting the snapshot.
	Sh(t, sb, "echo changed > state.txt")
	var forks []sandbox.Sandbox
	for i := range 2 {
		f, err := h.Runtime.Fork(ctx, snap, sandbox.ForkOptions{})
		if err != nil {
			t.Fatalf("fork %d: %v", i, err)
		}
		forks = append(forks, f)
	}
	for i, f := range forks {
		r := Sh(t, f, "cat state.txt d/x; test -e .profile && echo profile-back; true")
		if r.Stdout != "base\nx\n" {
			t.Errorf("fork %d sees %q", i, r.Stdout)
		}
	}
	Sh(t, forks[0], "echo mine > state.txt")
	if r := Sh(t, forks[1], "cat state.txt"); r.Stdout != "base\n" {
		t.Errorf("fork 1 sees fork 0's write: %q", r.Stdout)
	}
	for _, f := range forks {
		if err := f.Close(ctx); err != nil {
			t.Error(err)
		}
	}
	if err := h.Runtime.RemoveSnapshot(ctx, snap); err != nil {
		t.Errorf("remove snapshot: %v", err)
	}
	if _, err := h.Runtime.Fork(ctx, snap, sandbox.ForkOptions{}); !errors.Is(err, sandbox.ErrSnapshotNotFound) {
		t.Errorf("fork of removed snapshot: %v", err)
	}
}

func testClose(t *testing.T, h Harness) {
	sb, err := h.Runtime.Create(t.Context(), h.Spec(t))
	if err != nil {
		t.Fatal(err)
	}
	Sh(t, sb, "sleep 300 >/dev/null 2>&1 &")
	if err := sb.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := sb.Close(t.Context()); err != nil {
		t.Errorf("second close: %v", err)
	}
	if _, err := sb.Run(t.Context(), sandbox.Cmd{Args: []string{"true"}}); !errors.Is(err, sandbox.ErrClosed) {
		t.Errorf("run after close: %v, want ErrClosed", err)
	}
}

func testConcurrent(t *testing.T, h Harness) {
	sb := New(t, h)
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Go(func() {
			var out bytes.Buffer
			st, err := sb.Run(t.Context(), sandbox.Cmd{Args: []string{"/bin/sh", "-c", fmt.Sprintf("echo %d", i)}, Stdout: &out})
			if err == nil && (st.Code != 0 || out.String() != fmt.Sprintf("%d\n", i)) {
				err = fmt.Errorf("run %d: code %d out %q", i, st.Code, out.String())
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

func testIsolation(t *testing.T, h Harness) {
	sb := New(t, h)
	t.Run("host files", func(t *testing.T) {
		secret := filepath.Join(t.TempDir(), "host-secret")
		if err := os.WriteFile(secret, []byte("s3cret"), 0o644); err != nil {
			t.Fatal(err)
		}
		r := Sh(t, sb, "cat "+secret+" 2>&1; ls / ; cat /proc/1/root/"+secret+" 2>&1")
		if strings.Contains(r.Stdout, "s3cret") {
			t.Errorf("sandbox read a host file: %q", r.Stdout)
		}
	})
	t.Run("host processes", func(t *testing.T) {
		r := Sh(t, sb, "ls /proc | grep -c '^[0-9]'")
		var n int
		fmt.Sscan(r.Stdout, &n)
		if n == 0 || n > 10 {
			t.Errorf("sandbox sees %d processes", n)
		}
		if r := Sh(t, sb, fmt.Sprintf("test -d /proc/%d && echo visible", os.Getpid())); r.Stdout != "" && os.Getpid() > 10 {
			t.Errorf("sandbox sees the host test process %d", os.Getpid())
		}
	})
	t.Run("host loopback", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		accepted := make(chan struct{}, 1)
		go func() {
			c, err := ln.Accept()
			if err == nil {
				c.Close()
				accepted <- struct{}{}
			}
		}()
		port := ln.Addr().(*net.TCPAddr).Port
		if r := Sh(t, sb, "command -v bash"); r.Stdout == "" {
			t.Fatal("the check connects with bash's /dev/tcp; the image has no bash")
		}
		r := Sh(t, sb, fmt.Sprintf("timeout 2 bash -c 'echo > /dev/tcp/127.0.0.1/%d' 2>/dev/null && echo connected", port))
		select {
		case <-accepted:
			t.Error("the host server accepted a connection from the sandbox")
		default:
		}
		if r.Stdout != "" {
			t.Errorf("sandbox reached the host's loopback: %q", r.Stdout)
		}
		// No interface but lo and no route: nothing outside is reachable,
		// checked without sending a packet anywhere.
		r = Sh(t, sb, "ls /sys/class/net; tail -n +2 /proc/net/route")
		if strings.TrimSpace(r.Stdout) != "lo" {
			t.Errorf("sandbox has a network beyond loopback: %q", r.Stdout)
		}
	})
}
