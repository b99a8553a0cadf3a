package rollout

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/verisim/verisim/internal/harness"
	"github.com/verisim/verisim/internal/image"
	"github.com/verisim/verisim/internal/machine"
	"github.com/verisim/verisim/internal/persona"
	"github.com/verisim/verisim/internal/policy"
	"github.com/verisim/verisim/internal/reward"
	"github.com/verisim/verisim/internal/sandbox"
	"github.com/verisim/verisim/internal/task"
	"github.com/verisim/verisim/internal/trajectory"
)

// DefaultRetries is how many times an episode that failed for
// infrastructure reasons is run again.
const DefaultRetries = 2

// Metadata keys a rollout adds to each trajectory.
const (
	MetaPass     = "grade.pass"  // "true" when every hidden test passed
	MetaTests    = "grade.tests" // "passed/total"
	MetaAttempts = "attempts"    // runs it took, retries included
	MetaTags     = "task.tags"   // the task's tags, comma-separated
)

// Config configures a run.
type Config struct {
	Runtime  sandbox.Runtime
	Machines *machine.Builder
	Image    *image.Image
	// Persona owns every machine (nil: the built-in developer).
	Persona *persona.Persona
	// CacheDir keeps the repositories tasks are materialised into.
	CacheDir string

	// Model answers the agent. When it has a WithSession method, as
	// *policy.Client does, each episode uses its own session so that its
	// turns reach the same replica.
	Model harness.Model
	// Agent is the harness configuration; TaskID and MaxWall are set per
	// task.
	Agent harness.Config

	Samples     int
	Concurrency int
	// Retries bounds re-runs of an episode after an infrastructure
	// failure (default DefaultRetries; negative for none).
	Retries  int
	Shaping  reward.Shaping
	Monitors []reward.Monitor // default reward.DefaultMonitors()
	// RunID names the run in group ids ("<task>@<run>").
	RunID string
	// Skip holds the keys (trajectory.Key) of episodes already done.
	Skip map[string]bool
	// Sink receives each finished episode, from one goroutine at a time.
	Sink func(*trajectory.Trajectory) error
	// Progress, when set, is called after every change of the counts, from
	// one goroutine at a time.
	Progress func(Progress)
	Log      *slog.Logger
}

// Progress is a snapshot of a run's counts.
type Progress struct {
	Total, Skipped   int
	Done, Running    int
	Failed           int // infra_error, timeout and policy_error episodes
	Passed           int
	CompletionTokens int64
	Elapsed          time.Duration
}

// withSession is the optional capability of a model to pin one episode's
// requests to one replica.
type withSession interface {
	WithSession(id string) *policy.Client
}

type job struct {
	t      *task.Task
	sample int
}

type runner struct {
	cfg    Config
	start  time.Time
	mu     sync.Mutex // guards prog, envs and sink calls
	prog   Progress
	envs   map[string]*envEntry
	sinkMu sync.Mutex
	tokens atomic.Int64
}

// envEntry is a task's prepared environment, shared by its episodes.
type envEntry struct {
	ready   chan struct{}
	env     *Env
	err     error
	pending int // episodes of the task not yet finished
}

// Run runs cfg.Samples episodes of each task, cfg.Concurrency at a time,
// and returns when all have been handed to the sink or ctx ends. Its error
// is ctx's or the sink's; episode failures are in the trajectories.
func Run(ctx context.Context, cfg Config, tasks []*task.Task) error {
	if cfg.Runtime == nil || cfg.Machines == nil || cfg.Image == nil || cfg.Model == nil || cfg.Sink == nil {
		return errors.New("rollout: Runtime, Machines, Image, Model and Sink are required")
	}
	if cfg.Samples <= 0 {
		return errors.New("rollout: Samples must be positive")
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 1
	}
	if cfg.Retries == 0 {
		cfg.Retries = DefaultRetries
	} else if cfg.Retries < 0 {
		cfg.Retries = 0
	}
	if cfg.Monitors == nil {
		cfg.Monitors = reward.DefaultMonitors()
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Persona == nil {
		cfg.Persona = persona.Default()
	}
	r := &runner{cfg: cfg, start: time.Now(), envs: map[string]*envEntry{}}
	var jobs []job
	for _, t := range tasks {
		for s := 0; s < cfg.Samples; s++ {
			r.prog.Total++
			if cfg.Skip[trajectory.Key(t.ID, s)] {
				r.prog.Skipped++
				continue
			}
			jobs = append(jobs, job{t, s})
			e, ok := r.envs[t.ID]
			if !ok {
				e = &envEntry{}
				r.envs[t.ID] = e
			}
			e.pending++
		}
	}
	r.report(func(*Progress) {})

	// Jobs go out task by task, so that few snapshots are alive at once.
	ch := make(chan job)
	var wg sync.WaitGroup
	var sinkErr error
	var sinkOnce sync.Once
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range cfg.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range ch {
				if err := r.runJob(runCtx, j); err != nil {
					sinkOnce.Do(func() { sinkErr = err; cancel() })
				}
			}
		}()
	}
feed:
	for _, j := range jobs {
		select {
		case ch <- j:
		case <-runCtx.Done():
			break feed
		}
	}
	close(ch)
	wg.Wait()
	r.releaseAll(ctx)
	if sinkErr != nil {
		return sinkErr
	}
	return ctx.Err()
}

func (r *runner) report(change func(*Progress)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	change(&r.prog)
	if r.cfg.Progress != nil {
		p := r.prog
		p.CompletionTokens = r.tokens.Load()
		p.Elapsed = time.Since(r.start)
		r.cfg.Progress(p)
	}
}

// runJob runs one episode and hands its trajectory to the sink; an episode
// cut short by ctx is dropped.
func (r *runner) runJob(ctx context.Context, j job) error {
	r.report(func(p *Progress) { p.Running++ })
	env, envErr := r.env(ctx, j.t)
	var traj *trajectory.Trajectory
	if ctx.Err() == nil {
		traj = r.episode(ctx, j, env, envErr)
	}
	r.done(ctx, j.t)
	if traj == nil { // cut short by ctx; a graded one is kept even then
		r.report(func(p *Progress) { p.Running-- })
		return nil
	}
	r.sinkMu.Lock()
	err := r.cfg.Sink(traj)
	r.sinkMu.Unlock()
	r.report(func(p *Progress) {
		p.Running--
		p.Done++
		if traj.Status != trajectory.StatusOK {
			p.Failed++
		}
		if traj.Metadata[MetaPass] == "true" {
			p.Passed++
		}
	})
	if err != nil {
		return fmt.Errorf("record episode %s: %w", traj.Key(), err)
	}
	return nil
}

// env returns the task's prepared environment, preparing it on first use.
func (r *runner) env(ctx context.Context, t *task.Task) (*Env, error) {
	r.mu.Lock()
	e := r.envs[t.ID]
	first := e.ready == nil
	if first {
		e.ready = make(chan struct{})
	}
	r.mu.Unlock()
	if first {
		var err error
		for attempt := 0; attempt <= r.cfg.Retries; attempt++ {
			e.env, err = Prepare(ctx, r.setup(), t)
			if err == nil || ctx.Err() != nil || errors.Is(err, ErrTask) {
				break
			}
			r.cfg.Log.Warn("prepare failed; retrying", "task", t.ID, "err", err)
		}
		e.err = err
		close(e.ready)
	}
	select {
	case <-e.ready:
		return e.env, e.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// done counts one episode of t as finished and releases the task's
// snapshot after its last.
func (r *runner) done(ctx context.Context, t *task.Task) {
	r.mu.Lock()
	e := r.envs[t.ID]
	e.pending--
	last := e.pending == 0
	r.mu.Unlock()
	if last && e.ready != nil {
		<-e.ready
		if e.env != nil {
			r.release(ctx, e.env)
		}
	}
}

// release removes a task's snapshot, even when ctx has ended.
func (r *runner) release(ctx context.Context, env *Env) {
	if err := env.Release(ctx); err != nil {
		r.cfg.Log.Warn("remove task snapshot", "task", env.Task.ID, "err", err)
	}
}

// releaseAll removes the snapshots of tasks whose episodes were cut short.
func (r *runner) releaseAll(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.envs {
		if e.ready == nil || e.pending == 0 {
			continue
		}
		<-e.ready
		if e.env != nil {
			r.release(ctx, e.env)
		}
	}
}

func (r *runner) setup() Setup {
	return Setup{Runtime: r.cfg.Runtime, Machines: r.cfg.Machines, Image: r.cfg.Image, Persona: r.cfg.Persona, CacheDir: r.cfg.CacheDir}
}

// episode runs one sample of a task, retrying infrastructure failures.
func (r *runner) episode(ctx context.Context, j job, env *Env, envErr error) *trajectory.Trajectory {
	t := j.t
	var traj *trajectory.Trajectory
	attempts := 0
	for attempts <= r.cfg.Retries {
		attempts++
		if envErr != nil {
			traj = infraTrajectory(t, j.sample, fmt.Errorf("prepare the machine: %w", envErr))
			break
		}
		traj = r.attempt(ctx, j, env)
		if traj == nil {
			return nil
		}
		if traj.Status != trajectory.StatusInfraError {
			break
		}
		r.cfg.Log.Warn("episode failed for infrastructure reasons", "task", t.ID, "sample", j.sample, "attempt", attempts, "err", traj.Error)
	}
	traj.Sample = j.sample
	traj.GroupID = t.ID
	if r.cfg.RunID != "" {
		traj.GroupID = t.ID + "@" + r.cfg.RunID
		traj.ID = r.cfg.RunID + "/" + traj.Key()
	}
	if traj.Metadata == nil {
		traj.Metadata = map[string]string{}
	}
	traj.Metadata[MetaAttempts] = strconv.Itoa(attempts)
	if len(t.Tags) > 0 {
		traj.Metadata[MetaTags] = strings.Join(t.Tags, ",")
	}
	for k, v := range t.Meta {
		if _, ok := traj.Metadata["task."+k]; !ok {
			traj.Metadata["task."+k] = v
		}
	}
	if r.cfg.Image != nil {
		traj.Sandbox.Image = r.cfg.Image.Ref
	}
	traj.Sandbox.Persona = r.cfg.Persona.UserName
	traj.Sandbox.Backend = r.cfg.Runtime.Name()
	return traj
}

// attempt runs the episode once in a fresh fork. It returns nil when ctx
// ended first.
func (r *runner) attempt(ctx context.Context, j job, env *Env) *trajectory.Trajectory {
	t := j.t
	timings := map[string]float64{}
	began := time.Now()
	sb, err := r.cfg.Runtime.Fork(ctx, env.Snapshot, sandboxLabels(t.ID, strconv.Itoa(j.sample)))
	if ctx.Err() != nil {
		if err == nil {
			closeSandbox(ctx, sb)
		}
		return nil
	}
	if err != nil {
		return infraTrajectory(t, j.sample, fmt.Errorf("fork the task's snapshot: %w", err))
	}
	defer func() {
		if err := closeSandbox(ctx, sb); err != nil {
			r.cfg.Log.Warn("close sandbox", "id", sb.ID(), "err", err)
		}
	}()
	timings["fork"] = time.Since(began).Seconds()

	model := r.cfg.Model
	if ws, ok := model.(withSession); ok {
		model = ws.WithSession(fmt.Sprintf("%s-%s-%d-%s", r.cfg.RunID, t.ID, j.sample, sb.ID()))
	}
	acfg := r.cfg.Agent
	acfg.TaskID = t.ID
	acfg.MaxWall = t.Timeouts.Agent
	user := acfg.OnTurn
	acfg.OnTurn = func(turn trajectory.Turn) {
		r.tokens.Add(int64(len(turn.CompletionTokenIDs)))
		if user != nil {
			user(turn)
		}
	}
	agent, err := harness.NewAgent(model, acfg)
	if err != nil {
		return infraTrajectory(t, j.sample, err)
	}
	agentStart := time.Now()
	traj, err := agent.Run(ctx, harness.SandboxWorkspace(sb, env.Workspace), t.Instruction)
	if ctx.Err() != nil {
		return nil
	}
	if err != nil {
		return infraTrajectory(t, j.sample, err)
	}
	timings["agent"] = time.Since(agentStart).Seconds()
	traj.Sandbox.ID = sb.ID()

	var res *reward.Result
	if traj.Status == trajectory.StatusOK {
		gradeStart := time.Now()
		if err := r.stopAgentProcesses(ctx, sb); err != nil {
			return infraTrajectory(t, j.sample, err)
		}
		res, err = env.Grader.Run(ctx, sb, env.Workspace)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			traj.Status = trajectory.StatusInfraError
			traj.Error = fmt.Sprintf("grade: %v", err)
		}
		timings["grade"] = time.Since(gradeStart).Seconds()
	}
	globs, tests := env.Grader.ProtectedPaths()
	reward.Label(&reward.Episode{
		Traj: traj, Grade: res, Protect: globs, TestPaths: tests, Workspace: env.Workspace,
	}, r.cfg.Monitors)
	shaping := r.cfg.Shaping
	if shaping.Mode == "" {
		shaping.Mode = t.Grade.Reward
	}
	reward.Score(traj, res, shaping)
	if res != nil {
		if traj.Metadata == nil {
			traj.Metadata = map[string]string{}
		}
		traj.Metadata[MetaPass] = strconv.FormatBool(res.Pass)
		traj.Metadata[MetaTests] = fmt.Sprintf("%d/%d", res.Passed, res.Total)
	}
	timings["episode"] = time.Since(began).Seconds()
	traj.Timings = timings
	traj.Finished = time.Now()
	return traj
}

// stopAgentProcesses kills whatever the agent left running (a background
// job could otherwise rewrite the tests after the grader restored them):
// the sandbox's init kills them all where the backend can (sandbox.Stopper),
// else kill(-1) from a process of the machine's user reaches every other
// process of that user. Only isolating backends get it; on the process
// backend the user is the host's.
func (r *runner) stopAgentProcesses(ctx context.Context, sb sandbox.Sandbox) error {
	if r.cfg.Runtime.Name() == "process" {
		return nil
	}
	if s, ok := sb.(sandbox.Stopper); ok {
		// Kills what the agent left without starting a process, which a
		// machine the agent filled to its pids limit could not.
		if err := s.StopAll(ctx); err != nil {
			return fmt.Errorf("stop the agent's processes before grading: %w", err)
		}
		return nil
	}
	// From "/": the agent may have removed its workspace.
	st, err := sb.Run(ctx, sandbox.Cmd{Args: []string{"/bin/sh", "-c", "kill -KILL -1 2>/dev/null; exit 0"}, Dir: "/", Timeout: 30 * time.Second})
	if err != nil {
		return fmt.Errorf("stop the agent's processes before grading: %w", err)
	}
	if st.Code != 0 {
		return fmt.Errorf("stop the agent's processes before grading: exit %d", st.Code)
	}
	return nil
}

func sandboxLabels(taskID, sample string) sandbox.ForkOptions {
	return sandbox.ForkOptions{Labels: map[string]string{"task": taskID, "sample": sample}}
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// infraTrajectory records an episode that could not be run.
func infraTrajectory(t *task.Task, sample int, err error) *trajectory.Trajectory {
	now := time.Now()
	return &trajectory.Trajectory{
		Version: trajectory.Version, TaskID: t.ID, Sample: sample,
		Status: trajectory.StatusInfraError, Error: err.Error(),
		Started: now, Finished: now,
	}
}

// workspaceOf is where a machine without a repository works: the user's
// home.
func workspaceOf(spec sandbox.Spec) string {
	if spec.Dir != "" {
		return spec.Dir
	}
	return path.Clean(spec.User.Home)
}
