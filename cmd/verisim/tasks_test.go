package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/verisim/verisim/internal/sandbox/local/subidtest"
	"github.com/verisim/verisim/internal/trajectory"
)

// TestTasksValidateBundled proves every task of the bundled suite: the
// reference solution passes and doing nothing does not.
func TestTasksValidateBundled(t *testing.T) {
	c := newCLI(t)
	r := c.do("", "tasks", "validate", "--tasks", "../../tasks", "--concurrency", "2")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	m := regexp.MustCompile(`(\d+) of (\d+) tasks valid`).FindStringSubmatch(r.stdout)
	if m == nil || m[1] != m[2] {
		t.Fatalf("no verdict line:\n%s", r.stdout)
	}
	if n, _ := strconv.Atoi(m[1]); n < 30 {
		t.Errorf("the bundled suite has %d tasks, want at least 30", n)
	}
	t.Logf("\n%s", r.stdout)
	c.assertClean()
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(dir, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestTasksBadInput(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"one/task.yaml":     "id: one\ninstruction: fix it\nrepo: {dir: repo}\ngrade:\n  command: make test\n  formt: tap\n",
		"one/repo/Makefile": "test:\n\ttrue\n",
	})
	r := runVerisim(t, nil, "tasks", "ls", "--tasks", dir)
	if r.code != exitTask || !strings.Contains(r.stderr, `one/task.yaml:6: field "grade.formt": unknown field`) {
		t.Errorf("bad field: exit %d, stderr %q", r.code, r.stderr)
	}
	r = runVerisim(t, nil, "tasks", "show", "nope", "--tasks", "../../tasks")
	if r.code != exitTask || !strings.Contains(r.stderr, `no task "nope"`) {
		t.Errorf("unknown id: exit %d, stderr %q", r.code, r.stderr)
	}
	r = runVerisim(t, nil, "tasks", "ls", "--tasks", filepath.Join(dir, "missing"))
	if r.code != exitTask || !strings.Contains(r.stderr, "tasks directory") {
		t.Errorf("missing dir: exit %d, stderr %q", r.code, r.stderr)
	}
	r = runVerisim(t, nil, "rollout", "--model", "http://127.0.0.1:1", "--tasks", "../../tasks")
	if r.code != exitUsage || !strings.Contains(r.stderr, "--out DIR is required") {
		t.Errorf("no --out: exit %d, stderr %q", r.code, r.stderr)
	}
	r = runVerisim(t, nil, "rollout", "--model", "http://127.0.0.1:1", "--out", t.TempDir(), "--length-penalty", "-1")
	if r.code != exitUsage || !strings.Contains(r.stderr, "--length-penalty") {
		t.Errorf("negative length penalty: exit %d, stderr %q", r.code, r.stderr)
	}
	r = runVerisim(t, nil, "eval", "--model", "http://127.0.0.1:1", "--out", t.TempDir(), "--samples", "2", "--k", "3")
	if r.code != exitUsage || !strings.Contains(r.stderr, "--k 3") {
		t.Errorf("k > samples: exit %d, stderr %q", r.code, r.stderr)
	}
	r = runVerisim(t, nil, "tasks", "show", "fix-compound-duration", "--tasks", "../../tasks")
	if r.code != 0 || !strings.Contains(r.stdout, "id: fix-compound-duration") || !strings.Contains(r.stdout, "reference solution: true") {
		t.Errorf("show: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// greetTask is a small shell task with a hidden TAP test.
func greetTask(t *testing.T) string {
	dir := t.TempDir()
	writeGreetTask(t, dir)
	return dir
}

func writeGreetTask(t *testing.T, dir string) {
	writeFiles(t, dir, map[string]string{
		"greet/task.yaml": `id: greet
instruction: greet.sh should say "Hello, NAME!"
repo: {dir: repo, name: greeter}
grade: {command: bash tests/test_greet.sh, format: tap, protect: ["tests/**"]}
`,
		"greet/repo/greet.sh":             "echo \"Hi $1\"\n",
		"greet/tests/tests/test_greet.sh": "echo 1..1\n[ \"$(bash greet.sh Ada)\" = 'Hello, Ada!' ] && echo ok 1 || echo not ok 1\n",
		"greet/solution/solve.sh":         "echo 'echo \"Hello, $1!\"' > greet.sh\n",
	})
}

func TestRolloutAndEval(t *testing.T) {
	c := newCLI(t)
	tasks := greetTask(t)
	model := newScriptedModel(t,
		reply{calls: [][2]string{{"write_file", `{"path":"greet.sh","content":"echo \"Hello, $1!\"\n"}`}}},
		reply{content: "fixed"},
	)
	out := filepath.Join(t.TempDir(), "runs", "first")
	r := c.do("", "rollout", "--tasks", tasks, "--model", model.url, "--samples", "2", "--concurrency", "1", "--out", out)
	if r.code != 0 {
		t.Fatalf("rollout: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	trajs, err := trajectory.ReadFile(filepath.Join(out, "trajectories.jsonl"))
	if err != nil || len(trajs) != 2 {
		t.Fatalf("trajectories: %d, %v", len(trajs), err)
	}
	// The script's steps go to the first episode; the second only answers.
	if trajs[0].Reward != 1 || trajs[1].Reward != 0 || trajs[1].Flags[0].Name != "no_edit_reply" {
		t.Errorf("rewards %v, %v; flags of the second %+v", trajs[0].Reward, trajs[1].Reward, trajs[1].Flags)
	}
	if !strings.Contains(r.stderr, "2/2 done") || !regexp.MustCompile(`(?m)^greet\s+2\s+2\s+1\s+0`).MatchString(r.stdout) {
		t.Errorf("progress or table missing:\n%s\n%s", r.stdout, r.stderr)
	}
	var sum struct {
		Total struct{ Episodes, Passed int }
	}
	data, _ := os.ReadFile(filepath.Join(out, "summary.json"))
	if err := json.Unmarshal(data, &sum); err != nil || sum.Total.Episodes != 2 || sum.Total.Passed != 1 {
		t.Errorf("summary.json: %s (%v)", data, err)
	}
	// The same directory again needs --resume; with it nothing is rerun.
	r = c.do("", "rollout", "--tasks", tasks, "--model", model.url, "--samples", "2", "--out", out)
	if r.code != exitUsage || !strings.Contains(r.stderr, "pass --resume") {
		t.Errorf("rerun without --resume: exit %d\n%s", r.code, r.stderr)
	}
	// A crash left half a record: --resume drops it and carries on.
	f, _ := os.OpenFile(filepath.Join(out, "trajectories.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"version":1,"task_id":"greet","sam`)
	f.Close()
	r = c.do("", "eval", "--tasks", tasks, "--model", model.url, "--samples", "2", "--out", out, "--resume")
	if r.code != 0 || !strings.Contains(r.stdout, "pass@1: 0.500") || !strings.Contains(r.stdout, "pass@2: 1.000") {
		t.Errorf("eval --resume: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if trajs, err := trajectory.ReadFile(filepath.Join(out, "trajectories.jsonl")); len(trajs) != 2 || err != nil {
		t.Errorf("after --resume: %d records, %v; want the 2 finished and no torn line", len(trajs), err)
	}

	// A model nobody answers: every episode is an infra_error, the run
	// says so and fails.
	down := filepath.Join(t.TempDir(), "down")
	r = c.do("", "rollout", "--tasks", tasks, "--model", "http://127.0.0.1:1", "--model-name", "m", "--retries", "0",
		"--samples", "1", "--episode-retries", "1", "--out", down)
	if r.code != exitFailure || !strings.Contains(r.stderr, "infrastructure") {
		t.Errorf("model down: exit %d\n%s", r.code, r.stderr)
	}
	trajs, _ = trajectory.ReadFile(filepath.Join(down, "trajectories.jsonl"))
	if len(trajs) != 1 || trajs[0].Status != trajectory.StatusInfraError || trajs[0].Metadata["attempts"] != "2" {
		t.Errorf("model down: %+v", trajs)
	}
	c.assertClean()
}

// TestRolloutRootless runs a rollout without root: as the user nobody, with
// subordinate ids (bound over /etc/subuid and /etc/subgid in a mount
// namespace of the test's own). The task's machine is prepared in a
// sandbox in a user namespace and snapshotted (paused by that sandbox's
// init, copied by a helper), each episode forks the snapshot, and removing
// it at the end goes through the layer-removing helper: nothing may be
// left.
func TestRolloutRootless(t *testing.T) {
	subidtest.Require(t)
	// Everything where nobody reaches it.
	base, err := os.MkdirTemp("", "verisim-rootless-cli-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	bin := filepath.Join(base, "verisim")
	data, err := os.ReadFile(verisim)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	tasks := filepath.Join(base, "tasks")
	writeGreetTask(t, tasks)
	run, err := os.MkdirTemp("/dev/shm", "verisim-rootless-run-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(run) })
	state, home, outDir := filepath.Join(base, "state"), filepath.Join(base, "home"), filepath.Join(base, "runs")
	for _, d := range []string{state, home, outDir, run} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	model := newScriptedModel(t,
		reply{calls: [][2]string{{"write_file", `{"path":"greet.sh","content":"echo \"Hello, $1!\"\n"}`}}},
		reply{content: "fixed"},
	)
	out := filepath.Join(outDir, "first")
	cmd := subidtest.Command(t, base, []string{"HOME=" + home, "PATH=/usr/bin:/bin"}, bin, "--state", state, "--run-dir", run,
		"rollout", "--tasks", tasks, "--model", model.url, "--samples", "2", "--concurrency", "1", "--out", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("rollout as nobody: %v\n%s", err, b)
	}
	trajs, err := trajectory.ReadFile(filepath.Join(out, "trajectories.jsonl"))
	if err != nil || len(trajs) != 2 {
		t.Fatalf("trajectories: %d, %v", len(trajs), err)
	}
	if trajs[0].Reward != 1 || trajs[1].Reward != 0 {
		t.Errorf("rewards %v, %v; want 1 (the script's fix) and 0", trajs[0].Reward, trajs[1].Reward)
	}
	(&cli{t: t, state: state, run: run}).assertClean()
}

// TestRolloutInterrupt stops a run with Ctrl-C while an episode waits for
// the model: the finished episode stays recorded, nothing is left behind,
// and --resume runs only the rest.
func TestRolloutInterrupt(t *testing.T) {
	c := newCLI(t)
	tasks := greetTask(t)
	var mu sync.Mutex
	requests := 0
	waiting := make(chan struct{}, 1)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests++
		n := requests
		mu.Unlock()
		if n > 1 { // the second episode's first request hangs
			select {
			case waiting <- struct{}{}:
			default:
			}
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		io.WriteString(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"nothing to change"}}]}`)
	}))
	defer srv.Close()
	defer close(release)
	out := filepath.Join(t.TempDir(), "run")
	cmd := exec.Command(verisim, "--state", c.state, "--run-dir", c.run, "rollout", "--tasks", tasks, "--model", srv.URL,
		"--model-name", "m", "--samples", "3", "--concurrency", "1", "--out", out)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-waiting:
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("the second episode never asked the model:\n%s", stderr.String())
	}
	cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 || !strings.Contains(stderr.String(), "--resume") {
		t.Fatalf("after Ctrl-C: %v\n%s", err, stderr.String())
	}
	trajs, err := trajectory.ReadFile(filepath.Join(out, "trajectories.jsonl"))
	if err != nil || len(trajs) != 1 || trajs[0].Sample != 0 {
		t.Fatalf("recorded %d episodes (%v), want sample 0 only", len(trajs), err)
	}
	c.assertClean()

	model := newScriptedModel(t, reply{content: "nothing to change"})
	r := c.do("", "rollout", "--tasks", tasks, "--model", model.url, "--samples", "3", "--concurrency", "2", "--out", out, "--resume")
	if r.code != 0 || !strings.Contains(r.stderr, "3/3 done") {
		t.Fatalf("resume: exit %d\n%s", r.code, r.stderr)
	}
	if trajs, _ := trajectory.ReadFile(filepath.Join(out, "trajectories.jsonl")); len(trajs) != 3 {
		t.Errorf("after resume %d episodes, want 3", len(trajs))
	}
	c.assertClean()
}
