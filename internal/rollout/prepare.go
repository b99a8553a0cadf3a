package rollout

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/verisim/verisim/internal/image"
	"github.com/verisim/verisim/internal/machine"
	"github.com/verisim/verisim/internal/persona"
	"github.com/verisim/verisim/internal/reward"
	"github.com/verisim/verisim/internal/sandbox"
	"github.com/verisim/verisim/internal/task"
)

// ErrTask marks a failure of the task itself (its repository cannot be
// placed, a setup command fails): retrying cannot help.
var ErrTask = errors.New("task failed to prepare")

// Setup is what preparing a task's machine needs.
type Setup struct {
	Runtime  sandbox.Runtime
	Machines *machine.Builder
	Image    *image.Image
	Persona  *persona.Persona // nil: the built-in developer
	CacheDir string
	// Limits are the machine's limits where a task leaves one out (as
	// verisim's --limits default): without them, an agent's fork bomb or
	// memory hog would reach the host.
	Limits sandbox.Limits
}

// Env is a task's prepared machine: a snapshot every episode forks from,
// and the grader that knows the task's hidden tests.
type Env struct {
	Task      *task.Task
	Snapshot  string
	Workspace string // the repository's directory inside the machine
	Grader    *reward.Grader
	// Prepared is how long preparing took.
	Prepared time.Duration
	rt       sandbox.Runtime
}

// Prepare builds t's machine: the repository materialised and placed in
// the persona's workspace, the setup commands run, and a snapshot taken.
// The caller releases the Env. On error nothing is left behind.
func Prepare(ctx context.Context, s Setup, t *task.Task) (_ *Env, retErr error) {
	began := time.Now()
	p := s.Persona
	if p == nil {
		p = persona.Default()
	}
	loc, _ := time.LoadLocation(p.Timezone)
	repo, err := task.Materialize(ctx, t, s.CacheDir, task.Author{Name: p.FullName, Email: p.Email, Location: loc})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTask, err)
	}
	grader, err := reward.NewGrader(t.Grade, t.TestsPath(), repo)
	if err != nil {
		return nil, fmt.Errorf("%w: task %s: %w", ErrTask, t.ID, err)
	}
	// A limit the task leaves out takes the setup's.
	limits := t.Limits
	if limits.MemoryBytes == 0 {
		limits.MemoryBytes = s.Limits.MemoryBytes
	}
	if limits.PIDs == 0 {
		limits.PIDs = s.Limits.PIDs
	}
	if limits.CPUs == 0 {
		limits.CPUs = s.Limits.CPUs
	}
	if limits.DiskBytes == 0 {
		limits.DiskBytes = s.Limits.DiskBytes
	}
	spec, err := s.Machines.Spec(ctx, machine.Machine{
		Image: s.Image, Persona: p, Repo: repo, RepoName: t.Repo.Name, WarmGoCache: usesGo(t, repo), Limits: limits,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: task %s: %w", ErrTask, t.ID, err)
	}
	ws := workspaceOf(spec)
	grader.Env = reward.CleanEnv(spec.Env)
	sb, err := s.Runtime.Create(ctx, spec)
	if err != nil {
		for _, l := range spec.OwnedLayers {
			os.RemoveAll(l)
		}
		return nil, fmt.Errorf("create the machine of task %s: %w", t.ID, err)
	}
	defer closeSandbox(ctx, sb)
	if err := runSetup(ctx, sb, t, ws); err != nil {
		return nil, err
	}
	snap, err := sb.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("snapshot the machine of task %s: %w", t.ID, err)
	}
	return &Env{Task: t, Snapshot: snap, Workspace: ws, Grader: grader, Prepared: time.Since(began), rt: s.Runtime}, nil
}

// usesGo reports whether a task builds Go code, and so whether its
// machine should have a warm Go build cache.
func usesGo(t *task.Task, repo string) bool {
	if repo != "" {
		if _, err := os.Stat(filepath.Join(repo, "go.mod")); err == nil {
			return true
		}
	}
	for _, c := range append([]string{t.Grade.Command}, t.Setup...) {
		for _, f := range strings.Fields(c) {
			if f == "go" {
				return true
			}
		}
	}
	return false
}

// runSetup runs the task's setup commands in the workspace, as the
// machine's user, within the task's setup timeout.
func runSetup(ctx context.Context, sb sandbox.Sandbox, t *task.Task, ws string) error {
	deadline := time.Now().Add(t.Timeouts.Setup)
	for i, c := range t.Setup {
		var out tailBuffer
		st, err := sb.Run(ctx, sandbox.Cmd{
			Args: []string{"/bin/bash", "-c", c}, Dir: ws, Stdout: &out, Stderr: &out,
			Timeout: time.Until(deadline),
		})
		if err != nil {
			return fmt.Errorf("task %s: setup[%d] %q: %w", t.ID, i, c, err)
		}
		if st.TimedOut {
			return fmt.Errorf("%w: task %s: setup ran past timeouts.setup (%v) in %q", ErrTask, t.ID, t.Timeouts.Setup, c)
		}
		if st.Code != 0 {
			return fmt.Errorf("%w: task %s: setup[%d] %q exited %d:\n%s", ErrTask, t.ID, i, c, st.Code, out.String())
		}
	}
	return nil
}

// Release removes the snapshot, within a minute and even when ctx has
// ended (a cancelled run must not leak it). It is idempotent.
func (e *Env) Release(ctx context.Context) error {
	if e == nil || e.Snapshot == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	snap := e.Snapshot
	e.Snapshot = ""
	if err := e.rt.RemoveSnapshot(ctx, snap); err != nil {
		return fmt.Errorf("remove snapshot %s of task %s: %w", snap, e.Task.ID, err)
	}
	return nil
}

// closeSandbox closes sb within a minute, even when ctx has ended.
func closeSandbox(ctx context.Context, sb sandbox.Sandbox) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	return sb.Close(ctx)
}

// ApplySolution copies the task's solution/ into the machine and runs
// solve.sh in the workspace as the machine's user, with $SOLUTION_DIR set;
// the copy is removed afterwards so that grading sees only its effect.
func ApplySolution(ctx context.Context, sb sandbox.Sandbox, t *task.Task, ws string) error {
	if !t.HasSolution() {
		return fmt.Errorf("task %s has no %s/%s", t.ID, task.SolutionDir, task.SolveScript)
	}
	dir := "/tmp/.solution-" + t.ID
	root := sandbox.User{Home: "/root"}
	if err := runQuiet(ctx, sb, &root, "/", "mkdir -p "+dir+" && chmod 755 "+dir); err != nil {
		return err
	}
	src := filepath.Join(t.Dir, task.SolutionDir)
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			if err == nil && p != src {
				rel, _ := filepath.Rel(src, p)
				return runQuiet(ctx, sb, &root, "/", "mkdir -p '"+path.Join(dir, filepath.ToSlash(rel))+"'")
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		info, _ := d.Info()
		rel, _ := filepath.Rel(src, p)
		return sb.WriteFile(ctx, path.Join(dir, filepath.ToSlash(rel)), data, info.Mode().Perm()|0o444)
	})
	if err != nil {
		return fmt.Errorf("copy the solution of %s into the machine: %w", t.ID, err)
	}
	var out tailBuffer
	st, err := sb.Run(ctx, sandbox.Cmd{
		Args: []string{"/bin/bash", "-c", "export SOLUTION_DIR=" + dir + "; bash \"$SOLUTION_DIR/solve.sh\""},
		Dir:  ws, Stdout: &out, Stderr: &out, Timeout: t.Timeouts.Setup,
	})
	runQuiet(context.WithoutCancel(ctx), sb, &root, "/", "rm -rf "+dir)
	if err != nil {
		return fmt.Errorf("run the solution of %s: %w", t.ID, err)
	}
	if st.Code != 0 || st.TimedOut {
		return fmt.Errorf("solution/solve.sh of %s exited %d:\n%s", t.ID, st.Code, out.String())
	}
	return nil
}

func runQuiet(ctx context.Context, sb sandbox.Sandbox, user *sandbox.User, dir, command string) error {
	var out tailBuffer
	st, err := sb.Run(ctx, sandbox.Cmd{Args: []string{"/bin/sh", "-c", command}, User: user, Dir: dir, Stdout: &out, Stderr: &out, Timeout: time.Minute})
	if err != nil {
		return err
	}
	if st.Code != 0 {
		return fmt.Errorf("%s: exit %d: %s", command, st.Code, strings.TrimSpace(out.String()))
	}
	return nil
}

// tailBuffer keeps the last 8 KiB written to it.
type tailBuffer struct{ b bytes.Buffer }

const tailMax = 8 << 10

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b.Write(p)
	if t.b.Len() > 2*tailMax {
		keep := t.b.Bytes()[t.b.Len()-tailMax:]
		t.b = *bytes.NewBuffer(append([]byte(nil), keep...))
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	b := t.b.Bytes()
	if len(b) > tailMax {
		b = b[len(b)-tailMax:]
	}
	return string(b)
}
