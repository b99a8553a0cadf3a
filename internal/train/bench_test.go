package train

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/verisim/verisim/internal/engine/model"
)

// BenchmarkTrainStep measures one training step (ForwardBackward and
// OptimStep) on one 256-token sequence, vocabulary 8192 (the project's
// tokenizer), with every CPU, for the dense (llama) and the
// mixture-of-experts (moe, model.MoEPreset: 8 experts, 2 per token)
// models of each preset size. It reports trained tokens per second, the
// backward pass's time over the forward's, the share of the step spent
// inside gemm calls, and the milliseconds of each phase (forward includes
// the loss head, optim the AdamW update).
func BenchmarkTrainStep(b *testing.B) {
	const seqLen = 256
	for _, c := range []struct{ size, arch string }{{"tiny", "llama"}, {"tiny", "moe"}, {"small", "llama"}, {"small", "moe"}} {
		b.Run("size="+c.size+"/arch="+c.arch, func(b *testing.B) {
			cfg, err := model.ConfigFor(c.arch, c.size, 8192)
			if err != nil {
				b.Fatal(err)
			}
			m, err := model.Init(cfg, 1)
			if err != nil {
				b.Fatal(err)
			}
			tr, err := New(m, DefaultOptions())
			if err != nil {
				b.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(1, 1))
			batch := Batch{Data: []Datum{{Tokens: tokensFor(seqLen, cfg.VocabSize, rng)}}}
			var optim time.Duration
			step := func() Metrics {
				met, err := tr.ForwardBackward(b.Context(), batch)
				if err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				if _, err := tr.OptimStep(b.Context()); err != nil {
					b.Fatal(err)
				}
				optim += time.Since(start)
				return met
			}
			step() // size the buffers
			tr.mm.timed, tr.mm.spent, optim = true, 0, 0
			var fwd, bwd float64
			for b.Loop() {
				met := step()
				fwd += met.ForwardSeconds
				bwd += met.BackwardSeconds
			}
			b.ReportMetric(float64(seqLen*b.N)/b.Elapsed().Seconds(), "tokens/s")
			b.ReportMetric(bwd/fwd, "bwd/fwd")
			b.ReportMetric(tr.mm.spent.Seconds()/b.Elapsed().Seconds(), "matmul-frac")
			b.ReportMetric(fwd/float64(b.N)*1e3, "fwd-ms")
			b.ReportMetric(bwd/float64(b.N)*1e3, "bwd-ms")
			b.ReportMetric(optim.Seconds()/float64(b.N)*1e3, "optim-ms")
		})
	}
}
