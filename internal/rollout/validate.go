package rollout

import (
	"context"
	"fmt"
	"time"

	"github.com/verisim/verisim/internal/reward"
	"github.com/verisim/verisim/internal/task"
)

// Verdict is what validating a task found.
type Verdict struct {
	Task string
	// Solution and Nothing are the grades with the reference solution
	// applied and with nothing done; nil when that step did not run.
	Solution, Nothing *reward.Result
	// Err is the first failure that kept the task from being checked, or
	// why it did not pass.
	Err      error
	Prepared time.Duration
	Duration time.Duration
}

// OK reports whether the task is sound: the reference solution passes and
// doing nothing does not.
func (v *Verdict) OK() bool {
	return v.Err == nil && v.Solution != nil && v.Solution.Pass && v.Nothing != nil && !v.Nothing.Pass
}

// Validate proves a task: it prepares the machine as a rollout would, then
// in one fork applies the reference solution and grades, and in another
// grades without doing anything.
func Validate(ctx context.Context, s Setup, t *task.Task) *Verdict {
	began := time.Now()
	v := &Verdict{Task: t.ID}
	defer func() { v.Duration = time.Since(began) }()
	if !t.HasSolution() {
		v.Err = fmt.Errorf("no %s/%s: write the reference solution", task.SolutionDir, task.SolveScript)
		return v
	}
	env, err := Prepare(ctx, s, t)
	if err != nil {
		v.Err = err
		return v
	}
	defer func() {
		if err := env.Release(ctx); err != nil && v.Err == nil {
			v.Err = err
		}
	}()
	v.Prepared = env.Prepared
	grade := func(solve bool) (*reward.Result, error) {
		sb, err := s.Runtime.Fork(ctx, env.Snapshot, sandboxLabels(t.ID, "validate"))
		if err != nil {
			return nil, fmt.Errorf("fork: %w", err)
		}
		defer closeSandbox(ctx, sb)
		if solve {
			if err := ApplySolution(ctx, sb, t, env.Workspace); err != nil {
				return nil, err
			}
		}
		return env.Grader.Run(ctx, sb, env.Workspace)
	}
	if v.Solution, err = grade(true); err != nil {
		v.Err = err
		return v
	}
	if v.Nothing, err = grade(false); err != nil {
		v.Err = err
		return v
	}
	switch {
	case !v.Solution.Pass:
		v.Err = fmt.Errorf("the reference solution does not pass (%d/%d tests):\n%s", v.Solution.Passed, v.Solution.Total, tail(v.Solution.Output, 30))
	case v.Nothing.Pass:
		v.Err = fmt.Errorf("doing nothing passes (%d/%d tests): the hidden tests do not test the change", v.Nothing.Passed, v.Nothing.Total)
	}
	return v
}
