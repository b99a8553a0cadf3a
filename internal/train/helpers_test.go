package train

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/verisim/verisim/internal/engine/gemm"
	"github.com/verisim/verisim/internal/engine/model"
)

// toyConfig is a model small enough for -race: 2 layers, 4 query heads
// over 2 kv heads of 8 dims. arch is "llama", "llama-bias" (attention_bias:
// q, k, v and o biases), "qwen2" (q, k and v biases) or "mixtral" (each
// MLP 4 experts of intermediate size 24, 2 per token).
func toyConfig(arch string, tied bool) model.Config {
	c := model.Config{
		VocabSize: 64, HiddenSize: 32, IntermediateSize: 48, NumHiddenLayers: 2,
		NumAttentionHeads: 4, NumKeyValueHeads: 2, HeadDim: 8,
		MaxPositionEmbeddings: 64, RMSNormEps: 1e-5, RopeTheta: 10000, HiddenAct: "silu",
		TieWordEmbeddings: tied,
	}
	c.Architectures, c.ModelType = []string{model.ArchLlama}, "llama"
	switch arch {
	case "qwen2":
		c.Architectures, c.ModelType = []string{model.ArchQwen2}, "qwen2"
	case "llama-bias":
		c.AttentionBias = true
	case "mixtral":
		c.Architectures, c.ModelType = []string{model.ArchMixtral}, "mixtral"
		c.IntermediateSize, c.NumLocalExperts, c.NumExpertsPerTok = 24, 4, 2
	}
	return c
}

// toyModel builds a model of cfg with weights large enough that the
// logits differ clearly between tokens (Init's 0.02 makes them nearly
// flat, which would let a wrong gradient pass a comparison), norms near 1
// and nonzero biases.
func toyModel(t testing.TB, cfg model.Config, seed uint64) *model.Model {
	t.Helper()
	m, err := model.Init(cfg, seed)
	if err != nil {
		t.Fatal(err)
	}
	m.Compute = gemm.Config{Threads: 2}
	rng := rand.New(rand.NewPCG(seed, 1))
	for _, p := range tensors(m) {
		for i := range *p.data {
			r := float32(rng.NormFloat64())
			switch p.kind {
			case kindMatrix:
				(*p.data)[i] = 0.25 * r
			case kindNorm:
				(*p.data)[i] = 1 + 0.1*r
			case kindBias:
				(*p.data)[i] = 0.2 * r
			}
		}
	}
	return m
}

// cloneModel returns a deep copy of m's weights.
func cloneModel(m *model.Model) *model.Model {
	z := zerosLike(m.Config)
	z.Compute = m.Compute
	src := tensors(m)
	for i, p := range tensors(z) {
		copy(*p.data, *src[i].data)
	}
	return z
}

func newTrainer(t testing.TB, m *model.Model, edit func(*Options)) *Builtin {
	t.Helper()
	o := DefaultOptions()
	o.Compute = gemm.Config{Threads: 2}
	if edit != nil {
		edit(&o)
	}
	b, err := New(m, o)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func tokensFor(n, vocab int, rng *rand.Rand) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(rng.IntN(vocab))
	}
	return out
}

// testBatch is a few sequences of different lengths with per-position
// weights (some zero), and, for the importance-sampling loss, advantages
// of both signs and behaviour logprobs near the model's own (some absent).
func testBatch(t testing.TB, b *Builtin, loss string, lengths []int, seed uint64) Batch {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 3))
	var data []Datum
	for _, n := range lengths {
		d := Datum{Tokens: tokensFor(n, b.model.Config.VocabSize, rng), Weights: make([]float32, n)}
		for i := 1; i < n; i++ {
			if rng.IntN(4) > 0 {
				d.Weights[i] = float32(0.5 + rng.Float64())
			}
		}
		data = append(data, d)
	}
	if loss == LossImportanceSampling {
		lps, err := b.Logprobs(t.Context(), data)
		if err != nil {
			t.Fatal(err)
		}
		for i := range data {
			n := len(data[i].Tokens)
			data[i].Advantages = make([]float32, n)
			data[i].BehaviourLogprobs = make([]float32, n)
			for j := 1; j < n; j++ {
				data[i].Advantages[j] = float32(rng.NormFloat64())
				if rng.IntN(5) > 0 {
					data[i].BehaviourLogprobs[j] = lps[i][j] + float32(0.3*rng.NormFloat64())
				}
			}
		}
	}
	return Batch{Data: data, Loss: loss}
}

// weights64 copies m's tensors to float64, by Hugging Face name.
func weights64(m *model.Model) map[string][]float64 {
	w := map[string][]float64{}
	for _, p := range tensors(m) {
		w[p.name] = f64(*p.data)
	}
	return w
}

func f64(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// referenceLoss is the batch's summed loss (not divided by the weights)
// computed by the textbook transformer in float64, written apart from the
// package's code (no shared helpers, no gemm), from weights by Hugging
// Face name. The gradient checks difference it. A mixture-of-experts
// layer uses the experts a datum's Routes give, or else the top k of its
// float64 router logits.
func referenceLoss(c model.Config, w map[string][]float64, b Batch) float64 {
	H, hd, nH, nKV, I := c.HiddenSize, c.HeadDim, c.NumAttentionHeads, c.NumKeyValueHeads, c.IntermediateSize
	E, k := c.NumLocalExperts, c.NumExpertsPerTok
	linear := func(x []float64, name string, out, in int) []float64 {
		wt, bias := w[name+".weight"], w[name+".bias"]
		y := make([]float64, out)
		for o := range out {
			s := 0.0
			for i := range in {
				s += wt[o*in+i] * x[i]
			}
			if bias != nil {
				s += bias[o]
			}
			y[o] = s
		}
		return y
	}
	norm := func(x []float64, name string) []float64 {
		g := w[name+".weight"]
		ss := 0.0
		for _, v := range x {
			ss += v * v
		}
		r := 1 / math.Sqrt(ss/float64(len(x))+c.RMSNormEps)
		y := make([]float64, len(x))
		for i := range x {
			y[i] = x[i] * r * g[i]
		}
		return y
	}
	rotate := func(x []float64, pos int) []float64 {
		y := make([]float64, len(x))
		for h := 0; h < len(x); h += hd {
			for j := range hd {
				i := j % (hd / 2)
				ang := float64(pos) * math.Pow(c.RopeTheta, -2*float64(i)/float64(hd))
				var rh float64 // rotate_half(x) = cat(−x2, x1)
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
	swiGLU := func(h []float64, gate, up, down string) []float64 {
		g := linear(h, gate, I, H)
		u := linear(h, up, I, H)
		for i := range g {
			g[i] = g[i] / (1 + math.Exp(-g[i])) * u[i]
		}
		return linear(g, down, H, I)
	}
	// experts returns the experts a token uses and their weights.
	experts := func(h []float64, router string, given []int32) ([]int, []float64) {
		z := linear(h, router, E, H)
		var chosen []int
		for _, e := range given {
			chosen = append(chosen, int(e))
		}
		for len(chosen) < k {
			best := -1
			for e := range E {
				if !slices.Contains(chosen, e) && (best < 0 || z[e] > z[best]) {
					best = e
				}
			}
			chosen = append(chosen, best)
		}
		top := math.Inf(-1)
		for _, e := range chosen {
			top = max(top, z[e])
		}
		ws, sum := make([]float64, k), 0.0
		for j, e := range chosen {
			ws[j] = math.Exp(z[e] - top)
			sum += ws[j]
		}
		for j := range ws {
			ws[j] /= sum
		}
		return chosen, ws
	}
	head := "lm_head"
	if c.TieWordEmbeddings {
		head = "model.embed_tokens"
	}
	total := 0.0
	for _, d := range b.Data {
		T := len(d.Tokens)
		xs := make([][]float64, T)
		for t, tok := range d.Tokens {
			xs[t] = append([]float64(nil), w["model.embed_tokens.weight"][int(tok)*H:(int(tok)+1)*H]...)
		}
		for li := range c.NumHiddenLayers {
			pre := fmt.Sprintf("model.layers.%d.", li)
			qs, ks, vs := make([][]float64, T), make([][]float64, T), make([][]float64, T)
			for t := range T {
				h := norm(xs[t], pre+"input_layernorm")
				qs[t] = rotate(linear(h, pre+"self_attn.q_proj", nH*hd, H), t)
				ks[t] = rotate(linear(h, pre+"self_attn.k_proj", nKV*hd, H), t)
				vs[t] = linear(h, pre+"self_attn.v_proj", nKV*hd, H)
			}
			for t := range T {
				att := make([]float64, nH*hd)
				for h := range nH {
					kh := h * nKV / nH
					p := make([]float64, t+1)
					sum := 0.0
					for s := range t + 1 {
						dot := 0.0
						for i := range hd {
							dot += qs[t][h*hd+i] * ks[s][kh*hd+i]
						}
						p[s] = math.Exp(dot / math.Sqrt(float64(hd)))
						sum += p[s]
					}
					for s := range t + 1 {
						for i := range hd {
							att[h*hd+i] += p[s] / sum * vs[s][kh*hd+i]
						}
					}
				}
				o := linear(att, pre+"self_attn.o_proj", H, nH*hd)
				for i := range H {
					xs[t][i] += o[i]
				}
				h := norm(xs[t], pre+"post_attention_layernorm")
				if !c.MoE() {
					dn := swiGLU(h, pre+"mlp.gate_proj", pre+"mlp.up_proj", pre+"mlp.down_proj")
					for i := range H {
						xs[t][i] += dn[i]
					}
					continue
				}
				var given []int32
				if d.Routes != nil && len(d.Routes[t]) > 0 {
					given = d.Routes[t][li*k : (li+1)*k]
				}
				moe := pre + "block_sparse_moe."
				chosen, ws := experts(h, moe+"gate", given)
				for j, e := range chosen {
					ex := fmt.Sprintf("%sexperts.%d.", moe, e)
					y := swiGLU(h, ex+"w1", ex+"w3", ex+"w2")
					for i := range H {
						xs[t][i] += ws[j] * y[i]
					}
				}
			}
		}
		for t := 1; t < T; t++ {
			wt := 1.0
			if d.Weights != nil {
				wt = float64(d.Weights[t])
			}
			logits := linear(norm(xs[t-1], "model.norm"), head, c.VocabSize, H)
			m := math.Inf(-1)
			for _, v := range logits {
				m = max(m, v)
			}
			s := 0.0
			for _, v := range logits {
				s += math.Exp(v - m)
			}
			lp := logits[d.Tokens[t]] - m - math.Log(s)
			switch b.Loss {
			case LossImportanceSampling:
				total += -wt * float64(d.Advantages[t]) * math.Exp(lp-float64(d.BehaviourLogprobs[t]))
			default:
				total += -wt * lp
			}
		}
	}
	return total
}
