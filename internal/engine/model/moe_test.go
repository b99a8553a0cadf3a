package model

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestRoute(t *testing.T) {
	for _, tc := range []struct {
		name    string
		logits  []float32
		k       int
		given   []int32
		experts []int32
	}{
		{"top 2", []float32{0.5, 2, -1, 1}, 2, nil, []int32{1, 3}},
		{"ties to the lower index", []float32{1, 3, 3, 1}, 3, nil, []int32{1, 2, 0}},
		{"all equal", []float32{0, 0, 0, 0}, 2, nil, []int32{0, 1}},
		{"k = E", []float32{-2, 4, 0}, 3, nil, []int32{1, 2, 0}},
		{"given", []float32{0.5, 2, -1, 1}, 2, []int32{2, 0}, []int32{2, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			experts, weights := make([]int32, tc.k), make([]float32, tc.k)
			Route(experts, weights, tc.logits, tc.given)
			if !slices.Equal(experts, tc.experts) {
				t.Fatalf("experts %v, want %v", experts, tc.experts)
			}
			// Weights: softmax over the chosen experts' logits.
			want := make([]float64, tc.k)
			sum := 0.0
			for j, e := range tc.experts {
				want[j] = math.Exp(float64(tc.logits[e]))
				sum += want[j]
			}
			for j := range want {
				want[j] /= sum
			}
			closeRows(t, "weights", weights, want, 1e-6)
		})
	}
}

// TestRoutes checks what the cache records: one entry per position of
// layers·k experts, the reference's top k, kept by Clone and dropped by a
// rewind.
func TestRoutes(t *testing.T) {
	m := toyModel(t, toyConfig("mixtral"), 31)
	c := m.Config
	toks := tokensFor(10, c.VocabSize, 9)
	cache := m.NewKVCache()
	if _, err := m.Forward(cache, toks, 0); err != nil {
		t.Fatal(err)
	}
	routes := cache.Routes(0, 10)
	_, want := referenceForwardMoE(m, toks, nil)
	if len(routes) != 10 || len(routes[0]) != c.NumHiddenLayers*c.NumExpertsPerTok {
		t.Fatalf("routes are %d × %d, want 10 × %d", len(routes), len(routes[0]), c.NumHiddenLayers*c.NumExpertsPerTok)
	}
	if !reflect.DeepEqual(routes, want) {
		t.Fatalf("routes %v, want the router's top k %v", routes, want)
	}
	used := map[int32]bool{}
	for _, r := range routes {
		for _, e := range r {
			used[e] = true
		}
	}
	if len(used) < 3 {
		t.Errorf("the toy model routes every token to experts %v: too few to tell routing apart", used)
	}
	if got := cache.Routes(3, 5); !reflect.DeepEqual(got, routes[3:5]) {
		t.Errorf("Routes(3, 5) = %v, want %v", got, routes[3:5])
	}
	if got := cache.Routes(4, 4); len(got) != 0 {
		t.Errorf("Routes(4, 4) = %v, want none", got)
	}
	routes[0][0] = -7 // the caller's copy
	if cache.Routes(0, 1)[0][0] == -7 {
		t.Error("Routes returned the cache's own storage")
	}
	routes[0][0] = want[0][0]

	clone := cache.Clone()
	if !reflect.DeepEqual(clone.Routes(0, 10), want) {
		t.Error("Clone lost the routes")
	}

	// Rewind to 4 with another token: positions 0-3 keep their routes,
	// position 4 gets the new token's, and nothing past 5 is left.
	other := append(slices.Clone(toks[:4]), (toks[4]+1)%int32(c.VocabSize))
	if _, err := m.Forward(cache, other[4:], 4); err != nil {
		t.Fatal(err)
	}
	_, wantOther := referenceForwardMoE(m, other, nil)
	if got := cache.Routes(0, 5); !reflect.DeepEqual(got, wantOther) {
		t.Errorf("after the rewind, routes %v, want %v", got, wantOther)
	}
	if len(cache.routes) != 5*cache.routeLen {
		t.Errorf("after the rewind the cache holds %d route values, want %d", len(cache.routes), 5*cache.routeLen)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Routes(0, 6) of a 5-position cache did not panic")
			}
		}()
		cache.Routes(0, 6)
	}()
	if !reflect.DeepEqual(clone.Routes(0, 10), want) {
		t.Error("rewinding the original changed its clone's routes")
	}

	dense := toyModel(t, toyConfig("llama"), 1)
	dc := dense.NewKVCache()
	if _, err := dense.Forward(dc, toks[:3], 0); err != nil {
		t.Fatal(err)
	}
	for _, r := range dc.Routes(0, 3) {
		if len(r) != 0 {
			t.Errorf("a dense model recorded routes %v", r)
		}
	}
}

func TestReplay(t *testing.T) {
	m := toyModel(t, toyConfig("mixtral"), 37)
	c := m.Config
	L, k, E, V := c.NumHiddenLayers, c.NumExpertsPerTok, c.NumLocalExperts, c.VocabSize
	toks := tokensFor(8, V, 4)
	cache := m.NewKVCache()
	base, err := m.Forward(cache, toks, 0)
	if err != nil {
		t.Fatal(err)
	}
	recorded := cache.Routes(0, len(toks))

	run := func(t *testing.T, replay [][]int32) ([]float32, [][]int32) {
		t.Helper()
		cache := m.NewKVCache()
		got, err := m.ForwardBatch([]Seq{{Cache: cache, Tokens: toks, Replay: replay}})
		if err != nil {
			t.Fatal(err)
		}
		return got, cache.Routes(0, len(toks))
	}

	t.Run("recorded", func(t *testing.T) {
		got, routes := run(t, recorded)
		if !bitsEqual(got, base) {
			t.Error("replaying the recorded routes changed the logits")
		}
		if !reflect.DeepEqual(routes, recorded) {
			t.Errorf("recorded %v while replaying %v", routes, recorded)
		}
	})

	t.Run("decode", func(t *testing.T) {
		// Replay token by token from a prefill, as a trainer replays what
		// a server decoded: the same logits.
		cache := m.NewKVCache()
		if _, err := m.ForwardBatch([]Seq{{Cache: cache, Tokens: toks[:5], Replay: recorded[:5]}}); err != nil {
			t.Fatal(err)
		}
		for i := 5; i < len(toks); i++ {
			got, err := m.ForwardBatch([]Seq{{Cache: cache, Tokens: toks[i : i+1], Pos: i, Replay: recorded[i : i+1]}})
			if err != nil {
				t.Fatal(err)
			}
			closeRows(t, "decode", got, f64(base[i*V:(i+1)*V]), 1e-4)
		}
	})

	t.Run("other routes", func(t *testing.T) {
		// Every token of every layer moves to the experts after its own,
		// except token 2, which routes normally.
		replay := make([][]int32, len(toks))
		for i, r := range recorded {
			if i == 2 {
				continue
			}
			replay[i] = make([]int32, len(r))
			for j, e := range r {
				replay[i][j] = (e + int32(k)) % int32(E)
				if slices.Contains(r[j/k*k:j/k*k+k], replay[i][j]) {
					replay[i][j] = (e + 1) % int32(E)
				}
			}
		}
		if err := m.checkReplay(Seq{Tokens: toks, Replay: replay}); err != nil {
			t.Fatalf("the test built an invalid replay: %v", err)
		}
		got, routes := run(t, replay)
		wantLogits, wantRoutes := referenceForwardMoE(m, toks, replay)
		for i := range toks {
			closeRows(t, "replayed logits", got[i*V:(i+1)*V], wantLogits[i], 1e-4)
		}
		if !reflect.DeepEqual(routes, wantRoutes) {
			t.Errorf("recorded %v, want %v", routes, wantRoutes)
		}
		if slices.Equal(got[:V], base[:V]) {
			t.Error("other routes left the first token's logits unchanged")
		}
	})

	t.Run("refused", func(t *testing.T) {
		good := recorded[0]
		with := func(edit func(r []int32)) []int32 {
			r := slices.Clone(good)
			edit(r)
			return r
		}
		for _, tc := range []struct {
			name   string
			replay [][]int32
			want   string
		}{
			{"entries", recorded[:3], "replay: 3 route entries for 8 tokens"},
			{"length", [][]int32{nil, good[:k], nil, nil, nil, nil, nil, nil}, "replay: route of position 1: 2 experts, want 4 (2 layers × num_experts_per_tok 2)"},
			{"range", [][]int32{with(func(r []int32) { r[k] = int32(E) }), nil, nil, nil, nil, nil, nil, nil}, "replay: route of position 0, layer 1: expert 4 outside 0..3"},
			{"negative", [][]int32{with(func(r []int32) { r[0] = -1 }), nil, nil, nil, nil, nil, nil, nil}, "layer 0: expert -1 outside"},
			{"duplicate", [][]int32{nil, nil, nil, with(func(r []int32) { r[L*k-1] = r[L*k-2] }), nil, nil, nil, nil},
				fmt.Sprintf("replay: route of position 3, layer 1: expert %d given twice", good[L*k-2])},
		} {
			t.Run(tc.name, func(t *testing.T) {
				cache := m.NewKVCache()
				_, err := m.ForwardBatch([]Seq{{Cache: cache, Tokens: toks, Replay: tc.replay}})
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("err = %v, want %q", err, tc.want)
				}
				if cache.Len() != 0 {
					t.Error("a refused replay changed the cache")
				}
			})
		}
	})

	t.Run("dense", func(t *testing.T) {
		dense := toyModel(t, toyConfig("llama"), 1)
		_, err := dense.ForwardBatch([]Seq{{Cache: dense.NewKVCache(), Tokens: toks[:1], Replay: [][]int32{nil}}})
		if err == nil || !strings.Contains(err.Error(), `model_type "llama" has no experts`) {
			t.Errorf("err = %v", err)
		}
	})
}

func TestParamCountMoE(t *testing.T) {
	c := toyConfig("mixtral")
	H, I, E, L := c.HiddenSize, c.IntermediateSize, c.NumLocalExperts, c.NumHiddenLayers
	attn := H*c.NumAttentionHeads*c.HeadDim*2 + H*c.NumKeyValueHeads*c.HeadDim*2
	perLayer := attn + 2*H + E*H + E*3*I*H
	want := int64(2*c.VocabSize*H + H + L*perLayer)
	if got := c.ParamCount(); got != want {
		t.Errorf("ParamCount = %d, want %d", got, want)
	}
	m := toyModel(t, c, 1)
	var n int64
	for _, p := range m.params() {
		n += int64(len(*p.data))
	}
	if n != want {
		t.Errorf("Init allocated %d parameters, want %d", n, want)
	}
}

// TestExpertsInParallel runs a layer wide enough that its experts run side
// by side (see parallelExpertFlops) and checks the logits against the same
// model run on one thread, which takes the serial path: they must agree
// bit for bit, since gemm sums in the same order whatever the threads.
func TestExpertsInParallel(t *testing.T) {
	c := toyConfig("mixtral")
	c.HiddenSize, c.IntermediateSize, c.HeadDim, c.NumLocalExperts, c.NumHiddenLayers = 64, 512, 16, 8, 1
	toks := tokensFor(16, c.VocabSize, 12)
	if flops := 6 * len(toks) * c.NumExpertsPerTok * c.IntermediateSize * c.HiddenSize; flops < parallelExpertFlops {
		t.Fatalf("%d flops do not reach the parallel path", flops)
	}
	m := toyModel(t, c, 41)
	run := func(threads int) ([]float32, [][]int32) {
		mt := *m
		mt.Compute.Threads = threads
		cache := mt.NewKVCache()
		out, err := mt.Forward(cache, toks, 0)
		if err != nil {
			t.Fatal(err)
		}
		return out, cache.Routes(0, len(toks))
	}
	serial, routes := run(1)
	parallel, proutes := run(4)
	if !bitsEqual(serial, parallel) || !reflect.DeepEqual(routes, proutes) {
		t.Error("running the experts in parallel changed the logits or the routes")
	}
	want := referenceForward(m, toks)
	V := c.VocabSize
	for i := range toks {
		closeRows(t, "logits", parallel[i*V:(i+1)*V], want[i], 1e-4)
	}
}
