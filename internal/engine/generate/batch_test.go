package generate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/verisim/verisim/internal/engine/model"
)

// runBatcher starts b's Run for the test and stops it at cleanup.
func runBatcher(t *testing.T, opts BatcherOptions) *Batcher {
	t.Helper()
	b := NewBatcher(opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return b
}

// TestBatcherMatchesGenerate runs several requests, some with several
// choices, concurrently through a Batcher with a small MaxBatch (so
// sequences also take turns) and checks that every choice's tokens,
// logprobs and text equal Generate's for the same params, and that steps
// really decoded several sequences at once. With a prefill chunk of 3
// tokens, every prompt is prefilled over several steps that also decode
// other requests' sequences.
func TestBatcherMatchesGenerate(t *testing.T) {
	for _, chunk := range []int{0, 3} {
		t.Run(fmt.Sprintf("prefill_chunk=%d", chunk), func(t *testing.T) { testBatcherMatchesGenerate(t, chunk) })
	}
}

func testBatcherMatchesGenerate(t *testing.T, prefillChunk int) {
	m, tok := testModel(t, 256), testTokenizer(t)
	var mu sync.Mutex
	maxBatch := 0
	b := runBatcher(t, BatcherOptions{MaxBatch: 4, PrefillChunk: prefillChunk, Observe: func(batch, active int) {
		mu.Lock()
		maxBatch = max(maxBatch, batch)
		mu.Unlock()
		if batch > 4 || active < batch {
			t.Errorf("Observe(%d, %d): batch above MaxBatch or above active", batch, active)
		}
	}})
	prompts := [][]int32{testPrompt(t), tok.Encode("func main() {"), tok.Encode("the quick brown")}
	type req struct {
		prompt []int32
		params []Params
	}
	var reqs []req
	for i := range 6 {
		p := Params{Temperature: 0.9, TopK: 40, Seed: seed(uint64(i)), MaxTokens: 12 + 3*i, Logprobs: true}
		var ps []Params
		for c := range 1 + i%3 {
			pc := p
			pc.Seed = seed(uint64(100*i + c))
			ps = append(ps, pc)
		}
		if i == 4 {
			ps[0] = Params{MaxTokens: 20, Logprobs: true} // greedy among sampled
		}
		reqs = append(reqs, req{prompts[i%len(prompts)], ps})
	}
	got := make([][]Result, len(reqs))
	emitted := make([][][]int32, len(reqs))
	var wg sync.WaitGroup
	for i, r := range reqs {
		emitted[i] = make([][]int32, len(r.params))
		wg.Go(func() {
			res, err := b.Generate(t.Context(), m, tok, r.prompt, r.params, func(c int, tk Token) error {
				emitted[i][c] = append(emitted[i][c], tk.ID)
				return nil
			})
			if err != nil {
				t.Errorf("request %d: %v", i, err)
			}
			got[i] = res
		})
	}
	wg.Wait()
	for i, r := range reqs {
		for c, p := range r.params {
			want, err := Generate(t.Context(), m, tok, r.prompt, p, nil)
			if err != nil {
				t.Fatal(err)
			}
			g := got[i][c]
			name := fmt.Sprintf("request %d choice %d", i, c)
			if !slices.Equal(g.Tokens, want.Tokens) || g.Text != want.Text || g.FinishReason != want.FinishReason {
				t.Errorf("%s: batched %v %q %s, alone %v %q %s", name, g.Tokens, g.Text, g.FinishReason, want.Tokens, want.Text, want.FinishReason)
			}
			if !slices.Equal(emitted[i][c], g.Tokens) {
				t.Errorf("%s: emitted %v, result %v", name, emitted[i][c], g.Tokens)
			}
			if len(g.Logprobs) != len(want.Logprobs) {
				t.Fatalf("%s: %d logprobs, want %d", name, len(g.Logprobs), len(want.Logprobs))
			}
			for k := range g.Logprobs {
				if d := g.Logprobs[k] - want.Logprobs[k]; d > 1e-4 || d < -1e-4 {
					t.Errorf("%s: logprob %d = %g, alone %g", name, k, g.Logprobs[k], want.Logprobs[k])
				}
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if maxBatch < 2 {
		t.Errorf("largest decode step had %d sequences; concurrent requests were not batched", maxBatch)
	}
}

func TestBatcherStops(t *testing.T) {
	m, tok := testModel(t, 256), testTokenizer(t)
	prompt := testPrompt(t)
	many := []Params{{Temperature: 1, Seed: seed(1)}, {Temperature: 1, Seed: seed(2)}}

	t.Run("emit error", func(t *testing.T) {
		b := runBatcher(t, BatcherOptions{})
		boom := errors.New("client went away")
		res, err := b.Generate(t.Context(), m, tok, prompt, many, func(c int, tk Token) error {
			if c == 1 {
				return boom
			}
			return nil
		})
		if !errors.Is(err, boom) {
			t.Fatalf("err = %v, want %v", err, boom)
		}
		if len(res) != 2 || len(res[1].Tokens) == 0 {
			t.Errorf("results %+v: want what was generated", res)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		b := runBatcher(t, BatcherOptions{})
		ctx, cancel := context.WithCancel(t.Context())
		n := 0
		_, err := b.Generate(ctx, m, tok, prompt, many, func(int, Token) error {
			if n++; n == 5 {
				cancel()
			}
			return nil
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	})
	t.Run("run stopped", func(t *testing.T) {
		// Without a tokenizer only the context's end stops the
		// sequence, thousands of steps away: it is in flight when Run
		// returns.
		long := testModel(t, 4096)
		b := NewBatcher(BatcherOptions{})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- b.Run(ctx) }()
		started := make(chan struct{})
		var once sync.Once
		errc := make(chan error, 1)
		go func() {
			_, err := b.Generate(t.Context(), long, nil, prompt, many[:1], func(int, Token) error {
				once.Do(func() { close(started) })
				return nil
			})
			errc <- err
		}()
		<-started
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-errc:
			if !errors.Is(err, ErrClosed) {
				t.Errorf("in-flight generation: err = %v, want ErrClosed", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("an in-flight generation did not end when Run returned")
		}
		if _, err := b.Generate(t.Context(), m, tok, prompt, many[:1], nil); !errors.Is(err, ErrClosed) {
			t.Errorf("after Run: err = %v, want ErrClosed", err)
		}
	})
	t.Run("bad params", func(t *testing.T) {
		b := runBatcher(t, BatcherOptions{})
		if _, err := b.Generate(t.Context(), m, tok, prompt, nil, nil); !errors.Is(err, ErrParams) {
			t.Errorf("no choices: err = %v", err)
		}
		if _, err := b.Generate(t.Context(), m, tok, prompt, []Params{{}, {TopK: -1}}, nil); !errors.Is(err, ErrParams) {
			t.Errorf("bad second choice: err = %v", err)
		}
		full := testModel(t, len(prompt))
		res, err := b.Generate(t.Context(), full, tok, prompt, []Params{{}, {}}, nil)
		if err != nil || len(res) != 2 || res[1].FinishReason != FinishLength || len(res[1].Tokens) != 0 {
			t.Errorf("prompt filling the context = %+v, %v; want two empty choices cut by length", res, err)
		}
	})
}

// testMoEModel is a 2-layer Mixtral (4 experts, top 2) over the toy
// tokenizer, its weights scaled up like testModel's.
func testMoEModel(t testing.TB) *model.Model {
	t.Helper()
	cfg, err := model.ConfigFor("moe", "tiny", testTokenizer(t).VocabSize())
	if err != nil {
		t.Fatal(err)
	}
	cfg.HiddenSize, cfg.IntermediateSize, cfg.NumHiddenLayers = 32, 32, 2
	cfg.NumAttentionHeads, cfg.NumKeyValueHeads, cfg.HeadDim = 4, 2, 8
	cfg.NumLocalExperts, cfg.NumExpertsPerTok = 4, 2
	cfg.MaxPositionEmbeddings = 256
	m, err := model.Init(cfg, 5)
	if err != nil {
		t.Fatal(err)
	}
	scale := func(w []float32, f float32) {
		for i := range w {
			w[i] *= f
		}
	}
	scale(m.Embed, 50)
	for _, l := range m.Layers {
		for _, w := range [][]float32{l.Q, l.K, l.V, l.O, l.Router} {
			scale(w, 10)
		}
		for _, e := range l.Experts {
			for _, w := range [][]float32{e.Gate, e.Up, e.Down} {
				scale(w, 10)
			}
		}
	}
	return m
}

// TestRoutesRecorded checks the routes a generation reports for a
// mixture-of-experts model, alone and batched: one entry per prompt token
// and per completion token (the last empty), and replaying them over the
// whole sequence reproduces the sampled tokens' logprobs exactly.
func TestRoutesRecorded(t *testing.T) {
	m, tok := testMoEModel(t), testTokenizer(t)
	prompt := testPrompt(t)
	p := Params{Temperature: 1, Seed: seed(4), MaxTokens: 10, Logprobs: true}
	alone, err := Generate(t.Context(), m, tok, prompt, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := runBatcher(t, BatcherOptions{})
	batched, err := b.Generate(t.Context(), m, tok, prompt, []Params{p, p}, nil)
	if err != nil {
		t.Fatal(err)
	}
	k := m.Config.NumHiddenLayers * m.Config.NumExpertsPerTok
	for name, r := range map[string]Result{"alone": alone, "batched 0": batched[0], "batched 1": batched[1]} {
		if len(r.PromptRoutes) != len(prompt) || len(r.Routes) != len(r.Tokens) {
			t.Fatalf("%s: %d prompt routes for %d tokens, %d routes for %d tokens", name, len(r.PromptRoutes), len(prompt), len(r.Routes), len(r.Tokens))
		}
		for i, e := range append(slices.Clone(r.PromptRoutes), r.Routes[:len(r.Routes)-1]...) {
			if len(e) != k {
				t.Fatalf("%s: route %d has %d experts, want %d", name, i, len(e), k)
			}
		}
		if last := r.Routes[len(r.Routes)-1]; len(last) != 0 {
			t.Errorf("%s: last token's route %v, want empty", name, last)
		}
		seq := append(slices.Clone(prompt), r.Tokens...)
		replay := append(slices.Clone(r.PromptRoutes), r.Routes...)
		replay[len(replay)-1] = nil
		logits, err := m.ForwardBatch([]model.Seq{{Cache: m.NewKVCache(), Tokens: seq, Pos: 0, Replay: replay}})
		if err != nil {
			t.Fatal(err)
		}
		V := m.Config.VocabSize
		for i, id := range r.Tokens {
			row := len(prompt) + i - 1
			lp := model.LogSoftmax(logits[row*V : (row+1)*V])[id]
			if d := lp - r.Logprobs[i]; d > 1e-5 || d < -1e-5 {
				t.Errorf("%s: token %d logprob %g, replayed scoring pass %g", name, i, r.Logprobs[i], lp)
			}
		}
	}
	if !slices.Equal(alone.Tokens, batched[0].Tokens) {
		t.Errorf("batched choice 0 %v, alone %v", batched[0].Tokens, alone.Tokens)
	}
}
