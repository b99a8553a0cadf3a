package local

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/verisim/verisim/internal/sandbox"
)

// reportLatency records p50/p99 of samples as benchmark metrics.
func reportLatency(b *testing.B, samples []time.Duration) {
	if len(samples) == 0 {
		return
	}
	sort.Slice(samples, func(i, j int) bool { return samples[i] < samples[j] })
	q := func(p float64) float64 {
		return float64(samples[min(len(samples)-1, int(p*float64(len(samples))))].Microseconds()) / 1000
	}
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
}

func BenchmarkLifecycle(b *testing.B) {
	rt := testRuntime(b)
	spec := testSpec(b)
	ctx := context.Background()
	var samples []time.Duration
	for b.Loop() {
		start := time.Now()
		sb, err := rt.Create(ctx, spec)
		if err != nil {
			b.Fatal(err)
		}
		st, err := sb.Run(ctx, sandbox.Cmd{Args: []string{"/bin/true"}})
		if err != nil || st.Code != 0 {
			b.Fatal(err, st)
		}
		if err := sb.Close(ctx); err != nil {
			b.Fatal(err)
		}
		samples = append(samples, time.Since(start))
	}
	reportLatency(b, samples)
}

func BenchmarkExec(b *testing.B) {
	rt := testRuntime(b)
	ctx := context.Background()
	sb, err := rt.Create(ctx, testSpec(b))
	if err != nil {
		b.Fatal(err)
	}
	defer sb.Close(ctx)
	var samples []time.Duration
	for b.Loop() {
		start := time.Now()
		if _, err := sb.Run(ctx, sandbox.Cmd{Args: []string{"/bin/true"}}); err != nil {
			b.Fatal(err)
		}
		samples = append(samples, time.Since(start))
	}
	reportLatency(b, samples)
}
