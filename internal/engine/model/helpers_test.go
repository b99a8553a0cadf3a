package model

import (
	"math"
	"math/rand/v2"
	"testing"
)

// toyConfig is a model small enough for -race: 2 layers, 4 query heads
// over 2 kv heads of 8 dims.
func toyConfig(arch string) Config {
	c := Config{
		VocabSize: 64, HiddenSize: 32, IntermediateSize: 48, NumHiddenLayers: 2,
		NumAttentionHeads: 4, NumKeyValueHeads: 2, HeadDim: 8,
		MaxPositionEmbeddings: 64, RMSNormEps: 1e-5, RopeTheta: 10000, HiddenAct: "silu",
	}
	c.Architectures, c.ModelType = []string{ArchLlama}, "llama"
	if arch == "qwen2" {
		c.Architectures, c.ModelType = []string{ArchQwen2}, "qwen2"
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
	xs := make([][]float64, T)
	for t, tok := range tokens {
		xs[t] = f64(m.Embed[int(tok)*H : (int(tok)+1)*H])
	}
	for _, l := range m.Layers {
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
			g := linear(h, l.Gate, nil, c.IntermediateSize, H)
			u := linear(h, l.Up, nil, c.IntermediateSize, H)
			for i := range g {
				g[i] = g[i] / (1 + math.Exp(-g[i])) * u[i]
			}
			d := linear(g, l.Down, nil, H, c.IntermediateSize)
			for i := range H {
				xs[t][i] += d[i]
			}
		}
	}
	out := make([][]float64, T)
	for t := range T {
		out[t] = linear(norm(xs[t], m.Norm), m.LMHead, nil, c.VocabSize, H)
	}
	return out
}
