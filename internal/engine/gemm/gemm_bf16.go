package gemm

import (
	"fmt"
	"math"
	"sync"
)

// bf16ToFloat32 widens one bfloat16 bit pattern to the float32 it stands
// for. The conversion is exact: bfloat16 is the high half of a float32.
func bf16ToFloat32(v uint16) float32 { return math.Float32frombits(uint32(v) << 16) }

// MatMulTBF16 computes C[m×n] = A[m×k]·B[n×k]ᵀ with B in bfloat16, with the
// zero Config. See Config.MatMulTBF16.
func MatMulTBF16(c, a []float32, b []uint16, m, n, k int) {
	Config{}.MatMulTBF16(c, a, b, m, n, k)
}

// MatMulTBF16 computes C[m×n] = A[m×k]·B[n×k]ᵀ, all dense and row-major,
// where B holds bfloat16 bit patterns (the high 16 bits of a float32): a
// linear layer with weights stored [out, in] at half the bytes. A and C are
// float32 and all arithmetic is float32; each weight widens exactly.
//
// The result is bit-identical to MatMulT(c, a, widen(b), m, n, k) with the
// same Config, whatever Threads is. As with MatMulT, C is overwritten
// without being read, and bad dimensions or short slices panic with a
// message naming the operand.
func (cfg Config) MatMulTBF16(c, a []float32, b []uint16, m, n, k int) {
	if m < 0 || n < 0 || k < 0 {
		panic(fmt.Sprintf("gemm: negative dimension m=%d n=%d k=%d", m, n, k))
	}
	lda, ldb, ldc := max(1, k), max(1, k), max(1, n)
	checkMatrix("A", m, k, a, lda)
	checkMatrix("B", n, k, b, ldb)
	checkMatrix("C", m, n, c, ldc)
	if m == 0 || n == 0 {
		return
	}
	// The same steps as Sgemm(false, true, …, alpha=1, beta=0): clear C,
	// then add the products, split over the same column ranges.
	scaleC(c, ldc, m, n, 0)
	if k == 0 {
		return
	}
	p := &problem{
		transB: true,
		m:      m, n: n, k: k, alpha: 1,
		a: a, lda: lda, bh: b, ldb: ldb, c: c, ldc: ldc,
		ks: cfg.kernels(),
	}
	run, step := p.runDotBF16, 4
	if m <= gemvMaxRows {
		run, step = p.runGemvBF16, gemvCols
	}
	cfg.split(2*m*n*k, n, step, run)
}

// runGemvBF16 is runGemv on bfloat16 rows of B: the bf16 GEMV kernels widen
// in registers and sum in the float32 kernels' order.
func (p *problem) runGemvBF16(j0, j1 int) {
	for j := j0; j < j1; j += gemvCols {
		cols := min(gemvCols, j1-j)
		b := p.bh[j*p.ldb:]
		for i := range p.m {
			off := i*p.ldc + j
			p.ks.gemvBF16(p.k, p.alpha, p.a[i*p.lda:], b, p.ldb, p.c[off:off+cols])
		}
	}
}

// dotScratch holds one 4-row × kcDot block of B widened to float32 (16 KiB,
// L1-sized).
type dotScratch [4 * kcDot]float32

var dotScratches = sync.Pool{New: func() any { return new(dotScratch) }}

// runDotBF16 is runDot on bfloat16 rows of B: each 4-row × kb block of B is
// widened into a per-goroutine scratch right before its tiles run, and the
// same dot kernel sees the same values in the same blocks and order, so
// every element of C gets the same bits as runDot on the widened B.
func (p *problem) runDotBF16(j0, j1 int) {
	w := dotScratches.Get().(*dotScratch)
	defer dotScratches.Put(w)
	p.dotLoop(j0, j1, func(j, cols, pc, kb int, br *[4][]float32) {
		p.ks.widenRows(w[:], kcDot, p.bh[j*p.ldb+pc:], p.ldb, cols, kb)
		for r := range br {
			// Edge tiles repeat the last valid row, as in runDot.
			off := min(r, cols-1) * kcDot
			br[r] = w[off : off+kb]
		}
	})
}
