package task

import (
	"time"

	"github.com/verisim/verisim/internal/sandbox"
)

// FileName is the name of the file that describes a task in its directory.
const FileName = "task.yaml"

// Directories of a task directory beside task.yaml.
const (
	TestsDir    = "tests"    // hidden tests, copied into the machine only to grade
	SolutionDir = "solution" // the reference solution: solve.sh and any files it uses
	SolveScript = "solve.sh" // run by bash in the workspace to apply the solution
)

// Defaults for optional fields.
const (
	DefaultGradeTimeout = 5 * time.Minute
	DefaultSetupTimeout = 10 * time.Minute
	DefaultAgentTimeout = 30 * time.Minute
)

// Grading formats: how the grade command's output is read.
const (
	FormatExit     = "exit"     // one test: the command's exit status
	FormatGo       = "go"       // "--- PASS: TestX" / "--- FAIL: TestX" lines (go test -v)
	FormatUnittest = "unittest" // python -m unittest -v: "test_x (mod.Class...) ... ok|FAIL|ERROR"
	FormatPytest   = "pytest"   // pytest -rA: "PASSED path::test" / "FAILED path::test"
	FormatTAP      = "tap"      // Test Anything Protocol: "ok N name" / "not ok N name"
)

// Reward modes.
const (
	RewardPass     = "pass"     // 1 when every test passes, else 0
	RewardFraction = "fraction" // the fraction of tests that pass
)

// Task is one task: a repository at a known state, what a developer asks
// about it, and how the answer is graded. docs/task-format.md specifies the
// task.yaml encoding; keep the two in step.
type Task struct {
	// ID names the task: lower-case letters, digits, '.', '_' and '-'.
	ID string `yaml:"id"`
	// Instruction is what the developer types, tersely, as they would.
	Instruction string `yaml:"instruction"`
	Repo        Repo   `yaml:"repo"`
	// Setup commands run in the workspace, as the machine's user, before
	// the snapshot every episode starts from (build, warm caches).
	Setup    []string          `yaml:"setup,omitempty"`
	Grade    Grade             `yaml:"grade"`
	Timeouts Timeouts          `yaml:"timeouts,omitempty"`
	Limits   sandbox.Limits    `yaml:"-"`
	LimitsS  string            `yaml:"limits,omitempty"` // "memory=2g,pids=1024,cpus=1,disk=2g"
	Tags     []string          `yaml:"tags,omitempty"`
	Meta     map[string]string `yaml:"metadata,omitempty"`

	// Dir is the task directory (set by Load, not read from the file).
	Dir string `yaml:"-"`
}

// Repo says where the workspace's repository comes from. Exactly one of
// Dir, Git and Archive is set.
type Repo struct {
	// Dir is a directory relative to the task directory: a git checkout
	// (its HEAD is used) or a plain tree (given a plausible history).
	Dir string `yaml:"dir,omitempty"`
	// Git is a repository URL or a local path, checked out at Commit.
	// Clone, when set, is a local clone of Git to read instead of the
	// network.
	Git    string `yaml:"git,omitempty"`
	Commit string `yaml:"commit,omitempty"`
	Clone  string `yaml:"clone,omitempty"`
	// Archive is a .tar, .tar.gz or .tgz of the tree, relative to the task
	// directory.
	Archive string `yaml:"archive,omitempty"`
	// Name is the workspace directory name (default: the last element of
	// the source).
	Name string `yaml:"name,omitempty"`
}

// Grade says how an episode is graded once it has ended.
type Grade struct {
	// Command runs with bash in the workspace as the machine's user.
	Command string `yaml:"command"`
	// Format is how the output is read (default exit).
	Format string `yaml:"format,omitempty"`
	// Reward is pass or fraction (default pass).
	Reward  string        `yaml:"reward,omitempty"`
	Timeout time.Duration `yaml:"timeout,omitempty"`
	// TestsTarget is where the hidden tests/ tree is copied: relative to
	// the workspace (default ".") or absolute.
	TestsTarget string `yaml:"tests_target,omitempty"`
	// Protect are globs (relative to the workspace, "**" for any depth) of
	// files the agent must not change; before grading they are restored to
	// their original content and files matching them that the agent added
	// are removed. The hidden tests' own paths are always protected.
	Protect []string `yaml:"protect,omitempty"`
	// RewardFile, with format exit, is a file the command writes its
	// reward (a number from 0 to 1) to, as Harbor tasks do.
	RewardFile string `yaml:"reward_file,omitempty"`
	// Tests, when set, are the test names that count (as the format reports
	// them, e.g. "TestParse" or "tests/test_x.py::test_y"); other tests in
	// the output are ignored, and a listed test that does not report
	// passing fails.
	Tests []string `yaml:"tests,omitempty"`
	// User runs the command: "" for the machine's user, or "root".
	User string `yaml:"user,omitempty"`
}

// Timeouts bound the phases of an episode.
type Timeouts struct {
	Setup time.Duration `yaml:"setup,omitempty"`
	Agent time.Duration `yaml:"agent,omitempty"`
}
