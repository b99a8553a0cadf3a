package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// verisim is the binary under test, built once by TestMain.
var verisim string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "verisim-cli-")
	if err != nil {
		panic(err)
	}
	verisim = filepath.Join(dir, "verisim")
	out, err := exec.Command("go", "build", "-o", verisim, ".").CombinedOutput()
	if err != nil {
		os.Stderr.Write(out)
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type cli struct {
	t          *testing.T
	state, run string
}

// newCLI gives a test its own state and run directories.
func newCLI(t *testing.T) *cli {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the local sandbox backend needs root (CI runs as root)")
	}
	run, err := os.MkdirTemp("/dev/shm", "verisim-cli-run-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(run) })
	return &cli{t: t, state: t.TempDir(), run: run}
}

type result struct {
	stdout, stderr string
	code           int
}

func (c *cli) do(stdin string, args ...string) result {
	c.t.Helper()
	return runVerisim(c.t, strings.NewReader(stdin), append([]string{"--state", c.state, "--run-dir", c.run}, args...)...)
}

// runVerisim runs the binary under test with stdin and returns what it
// printed and its exit status.
func runVerisim(t *testing.T, stdin io.Reader, args ...string) result {
	t.Helper()
	cmd := exec.Command(verisim, args...)
	var out, errb bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{out.String(), errb.String(), code}
}

// assertClean checks that no sandbox, workspace or temporary layer is left.
func (c *cli) assertClean() {
	c.t.Helper()
	ents, _ := os.ReadDir(c.run)
	for _, e := range ents {
		// init-<hash> holds the runtime's link to the init binary, as
		// lasting as the run directory itself.
		if e.IsDir() && !strings.HasPrefix(e.Name(), "init-") {
			c.t.Errorf("run directory left: %s", e.Name())
		}
	}
	layers, _ := os.ReadDir(filepath.Join(c.state, "layers"))
	for _, e := range layers {
		cache := strings.HasPrefix(e.Name(), "persona-") || strings.HasPrefix(e.Name(), "gocache-")
		if !cache || strings.Contains(e.Name(), ".tmp") {
			c.t.Errorf("layer left: %s", e.Name())
		}
	}
	// Nor the cgroup the run directory's sandboxes nest under
	// (docs/ARCHITECTURE.md: verisim-<8 hex digits of its path's hash>),
	// in any hierarchy, at any depth.
	sum := sha256.Sum256([]byte(c.run))
	parent := "verisim-" + hex.EncodeToString(sum[:4])
	_ = filepath.WalkDir("/sys/fs/cgroup", func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if d.Name() == parent {
			c.t.Errorf("cgroup left: %s", p)
			return filepath.SkipDir
		}
		return nil
	})
}

func gitRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"-c", "user.name=A", "-c", "user.email=a@example.com", "commit", "-q", "--allow-empty", "-m", "first"},
	} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	os.WriteFile(filepath.Join(dir, "README.md"), []byte("# demo\n"), 0o644)
	exec.Command("git", "-C", dir, "add", ".").Run()
	exec.Command("git", "-C", dir, "-c", "user.name=A", "-c", "user.email=a@example.com", "commit", "-q", "-m", "readme").Run()
	return dir
}

func TestRun(t *testing.T) {
	c := newCLI(t)
	cases := []struct {
		name      string
		stdin     string
		args      []string
		wantCode  int
		wantOut   string
		wantInErr string
	}{
		{"persona user", "", []string{"sandbox", "run", "--", "sh", "-c", "id -un; hostname; pwd"}, 0, "maya\nmaya-thinkpad\n/home/maya\n", ""},
		{"stdin passes through", "shout\n", []string{"sandbox", "run", "--", "tr", "a-z", "A-Z"}, 0, "SHOUT\n", ""},
		{"exit status passes through", "", []string{"sandbox", "run", "--", "sh", "-c", "exit 7"}, 7, "", ""},
		{"command not found", "", []string{"sandbox", "run", "--", "no-such-tool"}, exitNoCommand, "", "command not found"},
		{"timeout", "", []string{"sandbox", "run", "--timeout", "200ms", "--", "sleep", "30"}, exitTimeout, "", "--timeout"},
		{"unknown image", "", []string{"sandbox", "run", "--image", "no-such-image", "--", "true"}, exitImage, "", `unknown image "no-such-image"`},
		{"unreadable archive", "", []string{"sandbox", "run", "--image", "/nonexistent/img.tar", "--", "true"}, exitImage, "", "img.tar"},
		{"missing repo", "", []string{"sandbox", "run", "--repo", "/nonexistent/repo", "--", "true"}, exitRepo, "", "repo path /nonexistent/repo does not exist"},
		{"bad limits", "", []string{"sandbox", "run", "--limits", "memory=lots", "--", "true"}, exitUsage, "", "--limits memory"},
		{"unknown limit", "", []string{"sandbox", "run", "--limits", "gpus=1", "--", "true"}, exitUsage, "", "unknown limit"},
		{"no such sandbox", "", []string{"sandbox", "exec", "000000000000", "--", "true"}, exitNotFound, "", "no such sandbox"},
		{"no such snapshot", "", []string{"sandbox", "fork", "sdeadbeef0000"}, exitNotFound, "", "no such snapshot"},
		{"unknown flag", "", []string{"sandbox", "run", "--bogus", "--", "true"}, exitUsage, "", "unknown flag"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := c.do(tc.stdin, tc.args...)
			if r.code != tc.wantCode || (tc.wantOut != "" && r.stdout != tc.wantOut) || !strings.Contains(r.stderr, tc.wantInErr) {
				t.Errorf("got code %d out %q err %q; want code %d out %q err containing %q", r.code, r.stdout, r.stderr, tc.wantCode, tc.wantOut, tc.wantInErr)
			}
			if n := strings.Count(strings.TrimSpace(r.stderr), "\n"); r.code >= 120 && n > 0 {
				t.Errorf("error is not one line: %q", r.stderr)
			}
		})
	}
	c.assertClean()
}

func TestCorruptArchive(t *testing.T) {
	c := newCLI(t)
	bad := filepath.Join(t.TempDir(), "image.tar")
	os.WriteFile(bad, []byte("this is not a tar archive"), 0o644)
	r := c.do("", "sandbox", "run", "--image", bad, "--", "true")
	if r.code != exitImage || !strings.Contains(r.stderr, "image.tar") || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
		t.Errorf("got %d %q", r.code, r.stderr)
	}
	c.assertClean()
}

func TestBadPersona(t *testing.T) {
	c := newCLI(t)
	p := filepath.Join(t.TempDir(), "persona.yaml")
	os.WriteFile(p, []byte("user: sam\nfull_name: Sam Lee\nemail: sam@example.com\nhostname: sam-laptop\ntimezone: Europe/Paris\nuid: 0\n"), 0o644)
	r := c.do("", "sandbox", "run", "--persona", p, "--", "true")
	if r.code != exitPersona || !strings.Contains(r.stderr, "persona.yaml:6") || !strings.Contains(r.stderr, "uid") {
		t.Errorf("got %d %q", r.code, r.stderr)
	}
	c.assertClean()
}

func TestRepoAndLifecycle(t *testing.T) {
	c := newCLI(t)
	repo := gitRepo(t)
	r := c.do("", "sandbox", "run", "--repo", repo, "--", "sh", "-c", "pwd; git log --format=%s; git remote")
	want := "/home/maya/src/" + filepath.Base(repo) + "\nreadme\nfirst\norigin\n"
	if r.code != 0 || r.stdout != want {
		t.Fatalf("repo run: code %d out %q err %q; want %q", r.code, r.stdout, r.stderr, want)
	}
	c.assertClean()

	// keep → exec → snapshot → fork → rm
	r = c.do("", "sandbox", "run", "--keep", "--repo", repo, "--", "sh", "-c", "echo kept > state.txt")
	id := strings.TrimSpace(r.stderr)
	if r.code != 0 || len(id) != 12 {
		t.Fatalf("run --keep: %+v", r)
	}
	if r = c.do("", "sandbox", "ls"); !strings.Contains(r.stdout, id) || !strings.Contains(r.stdout, "running") {
		t.Errorf("ls: %q", r.stdout)
	}
	snap := strings.TrimSpace(c.do("", "sandbox", "snapshot", id).stdout)
	if !strings.HasPrefix(snap, "s") {
		t.Fatalf("snapshot printed %q", snap)
	}
	fork := strings.TrimSpace(c.do("", "sandbox", "fork", snap).stdout)
	if r = c.do("", "sandbox", "exec", fork, "--", "cat", "state.txt"); r.stdout != "kept\n" {
		t.Errorf("fork sees %+v", r)
	}
	if r = c.do("", "sandbox", "rm", fork, id, snap); r.code != 0 {
		t.Errorf("rm: %+v", r)
	}
	if r = c.do("", "sandbox", "gc"); r.code != 0 || !strings.Contains(r.stdout, "removed 0 sandboxes") {
		t.Errorf("gc after rm: %+v", r)
	}
	c.assertClean()
}

// TestBuiltImage builds a minimal Debian with debootstrap and runs the
// default persona on it: accounts merged, locale present, tools there.
func TestBuiltImage(t *testing.T) {
	if os.Getenv("VERISIM_TEST_DEBOOTSTRAP") != "1" {
		t.Skip("set VERISIM_TEST_DEBOOTSTRAP=1 to build an image with debootstrap (downloads about 200 MB)")
	}
	c := newCLI(t)
	if r := c.do("", "image", "build", "tiny", "--packages", "git"); r.code != 0 {
		t.Fatalf("image build: %+v", r)
	}
	if r := c.do("", "image", "ls"); !strings.Contains(r.stdout, "tiny") {
		t.Errorf("image ls: %q", r.stdout)
	}
	r := c.do("", "sandbox", "run", "--image", "tiny", "--", "sh", "-c", "id -un; locale 2>&1 >/dev/null; git --version | cut -d' ' -f1-2; . /etc/os-release; echo $VERSION_CODENAME")
	if r.code != 0 || r.stdout != "maya\ngit version\nbookworm\n" {
		t.Errorf("sandbox on the built image: code %d out %q err %q", r.code, r.stdout, r.stderr)
	}
	c.assertClean()
}

// startServing starts verisim with args, a command that prints "… on
// http://ADDR" on its first stderr line and serves until interrupted. It
// returns the URL and stop, which sends Ctrl-C and waits for a clean exit.
func startServing(t *testing.T, args ...string) (url string, stop func() error) {
	t.Helper()
	cmd := exec.Command(verisim, args...)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	lines := bufio.NewReader(stderr)
	line, err := lines.ReadString('\n')
	m := regexp.MustCompile(`on (http://\S+)`).FindStringSubmatch(line)
	if err != nil || m == nil {
		t.Fatalf("verisim %s: no address in %q (%v)", strings.Join(args, " "), line, err)
	}
	go io.Copy(io.Discard, lines)
	return m[1], func() error {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			return err
		case <-time.After(30 * time.Second):
			return errors.New("did not stop on Ctrl-C within 30 s")
		}
	}
}
