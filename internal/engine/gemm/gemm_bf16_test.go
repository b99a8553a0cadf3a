package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// randBF16 returns n bfloat16 values: random magnitudes over a few dozen
// binades with either sign, truncated from float32, salted with ±0 and
// subnormals.
func randBF16(r *rand.Rand, n int) []uint16 {
	s := make([]uint16, n)
	for i := range s {
		switch r.IntN(50) {
		case 0:
			s[i] = 0x0000 // +0
		case 1:
			s[i] = 0x8000 // -0
		case 2:
			s[i] = uint16(r.IntN(0x80)) | uint16(r.IntN(2))<<15 // subnormal
		default:
			f := float32((r.Float64()*2 - 1) * math.Ldexp(1, r.IntN(24)-12))
			s[i] = uint16(math.Float32bits(f) >> 16)
		}
	}
	return s
}

func widenSlice(b []uint16) []float32 {
	w := make([]float32, len(b))
	for i, v := range b {
		w[i] = math.Float32frombits(uint32(v) << 16)
	}
	return w
}

func sameBits(t *testing.T, got, want []float32, what string) {
	t.Helper()
	bad := 0
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			if bad < 5 {
				t.Errorf("%s: element %d = %g (%#08x), want %g (%#08x)", what, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
			}
			bad++
		}
	}
	if bad > 0 {
		t.Fatalf("%s: %d of %d elements differ", what, bad, len(want))
	}
}

func bf16Configs(t *testing.T) []Config {
	cfgs := kernelConfigs(t)
	for _, c := range append([]Config(nil), cfgs...) {
		c.Threads = 2
		cfgs = append(cfgs, c)
	}
	return append(cfgs, Config{})
}

func bf16Shapes() []shape {
	ms := []int{1, 2, 3, 7, 32, 128}
	nks := [][2]int{
		{1, 1}, {1, 5}, {3, 15}, {5, 16}, {8, 17}, {9, 31}, {13, 33}, {20, 100},
		{37, 257}, {6, 1030}, {7, 2100}, {1003, 64}, {301, 600}, {256, 768},
	}
	if raceEnabled || testing.Short() {
		ms = []int{1, 2, 3, 7, 32}
		nks = nks[:len(nks)-1]
	}
	var s []shape
	for _, m := range ms {
		for _, nk := range nks {
			s = append(s, shape{m, nk[0], nk[1]})
		}
	}
	return append(s, shape{1, 1024, 1024}, shape{2, 1100, 1003}, shape{0, 3, 4}, shape{3, 0, 4}, shape{3, 4, 0})
}

// TestMatMulTBF16BitIdentical checks the promise MatMulTBF16 exists for:
// the same bits as MatMulT on the widened weights, for every shape (GEMV
// and dot paths, k and n tails, k across kcDot blocks, m across mcDot
// blocks) on both kernel sets and several thread counts.
func TestMatMulTBF16BitIdentical(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	cfgs := bf16Configs(t)
	for _, sh := range bf16Shapes() {
		m, n, k := sh.m, sh.n, sh.k
		a := randSlice(r, m*k)
		bh := randBF16(r, n*k)
		bw := widenSlice(bh)
		for _, cfg := range cfgs {
			t.Run(fmt.Sprintf("%dx%dx%d/%s", m, n, k, cfgName(cfg)), func(t *testing.T) {
				want := make([]float32, m*n)
				got := make([]float32, m*n)
				for i := range got {
					// Both overwrite C without reading it.
					want[i], got[i] = float32(math.NaN()), float32(math.NaN())
				}
				cfg.MatMulT(want, a, bw, m, n, k)
				cfg.MatMulTBF16(got, a, bh, m, n, k)
				sameBits(t, got, want, "MatMulTBF16 vs MatMulT(widen(B))")
			})
		}
	}
}

// TestMatMulTBF16Accuracy checks MatMulTBF16 against the float64 reference
// on the widened weights, independently of MatMulT.
func TestMatMulTBF16Accuracy(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	for _, cfg := range kernelConfigs(t) {
		for _, sh := range []shape{{1, 37, 45}, {2, 9, 16}, {5, 21, 1500}, {33, 40, 70}} {
			m, n, k := sh.m, sh.n, sh.k
			a, bh := randSlice(r, m*k), randBF16(r, n*k)
			want, scale := naive(false, true, m, n, k, 1, a, k, widenSlice(bh), k, 0, nil, n)
			c := randSlice(r, m*n)
			cfg.MatMulTBF16(c, a, bh, m, n, k)
			checkClose(t, c, n, want, scale, m, n, k)
		}
	}
}

// gemvBF16Impl pairs a bf16 GEMV kernel with the float32 GEMV it must
// match bit for bit.
type gemvBF16Impl struct {
	name     string
	gemv     func(k int, alpha float32, a, b []float32, ldb int, c []float32)
	gemvBF16 func(k int, alpha float32, a []float32, b []uint16, ldb int, c []float32)
}

// TestGemvBF16Kernels checks each bf16 GEMV kernel against its kernel set's
// float32 GEMV on the widened rows, with alpha ≠ 1, C accumulated into,
// strided rows, every k%16 tail and every tile width.
func TestGemvBF16Kernels(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	impls := append([]gemvBF16Impl{{"portable", portableKernels.gemv, portableKernels.gemvBF16}}, asmGemvBF16Impls()...)
	ks := []int{63, 64, 65, 255, 1000}
	for k := 1; k <= 40; k++ {
		ks = append(ks, k)
	}
	for _, im := range impls {
		for _, k := range ks {
			for cols := 1; cols <= gemvCols; cols++ {
				ldb := k + r.IntN(4)
				a := randSlice(r, k)
				bh := randBF16(r, (cols-1)*ldb+k)
				c0 := randSlice(r, cols)
				for _, alpha := range []float32{1, -0.75} {
					want := append([]float32(nil), c0...)
					got := append([]float32(nil), c0...)
					im.gemv(k, alpha, a, widenSlice(bh), ldb, want)
					im.gemvBF16(k, alpha, a, bh, ldb, got)
					sameBits(t, got, want, fmt.Sprintf("%s k=%d cols=%d ldb=%d alpha=%g", im.name, k, cols, ldb, alpha))
				}
			}
		}
	}
}

// TestWidenBF16 checks every kernel set's widening against the definition
// on all 65536 bit patterns (NaN payloads included) and on short lengths.
func TestWidenBF16(t *testing.T) {
	all := make([]uint16, 1<<16)
	for i := range all {
		all[i] = uint16(i)
	}
	want := widenSlice(all)
	kss := []kernels{portableKernels}
	if ks, ok := asmKernels(); ok {
		kss = append(kss, ks)
	}
	for _, ks := range kss {
		got := make([]float32, len(all))
		ks.widen(got, all)
		sameBits(t, got, want, ks.name+" widen")
		for n := range 40 {
			// Offsets and lengths off the 16-value step; dst past n untouched.
			src := all[1000+n : 1000+2*n]
			dst := make([]float32, n+1)
			dst[n] = 42
			ks.widen(dst, src)
			sameBits(t, dst[:n], want[1000+n:1000+2*n], fmt.Sprintf("%s widen n=%d", ks.name, n))
			if dst[n] != 42 {
				t.Fatalf("%s widen n=%d wrote past len(src)", ks.name, n)
			}
		}
		// Rows of a strided block, with every tail length and row count
		// of the dot path; the gaps between rows of dst stay untouched.
		const lds, ldd = 83, 90
		for rows := 1; rows <= 4; rows++ {
			for n := 1; n <= 40; n++ {
				src := all[777 : 777+(rows-1)*lds+n]
				dst := make([]float32, rows*ldd)
				for i := range dst {
					dst[i] = 42
				}
				ks.widenRows(dst, ldd, src, lds, rows, n)
				for r := range rows {
					what := fmt.Sprintf("%s widenRows rows=%d n=%d row %d", ks.name, rows, n, r)
					sameBits(t, dst[r*ldd:r*ldd+n], want[777+r*lds:777+r*lds+n], what)
					for i, v := range dst[r*ldd+n : (r+1)*ldd] {
						if v != 42 {
							t.Fatalf("%s: wrote past n at %d", what, n+i)
						}
					}
				}
			}
		}
	}
}

func TestMatMulTBF16Panics(t *testing.T) {
	f := make([]float32, 100)
	h := make([]uint16, 100)
	tests := []struct {
		name string
		call func()
		want string
	}{
		{"negative m", func() { MatMulTBF16(f, f, h, -1, 2, 2) }, "negative dimension"},
		{"negative n", func() { MatMulTBF16(f, f, h, 2, -2, 2) }, "negative dimension"},
		{"negative k", func() { MatMulTBF16(f, f, h, 2, 2, -1) }, "negative dimension"},
		{"short A", func() { MatMulTBF16(f, f[:11], h, 3, 2, 4) }, "short A"},
		{"short B", func() { MatMulTBF16(f, f, h[:11], 2, 3, 4) }, "short B"},
		{"short B gemv", func() { MatMulTBF16(f, f, h[:20*5-1], 1, 20, 5) }, "short B"},
		{"short C", func() { MatMulTBF16(f[:5], f, h, 2, 3, 4) }, "short C"},
		{"nil B", func() { MatMulTBF16(f, f, nil, 1, 1, 1) }, "short B"},
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

// TestMatMulTBF16Empty checks zero-sized products: nil slices are fine and
// k == 0 clears C, as MatMulT does.
func TestMatMulTBF16Empty(t *testing.T) {
	MatMulTBF16(nil, nil, nil, 0, 0, 0)
	MatMulTBF16(nil, nil, make([]uint16, 12), 0, 3, 4)
	MatMulTBF16(nil, make([]float32, 12), nil, 3, 0, 4)
	c := []float32{1, 2, 3, 4, 5, 6}
	MatMulTBF16(c, nil, nil, 2, 3, 0)
	for i, v := range c {
		if v != 0 {
			t.Fatalf("k=0: C[%d] = %g, want 0", i, v)
		}
	}
}
