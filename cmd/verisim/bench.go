package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/verisim/verisim/internal/bench"
	"github.com/verisim/verisim/internal/sandbox"
	"github.com/verisim/verisim/internal/sandbox/local"
)

func (a *app) benchCmd() *cobra.Command {
	c := &cobra.Command{
		Use:     "bench",
		Short:   "Measure verisim against its peers, side by side",
		Example: "  verisim bench sandbox --runs 200\n  verisim bench rollout\n  verisim bench engine",
	}
	c.AddCommand(a.benchSandboxCmd(), a.benchRolloutCmd(), a.benchEngineCmd())
	return c
}

func (a *app) benchEngineCmd() *cobra.Command {
	var (
		sizes, arch   string
		steps, prompt int
	)
	c := &cobra.Command{
		Use:   "engine",
		Short: "Built-in engine: decode tokens/s, time to first token, reload to first token",
		Long: `Measures the built-in inference engine on randomly initialised models of each
size (vocabulary 8192): decode throughput at batch 1 and 32 with where a
step's time goes (matmul, attention, the rest) and what sampling costs, time
to first token for a --prompt-token prompt through the HTTP server beside the
prefill alone, and the time from POST /admin/reload of a bf16 checkpoint to
the first token on the new weights. The matrix kernels' comparison with gonum
is a Go benchmark: go test -bench Sgemm ./internal/engine/gemm/.`,
		Example: `  verisim bench engine
  verisim bench engine --sizes tiny --arch moe`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if steps < 4 || prompt < 1 {
				return usageErr("use --steps ≥ 4 and --prompt ≥ 1")
			}
			dir, err := os.MkdirTemp("", "verisim-bench-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			var ss []string
			for _, s := range strings.Split(sizes, ",") {
				if s = strings.TrimSpace(s); s != "" {
					ss = append(ss, s)
				}
			}
			t, err := bench.Engine(cmd.Context(), bench.EngineOptions{Sizes: ss, Arch: arch, Steps: steps, Prompt: prompt, Dir: dir, Progress: os.Stderr})
			if err != nil {
				return withCode(exitFailure, err)
			}
			fmt.Printf("\nverisim bench engine --sizes %s --arch %s\n\n", sizes, arch)
			return t.Write(os.Stdout)
		},
	}
	f := c.Flags()
	f.StringVar(&sizes, "sizes", "tiny,small", "model sizes, comma-separated")
	f.StringVar(&arch, "arch", "llama", "architecture: llama or moe")
	f.IntVar(&steps, "steps", 32, "decode steps timed per batch size")
	f.IntVar(&prompt, "prompt", 1000, "prompt length in tokens for time to first token")
	return c
}

func (a *app) benchRolloutCmd() *cobra.Command {
	var (
		e                            envFlags
		calls, episodes, concurrency int
	)
	c := &cobra.Command{
		Use:   "rollout",
		Short: "Harness overhead, tool calls/s and episodes/s with an instant model",
		Long: `Measures the rollout machinery with a scripted model that answers at once, so
that only verisim's own work is timed, against the targets on a two-core
machine: the harness's time per tool call (the tool's workspace operation
excluded), tool calls per second across --concurrency episodes, and trivial
episodes per second from fork to graded trajectory. Every tool call and every
episode runs in a real sandbox.`,
		Example: `  verisim bench rollout
  verisim bench rollout --calls 2000 --episodes 500 --concurrency 8`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if calls < 100 || episodes < 10 || concurrency <= 0 {
				return usageErr("use --calls ≥ 100, --episodes ≥ 10 and a positive --concurrency")
			}
			ctx := cmd.Context()
			setup, err := a.taskSetup(ctx, &e)
			if err != nil {
				return err
			}
			dir, err := os.MkdirTemp("", "verisim-bench-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			res, err := bench.Rollout(ctx, bench.RolloutOptions{Setup: setup, Calls: calls, Episodes: episodes, Concurrency: concurrency, Dir: dir})
			if err != nil {
				return withCode(exitFailure, err)
			}
			return res.Table().Write(os.Stdout)
		},
	}
	e.register(c)
	c.Flags().IntVar(&calls, "calls", 1000, "tool calls per timed episode")
	c.Flags().IntVar(&episodes, "episodes", 300, "trivial episodes for the episodes/s row")
	c.Flags().IntVar(&concurrency, "concurrency", 4, "episodes run at once")
	return c
}

func (a *app) benchSandboxCmd() *cobra.Command {
	var m machineFlags
	var runs, idle int
	var peers string
	var warm int
	var skipBig bool
	c := &cobra.Command{
		Use:   "sandbox",
		Short: "Sandbox latency and memory against bubblewrap, runc and fork/exec",
		Long: `Runs each scenario --runs times (after a short warm-up) and prints p50 / p99
latencies in milliseconds, with the peers doing the same work in the same run:
bwrap with a read-only root, runc, runc with a per-run overlay, and a bare
fork/exec. Missing peers are skipped with a note; scripts/bench.sh installs
them from Debian first. Below the table, "target check" lines compare the
create → true → destroy row with the sandbox targets (p50 ≤ 5 ms, p99 ≤ 15
ms, faster than bwrap, at least 5× faster than runc). Needs root.`,
		Example: `  verisim bench sandbox
  verisim bench sandbox --runs 300 --peers bwrap,runc
  scripts/bench.sh`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runs < 100 {
				return usageErr("--runs %d: use at least 100 for a meaningful p99", runs)
			}
			ctx := cmd.Context()
			rt, err := a.runtime()
			if err != nil {
				return err
			}
			var warmRT sandbox.Runtime
			if warm > 0 {
				if a.cfg.Backend != "local" {
					return usageErr("--warm needs the local backend")
				}
				w, err := local.New(local.Options{StateDir: a.cfg.StateDir, RunDir: a.cfg.RunDir, Warm: warm, FavorDynmods: a.cfg.FavorDynmods, Logger: a.log})
				if err != nil {
					return err
				}
				defer w.Close(context.WithoutCancel(ctx))
				warmRT = w
			}
			spec, err := a.spec(ctx, &m)
			if err != nil {
				return err
			}
			work := filepath.Join(a.cfg.StateDir, "bench")
			if err := os.MkdirAll(work, 0o700); err != nil {
				return err
			}
			sizes := []int64{20 << 20, 2 << 30}
			if skipBig {
				sizes = sizes[:1]
			}
			var ps []string
			for _, p := range strings.Split(peers, ",") {
				if p = strings.TrimSpace(p); p != "" {
					ps = append(ps, p)
				}
			}
			t, err := bench.Sandbox(ctx, bench.SandboxOptions{
				Runtime: rt, Warm: warmRT, Spec: spec, Runs: runs, Peers: ps, WorkDir: work,
				Idle: idle, ForkSizes: sizes, Progress: os.Stderr,
			})
			if err != nil {
				return err
			}
			init := ""
			if l, ok := rt.(*local.Runtime); ok {
				init = ", init " + l.Init()
			}
			fmt.Printf("\nverisim bench sandbox --runs %d (backend %s, image %s, limits %s%s)\n\n", runs, rt.Name(), m.image, m.limits, init)
			return t.Write(os.Stdout)
		},
	}
	m.register(c)
	c.Flags().IntVar(&runs, "runs", 100, "runs per scenario")
	c.Flags().IntVar(&idle, "idle", 200, "idle sandboxes held at once for the memory row (0 skips it)")
	c.Flags().StringVar(&peers, "peers", "bwrap,runc,runc+overlay,fork/exec", "peers to compare with")
	c.Flags().IntVar(&warm, "warm", 2, "also measure a runtime keeping this many inits started ahead (0 skips the column)")
	c.Flags().BoolVar(&skipBig, "skip-2g", false, "skip the 2 GB workspace fork row")
	return c
}
