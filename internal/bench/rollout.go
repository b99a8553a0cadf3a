package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/verisim/verisim/internal/harness"
	"github.com/verisim/verisim/internal/policy"
	"github.com/verisim/verisim/internal/rollout"
	"github.com/verisim/verisim/internal/sandbox"
	"github.com/verisim/verisim/internal/task"
	"github.com/verisim/verisim/internal/trajectory"
)

// RolloutOptions configure the rollout benchmark.
type RolloutOptions struct {
	Setup rollout.Setup
	// Calls is the number of tool calls timed one by one for the overhead
	// row, and each concurrent episode's calls for the throughput row.
	Calls int
	// Episodes is the number of trivial episodes for the episodes/s row.
	Episodes    int
	Concurrency int
	// Dir holds the benchmark's task.
	Dir string
}

// Targets of the rollout benchmark, the numbers the harness must beat on
// a two-core machine.
const (
	TargetOverheadMS   = 1.0
	TargetCallsPerSec  = 2000
	TargetEpisodesPerS = 50
)

// RolloutResult is what the rollout benchmark measured.
type RolloutResult struct {
	Overhead       Samples // harness time per tool call
	CallsPerSec    float64
	EpisodesPerSec float64
	Concurrency    int
}

// Table lays the result out beside the targets.
func (r *RolloutResult) Table() *Table {
	tab := &Table{Subjects: []string{"verisim", "target"}}
	tab.Rows = append(tab.Rows,
		Row{Scenario: "harness overhead per tool call (p50 / p99)", Cells: map[string]Cell{
			"verisim": {Samples: r.Overhead},
			"target":  {Value: fmt.Sprintf("p50 ≤ %.0f ms", TargetOverheadMS)},
		}},
		Row{Scenario: fmt.Sprintf("tool calls/s, %d episodes at once", r.Concurrency), Cells: map[string]Cell{
			"verisim": {Value: fmt.Sprintf("%.0f", r.CallsPerSec)},
			"target":  {Value: fmt.Sprintf("≥ %d", TargetCallsPerSec)},
		}},
		Row{Scenario: fmt.Sprintf("trivial episodes/s, fork → graded trajectory, %d at once", r.Concurrency), Cells: map[string]Cell{
			"verisim": {Value: fmt.Sprintf("%.1f", r.EpisodesPerSec)},
			"target":  {Value: fmt.Sprintf("≥ %d", TargetEpisodesPerS)},
		}})
	tab.Notes = append(tab.Notes, "The model is scripted and answers at once; every tool call runs in a real sandbox. The overhead row is the time between two model calls minus the time of the call's workspace operation.")
	return tab
}

// Rollout measures the harness and rollout machinery with an instant
// scripted model: the harness's own time per tool call (the call's
// workspace operation excluded), tool calls per second across concurrent
// episodes, and trivial episodes per second from fork to graded trajectory.
func Rollout(ctx context.Context, o RolloutOptions) (*RolloutResult, error) {
	if o.Calls <= 0 || o.Episodes <= 0 || o.Concurrency <= 0 {
		return nil, fmt.Errorf("bench rollout: calls, episodes and concurrency must be positive")
	}
	t, err := trivialTask(o.Dir)
	if err != nil {
		return nil, err
	}
	env, err := rollout.Prepare(ctx, o.Setup, t)
	if err != nil {
		return nil, err
	}
	defer env.Release(ctx)

	r := &RolloutResult{Concurrency: o.Concurrency}
	if r.Overhead, err = toolCallOverhead(ctx, o.Setup.Runtime, env, o.Calls); err != nil {
		return nil, err
	}
	if r.CallsPerSec, err = toolCallRate(ctx, o.Setup.Runtime, env, o.Calls, o.Concurrency); err != nil {
		return nil, err
	}
	if r.EpisodesPerSec, err = EpisodeRate(ctx, o.Setup, t, o.Episodes, o.Concurrency); err != nil {
		return nil, err
	}
	return r, nil
}

// trivialTask writes a task whose grade is "true": the cheapest episode.
func trivialTask(dir string) (*task.Task, error) {
	files := map[string]string{
		task.FileName:    "id: bench-trivial\ninstruction: look around\nrepo: {dir: repo, name: scratch}\ngrade: {command: \"true\"}\n",
		"repo/README.md": "# scratch\n\nNotes.\n",
		"repo/notes.txt": "remember the milk\n",
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return nil, err
		}
	}
	return task.Load(dir)
}

// readLoop is a script that reads notes.txt calls times, then answers.
func readLoop(calls int, onCall func()) *policy.Scripted {
	args := `{"path":"notes.txt"}`
	return &policy.Scripted{Reply: func(_ context.Context, req policy.Request) (policy.Message, error) {
		if onCall != nil {
			onCall()
		}
		if policy.Turn(req) >= calls {
			return policy.Message{Content: "done"}, nil
		}
		return policy.Message{ToolCalls: []policy.ToolCall{{Name: "read_file", Arguments: args}}}, nil
	}}
}

// timedWorkspace adds up the time spent in a workspace's operations.
type timedWorkspace struct {
	harness.Workspace
	spent atomic.Int64 // ns
}

func (w *timedWorkspace) ReadFile(ctx context.Context, p string) ([]byte, error) {
	start := time.Now()
	b, err := w.Workspace.ReadFile(ctx, p)
	w.spent.Add(int64(time.Since(start)))
	return b, err
}

func (w *timedWorkspace) Stat(ctx context.Context, p string) (harness.FileInfo, error) {
	start := time.Now()
	fi, err := w.Workspace.Stat(ctx, p)
	w.spent.Add(int64(time.Since(start)))
	return fi, err
}

// toolCallOverhead runs one episode of calls read_file calls and returns,
// per call, the time between the model calls around it minus the time the
// workspace took.
func toolCallOverhead(ctx context.Context, rt sandbox.Runtime, env *rollout.Env, calls int) (Samples, error) {
	sb, err := rt.Fork(ctx, env.Snapshot, sandbox.ForkOptions{})
	if err != nil {
		return nil, err
	}
	defer sb.Close(context.WithoutCancel(ctx))
	ws := &timedWorkspace{Workspace: harness.SandboxWorkspace(sb, env.Workspace)}
	var (
		last      time.Time
		lastSpent int64
		out       Samples
	)
	model := readLoop(calls, func() {
		now := time.Now()
		spent := ws.spent.Load()
		if !last.IsZero() {
			out = append(out, now.Sub(last)-time.Duration(spent-lastSpent))
		}
		last, lastSpent = now, spent
	})
	agent, err := harness.NewAgent(model, harness.Config{MaxTurns: calls + 1})
	if err != nil {
		return nil, err
	}
	tr, err := agent.Run(ctx, ws, "look around")
	if err != nil {
		return nil, err
	}
	if tr.Status != trajectory.StatusOK {
		return nil, fmt.Errorf("bench episode: %s: %s", tr.Status, tr.Error)
	}
	return out, nil
}

// toolCallRate runs concurrency episodes of calls read_file calls each,
// in forks made beforehand, and returns tool calls per second.
func toolCallRate(ctx context.Context, rt sandbox.Runtime, env *rollout.Env, calls, concurrency int) (float64, error) {
	sbs := make([]sandbox.Sandbox, concurrency)
	for i := range sbs {
		sb, err := rt.Fork(ctx, env.Snapshot, sandbox.ForkOptions{})
		if err != nil {
			return 0, err
		}
		defer sb.Close(context.WithoutCancel(ctx))
		sbs[i] = sb
	}
	agent, err := harness.NewAgent(readLoop(calls, nil), harness.Config{MaxTurns: calls + 1})
	if err != nil {
		return 0, err
	}
	var wg sync.WaitGroup
	errs := make([]error, concurrency)
	start := time.Now()
	for i, sb := range sbs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tr, err := agent.Run(ctx, harness.SandboxWorkspace(sb, env.Workspace), "look around")
			if err == nil && tr.Status != trajectory.StatusOK {
				err = fmt.Errorf("bench episode: %s: %s", tr.Status, tr.Error)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	for _, err := range errs {
		if err != nil {
			return 0, err
		}
	}
	return float64(calls*concurrency) / elapsed.Seconds(), nil
}

// EpisodeRate runs n episodes of t with a model that answers at once and
// returns graded trajectories per second, preparation included.
func EpisodeRate(ctx context.Context, s rollout.Setup, t *task.Task, n, concurrency int) (float64, error) {
	var bad atomic.Value
	start := time.Now()
	err := rollout.Run(ctx, rollout.Config{
		Runtime: s.Runtime, Machines: s.Machines, Image: s.Image, Persona: s.Persona, CacheDir: s.CacheDir,
		Model: &policy.Scripted{Reply: func(context.Context, policy.Request) (policy.Message, error) {
			return policy.Message{Content: "all good"}, nil
		}},
		Samples: n, Concurrency: concurrency,
		Sink: func(tr *trajectory.Trajectory) error {
			if tr.Status != trajectory.StatusOK || tr.Metadata[rollout.MetaPass] != "true" {
				bad.CompareAndSwap(nil, fmt.Sprintf("%s: %s %s", tr.Key(), tr.Status, tr.Error))
			}
			return trajectory.NewWriter(io.Discard).Write(tr)
		},
	}, []*task.Task{t})
	elapsed := time.Since(start)
	if err != nil {
		return 0, err
	}
	if b := bad.Load(); b != nil {
		return 0, fmt.Errorf("bench episode not graded as passing: %v", b)
	}
	return float64(n) / elapsed.Seconds(), nil
}
