package model

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// toyConfig is a model small enough for -race: 2 layers, 4 query heads
// over 2 kv heads of 8 dims; "mixtral" has 4 experts of 24, 2 per token.
func toyConfig(arch string) Config {
	c := Config{
		VocabSize: 64, HiddenSize: 32, IntermediateSize: 48, NumHiddenLayers: 2,
		NumAttentionHeads: 4, NumKeyValueHeads: 2, HeadDim: 8,
		MaxPositionEmbeddings: 64, RMSNormEps: 1e-5, RopeTheta: 10000, HiddenAct: "silu",
	}
	c.Architectures, c.ModelType = []string{ArchLlama}, "llama"
	switch arch {
	case "qwen2":
		c.Architectures, c.ModelType = []string{ArchQwen2}, "qwen2"
	case "mixtral":
		c.Architectures, c.ModelType = []string{ArchMixtral}, "mixtral"
		c.IntermediateSize, c.NumLocalExperts, c.NumExpertsPerTok = 24, 4, 2
	}
	return c
}

// toyModel builds a model of cfg with weights large enough that the
// logits differ clearly between tokens (Init's 0.02 makes them nearly flat,
// which would let a wrong forward pass pass a comparison), norms near 1 and
// nonzero biases.
func toyModel(t testing.TB, cfg Config, seed uint64) *Model {
	t.Helper()
	m, err := Init(cfg, seed)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	for _, p := range m.params() {
		for i := range *p.data {
			r := float32(rng.NormFloat64())
			switch p.kind {
			case weight:
				(*p.data)[i] = 0.25 * r
			case norm:
				(*p.data)[i] = 1 + 0.1*r
			case bias:
				(*p.data)[i] = 0.2 * r
			}
		}
	}
	m.tie()
	return m
}

func tokensFor(n, vocab int, seed uint64) []int32 {
	rng := rand.New(rand.NewPCG(seed, 2))
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(rng.IntN(vocab))
	}
	return out
}

// closeRows fails unless got and want agree element by element within tol
// times the largest magnitude in the row.
func closeRows(t *testing.T, what string, got []float32, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	scale := 0.0
	for _, w := range want {
		scale = max(scale, math.Abs(w))
	}
	for i := range got {
		if d := math.Abs(float64(got[i]) - want[i]); !(d <= tol*max(scale, 1e-6)) {
			t.Fatalf("%s[%d] = %g, want %g (diff %g > %g·%g)", what, i, got[i], want[i], d, tol, scale)
		}
	}
}

func f64(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// referenceForward is the textbook transformer in float64, written apart
// from the package's code (no shared helpers, no gemm, no cache), against
// which Forward is checked.
func referenceForward(m *Model, tokens []int32) [][]float64 {
	logits, _ := referenceForwardMoE(m, tokens, nil)
	return logits
}

// referenceForwardMoE is referenceForward that also returns, for a
// mixture-of-experts model, the experts each token went to,
// [token][layer·k + j], and follows replay (nil, or per token nil or the
// experts to use) as Seq.Replay does. A layer with a Router is Mixtral's
// block as transformers writes it: softmax over every expert's logit, the
// top k probabilities (ties to the lower index), renormalised to sum 1.
func referenceForwardMoE(m *Model, tokens []int32, replay [][]int32) ([][]float64, [][]int32) {
	c := m.Config
	H, hd, nH, nKV := c.HiddenSize, c.HeadDim, c.NumAttentionHeads, c.NumKeyValueHeads
	T := len(tokens)
	linear := func(x []float64, w, b []float32, out, in int) []float64 {
		y := make([]float64, out)
		for o := range out {
			s := 0.0
			for i := range in {
				s += float64(w[o*in+i]) * x[i]
			}
			if b != nil {
				s += float64(b[o])
			}
			y[o] = s
		}
		return y
	}
	norm := func(x []float64, w []float32) []float64 {
		ss := 0.0
		for _, v := range x {
			ss += v * v
		}
		r := 1 / math.Sqrt(ss/float64(len(x))+c.RMSNormEps)
		y := make([]float64, len(x))
		for i := range x {
			y[i] = x[i] * r * float64(w[i])
		}
		return y
	}
	// rotate applies q·cos + rotate_half(q)·sin, rotate_half(x) = cat(-x2, x1).
	rotate := func(x []float64, pos int) []float64 {
		y := make([]float64, len(x))
		for h := 0; h < len(x); h += hd {
			for j := range hd {
				i := j % (hd / 2)
				ang := float64(pos) * math.Pow(c.RopeTheta, -2*float64(i)/float64(hd))
				var rh float64
				if j < hd/2 {
					rh = -x[h+j+hd/2]
				} else {
					rh = x[h+j-hd/2]
				}
				y[h+j] = x[h+j]*math.Cos(ang) + rh*math.Sin(ang)
			}
		}
		return y
	}
	swiglu := func(h []float64, gate, up, down []float32, inter int) []float64 {
		g := linear(h, gate, nil, inter, H)
		u := linear(h, up, nil, inter, H)
		for i := range g {
			g[i] = g[i] / (1 + math.Exp(-g[i])) * u[i]
		}
		return linear(g, down, nil, H, inter)
	}
	routes := make([][]int32, T)
	xs := make([][]float64, T)
	for t, tok := range tokens {
		xs[t] = f64(m.Embed[int(tok)*H : (int(tok)+1)*H])
	}
	for li, l := range m.Layers {
		qs, ks, vs := make([][]float64, T), make([][]float64, T), make([][]float64, T)
		for t := range T {
			h := norm(xs[t], l.InputNorm)
			qs[t] = rotate(linear(h, l.Q, l.QBias, nH*hd, H), t)
			ks[t] = rotate(linear(h, l.K, l.KBias, nKV*hd, H), t)
			vs[t] = linear(h, l.V, l.VBias, nKV*hd, H)
		}
		for t := range T {
			att := make([]float64, nH*hd)
			for h := range nH {
				kh := h * nKV / nH
				w := make([]float64, t+1)
				sum := 0.0
				for s := range t + 1 {
					d := 0.0
					for i := range hd {
						d += qs[t][h*hd+i] * ks[s][kh*hd+i]
					}
					w[s] = math.Exp(d / math.Sqrt(float64(hd)))
					sum += w[s]
				}
				for s := range t + 1 {
					for i := range hd {
						att[h*hd+i] += w[s] / sum * vs[s][kh*hd+i]
					}
				}
			}
			o := linear(att, l.O, l.OBias, H, nH*hd)
			for i := range H {
				xs[t][i] += o[i]
			}
			h := norm(xs[t], l.PostNorm)
			d := make([]float64, H)
			if l.Router == nil {
				d = swiglu(h, l.Gate, l.Up, l.Down, c.IntermediateSize)
			} else {
				E, k := len(l.Experts), c.NumExpertsPerTok
				logit := linear(h, l.Router, nil, E, H)
				p := make([]float64, E)
				sum := 0.0
				for e := range E {
					p[e] = math.Exp(logit[e])
					sum += p[e]
				}
				for e := range E {
					p[e] /= sum
				}
				var chosen []int32
				if replay != nil && replay[t] != nil {
					chosen = replay[t][li*k : (li+1)*k]
				} else {
					byProb := make([]int32, E)
					for e := range E {
						byProb[e] = int32(e)
					}
					slices.SortStableFunc(byProb, func(a, b int32) int { return cmp.Compare(p[b], p[a]) })
					chosen = byProb[:k]
				}
				routes[t] = append(routes[t], chosen...)
				total := 0.0
				for _, e := range chosen {
					total += p[e]
				}
				for _, e := range chosen {
					x := l.Experts[e]
					y := swiglu(h, x.Gate, x.Up, x.Down, c.IntermediateSize)
					for i := range H {
						d[i] += p[e] / total * y[i]
					}
				}
			}
			for i := range H {
				xs[t][i] += d[i]
			}
		}
	}
	out := make([][]float64, T)
	for t := range T {
		out[t] = linear(norm(xs[t], m.Norm), m.LMHead, nil, c.VocabSize, H)
	}
	return out, routes
}
