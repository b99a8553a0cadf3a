package model

import (
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/verisim/verisim/internal/engine/gemm"
)

func TestRMSNorm(t *testing.T) {
	// Two rows of 4: rms([1,2,3,4]) = sqrt(7.5), rms([0,0,0,2]) = 1.
	x := []float32{1, 2, 3, 4, 0, 0, 0, 2}
	w := []float32{1, 2, 0.5, -1}
	got := make([]float32, 8)
	rmsNorm(got, x, w, 0)
	r := 1 / math.Sqrt(7.5)
	want := []float64{1 * r, 2 * 2 * r, 3 * 0.5 * r, -4 * r, 0, 0, 0, -2}
	closeRows(t, "rmsNorm", got, want, 1e-6)

	// eps enters under the root: rms([0,0,0,2]) with eps 1 is sqrt(2).
	rmsNorm(got, x, w, 1)
	closeRows(t, "rmsNorm eps", got[4:], []float64{0, 0, 0, -2 / math.Sqrt(2)}, 1e-6)
}

func TestRoPE(t *testing.T) {
	// head_dim 4, theta 10000: frequencies 1 and 10000^(-1/2) = 0.01. At
	// position 1 element 0 pairs with 2 at angle 1, element 1 with 3 at 0.01.
	cos, sin := make([]float32, 2), make([]float32, 2)
	ropeTables(cos, sin, 1, 1, 4, 10000)
	x := []float32{1, 2, 3, 4}
	rope(x, cos, sin, 4)
	c1, s1, c2, s2 := math.Cos(1), math.Sin(1), math.Cos(0.01), math.Sin(0.01)
	want := []float64{1*c1 - 3*s1, 2*c2 - 4*s2, 3*c1 + 1*s1, 4*c2 + 2*s2}
	closeRows(t, "rope", x, want, 1e-6)

	// Position 0 is the identity, for every head of a row.
	ropeTables(cos, sin, 0, 1, 4, 10000)
	y := []float32{1, 2, 3, 4, 5, 6, 7, 8}
	rope(y, cos, sin, 4)
	if !slices.Equal(y, []float32{1, 2, 3, 4, 5, 6, 7, 8}) {
		t.Errorf("rope at position 0 = %v, want unchanged", y)
	}
}

func TestAttentionTwoTokens(t *testing.T) {
	// 2 query heads sharing 1 kv head of 2 dims, 2 tokens.
	q := []float32{
		1, 0, 0, 2, // token 0: head 0, head 1
		0.5, -1, 3, 1, // token 1
	}
	k := []float32{1, 2, -1, 0.5}
	v := []float32{10, 20, -4, 6}
	out := make([]float32, 8)
	for h := range 2 {
		attendHead(gemm.Config{Threads: 1}, out, q, k, v, make([]float32, 4), 0, h, 2, 1, 2)
	}

	// Token 0 sees only itself: its output is v0 for every head.
	closeRows(t, "token 0", out[:4], []float64{10, 20, 10, 20}, 1e-6)
	// Token 1 mixes v0 and v1 by softmax(q1·k / sqrt(2)).
	mix := func(q0, q1 float64) []float64 {
		s0 := (q0*1 + q1*2) / math.Sqrt2
		s1 := (q0*-1 + q1*0.5) / math.Sqrt2
		p0 := math.Exp(s0) / (math.Exp(s0) + math.Exp(s1))
		return []float64{p0*10 + (1-p0)*-4, p0*20 + (1-p0)*6}
	}
	closeRows(t, "token 1", out[4:], append(mix(0.5, -1), mix(3, 1)...), 1e-6)
}

func TestSwiGLU(t *testing.T) {
	gate := []float32{0, 1, -2, 5}
	up := []float32{3, 2, 1, -1}
	swiGLU(gate, up)
	silu := func(x float64) float64 { return x / (1 + math.Exp(-x)) }
	closeRows(t, "swiGLU", gate, []float64{0, silu(1) * 2, silu(-2), -silu(5)}, 1e-6)
}

func TestLogSoftmax(t *testing.T) {
	got := LogSoftmax([]float32{1, 2, 3, 1000})
	lse := 1000 + math.Log(math.Exp(-999)+math.Exp(-998)+math.Exp(-997)+1)
	closeRows(t, "LogSoftmax", got, []float64{1 - lse, 2 - lse, 3 - lse, 1000 - lse}, 1e-7)
}

func TestForwardMatchesReference(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  func() Config
	}{
		{"arch=llama", func() Config { return toyConfig("llama") }},
		{"arch=llama/tied", func() Config { c := toyConfig("llama"); c.TieWordEmbeddings = true; return c }},
		{"arch=llama/attention_bias", func() Config { c := toyConfig("llama"); c.AttentionBias = true; return c }},
		{"arch=qwen2", func() Config { return toyConfig("qwen2") }},
		{"arch=llama/mha", func() Config { c := toyConfig("llama"); c.NumKeyValueHeads = 4; return c }},
		{"arch=mixtral", func() Config { return toyConfig("mixtral") }},
		{"arch=mixtral/k=1", func() Config { c := toyConfig("mixtral"); c.NumExpertsPerTok = 1; return c }},
		{"arch=mixtral/k=E", func() Config { c := toyConfig("mixtral"); c.NumExpertsPerTok = 4; return c }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := toyModel(t, tc.cfg(), 7)
			toks := tokensFor(9, m.Config.VocabSize, 3)
			got, err := m.Forward(m.NewKVCache(), toks, 0)
			if err != nil {
				t.Fatal(err)
			}
			want := referenceForward(m, toks)
			V := m.Config.VocabSize
			for i := range toks {
				closeRows(t, "logits", got[i*V:(i+1)*V], want[i], 1e-4)
			}
		})
	}
}

func TestKVCacheDecodeMatchesFull(t *testing.T) {
	for _, arch := range []string{"llama", "qwen2", "mixtral"} {
		t.Run("arch="+arch, func(t *testing.T) {
			m := toyModel(t, toyConfig(arch), 11)
			V := m.Config.VocabSize
			toks := tokensFor(12, V, 5)
			full, err := m.Forward(m.NewKVCache(), toks, 0)
			if err != nil {
				t.Fatal(err)
			}
			check := func(what string, row int, got []float32) {
				t.Helper()
				closeRows(t, what, got, f64(full[row*V:(row+1)*V]), 1e-4)
			}

			// Token by token.
			cache := m.NewKVCache()
			for i, tok := range toks {
				got, err := m.Forward(cache, []int32{tok}, i)
				if err != nil {
					t.Fatal(err)
				}
				check("decode", i, got)
			}
			if cache.Len() != len(toks) {
				t.Errorf("cache.Len() = %d, want %d", cache.Len(), len(toks))
			}

			// Prefill 5, then a chunk of 4, then single tokens.
			cache = m.NewKVCache()
			if _, err := m.Forward(cache, toks[:5], 0); err != nil {
				t.Fatal(err)
			}
			got, err := m.Forward(cache, toks[5:9], 5)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 4 {
				check("chunk", 5+i, got[i*V:(i+1)*V])
			}

			// Rewind to 3 with different tokens, then back to the prompt's
			// continuation: the dropped positions must not leak.
			if _, err := m.Forward(cache, []int32{1, 2, 3}, 3); err != nil {
				t.Fatal(err)
			}
			got, err = m.Forward(cache, toks[3:], 3)
			if err != nil {
				t.Fatal(err)
			}
			check("rewind", 11, got[8*V:])
		})
	}
}

// TestGQAMatchesMHA checks that grouping is query head h → kv head
// h/(heads/kv_heads): the same model with each kv head's K and V weights
// repeated for its group, run as full multi-head attention, gives the same
// logits.
func TestGQAMatchesMHA(t *testing.T) {
	for _, arch := range []string{"llama", "qwen2"} {
		t.Run("arch="+arch, func(t *testing.T) {
			gqa := toyModel(t, toyConfig(arch), 13)
			c := gqa.Config
			mhaCfg := c
			mhaCfg.NumKeyValueHeads = c.NumAttentionHeads
			mha := toyModel(t, mhaCfg, 99)
			group, rowLen := c.NumAttentionHeads/c.NumKeyValueHeads, c.HeadDim*c.HiddenSize
			repeat := func(src []float32, per int) []float32 {
				var out []float32
				for h := range c.NumAttentionHeads {
					kv := h / group
					out = append(out, src[kv*per:(kv+1)*per]...)
				}
				return out
			}
			mha.Embed, mha.Norm, mha.LMHead = gqa.Embed, gqa.Norm, gqa.LMHead
			for i, l := range gqa.Layers {
				ml := l
				ml.K, ml.V = repeat(l.K, rowLen), repeat(l.V, rowLen)
				if l.KBias != nil {
					ml.KBias, ml.VBias = repeat(l.KBias, c.HeadDim), repeat(l.VBias, c.HeadDim)
				}
				mha.Layers[i] = ml
			}
			toks := tokensFor(10, c.VocabSize, 8)
			a, err := gqa.Forward(gqa.NewKVCache(), toks, 0)
			if err != nil {
				t.Fatal(err)
			}
			b, err := mha.Forward(mha.NewKVCache(), toks, 0)
			if err != nil {
				t.Fatal(err)
			}
			closeRows(t, "gqa vs mha", a, f64(b), 1e-5)
		})
	}
}

func TestTiedEmbeddings(t *testing.T) {
	cfg := toyConfig("llama")
	cfg.TieWordEmbeddings = true
	tied := toyModel(t, cfg, 17)
	if &tied.LMHead[0] != &tied.Embed[0] {
		t.Fatal("tied model's LMHead is not its embedding")
	}
	for _, p := range tied.params() {
		if p.name == "lm_head.weight" {
			t.Fatal("tied model lists lm_head.weight")
		}
	}
	untiedCfg := cfg
	untiedCfg.TieWordEmbeddings = false
	if got, want := cfg.ParamCount(), untiedCfg.ParamCount()-int64(cfg.VocabSize*cfg.HiddenSize); got != want {
		t.Errorf("tied ParamCount = %d, want %d", got, want)
	}
	untied := *tied
	untied.Config = untiedCfg
	untied.LMHead = slices.Clone(tied.Embed)
	toks := tokensFor(6, cfg.VocabSize, 4)
	a, err := tied.Forward(tied.NewKVCache(), toks, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := untied.Forward(untied.NewKVCache(), toks, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a, b) {
		t.Error("tied logits differ from an untied copy with lm_head = embed_tokens")
	}
}

func TestQKVBias(t *testing.T) {
	m := toyModel(t, toyConfig("qwen2"), 19)
	toks := tokensFor(5, m.Config.VocabSize, 6)
	with, err := m.Forward(m.NewKVCache(), toks, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, zero := range []string{"q", "k", "v"} {
		nb := *m
		nb.Layers = slices.Clone(m.Layers)
		for i := range nb.Layers {
			l := &nb.Layers[i]
			b := map[string]*[]float32{"q": &l.QBias, "k": &l.KBias, "v": &l.VBias}[zero]
			*b = make([]float32, len(*b))
		}
		without, err := nb.Forward(nb.NewKVCache(), toks, 0)
		if err != nil {
			t.Fatal(err)
		}
		V := m.Config.VocabSize
		if zero == "k" {
			// The first token attends only to itself, so no k bias can
			// change its logits; later tokens see it through RoPE, which
			// rotates the bias differently at each position.
			closeRows(t, "k bias, token 0", without[:V], f64(with[:V]), 1e-6)
		}
		if slices.Equal(with[V:], without[V:]) {
			t.Errorf("zeroing the %s bias left the logits unchanged", zero)
		}
	}
	if m.Layers[0].OBias != nil || m.Config.OBias() {
		t.Error("qwen2 has an o_proj bias")
	}
}

func TestForwardErrors(t *testing.T) {
	m := toyModel(t, toyConfig("llama"), 1)
	cache := m.NewKVCache()
	if _, err := m.Forward(cache, []int32{1, 2}, 0); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		tokens []int32
		pos    int
		want   string
	}{
		{"empty", nil, 0, "no tokens"},
		{"gap", []int32{1}, 3, "position 3, cache holds 2"},
		{"vocab", []int32{64}, 2, "token 64 outside vocabulary"},
		{"too long", make([]int32, 63), 2, "exceed max_position_embeddings 64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := m.Forward(cache, tc.tokens, tc.pos)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
			if cache.Len() != 2 {
				t.Errorf("a refused call changed the cache to %d positions", cache.Len())
			}
		})
	}
}

// TestForwardBatchMatchesUnbatched runs three sequences in one call (one
// prefilling a prompt, two decoding a token each from caches of different
// lengths, one of them a Clone) and checks every row against the same
// sequence run alone.
func TestForwardBatchMatchesUnbatched(t *testing.T) {
	for _, arch := range []string{"llama", "qwen2", "mixtral"} {
		t.Run("arch="+arch, func(t *testing.T) {
			m := toyModel(t, toyConfig(arch), 21)
			V := m.Config.VocabSize
			a, b := tokensFor(9, V, 1), tokensFor(14, V, 2)
			alone := func(toks []int32) ([]float32, [][]int32) {
				t.Helper()
				cache := m.NewKVCache()
				out, err := m.Forward(cache, toks, 0)
				if err != nil {
					t.Fatal(err)
				}
				return out, cache.Routes(0, len(toks))
			}
			wantA, routesA := alone(a)
			wantB, routesB := alone(b)

			cb := m.NewKVCache()
			if _, err := m.Forward(cb, b[:13], 0); err != nil {
				t.Fatal(err)
			}
			cb2 := cb.Clone()
			if _, err := m.Forward(cb2, b[:6], 0); err != nil { // a clone rewinds alone
				t.Fatal(err)
			}
			if cb.Len() != 13 {
				t.Fatalf("rewinding a clone changed the original to %d positions", cb.Len())
			}
			ca := m.NewKVCache()
			got, err := m.ForwardBatch([]Seq{
				{Cache: ca, Tokens: a, Pos: 0},
				{Cache: cb, Tokens: b[13:], Pos: 13},
				{Cache: cb2, Tokens: b[6:7], Pos: 6},
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != (9+1+1)*V {
				t.Fatalf("%d logits, want %d", len(got), 11*V)
			}
			for i := range 9 {
				closeRows(t, "prefill row", got[i*V:(i+1)*V], f64(wantA[i*V:(i+1)*V]), 1e-4)
			}
			closeRows(t, "decode", got[9*V:10*V], f64(wantB[13*V:]), 1e-4)
			closeRows(t, "decode from clone", got[10*V:], f64(wantB[6*V:7*V]), 1e-4)
			if ca.Len() != 9 || cb.Len() != 14 || cb2.Len() != 7 {
				t.Errorf("cache lengths %d, %d, %d, want 9, 14, 7", ca.Len(), cb.Len(), cb2.Len())
			}
			// Routing is per token, whatever else is in the batch.
			if !reflect.DeepEqual(ca.Routes(0, 9), routesA) || !reflect.DeepEqual(cb.Routes(0, 14), routesB) ||
				!reflect.DeepEqual(cb2.Routes(0, 7), routesB[:7]) {
				t.Error("batched routes differ from the routes of each sequence alone")
			}
		})
	}
}

func TestForwardBatchErrors(t *testing.T) {
	m := toyModel(t, toyConfig("llama"), 1)
	c1, c2 := m.NewKVCache(), m.NewKVCache()
	for _, tc := range []struct {
		name string
		seqs []Seq
		want string
	}{
		{"none", nil, "no sequences"},
		{"shared cache", []Seq{{Cache: c1, Tokens: []int32{1}}, {Cache: c2, Tokens: []int32{1}}, {Cache: c1, Tokens: []int32{2}}}, "sequences 0 and 2 share a cache"},
		{"bad second", []Seq{{Cache: c1, Tokens: []int32{1}}, {Cache: c2, Tokens: []int32{99}}}, "sequence 1: forward: token 99 outside vocabulary"},
		{"no cache", []Seq{{Tokens: []int32{1}}}, "no cache"},
		{"another model's cache", []Seq{{Cache: toyModel(t, toyConfig("mixtral"), 1).NewKVCache(), Tokens: []int32{1}}}, "the cache was made by a model of another shape"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := m.ForwardBatch(tc.seqs)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
			if c1.Len() != 0 || c2.Len() != 0 {
				t.Errorf("a refused call changed the caches")
			}
		})
	}
}

func TestProfile(t *testing.T) {
	m := toyModel(t, toyConfig("llama"), 3)
	var p Profile
	pm := *m
	pm.Profile = &p
	want, err := m.Forward(m.NewKVCache(), tokensFor(16, 64, 1), 0)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pm.Forward(pm.NewKVCache(), tokensFor(16, 64, 1), 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Error("profiling changed the logits")
	}
	r := p.Report()
	if r.Matmul <= 0 || r.Attention <= 0 || r.Matmul+r.Attention > r.Total {
		t.Errorf("report %+v: want positive parts within the total", r)
	}
	if s := r.Split(); !strings.Contains(s, "%") {
		t.Errorf("Split() = %q", s)
	}
	p.Reset()
	if r := p.Report(); r != (ProfileReport{}) {
		t.Errorf("after Reset: %+v", r)
	}
}

// TestAttentionBlocks runs a prompt longer than attention's row blocks
// (in one call, and as a prefix plus a chunk that straddles a block
// boundary) and checks every row against decoding token by token.
func TestAttentionBlocks(t *testing.T) {
	cfg := toyConfig("qwen2")
	cfg.MaxPositionEmbeddings = 320
	m := toyModel(t, cfg, 13)
	V := cfg.VocabSize
	toks := tokensFor(2*attentionBlock+40, V, 3)
	full, err := m.Forward(m.NewKVCache(), toks, 0)
	if err != nil {
		t.Fatal(err)
	}
	cache := m.NewKVCache()
	if _, err := m.Forward(cache, toks[:100], 0); err != nil {
		t.Fatal(err)
	}
	chunk, err := m.Forward(cache, toks[100:], 100)
	if err != nil {
		t.Fatal(err)
	}
	step := m.NewKVCache()
	for i, tok := range toks {
		got, err := m.Forward(step, []int32{tok}, i)
		if err != nil {
			t.Fatal(err)
		}
		closeRows(t, "full", full[i*V:(i+1)*V], f64(got), 1e-4)
		if i >= 100 {
			closeRows(t, "chunk", chunk[(i-100)*V:(i-99)*V], f64(got), 1e-4)
		}
	}
}

// TestAttentionInParallel runs a batch whose attention is large enough to
// spread its (sequence, head) pairs over threads (see
// parallelAttentionFlops): a prompt from position 0 beside a sequence
// continuing its cache. The logits must be the one-thread run's bit for
// bit, and the reference's.
func TestAttentionInParallel(t *testing.T) {
	c := toyConfig("llama")
	m := toyModel(t, c, 43)
	a, b := tokensFor(48, c.VocabSize, 13), tokensFor(60, c.VocabSize, 14)
	if flops := 4 * c.HeadDim * c.NumAttentionHeads * (48*48 + 20*60); flops < parallelAttentionFlops {
		t.Fatalf("%d flops do not reach the parallel path", flops)
	}
	run := func(threads int) []float32 {
		mt := *m
		mt.Compute.Threads = threads
		ca, cb := mt.NewKVCache(), mt.NewKVCache()
		if _, err := mt.Forward(cb, b[:40], 0); err != nil {
			t.Fatal(err)
		}
		out, err := mt.ForwardBatch([]Seq{{Cache: ca, Tokens: a}, {Cache: cb, Tokens: b[40:], Pos: 40}})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	serial, parallel := run(1), run(4)
	if !bitsEqual(serial, parallel) {
		t.Error("attention over several threads changed the logits")
	}
	V := c.VocabSize
	wantA, wantB := referenceForward(m, a), referenceForward(m, b)
	for i := range 48 {
		closeRows(t, "first sequence's logits", parallel[i*V:(i+1)*V], wantA[i], 1e-4)
	}
	for i := range 20 {
		closeRows(t, "second sequence's logits", parallel[(48+i)*V:(49+i)*V], wantB[40+i], 1e-4)
	}
}
