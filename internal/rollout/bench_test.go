package rollout_test

import (
	"os"
	"testing"

	"github.com/verisim/verisim/internal/bench"
	"github.com/verisim/verisim/internal/image"
	"github.com/verisim/verisim/internal/machine"
	"github.com/verisim/verisim/internal/rollout"
	"github.com/verisim/verisim/internal/sandbox/local/localtest"
)

// BenchmarkRollout reports the rollout targets: harness overhead per tool
// call (ms/call, p50), tool calls/s across 4 episodes, and trivial
// episodes/s from fork to graded trajectory. Run with -benchtime 1x; each
// iteration is a whole measurement.
func BenchmarkRollout(b *testing.B) {
	rt := localtest.Runtime(b)
	img, err := image.NewStore(b.TempDir()).Resolve(b.Context(), "host")
	if err != nil {
		b.Fatal(err)
	}
	s := rollout.Setup{Runtime: rt, Machines: machine.NewBuilder(b.TempDir()), Image: img, CacheDir: b.TempDir()}
	for b.Loop() {
		dir, err := os.MkdirTemp(b.TempDir(), "task")
		if err != nil {
			b.Fatal(err)
		}
		res, err := bench.Rollout(b.Context(), bench.RolloutOptions{Setup: s, Calls: 500, Episodes: 200, Concurrency: 4, Dir: dir})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(res.Overhead.Quantile(0.5).Microseconds())/1000, "ms/call-overhead-p50")
		b.ReportMetric(res.CallsPerSec, "calls/s")
		b.ReportMetric(res.EpisodesPerSec, "episodes/s")
		res.Table().Write(os.Stdout)
	}
}
