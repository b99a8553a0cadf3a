package gemm

import (
	"fmt"
	"runtime"
	"sync"
)

// Blocking parameters. The packed path keeps one 8×kc micro-panel of A in L1
// (8 KiB) and a kc×nc block of packed B in L2 (1 MiB); the dot path keeps
// four kc-long rows of B in L1 (16 KiB) and an mc×kc block of A in L2
// (256 KiB).
const (
	mr = 8  // packed micro-tile rows
	nr = 32 // packed micro-tile columns (two 16-lane vectors)

	kcPacked = 256
	mcPacked = 128
	ncPacked = 1024

	kcDot = 1024
	mcDot = 64

	// gemvCols is the width of the GEMV tile (rows of B per kernel call);
	// gemvMaxRows is the largest m that runs as one GEMV per row of A
	// instead of through the 4×4 dot tile.
	gemvCols    = 8
	gemvMaxRows = 2

	// parallelMinFlops is the smallest multiply worth splitting over the
	// team's workers (batch-1 768×256 is, 256×256 gained nothing);
	// spawnMinFlops the smallest worth starting goroutines for, when
	// another split holds the team: below it a goroutine's start on the
	// idle core (70–100 µs here) rivals the work.
	parallelMinFlops = 1 << 18
	spawnMinFlops    = 1 << 21
)

// kernels is one implementation of the micro-kernels.
type kernels struct {
	name string
	// packed adds Â·B̂ to the mr×nr tile of c with row stride ldc. a holds kc
	// groups of mr values, b kc groups of nr values.
	packed func(kc int, a, b, c []float32, ldc int)
	// dotPanel adds alpha·Σ_{p<k} a[i·lda+p]·b[j][p] to c[i·ldc+j] for
	// i < rows and j < cols (rows ≥ 1, 1 ≤ cols ≤ 4; b's rows past cols
	// repeat the last one), in 4×4 tiles down the rows whose sums run in
	// the same order whatever rows is.
	dotPanel func(k int, a []float32, lda, rows int, b *[4][]float32, alpha float32, c []float32, ldc, cols int)
	// gemv adds alpha·Σ_{p<k} a[p]·b[j·ldb+p] to c[j] for every j < len(c),
	// 1 ≤ len(c) ≤ gemvCols.
	gemv func(k int, alpha float32, a, b []float32, ldb int, c []float32)
	// gemvBF16 is gemv with B as bfloat16 bit patterns; it must give the
	// same bits as gemv on the widened rows of B.
	gemvBF16 func(k int, alpha float32, a []float32, b []uint16, ldb int, c []float32)
	// widen sets dst[i] = widen(src[i]) for i < len(src) ≤ len(dst).
	widen func(dst []float32, src []uint16)
	// widenRows sets dst[r·ldd+i] = widen(src[r·lds+i]) for r < rows and
	// i < n.
	widenRows func(dst []float32, ldd int, src []uint16, lds, rows, n int)
}

// Config says how a multiply runs. The zero value splits large multiplies
// over runtime.GOMAXPROCS(0) goroutines and uses the fastest kernels the
// CPU supports. A Config is a value; copies are independent and safe to use
// from many goroutines at once.
type Config struct {
	// Threads bounds how many goroutines one call splits the columns of C
	// over: 0 means runtime.GOMAXPROCS(0), 1 runs on the calling goroutine.
	// Every element of C is summed in the same order whatever Threads is,
	// so results are bit-identical across settings.
	Threads int

	// portable forces the pure-Go kernels (tests use it to cover the
	// fallback on machines that have the assembly ones).
	portable bool
}

func (cfg Config) kernels() kernels {
	if !cfg.portable {
		if ks, ok := asmKernels(); ok {
			return ks
		}
	}
	return portableKernels
}

func (cfg Config) threads() int {
	if cfg.Threads > 0 {
		return cfg.Threads
	}
	return runtime.GOMAXPROCS(0)
}

// Sgemm computes C = alpha·op(A)·op(B) + beta·C with the zero Config.
func Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	Config{}.Sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// MatMul computes C[m×n] = A[m×k]·B[k×n] (dense, row-major) with the zero
// Config.
func MatMul(c, a, b []float32, m, n, k int) { Config{}.MatMul(c, a, b, m, n, k) }

// MatMulT computes C[m×n] = A[m×k]·B[n×k]ᵀ (dense, row-major) with the zero
// Config. This is a linear layer with weights stored [out, in].
func MatMulT(c, a, b []float32, m, n, k int) { Config{}.MatMulT(c, a, b, m, n, k) }

// MatMul computes C[m×n] = A[m×k]·B[k×n], all dense and row-major.
func (cfg Config) MatMul(c, a, b []float32, m, n, k int) {
	cfg.Sgemm(false, false, m, n, k, 1, a, max(1, k), b, max(1, n), 0, c, max(1, n))
}

// MatMulT computes C[m×n] = A[m×k]·B[n×k]ᵀ, all dense and row-major.
func (cfg Config) MatMulT(c, a, b []float32, m, n, k int) {
	cfg.Sgemm(false, true, m, n, k, 1, a, max(1, k), b, max(1, k), 0, c, max(1, n))
}

// Sgemm computes C = alpha·op(A)·op(B) + beta·C for row-major matrices,
// where op(X) is X or Xᵀ, op(A) is m×k, op(B) is k×n and C is m×n. As in
// BLAS, beta == 0 overwrites C without reading it, and alpha == 0 or k == 0
// only scales C. It panics if a dimension is negative, a leading dimension
// is too small or a slice too short.
func (cfg Config) Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	checkSgemm(transA, transB, m, n, k, a, lda, b, ldb, c, ldc)
	if m == 0 || n == 0 {
		return
	}
	scaleC(c, ldc, m, n, beta)
	if k == 0 || alpha == 0 {
		return
	}
	p := &problem{
		transA: transA, transB: transB,
		m: m, n: n, k: k, alpha: alpha,
		a: a, lda: lda, b: b, ldb: ldb, c: c, ldc: ldc,
		ks: cfg.kernels(),
	}
	run, step := p.runPacked, nr
	if !transA && transB {
		// Rows of A and rows of B both run along k: dot products need no
		// packing at all, which matters most for small m.
		run, step = p.runDot, 4
		if m <= gemvMaxRows {
			// Few rows of A (batch-1 decode is m = 1): a 4×4 tile would
			// waste most of its FMAs, so stream B once per row of A.
			run, step = p.runGemv, gemvCols
		}
	}
	cfg.split(2*m*n*k, n, step, run)
}

// split runs fn over column ranges of [0, n) aligned to step, the first on
// the calling goroutine and each other on a worker of the shared team,
// and waits for all of them. When another split holds the team, a large
// product starts goroutines of its own and a small one runs on the caller
// alone.
func (cfg Config) split(flops, n, step int, fn func(j0, j1 int)) {
	t := min(cfg.threads(), (n+step-1)/step)
	if t <= 1 || flops < parallelMinFlops {
		fn(0, n)
		return
	}
	chunk := ((n+t-1)/t + step - 1) / step * step
	var buf [8][2]int
	ranges := buf[:0]
	for j0 := 0; j0 < n; j0 += chunk {
		ranges = append(ranges, [2]int{j0, min(j0+chunk, n)})
	}
	switch {
	case workers.run(fn, ranges):
	case flops < spawnMinFlops:
		fn(0, n)
	default:
		spawn(fn, ranges)
	}
}

func checkSgemm(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	if m < 0 || n < 0 || k < 0 {
		panic(fmt.Sprintf("gemm: negative dimension m=%d n=%d k=%d", m, n, k))
	}
	rowsA, colsA := m, k
	if transA {
		rowsA, colsA = k, m
	}
	rowsB, colsB := k, n
	if transB {
		rowsB, colsB = n, k
	}
	checkMatrix("A", rowsA, colsA, a, lda)
	checkMatrix("B", rowsB, colsB, b, ldb)
	checkMatrix("C", m, n, c, ldc)
}

func checkMatrix[T float32 | uint16](name string, rows, cols int, x []T, ld int) {
	if ld < max(1, cols) {
		panic(fmt.Sprintf("gemm: bad leading dimension of %s: %d < max(1, %d)", name, ld, cols))
	}
	if rows == 0 || cols == 0 {
		return
	}
	if need := (rows-1)*ld + cols; len(x) < need {
		panic(fmt.Sprintf("gemm: short %s: len %d < %d for %d×%d with stride %d", name, len(x), need, rows, cols, ld))
	}
}

func scaleC(c []float32, ldc, m, n int, beta float32) {
	if beta == 1 {
		return
	}
	for i := range m {
		row := c[i*ldc : i*ldc+n]
		if beta == 0 {
			clear(row)
			continue
		}
		for j := range row {
			row[j] *= beta
		}
	}
}

// problem is one validated Sgemm call after C has been scaled by beta; the
// run methods add alpha·op(A)·op(B) to columns [j0, j1) of C.
type problem struct {
	transA, transB bool
	m, n, k        int
	alpha          float32
	a, b, c        []float32
	bh             []uint16 // B as bfloat16 (MatMulTBF16); b is then nil
	lda, ldb, ldc  int
	ks             kernels
}

// runDot handles A·Bᵀ straight from the caller's rows: 4×4 tiles of dot
// products along k, with edge tiles repeating their last valid row.
func (p *problem) runDot(j0, j1 int) {
	p.dotLoop(j0, j1, func(j, cols, pc, kb int, br *[4][]float32) {
		for r := range br {
			off := (j+min(r, cols-1))*p.ldb + pc
			br[r] = p.b[off : off+kb]
		}
	})
}

// dotLoop runs the dot path's blocking over columns [j0, j1): for each k
// block, each block of rows of A and each group of up to four columns,
// rowsOfB points br at those columns' kb-long rows of B from pc (the last
// repeated for an edge group), and the dot panel kernel multiplies the
// block's rows of A by them.
func (p *problem) dotLoop(j0, j1 int, rowsOfB func(j, cols, pc, kb int, br *[4][]float32)) {
	var br [4][]float32
	for pc := 0; pc < p.k; pc += kcDot {
		kb := min(kcDot, p.k-pc)
		for ic := 0; ic < p.m; ic += mcDot {
			rows := min(mcDot, p.m-ic)
			for j := j0; j < j1; j += 4 {
				cols := min(4, j1-j)
				rowsOfB(j, cols, pc, kb, &br)
				p.ks.dotPanel(kb, p.a[ic*p.lda+pc:], p.lda, rows, &br, p.alpha, p.c[ic*p.ldc+j:], p.ldc, cols)
			}
		}
	}
}

// runGemv handles A·Bᵀ for small m as one GEMV per row of A, over tiles of
// gemvCols rows of B taken straight from the caller's storage. The whole k
// range goes to the kernel at once, so each element of C is one dot product
// added to C once, whichever tile or goroutine computes it.
func (p *problem) runGemv(j0, j1 int) {
	for j := j0; j < j1; j += gemvCols {
		cols := min(gemvCols, j1-j)
		b := p.b[j*p.ldb:]
		for i := range p.m {
			off := i*p.ldc + j
			p.ks.gemv(p.k, p.alpha, p.a[i*p.lda:], b, p.ldb, p.c[off:off+cols])
		}
	}
}

type packBuf struct{ a, b []float32 }

var packBufs = sync.Pool{New: func() any {
	return &packBuf{
		a: make([]float32, mcPacked*kcPacked),
		b: make([]float32, kcPacked*ncPacked),
	}
}}

// runPacked is the general path: op(B) is packed into nr-column
// micro-panels, op(A)·alpha into mr-row micro-panels, and the mr×nr kernel
// runs over every tile. Edge tiles go through a scratch tile so the kernel
// never writes outside [j0, j1) or past row m.
func (p *problem) runPacked(j0, j1 int) {
	buf := packBufs.Get().(*packBuf)
	defer packBufs.Put(buf)
	var edge [mr * nr]float32
	for jc := j0; jc < j1; jc += ncPacked {
		nb := min(ncPacked, j1-jc)
		for pc := 0; pc < p.k; pc += kcPacked {
			kb := min(kcPacked, p.k-pc)
			bp := buf.b[:roundUp(nb, nr)*kb]
			packB(bp, p.b, p.ldb, p.transB, pc, kb, jc, nb)
			for ic := 0; ic < p.m; ic += mcPacked {
				mb := min(mcPacked, p.m-ic)
				ap := buf.a[:roundUp(mb, mr)*kb]
				packA(ap, p.a, p.lda, p.transA, ic, mb, pc, kb, p.alpha)
				for ir := 0; ir < mb; ir += mr {
					apan := ap[ir*kb : (ir+mr)*kb]
					rows := min(mr, mb-ir)
					for jr := 0; jr < nb; jr += nr {
						bpan := bp[jr*kb : (jr+nr)*kb]
						cols := min(nr, nb-jr)
						ci := (ic+ir)*p.ldc + jc + jr
						if rows == mr && cols == nr {
							p.ks.packed(kb, apan, bpan, p.c[ci:], p.ldc)
							continue
						}
						clear(edge[:])
						p.ks.packed(kb, apan, bpan, edge[:], nr)
						for r := range rows {
							crow := p.c[ci+r*p.ldc : ci+r*p.ldc+cols]
							for c := range crow {
								crow[c] += edge[r*nr+c]
							}
						}
					}
				}
			}
		}
	}
}

func roundUp(x, m int) int { return (x + m - 1) / m * m }

// packA writes rows [i0, i0+mb) × columns [p0, p0+kb) of alpha·op(A) as
// mr-row micro-panels: panel q holds, for each p, the mr values of rows
// i0+q·mr…, zero past mb.
func packA(dst, a []float32, lda int, transA bool, i0, mb, p0, kb int, alpha float32) {
	for q := 0; q*mr < mb; q++ {
		panel := dst[q*mr*kb : (q+1)*mr*kb]
		rows := min(mr, mb-q*mr)
		if rows < mr {
			clear(panel)
		}
		i := i0 + q*mr
		if transA {
			for pp := range kb {
				off := (p0+pp)*lda + i
				dstp := panel[pp*mr : pp*mr+rows]
				for r, v := range a[off : off+rows] {
					dstp[r] = alpha * v
				}
			}
			continue
		}
		for r := range rows {
			off := (i+r)*lda + p0
			for pp, v := range a[off : off+kb] {
				panel[pp*mr+r] = alpha * v
			}
		}
	}
}

// packB writes rows [p0, p0+kb) × columns [j0, j0+nb) of op(B) as nr-column
// micro-panels: panel q holds, for each p, the nr values of columns
// j0+q·nr…, zero past nb.
func packB(dst, b []float32, ldb int, transB bool, p0, kb, j0, nb int) {
	for q := 0; q*nr < nb; q++ {
		panel := dst[q*nr*kb : (q+1)*nr*kb]
		cols := min(nr, nb-q*nr)
		if cols < nr {
			clear(panel)
		}
		j := j0 + q*nr
		if transB {
			for c := range cols {
				off := (j+c)*ldb + p0
				for pp, v := range b[off : off+kb] {
					panel[pp*nr+c] = v
				}
			}
			continue
		}
		for pp := range kb {
			off := (p0+pp)*ldb + j
			copy(panel[pp*nr:pp*nr+cols], b[off:off+cols])
		}
	}
}
