package train

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/verisim/verisim/internal/engine/model"
)

// engineLogprobs scores d with the engine, replaying routes when they are
// given, and returns the logprobs and the routes the engine used.
func engineLogprobs(t *testing.T, m *model.Model, d Datum) ([]float32, [][]int32) {
	t.Helper()
	c := m.NewKVCache()
	logits, err := m.ForwardBatch([]model.Seq{{Cache: c, Tokens: d.Tokens, Replay: d.Routes}})
	if err != nil {
		t.Fatal(err)
	}
	V := m.Config.VocabSize
	lps := make([]float32, len(d.Tokens))
	for pos := 1; pos < len(d.Tokens); pos++ {
		lps[pos] = model.LogSoftmax(logits[(pos-1)*V : pos*V])[d.Tokens[pos]]
	}
	return lps, c.Routes(0, len(d.Tokens))
}

func maxAbsDiff(a, b []float32) float64 {
	var d float64
	for i := range a {
		d = max(d, math.Abs(float64(a[i])-float64(b[i])))
	}
	return d
}

// TestRouterReplay checks that the trainer replays the routes the engine
// recorded: with the weights they were recorded with, replayed and
// recomputed routing give the same logprobs; once the router has changed
// so much that it would choose other experts everywhere, the trainer with
// the routes still matches the engine replaying them, and differs from
// the engine routing afresh.
func TestRouterReplay(t *testing.T) {
	m := toyModel(t, toyConfig("mixtral", false), 21)
	b := newTrainer(t, m, func(o *Options) { o.LearningRate = 1e-2 })
	rng := rand.New(rand.NewPCG(22, 22))
	data := []Datum{{Tokens: tokensFor(24, m.Config.VocabSize, rng)}, {Tokens: tokensFor(9, m.Config.VocabSize, rng)}}
	recorded := make([][][]int32, len(data))
	for i, d := range data {
		_, recorded[i] = engineLogprobs(t, m, d)
	}
	withRoutes := func() []Datum {
		out := slices.Clone(data)
		for i := range out {
			out[i].Routes = recorded[i]
		}
		return out
	}
	logprobs := func(data []Datum) [][]float32 {
		lps, err := b.Logprobs(t.Context(), data)
		if err != nil {
			t.Fatal(err)
		}
		return lps
	}

	fresh, replayed := logprobs(data), logprobs(withRoutes())
	for i := range data {
		if !slices.Equal(fresh[i], replayed[i]) {
			t.Errorf("datum %d: with the recording's weights, replayed routes give logprobs up to %g from routing afresh, want identical",
				i, maxAbsDiff(fresh[i], replayed[i]))
		}
	}

	// A training step on the replayed routes, then a router that ranks the
	// experts upside down: with 2 of 4 experts per token, routing afresh
	// picks other experts at every position (checked below).
	if _, err := b.ForwardBackward(t.Context(), Batch{Data: withRoutes()}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.OptimStep(t.Context()); err != nil {
		t.Fatal(err)
	}
	for li := range m.Layers {
		for i, v := range m.Layers[li].Router {
			m.Layers[li].Router[i] = -v
		}
	}
	replayed = logprobs(withRoutes())
	for i, d := range withRoutes() {
		engineReplay, used := engineLogprobs(t, m, d)
		d.Routes = nil
		engineFresh, chosen := engineLogprobs(t, m, d)
		if !slices.EqualFunc(used, recorded[i], slices.Equal) {
			t.Fatalf("datum %d: the engine did not replay the routes", i)
		}
		for pos := range len(d.Tokens) - 1 {
			if sameExperts(chosen[pos], recorded[i][pos], m.Config.NumExpertsPerTok) {
				t.Fatalf("datum %d position %d: the inverted router still picks the recorded experts %v", i, pos, chosen[pos])
			}
		}
		same, gap := maxAbsDiff(replayed[i], engineReplay), maxAbsDiff(replayed[i], engineFresh)
		t.Logf("datum %d: trainer with routes vs engine replaying them: max diff %.3g; vs engine routing afresh: %.3g", i, same, gap)
		if same > 1e-6 {
			t.Errorf("datum %d: the trainer's replay differs from the engine's by up to %g", i, same)
		}
		if gap < 1e-2 {
			t.Errorf("datum %d: replayed logprobs within %g of freshly routed ones; the routes were not used", i, gap)
		}
		if trainerFresh := logprobs([]Datum{d})[0]; maxAbsDiff(trainerFresh, engineFresh) > 1e-6 {
			t.Errorf("datum %d: routing afresh, trainer and engine differ by up to %g", i, maxAbsDiff(trainerFresh, engineFresh))
		}
	}
}

// TestBadRoutes checks that routes a mixture-of-experts model cannot
// replay are refused, naming the datum and position, as bad input.
func TestBadRoutes(t *testing.T) {
	cfg := toyConfig("mixtral", true)
	b := newTrainer(t, toyModel(t, cfg, 1), nil)
	ok := func() Datum { return Datum{Tokens: []int32{1, 2, 3, 4}, Routes: randomRoutes(cfg, 4, 3)} }
	for _, tc := range []struct {
		name string
		edit func(*Datum)
		want string
	}{
		{"fewer routes than tokens", func(d *Datum) { d.Routes = d.Routes[:3] }, "datum 1: 3 route entries for 4 tokens"},
		{"short entry", func(d *Datum) { d.Routes[2] = d.Routes[2][:3] }, "datum 1: route of position 2: 3 experts, want 4 (2 layers × num_experts_per_tok 2)"},
		{"expert past the last", func(d *Datum) { d.Routes[1][3] = 4 }, "datum 1: route of position 1, layer 1: expert 4 outside 0..3"},
		{"negative expert", func(d *Datum) { d.Routes[3][0] = -1 }, "datum 1: route of position 3, layer 0: expert -1 outside 0..3"},
		{"expert twice", func(d *Datum) { d.Routes[0][2], d.Routes[0][3] = 1, 1 }, "datum 1: route of position 0, layer 1: expert 1 given twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := ok()
			tc.edit(&d)
			data := []Datum{ok(), d}
			before := cloneModel(b.model)
			_, err := b.ForwardBackward(t.Context(), Batch{Data: data})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrBadInput) {
				t.Fatalf("ForwardBackward error = %v, want one containing %q wrapping ErrBadInput", err, tc.want)
			}
			if b.pending || !sameWeights(before, b.model) {
				t.Errorf("a refused batch changed the trainer")
			}
			if _, err := b.Logprobs(t.Context(), data); err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrBadInput) {
				t.Errorf("Logprobs error = %v, want one containing %q wrapping ErrBadInput", err, tc.want)
			}
		})
	}
	// An empty entry routes its position afresh.
	d := ok()
	d.Routes[3] = nil
	if _, err := b.Logprobs(t.Context(), []Datum{d}); err != nil {
		t.Errorf("routes with an empty entry: %v", err)
	}
}

// sameExperts reports whether two routes entries send every layer to the
// same experts, in whatever order.
func sameExperts(a, b []int32, k int) bool {
	for lo := 0; lo < len(a); lo += k {
		x, y := slices.Clone(a[lo:lo+k]), slices.Clone(b[lo:lo+k])
		slices.Sort(x)
		slices.Sort(y)
		if !slices.Equal(x, y) {
			return false
		}
	}
	return true
}
