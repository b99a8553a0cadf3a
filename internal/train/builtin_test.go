package train

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/verisim/verisim/internal/engine/model"
)

// TestLogprobsParity checks the trainer's forward pass against the
// engine's: Logprobs must equal model.Forward + model.LogSoftmax for the
// same weights.
func TestLogprobsParity(t *testing.T) {
	for _, tc := range []struct {
		arch string
		tied bool
	}{{"llama", true}, {"llama", false}, {"qwen2", true}, {"qwen2", false}, {"llama-bias", false}, {"mixtral", true}, {"mixtral", false}} {
		name := tc.arch + "/tied"
		if !tc.tied {
			name = tc.arch + "/untied"
		}
		t.Run(name, func(t *testing.T) {
			cfg := toyConfig(tc.arch, tc.tied)
			cfg.MaxPositionEmbeddings = 320 // past the engine's 128-row attention blocks
			m := toyModel(t, cfg, 3)
			b := newTrainer(t, m, nil)
			rng := rand.New(rand.NewPCG(4, 4))
			data := []Datum{{Tokens: tokensFor(40, m.Config.VocabSize, rng)}, {Tokens: tokensFor(7, m.Config.VocabSize, rng)}, {Tokens: []int32{5}}, {Tokens: tokensFor(300, m.Config.VocabSize, rng)}}
			got, err := b.Logprobs(t.Context(), data)
			if err != nil {
				t.Fatal(err)
			}
			var maxDiff, k3 float64
			var n int
			for i, d := range data {
				logits, err := m.Forward(m.NewKVCache(), d.Tokens, 0)
				if err != nil {
					t.Fatal(err)
				}
				if len(got[i]) != len(d.Tokens) || got[i][0] != 0 {
					t.Fatalf("datum %d: %d logprobs starting %v, want %d starting 0", i, len(got[i]), got[i][:1], len(d.Tokens))
				}
				V := m.Config.VocabSize
				for pos := 1; pos < len(d.Tokens); pos++ {
					want := float64(model.LogSoftmax(logits[(pos-1)*V : pos*V])[d.Tokens[pos]])
					diff := want - float64(got[i][pos])
					maxDiff = max(maxDiff, math.Abs(diff))
					k3 += math.Exp(diff) - diff - 1
					n++
				}
			}
			t.Logf("max |lp_trainer − lp_engine| = %.3g, k3 KL = %.3g over %d positions", maxDiff, k3/float64(n), n)
			if maxDiff > 1e-5 {
				t.Errorf("trainer and engine logprobs differ by up to %g", maxDiff)
			}
		})
	}
}

// TestMetrics checks the loss and the logprob-gap metrics against
// Logprobs, with behaviour logprobs offset by known amounts.
func TestMetrics(t *testing.T) {
	b := newTrainer(t, toyModel(t, toyConfig("llama", true), 1), nil)
	rng := rand.New(rand.NewPCG(2, 2))
	d := Datum{Tokens: tokensFor(10, 64, rng), Weights: []float32{9, 1, 0, 2, 1, 1, 0, 1, 1, 0.5}}
	lps, err := b.Logprobs(t.Context(), []Datum{d})
	if err != nil {
		t.Fatal(err)
	}
	d.BehaviourLogprobs = make([]float32, 10)
	offsets := map[int]float64{2: 0.5, 5: -0.25, 7: 0.1} // position 2 has weight 0: still counted
	for pos, off := range offsets {
		d.BehaviourLogprobs[pos] = lps[0][pos] + float32(off)
	}
	met, err := b.ForwardBackward(t.Context(), Batch{Data: []Datum{d}})
	if err != nil {
		t.Fatal(err)
	}
	var total, sumW, k3 float64
	tokens := 0
	for pos := 1; pos < 10; pos++ {
		if w := float64(d.Weights[pos]); w != 0 {
			total -= w * float64(lps[0][pos])
			sumW += w
			tokens++
		}
	}
	for pos, off := range offsets {
		off = float64(d.BehaviourLogprobs[pos]) - float64(lps[0][pos])
		k3 += math.Exp(off) - off - 1
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"Loss", met.Loss, total / sumW},
		{"SumWeights", met.SumWeights, sumW},
		{"Tokens", float64(met.Tokens), float64(tokens)},
		{"MaxLogprobGap", met.MaxLogprobGap, 0.5},
		{"KLk3", met.KLk3, k3 / 3},
	} {
		if math.Abs(c.got-c.want) > 1e-5*max(1, math.Abs(c.want)) {
			t.Errorf("%s = %g, want %g", c.name, c.got, c.want)
		}
	}
	if met.ForwardSeconds <= 0 || met.BackwardSeconds <= 0 {
		t.Errorf("forward %gs, backward %gs, want both > 0", met.ForwardSeconds, met.BackwardSeconds)
	}
}

// TestAccumulation checks that a batch sent in two pieces gives the same
// step as the batch sent whole.
func TestAccumulation(t *testing.T) {
	for _, loss := range []string{LossCrossEntropy, LossImportanceSampling} {
		t.Run("loss="+loss, func(t *testing.T) {
			m := toyModel(t, toyConfig("qwen2", false), 5)
			whole := newTrainer(t, m, nil)
			parts := newTrainer(t, cloneModel(m), nil)
			batch := testBatch(t, whole, loss, []int{12, 5, 9, 16}, 6)

			mw, err := whole.ForwardBackward(t.Context(), batch)
			if err != nil {
				t.Fatal(err)
			}
			var sumW float64
			for _, part := range [][]Datum{batch.Data[:1], batch.Data[1:]} {
				mp, err := parts.ForwardBackward(t.Context(), Batch{Data: part, Loss: loss})
				if err != nil {
					t.Fatal(err)
				}
				sumW += mp.SumWeights
			}
			if math.Abs(sumW-mw.SumWeights) > 1e-9 {
				t.Fatalf("pieces sum %g weights, whole batch %g", sumW, mw.SumWeights)
			}
			rw, err := whole.OptimStep(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			rp, err := parts.OptimStep(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if d := math.Abs(rw.GradNorm - rp.GradNorm); d > 1e-5*rw.GradNorm {
				t.Errorf("grad norm %g in pieces, %g whole", rp.GradNorm, rw.GradNorm)
			}
			if d := maxWeightDiff(whole.model, parts.model); d > 1e-6 {
				t.Errorf("weights after the step differ by up to %g", d)
			}
		})
	}
}

func maxWeightDiff(a, b *model.Model) float64 {
	ta, tb := tensors(a), tensors(b)
	var d float64
	for i := range ta {
		for j, v := range *ta[i].data {
			d = max(d, math.Abs(float64(v-(*tb[i].data)[j])))
		}
	}
	return d
}

func sameWeights(a, b *model.Model) bool {
	ta, tb := tensors(a), tensors(b)
	for i := range ta {
		if !slices.Equal(*ta[i].data, *tb[i].data) {
			return false
		}
	}
	return true
}

// TestOverfit trains a tiny model on a few fixed sequences until it knows
// them by heart.
func TestOverfit(t *testing.T) {
	const steps = 60
	for _, arch := range []string{"llama", "mixtral"} {
		t.Run("arch="+arch, func(t *testing.T) {
			cfg := toyConfig(arch, true)
			cfg.VocabSize, cfg.NumHiddenLayers = 32, 1
			m, err := model.Init(cfg, 1)
			if err != nil {
				t.Fatal(err)
			}
			b := newTrainer(t, m, func(o *Options) {
				o.LearningRate, o.WarmupSteps, o.TotalSteps, o.WeightDecay = 2e-2, 5, steps, 0
			})
			rng := rand.New(rand.NewPCG(8, 8))
			batch := Batch{}
			for range 4 {
				batch.Data = append(batch.Data, Datum{Tokens: tokensFor(16, cfg.VocabSize, rng)})
			}
			var first, last float64
			for step := range steps {
				met, err := b.ForwardBackward(t.Context(), batch)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := b.OptimStep(t.Context()); err != nil {
					t.Fatal(err)
				}
				if step == 0 {
					first = met.Loss
				}
				last = met.Loss
			}
			t.Logf("loss %.6f → %.6g in %d steps", first, last, steps)
			if !(last < 0.05) {
				t.Errorf("loss after %d steps = %g, want < 0.05 (started at %g)", steps, last, first)
			}
		})
	}
}

func TestBadInput(t *testing.T) {
	b := newTrainer(t, toyModel(t, toyConfig("llama", true), 1), nil)
	ok := func() Datum { return Datum{Tokens: []int32{1, 2, 3, 4}} }
	with := func(f func(*Datum)) []Datum {
		d := ok()
		f(&d)
		return []Datum{ok(), d}
	}
	for _, tc := range []struct {
		name  string
		batch Batch
		want  string
	}{
		{"empty batch", Batch{}, "empty batch"},
		{"no tokens", Batch{Data: with(func(d *Datum) { d.Tokens = nil })}, "datum 1: no tokens"},
		{"token past vocab", Batch{Data: with(func(d *Datum) { d.Tokens[2] = 64 })}, "datum 1: token 64 at position 2 outside vocabulary of 64"},
		{"negative token", Batch{Data: with(func(d *Datum) { d.Tokens[0] = -1 })}, "token -1 at position 0"},
		{"too long", Batch{Data: with(func(d *Datum) { d.Tokens = make([]int32, 65) })}, "65 tokens exceed max_position_embeddings 64"},
		{"weights length", Batch{Data: with(func(d *Datum) { d.Weights = []float32{1} })}, "datum 1: 1 weights for 4 tokens"},
		{"advantages length", Batch{Data: with(func(d *Datum) { d.Advantages = make([]float32, 5) })}, "5 advantages for 4 tokens"},
		{"behaviour length", Batch{Data: with(func(d *Datum) { d.BehaviourLogprobs = make([]float32, 3) })}, "3 behaviour logprobs for 4 tokens"},
		{"routes", Batch{Data: with(func(d *Datum) { d.Routes = [][]int32{{0}} })}, "routes given for a dense model"},
		{"unknown loss", Batch{Data: []Datum{ok()}, Loss: "mse"}, `unknown loss "mse"`},
		{"importance sampling without advantages", Batch{Data: []Datum{ok()}, Loss: LossImportanceSampling}, "needs advantages and behaviour_logprobs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := cloneModel(b.model)
			_, err := b.ForwardBackward(t.Context(), tc.batch)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrBadInput) {
				t.Fatalf("ForwardBackward error = %v, want one containing %q wrapping ErrBadInput", err, tc.want)
			}
			if b.pending || !sameWeights(before, b.model) {
				t.Errorf("a refused batch changed the trainer")
			}
			if tc.batch.Loss == "" || tc.batch.Loss == LossCrossEntropy {
				if _, err := b.Logprobs(t.Context(), tc.batch.Data); err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("Logprobs error = %v, want one containing %q", err, tc.want)
				}
			}
		})
	}
	if _, err := b.OptimStep(t.Context()); err == nil || !strings.Contains(err.Error(), "no gradient accumulated") {
		t.Errorf("OptimStep with nothing accumulated: error %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := b.ForwardBackward(ctx, Batch{Data: []Datum{ok()}}); !errors.Is(err, context.Canceled) {
		t.Errorf("ForwardBackward on a cancelled context: error %v", err)
	}
	if b.pending {
		t.Errorf("a cancelled call left a gradient behind")
	}
}

func TestNewRefuses(t *testing.T) {
	m := toyModel(t, toyConfig("llama", false), 1)
	for _, tc := range []struct {
		name string
		edit func(*Options, *model.Model)
		want string
	}{
		{"zero learning rate", func(o *Options, _ *model.Model) { o.LearningRate = 0 }, "learning rate 0"},
		{"beta", func(o *Options, _ *model.Model) { o.Beta2 = 1 }, "betas"},
		{"total within warm-up", func(o *Options, _ *model.Model) { o.WarmupSteps, o.TotalSteps = 10, 5 }, "total steps 5"},
		{"dtype", func(o *Options, _ *model.Model) { o.PublishDType = "I8" }, "publish dtype"},
		{"mixture of experts without experts", func(_ *Options, m *model.Model) {
			m.Config.Architectures, m.Config.ModelType = []string{model.ArchMixtral}, "mixtral"
			m.Config.NumLocalExperts, m.Config.NumExpertsPerTok = 4, 2
		}, "layer 0 has 0 experts, config says 4"},
		{"short tensor", func(_ *Options, m *model.Model) { m.Layers[1].Up = m.Layers[1].Up[:3] }, "model.layers.1.mlp.up_proj.weight holds 3 values"},
		{"file path", func(o *Options, _ *model.Model) { o.Files = map[string][]byte{"../tokenizer.json": nil} }, `checkpoint file "../tokenizer.json": want a plain file name`},
		{"own file", func(o *Options, _ *model.Model) { o.Files = map[string][]byte{"config.json": nil} }, `checkpoint file "config.json": Save writes that file itself`},
		{"bf16 serving model", func(_ *Options, m *model.Model) {
			// What model.LoadWith(dir, KeepBF16) gives for a bf16 checkpoint.
			m.Layers[0].BF16.Q, m.Layers[0].Q = make([]uint16, len(m.Layers[0].Q)), nil
		}, "bfloat16 weights for serving"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, mm := DefaultOptions(), cloneModel(m)
			tc.edit(&o, mm)
			if _, err := New(mm, o); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestNonFinite checks that a datum with a NaN loss is named, its call's
// gradient dropped, and what was accumulated before kept.
func TestNonFinite(t *testing.T) {
	m := toyModel(t, toyConfig("llama", false), 2)
	b := newTrainer(t, m, nil)
	ref := newTrainer(t, cloneModel(m), nil)
	good := Batch{Data: []Datum{{Tokens: []int32{1, 2, 3, 4, 5}}}}
	for _, tr := range []*Builtin{b, ref} {
		if _, err := tr.ForwardBackward(t.Context(), good); err != nil {
			t.Fatal(err)
		}
	}
	// Token 63 appears only in datum 1; poison its embedding row.
	H := m.Config.HiddenSize
	saved := slices.Clone(m.Embed[63*H : 64*H])
	m.Embed[63*H] = float32(math.NaN())
	before := cloneModel(m)
	bad := Batch{Data: []Datum{{Tokens: []int32{1, 2, 3}}, {Tokens: []int32{4, 63, 5}}}}
	_, err := b.ForwardBackward(t.Context(), bad)
	if !errors.Is(err, ErrNonFinite) || !strings.Contains(err.Error(), "datum 1") {
		t.Fatalf("error = %v, want ErrNonFinite naming datum 1", err)
	}
	if !sameWeightsNaN(before, m) {
		t.Fatal("weights changed")
	}
	copy(m.Embed[63*H:], saved)
	rb, err := b.OptimStep(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	rr, err := ref.OptimStep(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if rb != rr || !sameWeights(b.model, ref.model) {
		t.Errorf("the step after a refused call (%+v) differs from one without it (%+v)", rb, rr)
	}
}

func sameWeightsNaN(a, b *model.Model) bool {
	ta, tb := tensors(a), tensors(b)
	for i := range ta {
		for j, v := range *ta[i].data {
			if math.Float32bits(v) != math.Float32bits((*tb[i].data)[j]) {
				return false
			}
		}
	}
	return true
}

func TestLearningRate(t *testing.T) {
	o := DefaultOptions()
	o.LearningRate, o.WarmupSteps, o.TotalSteps, o.MinLRRatio = 1, 4, 14, 0.1
	for _, tc := range []struct {
		step int
		want float64
	}{
		{0, 0.25}, {1, 0.5}, {3, 1}, // linear warm-up, the first step at 1/warmup
		{4, 1},                // cosine starts at the peak
		{9, 0.1 + 0.9*0.5},    // half way: midpoint of peak and floor
		{14, 0.1}, {100, 0.1}, // the floor, and it stays there
	} {
		if got := o.learningRate(tc.step); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("learningRate(%d) = %g, want %g", tc.step, got, tc.want)
		}
	}
	o.TotalSteps = 0
	if got := o.learningRate(1000); got != 1 {
		t.Errorf("constant schedule at step 1000 = %g, want 1", got)
	}

	// OptimStep reports the rate it used and counts steps.
	b := newTrainer(t, toyModel(t, toyConfig("llama", true), 1), func(opt *Options) { *opt = o; opt.Compute.Threads = 2 })
	for i := range 2 {
		if _, err := b.ForwardBackward(t.Context(), Batch{Data: []Datum{{Tokens: []int32{1, 2, 3}}}}); err != nil {
			t.Fatal(err)
		}
		r, err := b.OptimStep(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if r.Step != i+1 || r.LearningRate != o.learningRate(i) {
			t.Errorf("step %d: result %+v, want step %d at rate %g", i, r, i+1, o.learningRate(i))
		}
	}
}

// TestAdamW checks one update against the formula on a hand-computed
// case: the first bias-corrected step moves every weight by lr·sign(g)
// (|m̂/√v̂| = 1), plus decay on matrices only; clipping scales the
// reported norm's gradient but not that first step's size.
func TestAdamW(t *testing.T) {
	m := toyModel(t, toyConfig("qwen2", false), 3)
	before := cloneModel(m)
	const lr, wd = 1e-2, 0.5
	b := newTrainer(t, m, func(o *Options) { o.LearningRate, o.WeightDecay, o.ClipNorm, o.Eps = lr, wd, 1e-3, 1e-30 })
	if _, err := b.ForwardBackward(t.Context(), testBatch(t, b, LossCrossEntropy, []int{6, 6}, 1)); err != nil {
		t.Fatal(err)
	}
	g := make([][]float32, len(b.gradT))
	for i, p := range b.gradT {
		g[i] = slices.Clone(*p.data)
	}
	r, err := b.OptimStep(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !r.Clipped || r.GradNorm <= 1e-3 {
		t.Errorf("step result %+v, want a clipped gradient", r)
	}
	old := tensors(before)
	for i, p := range b.params {
		for j, w := range *p.data {
			w0 := float64((*old[i].data)[j])
			want := w0
			if p.kind == kindMatrix {
				want *= 1 - lr*wd
			}
			switch gj := g[i][j]; {
			case gj > 0:
				want -= lr
			case gj < 0:
				want += lr
			}
			if math.Abs(float64(w)-want) > 1e-6 {
				t.Fatalf("%s[%d] = %g after the step from %g (grad %g), want %g", p.name, j, w, w0, g[i][j], want)
			}
		}
	}
}
