package reward

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/verisim/verisim/internal/sandbox"
	"github.com/verisim/verisim/internal/sandbox/process"
	"github.com/verisim/verisim/internal/task"
)

// writeTree writes files (path → content) under dir; names ending in .sh
// are executable.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := fs.FileMode(0o644)
		if strings.HasSuffix(name, ".sh") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
	}
}

// copyTree copies a tree of files, directories and links, keeping modes:
// placing the repository in the workspace.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(target, fi.Mode().Perm())
		case fi.Mode()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(l, target)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, fi.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
}

type fixture struct {
	sb        sandbox.Sandbox
	repo      string // the repository on the host
	tests     string // the task's tests/ directory
	workspace string // the workspace, a copy of repo
}

// newFixture makes a process sandbox and a workspace holding repo, with
// hidden tests.
func newFixture(t *testing.T, env []string, repo, tests map[string]string) *fixture {
	t.Helper()
	rt, err := process.New(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if env == nil {
		env = []string{"PATH=/usr/bin:/bin"}
	}
	sb, err := rt.Create(t.Context(), sandbox.Spec{Env: env})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close(context.WithoutCancel(t.Context())) })
	f := &fixture{sb: sb, repo: t.TempDir(), tests: filepath.Join(t.TempDir(), "tests"), workspace: filepath.Join(t.TempDir(), "ws")}
	writeTree(t, f.repo, repo)
	if tests != nil {
		writeTree(t, f.tests, tests)
	}
	copyTree(t, f.repo, f.workspace)
	return f
}

func (f *fixture) grade(t *testing.T, g task.Grade) *Result {
	t.Helper()
	gr, err := NewGrader(g, f.tests, f.repo)
	if err != nil {
		t.Fatal(err)
	}
	res, err := gr.Run(t.Context(), f.sb, f.workspace)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func (f *fixture) write(t *testing.T, files map[string]string) {
	t.Helper()
	writeTree(t, f.workspace, files)
}

func python(t *testing.T) string {
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	t.Skip("no python3 on this machine")
	return ""
}

func TestGradeGo(t *testing.T) {
	t.Parallel()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not in PATH")
	}
	out, err := exec.Command(gobin, "env", "GOCACHE").Output()
	if err != nil {
		t.Fatalf("go env GOCACHE: %v", err)
	}
	// The host's build cache keeps the test quick; nothing is downloaded.
	env := []string{
		"PATH=" + filepath.Dir(gobin) + ":/usr/bin:/bin", "GOCACHE=" + strings.TrimSpace(string(out)),
		"GOTOOLCHAIN=local", "GOPROXY=off", "GOFLAGS=-mod=mod",
	}
	repo := map[string]string{
		"go.mod":  "module example.com/calc\n\ngo 1.21\n",
		"calc.go": "package calc\n\nfunc Add(a, b int) int { return a + b }\n\nfunc Sub(a, b int) int { return a + b }\n",
	}
	hidden := map[string]string{
		"calc_test.go": `package calc

import "testing"

func TestAdd(t *testing.T) {
	if Add(2, 1) != 3 {
		t.Fatal("add")
	}
}

func TestSub(t *testing.T) {
	t.Run("pos", func(t *testing.T) {
		if Sub(2, 1) != 1 {
			t.Fatal("sub")
		}
	})
}
`,
	}
	grade := task.Grade{Command: "go test -v ./...", Format: task.FormatGo, Protect: []string{"*_test.go"}}

	t.Run("failing", func(t *testing.T) {
		f := newFixture(t, env, repo, hidden)
		res := f.grade(t, grade)
		want := []TestResult{{"TestAdd", true}, {"TestSub", false}}
		if res.Pass || !slices.Equal(res.Tests, want) || res.Fraction != 0.5 || res.ExitCode == 0 {
			t.Fatalf("result %+v, want tests %v failing half", res, want)
		}
	})
	t.Run("fixed", func(t *testing.T) {
		f := newFixture(t, env, repo, hidden)
		f.write(t, map[string]string{"calc.go": "package calc\n\nfunc Add(a, b int) int { return a + b }\n\nfunc Sub(a, b int) int { return a - b }\n"})
		res := f.grade(t, grade)
		if !res.Pass || res.Passed != 2 || res.Total != 2 || res.Fraction != 1 || len(res.Tampered) != 0 {
			t.Fatalf("result %+v, want 2 of 2 passing", res)
		}
	})
	t.Run("build failure", func(t *testing.T) {
		f := newFixture(t, env, repo, hidden)
		f.write(t, map[string]string{"calc.go": "package calc\n\nfunc Add(a, b int) int { return a +  }\n"})
		res := f.grade(t, grade)
		if res.Pass || res.Passed != 0 || res.Total < 3 {
			t.Fatalf("result %+v, want nothing passing and the expected tests failed", res)
		}
	})
	t.Run("agent's init that reports every test passed", func(t *testing.T) {
		f := newFixture(t, env, repo, hidden)
		// Run inside the test binary, it lists the tests it finds and
		// prints a passing report before any runs.
		f.write(t, map[string]string{"report.go": `package calc

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

func init() {
	if !strings.HasSuffix(os.Args[0], ".test") {
		return
	}
	files, _ := filepath.Glob("*_test.go")
	re := regexp.MustCompile("(?m)^func (Test[A-Za-z0-9_]*)")
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, m := range re.FindAllSubmatch(b, -1) {
			fmt.Printf("=== RUN   %s\n%s %s (0.00s)\n", m[1], strings.Repeat("-", 3)+" PA"+"SS:", m[1])
		}
	}
	fmt.Println("PA" + "SS")
	os.Exit(0)
}
`})
		res := f.grade(t, grade)
		if res.Pass || !strings.Contains(res.Note, "placed to fail") {
			t.Fatalf("result %+v, want a failed grade that says the report is not the tests'", res)
		}
	})
	t.Run("agent's TestMain that skips the hidden tests", func(t *testing.T) {
		f := newFixture(t, env, repo, hidden)
		// An added test file outside grade.protect would be kept; this one
		// matches *_test.go and is removed, and the tests run.
		f.write(t, map[string]string{"main_test.go": "package calc\n\nimport (\"os\"; \"testing\")\n\nfunc TestMain(m *testing.M) { os.Exit(0) }\n"})
		res := f.grade(t, grade)
		if !slices.Contains(res.Tampered, Change{"main_test.go", ChangeAdded}) || res.Total != 2 {
			t.Fatalf("result %+v, want main_test.go removed and both tests run", res)
		}
	})
}

func TestGradeUnittest(t *testing.T) {
	t.Parallel()
	py := python(t)
	env := []string{"PATH=" + filepath.Dir(py) + ":/usr/bin:/bin"}
	repo := map[string]string{
		"calc/__init__.py":  "",
		"calc/ops.py":       "def add(a, b):\n    return a + b\n\ndef mul(a, b):\n    return a + b\n",
		"tests/__init__.py": "",
	}
	hidden := map[string]string{
		"tests/test_ops.py": `import unittest
from calc import ops

class OpsTest(unittest.TestCase):
    def test_add(self):
        self.assertEqual(ops.add(2, 3), 5)

    def test_mul(self):
        self.assertEqual(ops.mul(2, 3), 6)

    def test_mul_zero(self):
        """Zero stays zero."""
        self.assertEqual(ops.mul(0, 3), 0)
`,
	}
	grade := task.Grade{Command: "python3 -m unittest -v tests.test_ops", Format: task.FormatUnittest, Reward: task.RewardFraction}

	t.Run("partial", func(t *testing.T) {
		f := newFixture(t, env, repo, hidden)
		res := f.grade(t, grade)
		want := []TestResult{{"tests.test_ops.OpsTest.test_add", true}, {"tests.test_ops.OpsTest.test_mul", false}, {"tests.test_ops.OpsTest.test_mul_zero", false}}
		if res.Pass || !slices.Equal(res.Tests, want) {
			t.Fatalf("result %+v\nwant tests %v", res, want)
		}
	})
	t.Run("pass", func(t *testing.T) {
		f := newFixture(t, env, repo, hidden)
		f.write(t, map[string]string{"calc/ops.py": "def add(a, b):\n    return a + b\n\ndef mul(a, b):\n    return a * b\n"})
		if res := f.grade(t, grade); !res.Pass || res.Passed != 3 || res.Fraction != 1 {
			t.Fatalf("result %+v, want 3 of 3", res)
		}
	})
	t.Run("code that exits before the tests run", func(t *testing.T) {
		f := newFixture(t, env, repo, hidden)
		f.write(t, map[string]string{"calc/ops.py": "import os\nos._exit(0)\n"})
		res := f.grade(t, grade)
		if res.Pass || res.ExitCode != 0 || res.Total != 3 || res.Failed != 3 || !strings.Contains(res.Note, "test_mul_zero") {
			t.Fatalf("result %+v, want the three expected tests failed though the command exited 0", res)
		}
	})
	t.Run("listed tests only", func(t *testing.T) {
		f := newFixture(t, env, repo, hidden)
		g := grade
		g.Tests = []string{"OpsTest.test_add", "test_missing"}
		res := f.grade(t, g)
		want := []TestResult{{"tests.test_ops.OpsTest.test_add", true}, {"test_missing", false}}
		if res.Pass || !slices.Equal(res.Tests, want) || res.Fraction != 0.5 {
			t.Fatalf("result %+v\nwant tests %v", res, want)
		}
	})
}

func TestGradeTAPAndExit(t *testing.T) {
	t.Parallel()
	tap := "#!/bin/bash\necho 1..3\necho 'ok 1 - builds'\necho 'not ok 2 - formats'\necho 'ok 3 - lint # SKIP no linter'\n"
	tests := []struct {
		name  string
		grade task.Grade
		// setup runs in the workspace before grading.
		setup     map[string]string
		pass      bool
		fraction  float64
		exit      int
		note      string
		tampering []Change
	}{
		{name: "tap", grade: task.Grade{Command: "bash run.sh", Format: task.FormatTAP, Reward: task.RewardFraction}, fraction: 1.0 / 3},
		{name: "exit 0", grade: task.Grade{Command: "test -f run.sh"}, pass: true, fraction: 1},
		{name: "exit 3", grade: task.Grade{Command: "echo failing; exit 3"}, fraction: 0, exit: 3},
		{name: "reward file", grade: task.Grade{Command: "echo 0.25 > reward.txt", RewardFile: "reward.txt"}, fraction: 0.25},
		{name: "reward file full", grade: task.Grade{Command: "mkdir -p logs && echo 1 > logs/reward.txt", RewardFile: "logs/reward.txt"}, pass: true, fraction: 1},
		{name: "reward file garbage", grade: task.Grade{Command: "echo lots > reward.txt", RewardFile: "reward.txt"}, note: "not a number"},
		{name: "reward file out of range", grade: task.Grade{Command: "echo 1.5 > reward.txt", RewardFile: "reward.txt"}, note: "not a number"},
		{name: "reward file missing", grade: task.Grade{Command: "true", RewardFile: "reward.txt"}, note: "reward.txt"},
		{
			name: "reward file the agent wrote", grade: task.Grade{Command: "true", RewardFile: "reward.txt"},
			setup: map[string]string{"reward.txt": "1\n"}, note: "reward.txt", tampering: []Change{{"reward.txt", ChangeAdded}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, nil, map[string]string{"run.sh": tap}, nil)
			f.write(t, tc.setup)
			res := f.grade(t, tc.grade)
			if res.Pass != tc.pass || res.Fraction != tc.fraction || res.ExitCode != tc.exit || !strings.Contains(res.Note, tc.note) || !slices.Equal(res.Tampered, tc.tampering) {
				t.Fatalf("result %+v\nwant pass %v fraction %v exit %d note %q tampered %v", res, tc.pass, tc.fraction, tc.exit, tc.note, tc.tampering)
			}
			if res.Passed+res.Failed != res.Total || res.Total == 0 {
				t.Fatalf("counts %d+%d of %d", res.Passed, res.Failed, res.Total)
			}
		})
	}
}

func TestGradeTimeout(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, map[string]string{"a": "x"}, nil)
	start := time.Now()
	res := f.grade(t, task.Grade{Command: "echo started; sleep 60", Timeout: 300 * time.Millisecond})
	if !res.TimedOut || res.Pass || res.Fraction != 0 || !strings.Contains(res.Output, "started") || !strings.Contains(res.Note, "timed out") {
		t.Fatalf("result %+v, want a timed-out failure", res)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("grading took %v; the command was not killed at its timeout", d)
	}
}

func TestGradeRestoresProtected(t *testing.T) {
	t.Parallel()
	repo := map[string]string{
		"src/app.py":                 "APP\n",
		"tests/test_a.py":            "ORIG_A\n",
		"tests/test_b.py":            "ORIG_B\n",
		"tests/data/fixture.json":    "{}\n",
		"tests/golden/out.txt":       "GOLDEN\n",
		"node_modules/x/foo_test.py": "dependency\n",
	}
	hidden := map[string]string{"tests/test_hidden.py": "HIDDEN\n", "tests/check.sh": "#!/bin/sh\nexit 0\n"}
	f := newFixture(t, nil, repo, hidden)
	ws := f.workspace
	// The agent's work: an honest change, and every kind of tampering.
	f.write(t, map[string]string{
		"src/app.py":           "APP v2\n",
		"tests/test_a.py":      "def test_a(): pass\n",
		"tests/test_c.py":      "def test_c(): pass\n",
		"tests/test_hidden.py": "GUESSED\n",
		"tests/conftest.py":    "import pytest\n",
	})
	mustDo(t, os.Remove(filepath.Join(ws, "tests/test_b.py")))
	mustDo(t, os.Chmod(filepath.Join(ws, "tests/data/fixture.json"), 0o755))
	mustDo(t, os.RemoveAll(filepath.Join(ws, "tests/golden")))
	mustDo(t, os.WriteFile(filepath.Join(ws, "tests/golden"), []byte("not a directory"), 0o644))
	mustDo(t, os.Symlink("/etc/passwd", filepath.Join(ws, "tests/link.py")))
	mustDo(t, os.WriteFile(filepath.Join(ws, "node_modules/x/bar_test.py"), nil, 0o644))

	// The command sees the restored tree, with the hidden tests in place.
	check := strings.Join([]string{
		`test "$(cat tests/test_a.py)" = ORIG_A`, `test "$(cat tests/test_b.py)" = ORIG_B`,
		`test ! -e tests/test_c.py`, `test ! -e tests/conftest.py`, `test ! -e tests/link.py`,
		`test "$(cat tests/golden/out.txt)" = GOLDEN`, `test ! -x tests/data/fixture.json`,
		`test "$(cat tests/test_hidden.py)" = HIDDEN`, `test -x tests/check.sh`,
		`test "$(cat src/app.py)" = "APP v2"`, `test -e node_modules/x/bar_test.py`,
	}, " && ")
	res := f.grade(t, task.Grade{Command: check, Protect: []string{"tests/**", "*_test.py"}})
	if !res.Pass {
		t.Fatalf("the grade command did not see a restored tree: %+v", res)
	}
	want := []Change{
		{"tests/conftest.py", ChangeAdded},
		{"tests/data/fixture.json", ChangeMode},
		{"tests/golden", ChangeAdded},
		{"tests/golden/out.txt", ChangeDeleted},
		{"tests/link.py", ChangeAdded},
		{"tests/test_a.py", ChangeModified},
		{"tests/test_b.py", ChangeDeleted},
		{"tests/test_c.py", ChangeAdded},
		{"tests/test_hidden.py", ChangeAdded},
	}
	if !slices.Equal(res.Tampered, want) {
		t.Fatalf("tampered:\n got %v\nwant %v", res.Tampered, want)
	}

	// A second grading of the same machine finds nothing more to restore.
	if res := f.grade(t, task.Grade{Command: check, Protect: []string{"tests/**", "*_test.py"}}); len(res.Tampered) != 0 || !res.Pass {
		t.Fatalf("second grading: %+v", res)
	}
}

func TestGradeAbsoluteTarget(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, map[string]string{"a.txt": "a"}, map[string]string{"test.sh": "#!/bin/sh\necho ok 1 - hidden\n", "sub/data.txt": "d"})
	base := t.TempDir()
	target := filepath.Join(base, "verifier", "tests")
	g := task.Grade{Command: target + "/test.sh", Format: task.FormatTAP, TestsTarget: target}
	modes := func() (out []fs.FileMode) {
		for _, d := range []string{base, filepath.Dir(base), os.TempDir()} {
			fi, err := os.Stat(d)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, fi.Mode())
		}
		return out
	}
	before := modes()
	res := f.grade(t, g)
	if !res.Pass || res.Total != 1 {
		t.Fatalf("result %+v", res)
	}
	// The tests' directories are sealed; nothing above tests_target's
	// parent is touched.
	if after := modes(); !slices.Equal(before, after) {
		t.Fatalf("modes above the tests changed: %v, then %v", before, after)
	}
	if data, err := os.ReadFile(filepath.Join(target, "sub/data.txt")); err != nil || string(data) != "d" {
		t.Fatalf("hidden tests not copied to %s: %v", target, err)
	}
	gr, _ := NewGrader(g, f.tests, f.repo)
	_, tests := gr.ProtectedPaths()
	slices.Sort(tests)
	if want := []string{target + "/sub/data.txt", target + "/test.sh"}; !slices.Equal(tests, want) {
		t.Fatalf("ProtectedPaths tests = %v, want %v", tests, want)
	}
}

func TestGradeWorkspaceRemoved(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, map[string]string{"tests/test_a.py": "A\n"}, nil)
	mustDo(t, os.RemoveAll(f.workspace))
	res := f.grade(t, task.Grade{Command: "test -f tests/test_a.py && false", Protect: []string{"tests/**"}})
	if res.Pass || res.ExitCode != 1 || !slices.Equal(res.Tampered, []Change{{"tests/test_a.py", ChangeDeleted}}) {
		t.Fatalf("result %+v, want a failing grade with the test restored", res)
	}
}

func TestGradeInfraError(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, map[string]string{"a": "a"}, nil)
	gr, err := NewGrader(task.Grade{Command: "true"}, f.tests, f.repo)
	if err != nil {
		t.Fatal(err)
	}
	mustDo(t, f.sb.Close(t.Context()))
	if _, err := gr.Run(t.Context(), f.sb, f.workspace); !errors.Is(err, sandbox.ErrClosed) {
		t.Fatalf("Run on a closed sandbox: %v, want ErrClosed", err)
	}
}

// A unittest/ folder in the workspace must not replace the test runner:
// the grade environment keeps the working directory off Python's module
// path.
func TestGradeUnittestShadowed(t *testing.T) {
	t.Parallel()
	py := python(t)
	repo := map[string]string{
		"calc/__init__.py":  "",
		"calc/ops.py":       "def add(a, b):\n    return a - b\n",
		"tests/__init__.py": "",
		// What the agent adds: a runner that reports every test passed.
		"unittest/__init__.py": "",
		"unittest/__main__.py": "import sys\nsys.stderr.write('test_add (tests.test_ops.OpsTest.test_add) ... ok\\n\\nRan 1 test in 0.001s\\n\\nOK\\n')\n",
	}
	hidden := map[string]string{"tests/test_ops.py": "import unittest\nfrom calc import ops\n\nclass OpsTest(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(ops.add(2, 3), 5)\n"}
	f := newFixture(t, []string{"PATH=" + filepath.Dir(py) + ":/usr/bin:/bin", "HOME=/nonexistent"}, repo, hidden)
	gr, err := NewGrader(task.Grade{Command: "python3 -m unittest -v tests.test_ops", Format: task.FormatUnittest}, f.tests, f.repo)
	if err != nil {
		t.Fatal(err)
	}
	gr.Env = CleanEnv([]string{"HOME=/nonexistent"})
	gr.Env[0] = "PATH=" + filepath.Dir(py) + ":" + systemPath
	res, err := gr.Run(t.Context(), f.sb, f.workspace)
	if err != nil {
		t.Fatal(err)
	}
	if res.Pass || res.Passed != 0 {
		t.Fatalf("result %+v, want the real runner's failure", res)
	}
}

// Code of the agent's that stops unittest from failing any test is caught
// by the test the grader placed to fail; an honest run still passes.
func TestGradeUnittestPatched(t *testing.T) {
	t.Parallel()
	py := python(t)
	env := []string{"PATH=" + filepath.Dir(py) + ":/usr/bin:/bin"}
	repo := map[string]string{
		"calc/__init__.py":  "",
		"calc/ops.py":       "def add(a, b):\n    return a - b\n",
		"tests/__init__.py": "",
	}
	hidden := map[string]string{"tests/test_ops.py": "import unittest\nfrom calc import ops\n\nclass OpsTest(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(ops.add(2, 3), 5)\n"}
	grade := task.Grade{Command: "python3 -m unittest -v", Format: task.FormatUnittest}
	t.Run("patched", func(t *testing.T) {
		f := newFixture(t, env, repo, hidden)
		f.write(t, map[string]string{"calc/__init__.py": "import unittest\nunittest.TestCase._callTestMethod = lambda self, m: None\n"})
		res := f.grade(t, grade)
		if res.Pass || !strings.Contains(res.Note, "placed to fail") {
			t.Fatalf("result %+v, want a failed grade that says the report is not the tests'", res)
		}
	})
	t.Run("fixed", func(t *testing.T) {
		f := newFixture(t, env, repo, hidden)
		f.write(t, map[string]string{"calc/ops.py": "def add(a, b):\n    return a + b\n"})
		res := f.grade(t, grade)
		if !res.Pass || res.Total != 1 || res.ExitCode != 1 {
			t.Fatalf("result %+v, want 1 of 1 passing (exit 1: the canary)", res)
		}
	})
}

// fullDisk is a sandbox whose disk is full: every file write fails with
// ENOSPC, as the local backend reports it.
type fullDisk struct{ sandbox.Sandbox }

func (fullDisk) WriteFile(_ context.Context, p string, _ []byte, _ fs.FileMode) error {
	return fmt.Errorf("write %s: %w", p, syscall.ENOSPC)
}

// An agent that fills its disk fails its grade: were grading to fail, the
// episode would read as an infrastructure failure and run again.
func TestGradeDiskFull(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, map[string]string{"a_test.py": "def test_a():\n    pass\n"}, map[string]string{"test_hidden.py": "def test_hidden():\n    pass\n"})
	gr, err := NewGrader(task.Grade{Command: "python3 -m pytest -q", Format: task.FormatPytest}, f.tests, f.repo)
	if err != nil {
		t.Fatal(err)
	}
	res, err := gr.Run(t.Context(), fullDisk{f.sb}, f.workspace)
	if err != nil {
		t.Fatalf("grading on a full disk: %v, want a failed grade", err)
	}
	if res.Pass || res.Total != 1 || res.Failed != 1 || !strings.Contains(res.Note, "disk was full") {
		t.Fatalf("result %+v, want the expected test failed and a note", res)
	}
	// Any other failure to place the tests is still an error.
	if _, err := gr.Run(t.Context(), brokenWrites{f.sb}, f.workspace); err == nil || !errors.Is(err, syscall.EIO) {
		t.Fatalf("grading with failing writes: %v, want EIO", err)
	}
}

type brokenWrites struct{ sandbox.Sandbox }

func (brokenWrites) WriteFile(_ context.Context, p string, _ []byte, _ fs.FileMode) error {
	return fmt.Errorf("write %s: %w", p, syscall.EIO)
}

func TestNewGraderRejects(t *testing.T) {
	tests := []struct {
		name string
		g    task.Grade
	}{
		{"no command", task.Grade{}},
		{"unknown format", task.Grade{Command: "x", Format: "junit"}},
		{"unknown reward", task.Grade{Command: "x", Reward: "half"}},
		{"reward file without exit", task.Grade{Command: "x", Format: task.FormatGo, RewardFile: "r"}},
		{"user", task.Grade{Command: "x", User: "bob"}},
		{"target escapes", task.Grade{Command: "x", TestsTarget: "../tests"}},
		{"bad glob", task.Grade{Command: "x", Protect: []string{"tests/["}}},
		{"negative timeout", task.Grade{Command: "x", Timeout: -time.Second}},
		{"empty test", task.Grade{Command: "x", Tests: []string{""}}},
		{"protect without a repository", task.Grade{Command: "x", Protect: []string{"tests/**"}}},
	}
	for _, tc := range tests {
		if _, err := NewGrader(tc.g, "", ""); err == nil {
			t.Errorf("%s: NewGrader accepted %+v", tc.name, tc.g)
		}
	}
}

func TestExpectedTests(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"a_test.go":        "package a\n\nfunc TestA(t *testing.T) {}\nfunc Testlower(t *testing.T) {}\nfunc TestMain(m *testing.M) {}\nfunc Test_B(tt *testing.T) {}\nfunc helper(t *testing.T) {}\nfunc TestC(b *testing.B) {}\n",
		"util.go":          "package a\n\nfunc TestNotInATestFile(t *testing.T) {}\n",
		"tests/test_x.py":  "import unittest\n\ndef test_top():\n    pass\n\nasync def test_async():\n    pass\n\nclass T(unittest.TestCase):\n    def test_method(self):\n        def test_inner():\n            pass\n",
		"tests/helpers.py": "def test_helper():\n    pass\n",
		"tests/y_test.py":  "def test_y():\n    pass\n",
	})
	for format, want := range map[string][]string{
		task.FormatGo:       {"TestA", "Test_B"},
		task.FormatUnittest: {"test_async", "test_method", "test_top"},
		task.FormatPytest:   {"test_async", "test_method", "test_top", "test_y"},
		task.FormatTAP:      nil,
	} {
		g, err := NewGrader(task.Grade{Command: "x", Format: format}, dir, "")
		if err != nil {
			t.Fatal(err)
		}
		if got := g.ExpectedTests(); !slices.Equal(got, want) {
			t.Errorf("%s: ExpectedTests = %v, want %v", format, got, want)
		}
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestRunnerConfigProtected(t *testing.T) {
	repo := t.TempDir()
	os.WriteFile(filepath.Join(repo, "conftest.py"), []byte("# fixtures\n"), 0o644)
	g, err := NewGrader(task.Grade{Command: "pytest -rA", Format: task.FormatPytest, Protect: []string{"tests/**"}}, "", repo)
	if err != nil {
		t.Fatal(err)
	}
	globs, _ := g.ProtectedPaths()
	if !slices.Contains(globs, "**/conftest.py") || !slices.Contains(globs, "tests/**") {
		t.Fatalf("protected globs %v lack the runner's configuration", globs)
	}
	if _, ok := g.originals["conftest.py"]; !ok {
		t.Fatal("the original conftest.py is not kept for restoring")
	}
}
