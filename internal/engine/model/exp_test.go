package model

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestExp32 compares Exp32 with float64 math.Exp rounded to float32 over
// the whole finite range, at the edges, and on the special values.
func TestExp32(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	worst := 0.0
	check := func(x float32) {
		t.Helper()
		want := math.Exp(float64(x))
		got := float64(Exp32(x))
		if want == 0 || math.IsInf(want, 0) || want < math.SmallestNonzeroFloat32*(1<<23) {
			return // outside the normal float32 range: checked below
		}
		rel := math.Abs(got-want) / want
		worst = max(worst, rel)
		if rel > 2.5e-7 { // 2 ulp of float32 is 2.4e-7 relative at worst
			t.Fatalf("Exp32(%g) = %g, want %g (relative error %.3g)", x, got, want, rel)
		}
	}
	for range 1_000_000 {
		check(float32(rng.Float64()*176 - 87.3))
	}
	for _, x := range []float32{0, float32(math.Copysign(0, -1)), 1, -1, 0.5, -0.34657359, 0.34657359, 88.7, -87.3, 1e-8, -1e-8} {
		check(x)
	}
	t.Logf("max relative error %.3g", worst)
	if Exp32(0) != 1 {
		t.Errorf("Exp32(0) = %g", Exp32(0))
	}
	if v := Exp32(89); !math.IsInf(float64(v), 1) {
		t.Errorf("Exp32(89) = %g, want +Inf", v)
	}
	if v := Exp32(-88); v != 0 {
		t.Errorf("Exp32(-88) = %g, want 0", v)
	}
	if v := Exp32(float32(math.Inf(-1))); v != 0 {
		t.Errorf("Exp32(-Inf) = %g", v)
	}
	if v := Exp32(float32(math.NaN())); !math.IsNaN(float64(v)) {
		t.Errorf("Exp32(NaN) = %g", v)
	}
}

func BenchmarkExp(b *testing.B) {
	xs := make([]float32, 4096)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range xs {
		xs[i] = float32(-rng.Float64() * 20)
	}
	var sink float32
	b.Run("impl=Exp32", func(b *testing.B) {
		for b.Loop() {
			for _, x := range xs {
				sink += Exp32(x)
			}
		}
		b.ReportMetric(float64(b.N*len(xs))/b.Elapsed().Seconds()/1e6, "Mexp/s")
	})
	b.Run("impl=math.Exp", func(b *testing.B) {
		for b.Loop() {
			for _, x := range xs {
				sink += float32(math.Exp(float64(x)))
			}
		}
		b.ReportMetric(float64(b.N*len(xs))/b.Elapsed().Seconds()/1e6, "Mexp/s")
	})
	_ = sink
}
