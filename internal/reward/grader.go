package reward

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/verisim/verisim/internal/sandbox"
	"github.com/verisim/verisim/internal/task"

	"github.com/verisim/verisim/internal/lazyregexp"
)

// File is a file the grader carries into the machine: a hidden test, or the
// original of a protected file.
type File struct {
	// Path is slash-separated and relative (to the tests directory, or to
	// the workspace).
	Path string
	// Data is the content; for a symbolic link, its target.
	Data []byte
	Mode fs.FileMode
}

// Kinds of Change.
const (
	ChangeModified = "modified" // content differs, or a file became a link or directory
	ChangeDeleted  = "deleted"
	ChangeAdded    = "added" // a file where the repository had none
	ChangeMode     = "mode"  // only the executable bits differ
)

// Change is a difference between a protected path at grading time and the
// repository: the evidence for test_tampering.
type Change struct {
	// Path is relative to the workspace, or absolute outside it.
	Path string `json:"path"`
	Kind string `json:"kind"`
}

func (c Change) String() string { return c.Path + " " + c.Kind }

// Result is how an episode was graded.
type Result struct {
	// Pass: the command exited 0 in time, no test failed, and at least one
	// test ran (for format exit, the command is the test).
	Pass     bool    `json:"pass"`
	Passed   int     `json:"passed"`
	Failed   int     `json:"failed"`
	Total    int     `json:"total"`
	Fraction float64 `json:"fraction"`
	// Tests are in order of first report; expected tests that never
	// reported come last, failed.
	Tests []TestResult `json:"tests,omitzero"`
	// ExitCode is the grade command's: 1 for a Go run that passes, whose
	// only failures are the canaries the grader placed (see canary.go).
	ExitCode int  `json:"exit_code"`
	TimedOut bool `json:"timed_out,omitzero"`
	// Output is the end of the command's stdout and stderr, merged.
	Output   string   `json:"output,omitzero"`
	Tampered []Change `json:"tampered,omitzero"`
	// Duration is the whole grading: restoring, copying and the command.
	Duration time.Duration `json:"duration"`
	// Note says what a reader of the numbers should know (a missing
	// reward file, tests that never ran).
	Note string `json:"note,omitzero"`
}

// Limits.
const (
	outputTail   = 64 << 10  // bytes of output kept in Result.Output
	maxLine      = 64 << 10  // longer output lines are cut before parsing
	maxOriginals = 256 << 20 // bytes of protected originals held in memory
	maxWalk      = 1_000_000 // entries the search for added files visits
	helperTime   = time.Minute
)

// Grader grades episodes of one task. It holds the hidden tests and the
// originals of the protected files in memory, and never changes after
// NewGrader: Run may be called concurrently for different sandboxes.
type Grader struct {
	grade   task.Grade
	protect protectSet
	tests   []File
	// originals are the protected files of the repository by
	// workspace-relative path (regular files and symlinks).
	originals map[string]File
	// repoDir is read at Run time for the originals of hidden-test paths
	// when tests_target is absolute and only then known to be in the
	// workspace.
	repoDir string
	// testOrig is, for a relative tests_target, the repository's file at
	// each hidden-test path (absent: none there).
	testOrig map[string]File
	expected []string

	// Env, when set, is the whole environment of the grade command and of
	// the grader's own helpers (see CleanEnv); nil leaves the machine's
	// default. It is set before the first Run and not changed after.
	Env []string
}

// runnerConfig are the files, per format, through which a test runner
// loads code before the tests: always protected.
var runnerConfig = map[string][]string{
	task.FormatPytest: {"**/conftest.py", "pytest.ini"},
}

// systemPath holds only directories a machine's user cannot write: the
// grade must run the toolchain, not a script the agent left in ~/.local/bin
// under the same name.
const systemPath = "/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// CleanEnv is the environment to grade in, from the machine's default
// env: the user's identity, locale and home are kept, PATH is reset to
// system directories, and the hooks through which files the agent may
// write would run inside the grade are turned off: the go command's
// per-user config (go env -w GOFLAGS=-exec=...), Python's user site
// directory (usercustomize, .pth files) and the working directory at the
// head of its module path (a unittest/ or pytest/ folder in the workspace
// would be run in place of the test runner), bash's BASH_ENV.
func CleanEnv(machineEnv []string) []string {
	keep := map[string]bool{"HOME": true, "USER": true, "LOGNAME": true, "LANG": true, "LANGUAGE": true, "SHELL": true, "TERM": true, "TZ": true}
	out := []string{"PATH=" + systemPath}
	for _, kv := range machineEnv {
		k, _, _ := strings.Cut(kv, "=")
		if keep[k] || strings.HasPrefix(k, "LC_") {
			out = append(out, kv)
		}
	}
	return append(out, "GOENV=off", "GOFLAGS=", "GOTOOLCHAIN=local", "GOPROXY=off", "PYTHONNOUSERSITE=1", "PYTHONSAFEPATH=1", "PYTHONDONTWRITEBYTECODE=1")
}

// rootEnv is env with root's home, for commands run as root.
func rootEnv(env []string) []string {
	if env == nil {
		return nil
	}
	out := make([]string, 0, len(env))
	for _, kv := range env {
		switch {
		case strings.HasPrefix(kv, "HOME="):
			out = append(out, "HOME=/root")
		case strings.HasPrefix(kv, "USER="), strings.HasPrefix(kv, "LOGNAME="):
			k, _, _ := strings.Cut(kv, "=")
			out = append(out, k+"=root")
		default:
			out = append(out, kv)
		}
	}
	return out
}

// NewGrader prepares the grading of g. testsDir is the task's hidden tests
// on the host (it may not exist: no hidden tests); repoDir is the host tree
// of the repository exactly as placed in the workspace, the source of the
// protected files' original content.
func NewGrader(g task.Grade, testsDir, repoDir string) (*Grader, error) {
	g, err := withDefaults(g)
	if err != nil {
		return nil, err
	}
	if len(g.Protect) > 0 && repoDir == "" {
		// Without the originals every protected file would look added.
		return nil, errors.New("grade: protect needs the repository's tree")
	}
	if repoDir != "" {
		// The runner's own configuration is part of the grade: a conftest.py
		// hook can report every test passed.
		g.Protect = append(slices.Clone(g.Protect), runnerConfig[g.Format]...)
	}
	gr := &Grader{grade: g, repoDir: repoDir}
	if gr.protect, err = newProtectSet(g.Protect, nil); err != nil {
		return nil, fmt.Errorf("grade: %w", err)
	}
	if gr.tests, err = loadTests(testsDir); err != nil {
		return nil, fmt.Errorf("grade: hidden tests: %w", err)
	}
	if gr.originals, err = loadOriginals(repoDir, gr.protect); err != nil {
		return nil, fmt.Errorf("grade: protected files: %w", err)
	}
	if !path.IsAbs(g.TestsTarget) {
		gr.testOrig = map[string]File{}
		for _, t := range gr.tests {
			p := path.Join(g.TestsTarget, t.Path)
			if f, ok, err := readRepoFile(repoDir, p); err != nil {
				return nil, fmt.Errorf("grade: original of %s: %w", p, err)
			} else if ok {
				gr.testOrig[p] = f
			}
		}
	}
	if len(g.Tests) > 0 {
		gr.expected = slices.Clone(g.Tests)
	} else {
		gr.expected = expectedTests(g.Format, gr.tests)
	}
	return gr, nil
}

func withDefaults(g task.Grade) (task.Grade, error) {
	if strings.TrimSpace(g.Command) == "" {
		return g, errors.New("grade: no command")
	}
	if g.Format == "" {
		g.Format = task.FormatExit
	}
	if _, err := newParser(g.Format); err != nil {
		return g, fmt.Errorf("grade: %w", err)
	}
	switch g.Reward {
	case "":
		g.Reward = task.RewardPass
	case task.RewardPass, task.RewardFraction:
	default:
		return g, fmt.Errorf("grade: unknown reward mode %q", g.Reward)
	}
	switch {
	case g.Timeout < 0:
		return g, fmt.Errorf("grade: negative timeout %v", g.Timeout)
	case g.Timeout == 0:
		g.Timeout = task.DefaultGradeTimeout
	}
	if g.User != "" && g.User != "root" {
		return g, fmt.Errorf("grade: user %q: only the machine's user (\"\") or \"root\"", g.User)
	}
	if g.RewardFile != "" && g.Format != task.FormatExit {
		return g, fmt.Errorf("grade: reward_file needs format exit, not %q", g.Format)
	}
	if g.TestsTarget == "" {
		g.TestsTarget = "."
	}
	g.TestsTarget = path.Clean(g.TestsTarget)
	if g.TestsTarget == ".." || strings.HasPrefix(g.TestsTarget, "../") {
		return g, fmt.Errorf("grade: tests_target %q leaves the workspace; give an absolute path", g.TestsTarget)
	}
	for _, t := range g.Tests {
		if strings.TrimSpace(t) == "" {
			return g, errors.New("grade: empty test name in tests")
		}
	}
	return g, nil
}

// loadTests reads the hidden tests. A link to a file is copied as the file
// it names, as cp -L would.
func loadTests(dir string) ([]File, error) {
	if dir == "" {
		return nil, nil
	}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	var out []File
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("%s: not a regular file", rel)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out = append(out, File{Path: filepath.ToSlash(rel), Data: data, Mode: fi.Mode().Perm()})
		return nil
	})
	return out, err
}

// skipDir names directories neither the originals nor the search for added
// files enter: they are large, and never where a task's tests live.
func skipDir(name string) bool { return name == ".git" || name == "node_modules" }

func loadOriginals(repoDir string, ps protectSet) (map[string]File, error) {
	out := map[string]File{}
	if repoDir == "" || len(ps.globs) == 0 {
		return out, nil
	}
	total := 0
	err := filepath.WalkDir(repoDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == repoDir {
			return nil
		}
		if d.IsDir() {
			if skipDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(repoDir, p)
		rel = filepath.ToSlash(rel)
		if !ps.matchGlobs(rel) {
			return nil
		}
		f, ok, err := readRepoFile(repoDir, rel)
		if err != nil || !ok {
			return err
		}
		if total += len(f.Data); total > maxOriginals {
			return fmt.Errorf("more than %d bytes match grade.protect", maxOriginals)
		}
		out[rel] = f
		return nil
	})
	return out, err
}

// readRepoFile reads the repository's file at the workspace-relative path
// rel. ok is false when there is none, or it is neither a regular file nor
// a link (nothing the grader can put back).
func readRepoFile(repoDir, rel string) (File, bool, error) {
	if repoDir == "" {
		return File{}, false, nil
	}
	full := filepath.Join(repoDir, filepath.FromSlash(rel))
	fi, err := os.Lstat(full)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return File{}, false, nil
	}
	if err != nil {
		return File{}, false, err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(full)
		if err != nil {
			return File{}, false, err
		}
		return File{Path: rel, Data: []byte(target), Mode: fs.ModeSymlink | 0o777}, true, nil
	case fi.Mode().IsRegular():
		data, err := os.ReadFile(full)
		if err != nil {
			return File{}, false, err
		}
		return File{Path: rel, Data: data, Mode: fi.Mode().Perm()}, true, nil
	}
	return File{}, false, nil
}

var (
	goTestFuncRE = lazyregexp.New(`(?m)^func[ \t]+(Test\w*)[ \t]*\([ \t]*\w+[ \t]+\*testing\.T[ \t]*\)`)
	pyTestFuncRE = lazyregexp.New(`(?m)^[ \t]{0,4}(?:async[ \t]+)?def[ \t]+(test\w*)[ \t]*\(`)
)

// expectedTests are the tests the hidden test files define, named as
// Grade.Tests would name them: Go test functions by name, Python test
// functions by their final name element (the grader matches the element,
// since the module and class a runner reports depend on how it was
// started).
func expectedTests(format string, tests []File) []string {
	var names []string
	for _, f := range tests {
		base := path.Base(f.Path)
		switch format {
		case task.FormatGo:
			if !strings.HasSuffix(base, "_test.go") {
				continue
			}
			for _, m := range goTestFuncRE.FindAllSubmatch(f.Data, -1) {
				if n := string(m[1]); isGoTestName(n) {
					names = append(names, n)
				}
			}
		case task.FormatUnittest, task.FormatPytest:
			if !pyTestFile(format, base) {
				continue
			}
			for _, m := range pyTestFuncRE.FindAllSubmatch(f.Data, -1) {
				names = append(names, string(m[1]))
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// isGoTestName applies go test's rule: "Test" then nothing, or anything
// but a lower-case letter (TestMain excluded by its signature already).
func isGoTestName(n string) bool {
	rest := strings.TrimPrefix(n, "Test")
	if rest == "" {
		return true
	}
	r, _ := utf8.DecodeRuneInString(rest)
	return !unicode.IsLower(r)
}

// pyTestFile applies the runners' default discovery patterns.
func pyTestFile(format, base string) bool {
	if !strings.HasSuffix(base, ".py") {
		return false
	}
	if format == task.FormatUnittest {
		return strings.HasPrefix(base, "test")
	}
	return strings.HasPrefix(base, "test_") || strings.HasSuffix(base, "_test.py")
}

// ExpectedTests returns the tests that must report passing: Grade.Tests
// when set, else those the hidden test files define (for formats go,
// unittest and pytest).
func (g *Grader) ExpectedTests() []string { return slices.Clone(g.expected) }

// HiddenTests returns the hidden test files, relative to the tests
// directory.
func (g *Grader) HiddenTests() []File { return slices.Clone(g.tests) }

// ProtectedPaths returns what monitors need to recognise tampering: the
// grade.protect patterns, and the paths the hidden tests will occupy,
// relative to the workspace (absolute when tests_target is).
func (g *Grader) ProtectedPaths() (globs, tests []string) {
	globs = slices.Clone(g.grade.Protect)
	for _, t := range g.tests {
		tests = append(tests, path.Join(g.grade.TestsTarget, t.Path))
	}
	return globs, tests
}

// Run grades the episode that has just ended in sb, whose workspace is the
// absolute path workspace: it puts the protected files back, copies the
// hidden tests in, runs the grade command and reads its output. It returns
// an error only when the machine fails; failing tests, a command that
// cannot start its tests or runs out of time, are a Result. Grading a
// machine again finds nothing more to restore.
//
// The agent's own processes must be stopped first (the machine forked or
// snapshotted, or the episode's commands killed): one left running could
// change the tests again while they run.
func (g *Grader) Run(ctx context.Context, sb sandbox.Sandbox, workspace string) (*Result, error) {
	if !path.IsAbs(workspace) {
		return nil, fmt.Errorf("grade: workspace %q is not absolute", workspace)
	}
	start := time.Now()
	r := &gradeRun{g: g, sb: sb, ws: path.Clean(workspace), dirs: map[string]bool{}}
	r.target = g.grade.TestsTarget
	if !path.IsAbs(r.target) {
		r.target = path.Join(r.ws, r.target)
	}
	// An agent that removed its workspace, or filled its disk, must fail
	// its grade, not make the grade command unable to start: that would
	// read as an infrastructure failure and spare the episode its zero.
	var res *Result
	for _, step := range []struct {
		what string
		do   func(context.Context) error
	}{
		{"workspace", func(ctx context.Context) error { return r.ensureDir(ctx, r.ws) }},
		{"restore protected files", r.restore},
		{"copy hidden tests", r.placeTests},
		{"reward file", r.clearRewardFile},
	} {
		if err := step.do(ctx); err != nil {
			if !noSpace(err) {
				return nil, fmt.Errorf("grade in sandbox %s: %s: %w", sb.ID(), step.what, err)
			}
			res = r.full(err)
			break
		}
	}
	if res == nil {
		var err error
		if res, err = r.command(ctx); err != nil {
			return nil, fmt.Errorf("grade in sandbox %s: %w", sb.ID(), err)
		}
	}
	slices.SortFunc(r.changes, func(a, b Change) int { return strings.Compare(a.Path, b.Path) })
	res.Tampered = slices.CompactFunc(r.changes, func(a, b Change) bool { return a.Path == b.Path })
	notes := slices.DeleteFunc(append(r.notes, res.Note), func(s string) bool { return s == "" })
	res.Note = strings.Join(notes, "; ")
	res.Duration = time.Since(start)
	return res, nil
}

// noSpace reports whether err is the sandbox's disk (or quota) being full.
func noSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// full grades an episode whose sandbox had no room left for the grader's
// files: the agent filled its disk, and a machine the tests cannot be put
// on fails them, as a removed workspace does. Reported as an error, it would
// read as an infrastructure failure, and a rollout would run the episode
// again: a way for an agent to trade a failing episode for another try.
func (r *gradeRun) full(err error) *Result {
	res := &Result{ExitCode: -1}
	tests, _ := r.g.expect(nil)
	res.count(tests)
	res.Note = "the sandbox's disk was full, so the tests could not be put in place: " + clip(err.Error(), 300)
	return res
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
