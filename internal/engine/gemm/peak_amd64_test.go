//go:build amd64 && !purego

package gemm

import (
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/cpu"
)

// measurePeak returns the register-only fp32 FMA rate of threads goroutines
// running at once, in GFLOP/s, or 0 without AVX-512.
func measurePeak(threads int) float64 {
	if !cpu.X86.HasAVX512F {
		return 0
	}
	const iters = 4 << 20 // 2 Gflop per goroutine, ~10-20 ms
	best := 0.0
	for range 3 {
		start := time.Now()
		var wg sync.WaitGroup
		for range threads {
			wg.Go(func() { fmaPeak(iters) })
		}
		wg.Wait()
		if g := float64(threads) * iters * 512 / time.Since(start).Seconds() / 1e9; g > best {
			best = g
		}
	}
	return best
}

func BenchmarkPeak(b *testing.B) {
	if !cpu.X86.HasAVX512F {
		b.Skip("no AVX-512")
	}
	for _, threads := range []int{1, 2} {
		b.Run(benchName("threads", threads), func(b *testing.B) {
			const iters = 1 << 20
			for b.Loop() {
				var wg sync.WaitGroup
				for range threads {
					wg.Go(func() { fmaPeak(iters) })
				}
				wg.Wait()
			}
			b.ReportMetric(float64(threads)*iters*512*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
