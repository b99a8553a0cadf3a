package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/verisim/verisim/internal/atomicfile"
	"github.com/verisim/verisim/internal/harness"
	"github.com/verisim/verisim/internal/reward"
	"github.com/verisim/verisim/internal/rollout"
	"github.com/verisim/verisim/internal/trajectory"
)

// rolloutOpts are the flags of "verisim rollout" and "verisim eval".
type rolloutOpts struct {
	suite          suiteFlags
	env            envFlags
	model          modelFlags
	samples        int
	concurrency    int
	out            string
	resume         bool
	episodeRetries int
	maxTurns       int
	temperature    float64
	penalties      []string
	lengthPen      float64
	freeTurns      int
	ks             []int
}

const trajectoriesFile = "trajectories.jsonl"

func (o *rolloutOpts) register(c *cobra.Command, samples int) {
	o.suite.register(c)
	o.env.register(c)
	f := c.Flags()
	o.model.register(f)
	f.IntVar(&o.samples, "samples", samples, "episodes per task (G, the group size)")
	f.IntVar(&o.concurrency, "concurrency", runtime.NumCPU(), "episodes run at once")
	f.StringVar(&o.out, "out", "", "run directory: trajectories.jsonl and summary.json go there")
	f.BoolVar(&o.resume, "resume", false, "continue the run in --out, skipping episodes already finished")
	f.IntVar(&o.episodeRetries, "episode-retries", rollout.DefaultRetries, "re-runs of an episode that failed for infrastructure reasons")
	f.IntVar(&o.maxTurns, "max-turns", harness.DefaultMaxTurns, "most model calls per episode")
	f.Float64Var(&o.temperature, "temperature", 1, "sampling temperature (negative: the server's default)")
	f.StringSliceVar(&o.penalties, "penalty", nil, "reward penalty per flag, NAME=VALUE (e.g. test_tampering=1)")
	f.Float64Var(&o.lengthPen, "length-penalty", 0, "reward penalty per turn beyond --free-turns")
	f.IntVar(&o.freeTurns, "free-turns", 10, "turns an episode may take before --length-penalty applies")
}

func (o *rolloutOpts) check() error {
	if err := o.model.check(); err != nil {
		return err
	}
	switch {
	case o.out == "":
		return usageErr("--out DIR is required: the run directory, e.g. runs/first")
	case o.samples <= 0:
		return usageErr("--samples must be positive")
	case o.concurrency <= 0:
		return usageErr("--concurrency must be positive")
	case o.episodeRetries < 0:
		return usageErr("--episode-retries cannot be negative")
	case o.maxTurns <= 0:
		return usageErr("--max-turns must be positive")
	}
	for _, k := range o.ks {
		if k <= 0 || k > o.samples {
			return usageErr("--k %d: each k must be between 1 and --samples (%d)", k, o.samples)
		}
	}
	_, err := o.shaping()
	return err
}

func (o *rolloutOpts) shaping() (reward.Shaping, error) {
	s := reward.Shaping{FlagPenalty: map[string]float64{}, LengthPenalty: o.lengthPen, FreeTurns: o.freeTurns}
	if o.lengthPen < 0 || math.IsNaN(o.lengthPen) || math.IsInf(o.lengthPen, 0) || o.freeTurns < 0 {
		return s, usageErr("--length-penalty and --free-turns must be non-negative")
	}
	for _, p := range o.penalties {
		name, v, ok := strings.Cut(p, "=")
		f, err := strconv.ParseFloat(v, 64)
		if !ok || err != nil || f < 0 || math.IsInf(f, 0) {
			return s, usageErr("--penalty %q: want NAME=VALUE with a non-negative number, e.g. test_tampering=1", p)
		}
		s.FlagPenalty[name] = f
	}
	return s, nil
}

func (a *app) rolloutCmd() *cobra.Command {
	var o rolloutOpts
	c := &cobra.Command{
		Use:   "rollout --model URL --out DIR [flags]",
		Short: "Run G graded episodes per task and write them as trajectories",
		Long: `Runs --samples episodes of every task in --tasks with the production agent
and the model at --model. Each task's machine is prepared once (repository in
the persona's workspace, setup run, snapshot); each episode runs in a fork of
it, is graded there with the hidden tests after the agent finishes, labelled
by the anti-cheating monitors and appended to DIR/trajectories.jsonl.

A progress line shows done/running/failed, the pass rate and tokens/s; a
table per task follows at the end, and DIR/summary.json keeps it. Ctrl-C
stops cleanly: finished episodes stay recorded, sandboxes and snapshots are
removed; --resume then runs only what is missing (and what failed for
infrastructure reasons).`,
		Example: `  verisim rollout --model http://localhost:8000 --samples 8 --out runs/first
  verisim rollout --tasks ./tasks --tag python --model http://localhost:8000 --out runs/py --concurrency 4
  verisim rollout --model http://localhost:8000 --out runs/first --resume`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.check(); err != nil {
				return err
			}
			sum, err := a.runRollout(cmd.Context(), &o)
			if sum != nil {
				printSummary(sum, nil)
			}
			return err
		},
	}
	o.register(c, 4)
	return c
}

func (a *app) evalCmd() *cobra.Command {
	var o rolloutOpts
	c := &cobra.Command{
		Use:   "eval --model URL --out DIR [flags]",
		Short: "Run the suite and report pass@1 and pass@k with confidence intervals",
		Long: `Runs the same episodes as "verisim rollout" and reports, besides the table per
task, pass@k for each --k: the unbiased estimate from the episodes of each
task (infrastructure failures left out), averaged over tasks, with a 95%
bootstrap interval over tasks. The figures are also in DIR/summary.json.`,
		Example: `  verisim eval --model http://localhost:8000 --samples 5 --k 1,5 --out runs/eval-1`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(o.ks) == 0 {
				o.ks = []int{1}
				if o.samples > 1 {
					o.ks = append(o.ks, o.samples)
				}
			}
			if err := o.check(); err != nil {
				return err
			}
			sum, err := a.runRollout(cmd.Context(), &o)
			if sum != nil {
				var ks []rollout.PassK
				for _, k := range o.ks {
					ks = append(ks, rollout.PassAtKCI(sum, k))
				}
				printSummary(sum, ks)
				if werr := writeSummary(o.out, sum, ks); werr != nil && err == nil {
					err = werr
				}
			}
			return err
		},
	}
	o.register(c, 5)
	c.Flags().IntSliceVar(&o.ks, "k", nil, "k values for pass@k (default: 1 and --samples)")
	return c
}

// runRollout runs the episodes and returns the summary of everything the
// run directory holds.
func (a *app) runRollout(ctx context.Context, o *rolloutOpts) (*rollout.Summary, error) {
	tasks, err := o.suite.load()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(o.out, trajectoriesFile)
	skip, err := prepareRunDir(o.out, path, o.resume)
	if err != nil {
		return nil, err
	}
	setup, err := a.taskSetup(ctx, &o.env)
	if err != nil {
		return nil, err
	}
	client, err := o.model.client(ctx)
	if err != nil {
		return nil, err
	}
	w, closer, err := trajectory.OpenFile(path)
	if err != nil {
		return nil, withCode(exitFailure, err)
	}
	shaping, _ := o.shaping()
	acfg := harness.Config{MaxTurns: o.maxTurns}
	if o.temperature >= 0 {
		acfg.Temperature = &o.temperature
	}
	prog := newProgressLine(os.Stderr)
	runErr := rollout.Run(ctx, rollout.Config{
		Runtime: setup.Runtime, Machines: setup.Machines, Image: setup.Image, Persona: setup.Persona, CacheDir: setup.CacheDir,
		Model: client, Agent: acfg,
		Samples: o.samples, Concurrency: o.concurrency, Retries: retriesFlag(o.episodeRetries),
		Shaping: shaping, RunID: filepath.Base(filepath.Clean(o.out)), Skip: skip,
		Sink: w.Write, Progress: prog.update, Log: a.log,
	}, tasks)
	prog.finish()
	if err := closer.Close(); err != nil && runErr == nil {
		runErr = err
	}
	trajs, rerr := trajectory.ReadFile(path)
	if rerr != nil && !errors.Is(rerr, trajectory.ErrTruncated) {
		return nil, withCode(exitFailure, rerr)
	}
	sum := rollout.Summarize(trajs)
	if err := writeSummary(o.out, sum, nil); err != nil && runErr == nil {
		runErr = err
	}
	if runErr == nil && sum.Total.Episodes > 0 && sum.Total.InfraErrors == sum.Total.Episodes {
		first := ""
		for _, t := range trajs {
			if t.Error != "" {
				first = t.Error
				break
			}
		}
		runErr = fmt.Errorf("every episode failed for infrastructure reasons (recorded as infra_error, not as reward 0); the first: %s", first)
	}
	switch {
	case errors.Is(runErr, context.Canceled) && ctx.Err() != nil:
		fmt.Fprintf(os.Stderr, "verisim: interrupted; finished episodes are in %s, continue with --resume\n", path)
		return sum, withCode(130, nil)
	case runErr != nil:
		return sum, withCode(exitFailure, runErr)
	}
	return sum, nil
}

// retriesFlag maps the flag's 0 (no retries) to rollout's negative.
func retriesFlag(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// prepareRunDir checks the run directory against --resume and returns the
// episodes to skip. On resume, records of infrastructure failures are
// dropped (rewriting the file atomically) so that they run again.
func prepareRunDir(dir, path string, resume bool) (map[string]bool, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, withCode(exitFailure, err)
	}
	trajs, err := trajectory.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	// A record cut short by a crash is dropped (and the file rewritten
	// below); anything else wrong with the file stops the run.
	torn := errors.Is(err, trajectory.ErrTruncated)
	if err != nil && !torn {
		return nil, withCode(exitFailure, fmt.Errorf("%s: %w", path, err))
	}
	if len(trajs) > 0 && !resume {
		return nil, usageErr("%s already holds %d episodes; pass --resume to continue that run, or choose another --out", dir, len(trajs))
	}
	skip := map[string]bool{}
	var keep []*trajectory.Trajectory
	for _, t := range trajs {
		if t.Status == trajectory.StatusInfraError {
			continue
		}
		skip[t.Key()] = true
		keep = append(keep, t)
	}
	if len(keep) != len(trajs) || torn {
		var buf bytes.Buffer
		w := trajectory.NewWriter(&buf)
		for _, t := range keep {
			if err := w.Write(t); err != nil {
				return nil, withCode(exitFailure, err)
			}
		}
		if err := atomicfile.Write(path, buf.Bytes(), 0o644); err != nil {
			return nil, withCode(exitFailure, err)
		}
	}
	return skip, nil
}

func writeSummary(dir string, s *rollout.Summary, ks []rollout.PassK) error {
	v := struct {
		*rollout.Summary
		PassAtK []rollout.PassK `json:"pass_at_k,omitempty"`
	}{s, ks}
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, "summary.json"), append(data, '\n'), 0o644)
}

func printSummary(s *rollout.Summary, ks []rollout.PassK) {
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TASK\tEPISODES\tOK\tPASSED\tINFRA\tTIMEOUT\tPOLICY\tREWARD\tTURNS\tFLAGS")
	row := func(t rollout.TaskSummary) {
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%.2f\t%.1f\t%s\n", t.Task, t.Episodes, t.OK, t.Passed, t.InfraErrors, t.Timeouts, t.PolicyErrors, t.MeanReward, t.MeanTurns, flagCounts(t.Flags))
	}
	for _, t := range s.Tasks {
		row(t)
	}
	row(s.Total)
	w.Flush()
	for _, k := range ks {
		if math.IsNaN(k.Estimate) {
			fmt.Printf("pass@%d: no task has %d attempts\n", k.K, k.K)
			continue
		}
		fmt.Printf("pass@%d: %.3f (95%% CI %.3f–%.3f, %d tasks)\n", k.K, k.Estimate, k.Low, k.High, k.Tasks)
	}
}

func flagCounts(m map[string]int) string {
	if len(m) == 0 {
		return "-"
	}
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s:%d", n, m[n])
	}
	return strings.Join(parts, ",")
}

// progressLine shows a run's progress on stderr: rewritten in place on a
// terminal, otherwise a line every few seconds.
type progressLine struct {
	mu    sync.Mutex
	f     *os.File
	tty   bool
	last  time.Time
	p     rollout.Progress
	shown bool
}

func newProgressLine(f *os.File) *progressLine {
	return &progressLine{f: f, tty: term.IsTerminal(int(f.Fd()))}
}

func (l *progressLine) update(p rollout.Progress) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.p = p
	every := 10 * time.Second
	if l.tty {
		every = 100 * time.Millisecond
	}
	if time.Since(l.last) < every {
		return
	}
	l.last = time.Now()
	l.print()
}

func (l *progressLine) print() {
	p := l.p
	pass := "-"
	if p.Done > 0 {
		pass = fmt.Sprintf("%.0f%%", 100*float64(p.Passed)/float64(p.Done))
	}
	tps := 0.0
	if s := p.Elapsed.Seconds(); s > 0 {
		tps = float64(p.CompletionTokens) / s
	}
	line := fmt.Sprintf("%d/%d done · %d running · %d failed · pass %s · %.0f tok/s · %s",
		p.Done+p.Skipped, p.Total, p.Running, p.Failed, pass, tps, p.Elapsed.Truncate(time.Second))
	if l.tty {
		fmt.Fprintf(l.f, "\r\033[K%s", line)
	} else {
		fmt.Fprintln(l.f, line)
	}
	l.shown = true
}

func (l *progressLine) finish() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.print()
	if l.tty {
		fmt.Fprintln(l.f)
	}
}
