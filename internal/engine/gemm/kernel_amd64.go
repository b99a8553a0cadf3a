//go:build amd64 && !purego

package gemm

import (
	"sync"

	"golang.org/x/sys/cpu"
)

// kernelPacked8x32 adds Â·B̂ to the 8×32 tile at c (row stride ldc), where
// Â holds kc groups of 8 row values and B̂ kc groups of 32 column values.
//
//go:noescape
func kernelPacked8x32(kc int, a, b, c *float32, ldc int)

// kernelDotPanel adds alpha·(a_i·b_j) to c[i·ldc+j] for i < rows and
// j < cols (1 ≤ cols ≤ 4), where a_i is the k-long row at a + i·lda, in
// 4×4 tiles of dot products.
//
//go:noescape
func kernelDotPanel(k int, a *float32, lda, rows int, b0, b1, b2, b3 *float32, c *float32, ldc, cols int, alpha float32)

// kernelGemv8 adds alpha·(a·b_j) to c[j] for j < cols (1 ≤ cols ≤ 8,
// k ≥ 1), where b_j is the k-long row at b + min(j, cols-1)·ldb.
//
//go:noescape
func kernelGemv8(k int, alpha float32, a, b *float32, ldb int, c *float32, cols int)

// kernelGemv8BF16 is kernelGemv8 with B as bfloat16 bit patterns, widened
// exactly to float32 in registers: bit-identical to kernelGemv8 on the
// widened rows. It needs AVX-512BW.
//
//go:noescape
func kernelGemv8BF16(k int, alpha float32, a *float32, b *uint16, ldb int, c *float32, cols int)

// widenBF16x16 sets dst[i] = widen(src[i]) for i < 16·chunks.
//
//go:noescape
func widenBF16x16(chunks int, dst *float32, src *uint16)

// widenBF16Rows sets dst[r·ldd+i] = widen(src[r·lds+i]) for r < rows
// (≥ 1) and i < 16·chunks.
//
//go:noescape
func widenBF16Rows(chunks int, dst *float32, ldd int, src *uint16, lds int, rows int)

// fmaPeak runs iters×16 independent register-only 16-lane FMAs.
//
//go:noescape
func fmaPeak(iters int)

// asmKernels returns the AVX-512 kernels when the CPU and OS support them.
// cpu.X86.HasAVX512F already accounts for the OS saving ZMM state.
func asmKernels() (kernels, bool) {
	if !cpu.X86.HasAVX512F {
		return kernels{}, false
	}
	ks := kernels{
		name: "avx512", packed: packedAVX512, dotPanel: dotPanelAVX512, gemv: gemvAVX512,
		gemvBF16: gemvBF16Widened, widen: widenAVX512, widenRows: widenRowsAVX512,
	}
	if cpu.X86.HasAVX512BW {
		// The bf16 GEMV's masked tail loads 16-bit lanes (VMOVDQU16).
		ks.gemvBF16 = gemvBF16AVX512
	}
	return ks, true
}

func packedAVX512(kc int, a, b, c []float32, ldc int) {
	// Bounds checks keep the assembly inside the slices it was given.
	_ = a[kc*mr-1]
	_ = b[kc*nr-1]
	_ = c[(mr-1)*ldc+nr-1]
	kernelPacked8x32(kc, &a[0], &b[0], &c[0], ldc)
}

func dotPanelAVX512(k int, a []float32, lda, rows int, b *[4][]float32, alpha float32, c []float32, ldc, cols int) {
	if rows < 1 || cols < 1 || cols > 4 {
		panic("gemm: dot panel size out of range")
	}
	// Bounds checks keep the assembly inside the slices it was given.
	_ = a[(rows-1)*lda+k-1]
	for r := range b {
		_ = b[r][k-1]
	}
	_ = c[(rows-1)*ldc+cols-1]
	kernelDotPanel(k, &a[0], lda, rows, &b[0][0], &b[1][0], &b[2][0], &b[3][0], &c[0], ldc, cols, alpha)
}

func gemvAVX512(k int, alpha float32, a, b []float32, ldb int, c []float32) {
	cols := len(c)
	if cols < 1 || cols > gemvCols {
		panic("gemm: gemv tile width out of range")
	}
	// Bounds checks keep the assembly inside the slices it was given.
	_ = a[k-1]
	_ = b[(cols-1)*ldb+k-1]
	kernelGemv8(k, alpha, &a[0], &b[0], ldb, &c[0], cols)
}

func gemvBF16AVX512(k int, alpha float32, a []float32, b []uint16, ldb int, c []float32) {
	cols := len(c)
	if cols < 1 || cols > gemvCols {
		panic("gemm: gemv tile width out of range")
	}
	// Bounds checks keep the assembly inside the slices it was given.
	_ = a[k-1]
	_ = b[(cols-1)*ldb+k-1]
	kernelGemv8BF16(k, alpha, &a[0], &b[0], ldb, &c[0], cols)
}

// gemvBF16Widened is the bf16 GEMV for AVX-512 CPUs without AVX-512BW: it
// widens the tile's rows of B into scratch and runs the float32 kernel on
// them, which gives the same bits as kernelGemv8BF16, only slower.
func gemvBF16Widened(k int, alpha float32, a []float32, b []uint16, ldb int, c []float32) {
	cols := len(c)
	if cols < 1 || cols > gemvCols {
		panic("gemm: gemv tile width out of range")
	}
	buf := getWidenBuf(cols * k)
	defer widenBufs.Put(buf)
	w := (*buf)[:cols*k]
	for j := range cols {
		widenAVX512(w[j*k:(j+1)*k], b[j*ldb:j*ldb+k])
	}
	gemvAVX512(k, alpha, a, w, k, c)
}

// widenAVX512 sets dst[i] = widen(src[i]) for i < len(src) ≤ len(dst).
func widenAVX512(dst []float32, src []uint16) {
	n := len(src)
	dst = dst[:n]
	if q := n / 16; q > 0 {
		widenBF16x16(q, &dst[0], &src[0])
	}
	widenGo(dst[n&^15:], src[n&^15:])
}

// widenRowsAVX512 sets dst[r·ldd+i] = widen(src[r·lds+i]) for r < rows and
// i < n, the full 16-value chunks of every row in one assembly call.
func widenRowsAVX512(dst []float32, ldd int, src []uint16, lds, rows, n int) {
	if rows < 1 || n < 1 {
		return
	}
	// Bounds checks keep the assembly inside the slices it was given.
	_ = dst[(rows-1)*ldd+n-1]
	_ = src[(rows-1)*lds+n-1]
	if q := n / 16; q > 0 {
		widenBF16Rows(q, &dst[0], ldd, &src[0], lds, rows)
	}
	if t := n &^ 15; t < n {
		for r := range rows {
			widenGo(dst[r*ldd+t:r*ldd+n], src[r*lds+t:r*lds+n])
		}
	}
}

// widenBufs holds the scratch rows of gemvBF16Widened.
var widenBufs = sync.Pool{New: func() any { return new([]float32) }}

func getWidenBuf(n int) *[]float32 {
	buf := widenBufs.Get().(*[]float32)
	if cap(*buf) < n {
		*buf = make([]float32, n)
	}
	return buf
}
