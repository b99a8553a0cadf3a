package train

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/verisim/verisim/internal/engine/gemm"
	"github.com/verisim/verisim/internal/engine/model"
)

// relErr is |a−b| relative to the larger magnitude, floored at floor so
// that two tiny numbers compare by their absolute difference (and two
// zeros, such as the gradients of an expert no token went to, agree).
func relErr(a, b, floor float64) float64 {
	if a == b {
		return 0
	}
	return math.Abs(a-b) / max(math.Abs(a), math.Abs(b), floor)
}

// TestGradientCheck compares the analytic gradient of every parameter
// tensor with central finite differences of referenceLoss, the float64
// textbook model: along a random unit direction per tensor, and at the
// tensor's largest coordinate and a random one.
//
// For the mixture of experts, "replay" gives every datum random routes
// (the last position of one left empty, to be routed afresh, which cannot
// change the loss): with the experts fixed the loss is smooth, which is
// the reinforcement-learning case. "routed" lets the router choose; a
// finite difference could then flip a top-k choice and make a jump, so
// the test first checks that every choice has a margin the perturbations
// cannot cross.
func TestGradientCheck(t *testing.T) {
	const (
		eps = 1e-3
		tol = 2e-3 // a sign error or a missing term gives O(1)
	)
	for _, tc := range []struct {
		name   string
		arch   string
		tied   bool
		losses []string
		replay bool
		seed   uint64 // of the weights
	}{
		{"llama/tied", "llama", true, []string{LossCrossEntropy, LossImportanceSampling}, false, 7},
		{"qwen2/untied", "qwen2", false, []string{LossCrossEntropy, LossImportanceSampling}, false, 7},
		{"llama-bias/untied", "llama-bias", false, []string{LossCrossEntropy}, false, 7},
		{"mixtral/untied/replay", "mixtral", false, []string{LossCrossEntropy, LossImportanceSampling}, true, 7},
		{"mixtral/tied/routed", "mixtral", true, []string{LossCrossEntropy}, false, 1},
	} {
		for _, loss := range tc.losses {
			t.Run(tc.name+"/loss="+loss, func(t *testing.T) {
				cfg := toyConfig(tc.arch, tc.tied)
				b := newTrainer(t, toyModel(t, cfg, tc.seed), nil)
				batch := testBatch(t, b, loss, []int{5, 8, 3}, 11)
				if tc.replay {
					for i := range batch.Data {
						batch.Data[i].Routes = randomRoutes(cfg, len(batch.Data[i].Tokens), uint64(i))
					}
					batch.Data[0].Routes[4] = nil
				}
				if cfg.MoE() && !tc.replay {
					// Perturbations of eps along a unit direction move a
					// logit by about eps times its gradient.
					margin := minRouteMargin(t, b, batch)
					t.Logf("smallest gap between a chosen and an unchosen router logit: %.3g", margin)
					if margin < 1e-2 {
						t.Fatalf("a router logit gap of %.3g could flip under finite differences; pick another seed", margin)
					}
				}
				if _, err := b.ForwardBackward(t.Context(), batch); err != nil {
					t.Fatal(err)
				}
				w := weights64(b.model)
				rng := rand.New(rand.NewPCG(5, 5))
				at := func(name string, d []float64) float64 {
					orig := w[name]
					plus, minus := slices.Clone(orig), slices.Clone(orig)
					for i, v := range d {
						plus[i] += eps * v
						minus[i] -= eps * v
					}
					w[name] = plus
					lp := referenceLoss(cfg, w, batch)
					w[name] = minus
					lm := referenceLoss(cfg, w, batch)
					w[name] = orig
					return (lp - lm) / (2 * eps)
				}
				var overall float64
				defer func() { t.Logf("largest relative error over all tensors: %.2e", overall) }()
				for i, p := range b.params {
					g := *b.gradT[i].data
					n := len(g)
					// Random unit direction.
					d := make([]float64, n)
					var norm, gmax float64
					for j := range d {
						d[j] = rng.NormFloat64()
						norm += d[j] * d[j]
						gmax = max(gmax, math.Abs(float64(g[j])))
					}
					var ana float64
					for j := range d {
						d[j] /= math.Sqrt(norm)
						ana += float64(g[j]) * d[j]
					}
					worst := relErr(ana, at(p.name, d), 1e-4*gmax)
					// Coordinates: the largest and a random one.
					order := make([]int, n)
					for j := range order {
						order[j] = j
					}
					slices.SortFunc(order, func(a, b int) int { return -cmpAbs(g[a], g[b]) })
					for _, j := range []int{order[0], rng.IntN(n)} {
						e := make([]float64, n)
						e[j] = 1
						worst = max(worst, relErr(float64(g[j]), at(p.name, e), 1e-3*gmax))
					}
					t.Logf("%-48s max rel err %.2e", p.name, worst)
					overall = max(overall, worst)
					if !(worst < tol) {
						t.Errorf("%s: gradient disagrees with finite differences: max rel err %.3g", p.name, worst)
					}
				}
			})
		}
	}
}

func cmpAbs(a, b float32) int {
	a, b = float32(math.Abs(float64(a))), float32(math.Abs(float64(b)))
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// opCheck checks one input of an op: for the scalar ⟨u, f()⟩, where f
// reads x, the analytic gradient grad (the op's backward pass for the
// output gradient u) against a central difference in float32 along a
// random direction and at a few coordinates.
func opCheck(t *testing.T, name string, x []float32, f func() []float32, u, grad []float32) {
	t.Helper()
	const eps = 1e-2
	rng := rand.New(rand.NewPCG(9, uint64(len(x))))
	scalar := func() float64 {
		var s float64
		for i, y := range f() {
			s += float64(u[i]) * float64(y)
		}
		return s
	}
	along := func(d []float32) float64 {
		orig := slices.Clone(x)
		for i := range x {
			x[i] = orig[i] + eps*d[i]
		}
		sp := scalar()
		for i := range x {
			x[i] = orig[i] - eps*d[i]
		}
		sm := scalar()
		copy(x, orig)
		return (sp - sm) / (2 * eps)
	}
	var gmax float64
	for _, g := range grad {
		gmax = max(gmax, math.Abs(float64(g)))
	}
	d := make([]float32, len(x))
	var ana float64
	for i := range d {
		d[i] = float32(rng.NormFloat64())
		ana += float64(grad[i]) * float64(d[i])
	}
	worst := relErr(ana, along(d), 1e-3*gmax)
	for range 3 {
		j := rng.IntN(len(x))
		e := make([]float32, len(x))
		e[j] = 1
		worst = max(worst, relErr(float64(grad[j]), along(e), 1e-2*gmax))
	}
	t.Logf("%s: max rel err %.2e", name, worst)
	if !(worst < 5e-3) {
		t.Errorf("%s: backward disagrees with finite differences: max rel err %.3g", name, worst)
	}
}

func randVec(rng *rand.Rand, n int, scale float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(scale * rng.NormFloat64())
	}
	return v
}

func TestOpBackward(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const T, H = 5, 16

	t.Run("rmsnorm", func(t *testing.T) {
		x, w, u := randVec(rng, T*H, 1), randVec(rng, H, 1), randVec(rng, T*H, 1)
		inv := make([]float32, T)
		f := func() []float32 {
			y := make([]float32, T*H)
			rmsNorm(y, x, w, inv, 1e-5)
			return y
		}
		f()
		dx, dw := make([]float32, T*H), make([]float32, H)
		rmsNormBackward(dx, u, x, w, inv, dw)
		opCheck(t, "rmsnorm dx", x, f, u, dx)
		opCheck(t, "rmsnorm dw", w, f, u, dw)
	})

	t.Run("rope", func(t *testing.T) {
		const hd = 8
		cos, sin := make([]float32, T*hd/2), make([]float32, T*hd/2)
		ropeTables(cos, sin, T, hd, 100)
		x, u := randVec(rng, T*2*hd, 1), randVec(rng, T*2*hd, 1)
		f := func() []float32 {
			y := slices.Clone(x)
			rope(y, cos, sin, hd, false)
			return y
		}
		dx := slices.Clone(u)
		rope(dx, cos, sin, hd, true)
		opCheck(t, "rope dx", x, f, u, dx)
		// The inverse undoes the rotation.
		y := f()
		rope(y, cos, sin, hd, true)
		for i := range y {
			if math.Abs(float64(y[i]-x[i])) > 1e-5 {
				t.Fatalf("inverse rope [%d] = %g, want %g", i, y[i], x[i])
			}
		}
	})

	t.Run("attention", func(t *testing.T) {
		s := attnShape{rows: T, heads: 4, kvHeads: 2, headDim: 4}
		qDim, kvDim := s.heads*s.headDim, s.kvHeads*s.headDim
		mm := &matmul{cfg: gemm.Config{Threads: 1}}
		q, k, v := randVec(rng, T*qDim, 1), randVec(rng, T*kvDim, 1), randVec(rng, T*kvDim, 1)
		u := randVec(rng, T*qDim, 1)
		rowMax, rowInv := make([]float32, s.heads*T), make([]float32, s.heads*T)
		f := func() []float32 {
			out := make([]float32, T*qDim)
			mm.attention(s, out, q, k, v, make([]float32, T*T), rowMax, rowInv)
			return out
		}
		f()
		dq, dk, dv := make([]float32, T*qDim), make([]float32, T*kvDim), make([]float32, T*kvDim)
		mm.attentionBackward(s, dq, dk, dv, u, q, k, v, rowMax, rowInv, make([]float32, T*T), make([]float32, T*T))
		opCheck(t, "attention dq", q, f, u, dq)
		opCheck(t, "attention dk", k, f, u, dk)
		opCheck(t, "attention dv", v, f, u, dv)
	})

	t.Run("swiglu", func(t *testing.T) {
		g, up, u := randVec(rng, T*H, 2), randVec(rng, T*H, 1), randVec(rng, T*H, 1)
		f := func() []float32 {
			y := make([]float32, T*H)
			swiGLU(y, g, up)
			return y
		}
		dg, du := make([]float32, T*H), make([]float32, T*H)
		swiGLUBackward(dg, du, u, g, up)
		opCheck(t, "swiglu dgate", g, f, u, dg)
		opCheck(t, "swiglu dup", up, f, u, du)
	})

	t.Run("linear", func(t *testing.T) {
		const out, in = 6, 7
		mm := &matmul{cfg: gemm.Config{Threads: 1}}
		x, w, bias, u := randVec(rng, T*in, 1), randVec(rng, out*in, 1), randVec(rng, out, 1), randVec(rng, T*out, 1)
		f := func() []float32 {
			y := make([]float32, T*out)
			mm.linear(y, x, w, bias, T, out, in)
			return y
		}
		dx, gw, gb := make([]float32, T*in), make([]float32, out*in), make([]float32, out)
		mm.linearBackward(dx, u, x, w, gw, gb, T, out, in, false)
		opCheck(t, "linear dx", x, f, u, dx)
		opCheck(t, "linear dw", w, f, u, gw)
		opCheck(t, "linear db", bias, f, u, gb)
	})
}

// randomRoutes draws routes for n positions: per position and layer, k
// distinct experts in random order.
func randomRoutes(c model.Config, n int, seed uint64) [][]int32 {
	rng := rand.New(rand.NewPCG(seed, 17))
	L, k, E := c.NumHiddenLayers, c.NumExpertsPerTok, c.NumLocalExperts
	routes := make([][]int32, n)
	for t := range routes {
		for range L {
			for _, e := range rng.Perm(E)[:k] {
				routes[t] = append(routes[t], int32(e))
			}
		}
	}
	return routes
}

// minRouteMargin runs the trainer's forward pass over each datum of batch
// and returns the smallest gap, over every token but the last (whose
// output predicts nothing) and every layer, between the lowest chosen
// router logit and the highest unchosen one.
func minRouteMargin(t *testing.T, b *Builtin, batch Batch) float64 {
	t.Helper()
	c := b.model.Config
	E, k := c.NumLocalExperts, c.NumExpertsPerTok
	margin := math.Inf(1)
	for _, d := range batch.Data {
		b.net.forward(b.model, d.Tokens, d.Routes)
		for _, a := range b.net.layers {
			for tok := range len(d.Tokens) - 1 {
				z, chosen := a.moe.logits[tok*E:(tok+1)*E], a.moe.experts[tok*k:(tok+1)*k]
				lo, hi := math.Inf(1), math.Inf(-1)
				for e, v := range z {
					if slices.Contains(chosen, int32(e)) {
						lo = min(lo, float64(v))
					} else {
						hi = max(hi, float64(v))
					}
				}
				margin = min(margin, lo-hi)
			}
		}
	}
	return margin
}
