package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

func benchName(key string, v any) string { return fmt.Sprintf("%s=%v", key, v) }

var peaks sync.Map // threads → GFLOP/s, measured once per process

func peakFor(threads int) float64 {
	if v, ok := peaks.Load(threads); ok {
		return v.(float64)
	}
	p := measurePeak(threads)
	peaks.Store(threads, p)
	return p
}

// naiveSgemmT is the plain triple loop for C = A·Bᵀ, the baseline the
// blocked kernels are measured against.
func naiveSgemmT(c, a, b []float32, m, n, k int) {
	for i := range m {
		for j := range n {
			var s float32
			for p := range k {
				s += a[i*k+p] * b[j*k+p]
			}
			c[i*n+j] = s
		}
	}
}

// BenchmarkSgemm measures C[m×n] = A[m×k]·B[n×k]ᵀ, the linear-layer
// product, at the model's shapes, against gonum and the naive loop (see
// sgemmImpls), one matrix called again and again. frac-peak divides by
// the register-only FMA peak of as many cores as the implementation may
// use; weight-GB/s is the rate B streams in, in its stored width.
func BenchmarkSgemm(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 8))
	impls := sgemmImpls()
	for _, m := range []int{1, 7, 32, 128} {
		// The tiny preset's projections and LM head (hidden 256,
		// intermediate 768, vocabulary 8192), the small preset's (hidden
		// 768, intermediate 2048; its kv projection is 256×768, as tiny's
		// down projection), then larger generic shapes no preset uses.
		for _, nk := range [][2]int{
			{256, 256}, {768, 256}, {256, 768}, {8192, 256},
			{768, 768}, {2048, 768}, {768, 2048}, {8192, 768},
			{1024, 1024}, {3072, 1024}, {1024, 3072}, {4096, 4096},
		} {
			n, k := nk[0], nk[1]
			o := newOperands(r, m, n, k)
			c := make([]float32, m*n)
			for _, impl := range impls {
				if impl.name == "naive" && m*n*k > 1<<28 {
					continue // seconds per call, and says nothing new
				}
				b.Run(fmt.Sprintf("shape=%dx%dx%d/impl=%s", m, n, k, impl.name), func(b *testing.B) {
					for b.Loop() {
						impl.run(c, o, m, n, k)
					}
					reportSgemm(b, impl, m, n, k)
				})
			}
		}
	}
}

// BenchmarkSgemmCold is BenchmarkSgemm at the decode shapes with the
// weights coming from beyond L2, as they do in a decode step, where the
// other layers' weights pass through the caches between two uses of one
// matrix: each call takes the next of enough copies of B to fill 64 MB
// (the L2s here hold 2 MB each). Repeating one matrix, as BenchmarkSgemm
// does, lets each core keep its share of B in its L2 from call to call
// once the matrix is split over cores that stay awake; this is the figure
// for a model larger than the caches.
func BenchmarkSgemmCold(b *testing.B) {
	r := rand.New(rand.NewPCG(13, 14))
	impls := sgemmImpls()
	for _, m := range []int{1, 7} {
		for _, nk := range [][2]int{{768, 256}, {256, 768}, {8192, 256}, {768, 768}, {2048, 768}, {768, 2048}, {8192, 768}} {
			n, k := nk[0], nk[1]
			ring := make([]*operands, max(2, (64<<20)/(4*n*k)))
			for i := range ring {
				ring[i] = newOperands(r, m, n, k)
			}
			c := make([]float32, m*n)
			for _, impl := range impls {
				if impl.name == "naive" {
					continue
				}
				b.Run(fmt.Sprintf("shape=%dx%dx%d/impl=%s", m, n, k, impl.name), func(b *testing.B) {
					i := 0
					for b.Loop() {
						impl.run(c, ring[i], m, n, k)
						i = (i + 1) % len(ring)
					}
					reportSgemm(b, impl, m, n, k)
				})
			}
		}
	}
}

// operands are the inputs of one benchmarked product: B is the same
// bf16-representable matrix in both storages.
type operands struct {
	a, bt []float32
	bh    []uint16
}

func newOperands(r *rand.Rand, m, n, k int) *operands {
	o := &operands{a: randSlice(r, m*k), bt: randSlice(r, n*k), bh: make([]uint16, n*k)}
	for i, v := range o.bt {
		o.bh[i] = uint16(math.Float32bits(v) >> 16)
		o.bt[i] = math.Float32frombits(uint32(o.bh[i]) << 16)
	}
	return o
}

// sgemmImpl is one subject of the GEMM benchmarks.
type sgemmImpl struct {
	name        string
	threads     int
	weightBytes int
	run         func(c []float32, o *operands, m, n, k int)
}

// sgemmImpls: impl=verisim uses every core (GOMAXPROCS), impl=verisim-1t
// one goroutine, impl=verisim-bf16 and verisim-bf16-1t the same with B
// stored as bfloat16 (MatMulTBF16, half the weight bytes), gonum its own
// default (which also goes parallel on large products).
func sgemmImpls() []sgemmImpl {
	procs := runtime.GOMAXPROCS(0)
	return []sgemmImpl{
		{"verisim", procs, 4, func(c []float32, o *operands, m, n, k int) { Config{}.MatMulT(c, o.a, o.bt, m, n, k) }},
		{"verisim-bf16", procs, 2, func(c []float32, o *operands, m, n, k int) { Config{}.MatMulTBF16(c, o.a, o.bh, m, n, k) }},
		{"verisim-1t", 1, 4, func(c []float32, o *operands, m, n, k int) { Config{Threads: 1}.MatMulT(c, o.a, o.bt, m, n, k) }},
		{"verisim-bf16-1t", 1, 2, func(c []float32, o *operands, m, n, k int) { Config{Threads: 1}.MatMulTBF16(c, o.a, o.bh, m, n, k) }},
		{"gonum", procs, 4, func(c []float32, o *operands, m, n, k int) {
			gonum.Implementation{}.Sgemm(blas.NoTrans, blas.Trans, m, n, k, 1, o.a, k, o.bt, k, 0, c, n)
		}},
		{"naive", 1, 4, func(c []float32, o *operands, m, n, k int) { naiveSgemmT(c, o.a, o.bt, m, n, k) }},
	}
}

// reportSgemm reports GFLOP/s, the rate B streamed in (every call streams
// all of B once: for small m this rate, not the FMA peak, is the ceiling)
// and the fraction of the peak of as many cores as impl may use.
func reportSgemm(b *testing.B, impl sgemmImpl, m, n, k int) {
	gflops := 2 * float64(m*n*k) * float64(b.N) / b.Elapsed().Seconds() / 1e9
	b.ReportMetric(gflops, "GFLOP/s")
	b.ReportMetric(float64(impl.weightBytes*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "weight-GB/s")
	if p := peakFor(impl.threads); p > 0 {
		b.ReportMetric(gflops/p, "frac-peak")
	}
}

// BenchmarkSmallM measures MatMulT for the few-row products (speculative
// decode, tiny batches) that run as one GEMV per row of A.
func BenchmarkSmallM(b *testing.B) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, sh := range []shape{{2, 768, 256}, {3, 768, 256}, {2, 3072, 1024}, {3, 3072, 1024}} {
		a, bt, c := randSlice(r, sh.m*sh.k), randSlice(r, sh.n*sh.k), make([]float32, sh.m*sh.n)
		b.Run(fmt.Sprintf("shape=%dx%dx%d", sh.m, sh.n, sh.k), func(b *testing.B) {
			cfg := Config{Threads: 1}
			for b.Loop() {
				cfg.MatMulT(c, a, bt, sh.m, sh.n, sh.k)
			}
			b.ReportMetric(2*float64(sh.m*sh.n*sh.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkMatMul measures the untransposed product on the packed path.
func BenchmarkMatMul(b *testing.B) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, sh := range []shape{{32, 1024, 1024}, {128, 3072, 1024}} {
		a, bb, c := randSlice(r, sh.m*sh.k), randSlice(r, sh.k*sh.n), make([]float32, sh.m*sh.n)
		for _, threads := range []int{1, 0} {
			b.Run(fmt.Sprintf("shape=%dx%dx%d/threads=%d", sh.m, sh.n, sh.k, threads), func(b *testing.B) {
				cfg := Config{Threads: threads}
				for b.Loop() {
					cfg.MatMul(c, a, bb, sh.m, sh.n, sh.k)
				}
				b.ReportMetric(2*float64(sh.m*sh.n*sh.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
