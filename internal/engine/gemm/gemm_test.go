package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// naive computes C = alpha·op(A)·op(B) + beta·C in float64 and also returns,
// per element, Σ|alpha·a·b| + |beta·c|, the scale the float32 error bound
// is relative to.
func naive(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) (want, scale []float64) {
	// Gather op(A) rows and op(B) columns into contiguous float64 vectors
	// first, so the reference stays cache-friendly for large shapes.
	ar := make([]float64, m*k)
	for i := range m {
		for p := range k {
			if transA {
				ar[i*k+p] = float64(a[p*lda+i])
			} else {
				ar[i*k+p] = float64(a[i*lda+p])
			}
		}
	}
	bc := make([]float64, n*k)
	for j := range n {
		for p := range k {
			if transB {
				bc[j*k+p] = float64(b[j*ldb+p])
			} else {
				bc[j*k+p] = float64(b[p*ldb+j])
			}
		}
	}
	want = make([]float64, m*n)
	scale = make([]float64, m*n)
	for i := range m {
		av := ar[i*k : i*k+k]
		for j := range n {
			bv := bc[j*k : j*k+k]
			var s, abs float64
			for p, x := range av {
				s += x * bv[p]
				abs += math.Abs(x * bv[p])
			}
			cv := 0.0
			if beta != 0 {
				cv = float64(beta) * float64(c[i*ldc+j])
			}
			want[i*n+j] = float64(alpha)*s + cv
			scale[i*n+j] = math.Abs(float64(alpha))*abs + math.Abs(cv)
		}
	}
	return want, scale
}

func randSlice(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(r.Float64()*2 - 1)
	}
	return s
}

type shape struct {
	m, n, k int
}

// testShapes covers tails of every block size (mr=8, nr=32, the dot tile 4,
// the 16-lane k tail, kcPacked=256, kcDot=1024, mcPacked=128, ncPacked=1024)
// plus the model shapes.
func testShapes(short bool) []shape {
	s := []shape{
		{1, 1, 1}, {1, 1, 0}, {3, 5, 0}, {2, 3, 1}, {7, 33, 17}, {9, 31, 15},
		{8, 32, 16}, {17, 65, 257}, {5, 3, 1025}, {129, 37, 40}, {13, 1030, 20},
		{1, 100, 300}, {4, 4, 16}, {6, 7, 31},
	}
	if short {
		return s
	}
	ms := []int{1, 7, 32, 128}
	if raceEnabled {
		ms = []int{1, 7}
	}
	for _, m := range ms {
		for _, nk := range [][2]int{{256, 256}, {768, 256}, {256, 768}, {1024, 1024}, {3072, 1024}, {1024, 3072}, {8192, 256}} {
			s = append(s, shape{m, nk[0], nk[1]})
		}
	}
	return s
}

// tol is the float32 error bound relative to scale: each product and sum
// rounds once (ε = 2⁻²⁴), blocked summation grows error at worst like
// k·ε·Σ|terms|; 2·(k+2)·ε leaves room for alpha/beta scaling. Random inputs
// land far inside it, while a dropped or doubled term (an error of order
// one whole term, ≈ scale/k) cannot.
func tol(k int) float64 { return 2 * float64(k+2) * 0x1p-24 }

func kernelConfigs(t *testing.T) []Config {
	cfgs := []Config{{Threads: 1, portable: true}, {Threads: 3, portable: true}}
	if _, ok := asmKernels(); ok {
		cfgs = append(cfgs, Config{Threads: 1}, Config{Threads: 3})
	} else {
		t.Log("no assembly kernels on this CPU/build; testing the portable ones only")
	}
	return cfgs
}

func cfgName(cfg Config) string {
	return fmt.Sprintf("kernel=%s/threads=%d", cfg.kernels().name, cfg.Threads)
}

func checkClose(t *testing.T, got []float32, ldc int, want, scale []float64, m, n, k int) {
	t.Helper()
	bound := tol(k)
	bad := 0
	for i := range m {
		for j := range n {
			g, w := float64(got[i*ldc+j]), want[i*n+j]
			if d := math.Abs(g - w); !(d <= bound*scale[i*n+j]+1e-30) {
				if bad < 5 {
					t.Errorf("C[%d,%d] = %g, want %g (|diff| %.3g > %.3g)", i, j, g, w, d, bound*scale[i*n+j])
				}
				bad++
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d elements wrong", bad, m*n)
	}
}

func TestSgemm(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	cfgs := kernelConfigs(t)
	type scal struct{ alpha, beta float32 }
	for _, sh := range testShapes(testing.Short()) {
		large := sh.n >= 256 && sh.k >= 256
		for _, tr := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
			// The large model shapes run in the MatMul and MatMulT
			// orientations with plain alpha/beta only, to bound test time.
			if large && tr[0] {
				continue
			}
			for _, ab := range []scal{{1, 0}, {0.5, 1}, {-2, 0.25}, {0, 3}} {
				if large && ab != (scal{1, 0}) {
					continue
				}
				name := fmt.Sprintf("%dx%dx%d/tA=%v/tB=%v/alpha=%g/beta=%g", sh.m, sh.n, sh.k, tr[0], tr[1], ab.alpha, ab.beta)
				t.Run(name, func(t *testing.T) {
					testOne(t, r, cfgs, tr[0], tr[1], sh, ab.alpha, ab.beta)
				})
			}
		}
	}
}

// TestGemvTails covers the GEMV path (A·Bᵀ with m ≤ gemvMaxRows) at every
// k%16 tail, partial tiles of B rows (n not a multiple of gemvCols) and each
// alpha/beta case; testOne pads every stride with NaN.
func TestGemvTails(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	cfgs := kernelConfigs(t)
	ks := []int{31, 32, 33, 47, 100}
	for k := 1; k <= 17; k++ {
		ks = append(ks, k)
	}
	type scal struct{ alpha, beta float32 }
	for m := 1; m <= gemvMaxRows; m++ {
		for _, n := range []int{1, 5, 8, 9, 15, 20} {
			for _, k := range ks {
				for _, ab := range []scal{{1, 0}, {0.5, 1}, {-2, 0.25}} {
					sh := shape{m, n, k}
					t.Run(fmt.Sprintf("%dx%dx%d/alpha=%g/beta=%g", m, n, k, ab.alpha, ab.beta), func(t *testing.T) {
						testOne(t, r, cfgs, false, true, sh, ab.alpha, ab.beta)
					})
				}
			}
		}
	}
}

// testOne builds one random problem, computes the float64 reference once
// and checks every configuration against it.
func testOne(t *testing.T, r *rand.Rand, cfgs []Config, transA, transB bool, sh shape, alpha, beta float32) {
	m, n, k := sh.m, sh.n, sh.k
	// Leading dimensions exceed the minimum by a few elements, and the
	// padding is poisoned with NaN to catch reads or writes outside.
	pad := 1 + r.IntN(5)
	rowsA, colsA := m, k
	if transA {
		rowsA, colsA = k, m
	}
	rowsB, colsB := k, n
	if transB {
		rowsB, colsB = n, k
	}
	lda, ldb, ldc := colsA+pad, colsB+pad, n+pad
	a := poisoned(r, rowsA, colsA, lda)
	b := poisoned(r, rowsB, colsB, ldb)
	c0 := poisoned(r, m, n, ldc)
	if beta == 0 {
		// BLAS: beta == 0 must not read C, so NaN there must vanish.
		for i := range m {
			for j := range n {
				c0[i*ldc+j] = float32(math.NaN())
			}
		}
	}
	want, scale := naive(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c0, ldc)
	for _, cfg := range cfgs {
		t.Run(cfgName(cfg), func(t *testing.T) {
			c := append([]float32(nil), c0...)
			cfg.Sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
			checkClose(t, c, ldc, want, scale, m, n, k)
			for i := range m {
				for j := n; j < ldc && i*ldc+j < len(c); j++ {
					if v := c[i*ldc+j]; !math.IsNaN(float64(v)) {
						t.Fatalf("padding C[%d,%d] overwritten with %g", i, j, v)
					}
				}
			}
		})
	}
}

// poisoned returns a rows×cols matrix with stride ld, random inside and NaN
// in the padding columns.
func poisoned(r *rand.Rand, rows, cols, ld int) []float32 {
	x := make([]float32, max(0, (rows-1)*ld+cols))
	for i := range x {
		if i%ld < cols {
			x[i] = float32(r.Float64()*2 - 1)
		} else {
			x[i] = float32(math.NaN())
		}
	}
	return x
}

func TestMatMulHelpers(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, cfg := range kernelConfigs(t) {
		for _, sh := range []shape{{1, 1024, 1024}, {7, 768, 256}, {32, 100, 70}, {3, 0, 5}, {0, 4, 4}} {
			t.Run(fmt.Sprintf("%s/%dx%dx%d", cfgName(cfg), sh.m, sh.n, sh.k), func(t *testing.T) {
				a := randSlice(r, sh.m*sh.k)
				bt := randSlice(r, sh.n*sh.k) // [n×k]
				b := make([]float32, sh.k*sh.n)
				for j := range sh.n {
					for p := range sh.k {
						b[p*sh.n+j] = bt[j*sh.k+p]
					}
				}
				c := randSlice(r, sh.m*sh.n) // overwritten, not accumulated
				want, scale := naive(false, true, sh.m, sh.n, sh.k, 1, a, max(1, sh.k), bt, max(1, sh.k), 0, nil, sh.n)
				cfg.MatMulT(c, a, bt, sh.m, sh.n, sh.k)
				checkClose(t, c, sh.n, want, scale, sh.m, sh.n, sh.k)
				c2 := randSlice(r, sh.m*sh.n)
				cfg.MatMul(c2, a, b, sh.m, sh.n, sh.k)
				checkClose(t, c2, sh.n, want, scale, sh.m, sh.n, sh.k)
			})
		}
	}
}

// TestThreadsBitIdentical checks the documented promise that splitting
// columns across goroutines does not change any result bit.
func TestThreadsBitIdentical(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	// Each shape is large enough to be split; the m ≤ gemvMaxRows ones run
	// on the GEMV path, with n not a multiple of its tile width.
	for _, sh := range []shape{{33, 1000, 300}, {1, 1003, 1100}, {2, 1001, 600}} {
		m, n, k := sh.m, sh.n, sh.k
		a, bt := randSlice(r, m*k), randSlice(r, n*k)
		for _, portable := range []bool{false, true} {
			for _, transB := range []bool{false, true} {
				ldb := n
				if transB {
					ldb = k
				}
				c1, c2 := make([]float32, m*n), make([]float32, m*n)
				Config{Threads: 1, portable: portable}.Sgemm(false, transB, m, n, k, 1, a, k, bt, ldb, 0, c1, n)
				Config{Threads: 4, portable: portable}.Sgemm(false, transB, m, n, k, 1, a, k, bt, ldb, 0, c2, n)
				for i := range c1 {
					if math.Float32bits(c1[i]) != math.Float32bits(c2[i]) {
						t.Fatalf("%dx%dx%d portable=%v transB=%v: element %d differs: %g vs %g", m, n, k, portable, transB, i, c1[i], c2[i])
					}
				}
			}
		}
	}
}

func TestSgemmPanics(t *testing.T) {
	buf := make([]float32, 100)
	tests := []struct {
		name string
		call func()
		want string
	}{
		{"negative m", func() { Sgemm(false, false, -1, 2, 2, 1, buf, 2, buf, 2, 0, buf, 2) }, "negative dimension"},
		{"negative k", func() { Sgemm(false, false, 2, 2, -1, 1, buf, 2, buf, 2, 0, buf, 2) }, "negative dimension"},
		{"lda too small", func() { Sgemm(false, false, 2, 2, 3, 1, buf, 2, buf, 2, 0, buf, 2) }, "leading dimension of A"},
		{"lda too small transA", func() { Sgemm(true, false, 4, 2, 3, 1, buf, 3, buf, 2, 0, buf, 2) }, "leading dimension of A"},
		{"ldb too small", func() { Sgemm(false, false, 2, 5, 3, 1, buf, 3, buf, 4, 0, buf, 5) }, "leading dimension of B"},
		{"ldb too small transB", func() { Sgemm(false, true, 2, 5, 3, 1, buf, 3, buf, 2, 0, buf, 5) }, "leading dimension of B"},
		{"ldc too small", func() { Sgemm(false, false, 2, 5, 3, 1, buf, 3, buf, 5, 0, buf, 4) }, "leading dimension of C"},
		{"ld zero on empty", func() { Sgemm(false, false, 0, 0, 0, 1, nil, 0, nil, 1, 0, nil, 1) }, "leading dimension of A"},
		{"short A", func() { Sgemm(false, false, 20, 2, 6, 1, buf, 6, buf, 2, 0, buf, 2) }, "short A"},
		{"short B", func() { Sgemm(false, true, 2, 30, 4, 1, buf, 4, buf, 4, 0, buf, 30) }, "short B"},
		{"short C", func() { Sgemm(false, false, 11, 10, 1, 1, buf, 1, buf, 10, 0, buf, 10) }, "short C"},
		{"MatMulT short", func() { MatMulT(buf, buf, buf[:10], 2, 3, 4) }, "short B"},
		{"MatMul short C", func() { MatMul(buf[:5], buf, buf, 2, 3, 4) }, "short C"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil {
					t.Fatalf("no panic, want one containing %q", tt.want)
				}
				if msg := fmt.Sprint(r); !strings.Contains(msg, tt.want) {
					t.Fatalf("panic %q, want it to contain %q", msg, tt.want)
				}
			}()
			tt.call()
		})
	}
}

// TestEmptyNoPanic checks that zero-sized problems with minimal strides and
// nil slices are accepted, as in BLAS.
func TestEmptyNoPanic(t *testing.T) {
	Sgemm(false, false, 0, 5, 3, 1, nil, 3, make([]float32, 15), 5, 0, nil, 5)
	c := []float32{1, 2, 3, 4}
	Sgemm(false, true, 2, 2, 0, 1, nil, 1, nil, 1, 2, c, 2)
	if c[0] != 2 || c[3] != 8 {
		t.Fatalf("k=0 must scale C by beta, got %v", c)
	}
}
