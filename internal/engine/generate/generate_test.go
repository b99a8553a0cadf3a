package generate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/verisim/verisim/internal/engine/model"
	"github.com/verisim/verisim/internal/engine/tokenizer"
)

func TestGreedyMatchesFullForwardArgmax(t *testing.T) {
	m, prompt := testModel(t, 64), testPrompt(t)
	res, err := Generate(t.Context(), m, nil, prompt, Params{MaxTokens: 12}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tokens) != 12 || res.FinishReason != FinishLength {
		t.Fatalf("got %d tokens, finish %q; want 12, length", len(res.Tokens), res.FinishReason)
	}
	seq := slices.Clone(prompt)
	for i, got := range res.Tokens {
		rows := fullLogits(t, m, seq)
		if want := argmax(rows[len(rows)-1]); got != want {
			t.Fatalf("token %d = %d, full-forward argmax %d", i, got, want)
		}
		seq = append(seq, got)
	}
	if distinct := len(slices.Compact(slices.Sorted(slices.Values(res.Tokens)))); distinct < 2 {
		t.Errorf("greedy output is one token repeated (%v): the test model is too flat to test anything", res.Tokens)
	}
}

func TestSeededSamplingReproducible(t *testing.T) {
	m, prompt := testModel(t, 64), testPrompt(t)
	run := func(s uint64) []int32 {
		res, err := Generate(t.Context(), m, nil, prompt, Params{Temperature: 1.5, Seed: seed(s), MaxTokens: 16}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return res.Tokens
	}
	a, b, c := run(1), run(1), run(2)
	if !slices.Equal(a, b) {
		t.Errorf("seed 1 gave %v then %v", a, b)
	}
	if slices.Equal(a, c) {
		t.Errorf("seeds 1 and 2 both gave %v", a)
	}
}

func TestTruncatedSamplingEqualsGreedy(t *testing.T) {
	m, prompt := testModel(t, 64), testPrompt(t)
	greedy, err := Generate(t.Context(), m, nil, prompt, Params{MaxTokens: 10}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]Params{
		"top_k=1":    {Temperature: 2, TopK: 1},
		"top_p=1e-9": {Temperature: 2, TopP: 1e-9},
	} {
		t.Run(name, func(t *testing.T) {
			for s := range uint64(3) {
				p.Seed, p.MaxTokens = seed(s), 10
				res, err := Generate(t.Context(), m, nil, prompt, p, nil)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(res.Tokens, greedy.Tokens) {
					t.Fatalf("seed %d: %v, greedy %v", s, res.Tokens, greedy.Tokens)
				}
			}
		})
	}
}

func TestLogprobsMatchFullForward(t *testing.T) {
	m, prompt := testModel(t, 64), testPrompt(t)
	var emitted []Token
	p := Params{Temperature: 1, TopP: 0.9, TopK: 50, Seed: seed(3), MaxTokens: 16, Logprobs: true, TopLogprobs: 5}
	res, err := Generate(t.Context(), m, nil, prompt, p, func(tk Token) error {
		emitted = append(emitted, tk)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Logprobs) != len(res.Tokens) || len(emitted) != len(res.Tokens) {
		t.Fatalf("%d tokens, %d logprobs, %d emitted", len(res.Tokens), len(res.Logprobs), len(emitted))
	}
	rows := fullLogits(t, m, append(slices.Clone(prompt), res.Tokens...))
	var maxDiff float64
	for i, id := range res.Tokens {
		lp := model.LogSoftmax(rows[len(prompt)-1+i])
		maxDiff = max(maxDiff, math.Abs(float64(res.Logprobs[i]-lp[id])))
		if emitted[i].ID != id || emitted[i].Logprob != res.Logprobs[i] {
			t.Fatalf("emitted %+v, result has %d %g", emitted[i], id, res.Logprobs[i])
		}
		if len(emitted[i].Top) != 5 {
			t.Fatalf("token %d: %d alternatives, want 5", i, len(emitted[i].Top))
		}
		order := slices.Clone(lp)
		slices.SortFunc(order, func(a, b float32) int { return -cmpF(a, b) })
		for j, a := range emitted[i].Top {
			maxDiff = max(maxDiff, math.Abs(float64(a.Logprob-lp[a.ID])), math.Abs(float64(a.Logprob-order[j])))
		}
	}
	t.Logf("max |logprob - LogSoftmax(full forward)| over %d tokens and their top-5: %.3g", len(res.Tokens), maxDiff)
	if maxDiff >= 1e-4 {
		t.Fatalf("logprobs differ from a full forward by %g", maxDiff)
	}
}

func cmpF(a, b float32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func TestStopTokens(t *testing.T) {
	m, prompt := testModel(t, 64), testPrompt(t)
	ref, err := Generate(t.Context(), m, nil, prompt, Params{MaxTokens: 12}, nil)
	if err != nil {
		t.Fatal(err)
	}
	stop := ref.Tokens[5]
	want := ref.Tokens[:slices.Index(ref.Tokens, stop)+1]
	res, err := Generate(t.Context(), m, nil, prompt, Params{MaxTokens: 12, StopTokens: []int32{stop}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Tokens, want) || res.FinishReason != FinishStop {
		t.Fatalf("got %v (%s), want %v (stop)", res.Tokens, res.FinishReason, want)
	}
}

// TestDefaultStopToken makes <|im_end|> the model's first choice and checks
// that the tokenizer's end-of-turn token stops generation unasked.
func TestDefaultStopToken(t *testing.T) {
	tok, m, prompt := testTokenizer(t), testModel(t, 64), testPrompt(t)
	rows := fullLogits(t, m, prompt)
	first := argmax(rows[len(rows)-1])
	imEnd, ok := tok.Special(tokenizer.ImEnd)
	if !ok {
		t.Fatal("toy tokenizer has no <|im_end|>")
	}
	h := m.Config.HiddenSize
	forced := *m
	forced.LMHead = slices.Clone(m.LMHead)
	for i := range h {
		forced.LMHead[int(imEnd)*h+i] = 3 * m.LMHead[int(first)*h+i]
	}
	res, err := Generate(t.Context(), &forced, tok, prompt, Params{MaxTokens: 8}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Tokens, []int32{imEnd}) || res.FinishReason != FinishStop || res.Text != "" {
		t.Fatalf("got %v %q (%s), want [%d] \"\" (stop)", res.Tokens, res.Text, res.FinishReason, imEnd)
	}
	res, err = Generate(t.Context(), &forced, nil, prompt, Params{MaxTokens: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.FinishReason != FinishLength {
		t.Fatalf("without a tokenizer <|im_end|> still stopped generation: %v", res.Tokens)
	}
}

func TestStopStrings(t *testing.T) {
	tok, m, prompt := testTokenizer(t), testModel(t, 64), testPrompt(t)
	ref, err := Generate(t.Context(), m, nil, prompt, Params{MaxTokens: 12}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The text of tokens 4 and 5, stopping at whichever token first
	// completes it in the decoded text.
	piece, err := tok.DecodeString(ref.Tokens[4:6])
	if err != nil {
		t.Fatal(err)
	}
	var text string
	var wantTokens []int32
	for _, id := range ref.Tokens {
		s, _ := tok.DecodeString([]int32{id})
		text += s
		wantTokens = append(wantTokens, id)
		if strings.Contains(text, piece) {
			break
		}
	}
	wantText := text[:strings.Index(text, piece)]
	for _, stop := range [][]string{{piece}, {"never appears", piece}} {
		res, err := Generate(t.Context(), m, tok, prompt, Params{MaxTokens: 12, Stop: stop}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.FinishReason != FinishStop || res.Text != wantText || !slices.Equal(res.Tokens, wantTokens) {
			t.Fatalf("stop %q: got %q %v (%s), want %q %v (stop)", stop, res.Text, res.Tokens, res.FinishReason, wantText, wantTokens)
		}
	}
	if _, err := Generate(t.Context(), m, nil, prompt, Params{Stop: []string{"x"}}, nil); !errors.Is(err, ErrParams) {
		t.Fatalf("stop strings without a tokenizer: err %v, want ErrParams", err)
	}
}

func TestMaxTokensAndContextFull(t *testing.T) {
	m, prompt := testModel(t, 32), testPrompt(t)
	for _, tc := range []struct {
		name      string
		maxTokens int
		want      int
	}{
		{"max_tokens", 3, 3},
		{"context", 0, 32 - len(prompt)},
		{"context before max_tokens", 100, 32 - len(prompt)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Generate(t.Context(), m, nil, prompt, Params{Temperature: 1, Seed: seed(1), MaxTokens: tc.maxTokens}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Tokens) != tc.want || res.FinishReason != FinishLength || res.PromptTokens != len(prompt) {
				t.Fatalf("%d tokens (%s), prompt %d; want %d (length), prompt %d", len(res.Tokens), res.FinishReason, res.PromptTokens, tc.want, len(prompt))
			}
		})
	}
}

func TestContextError(t *testing.T) {
	m := testModel(t, 16)
	_, err := Generate(t.Context(), m, nil, make([]int32, 17), Params{}, nil)
	var ce *ContextError
	if !errors.As(err, &ce) || ce.Prompt != 17 || ce.Max != 16 {
		t.Fatalf("err = %v, want *ContextError{17, 16}", err)
	}
	res, err := Generate(t.Context(), m, nil, make([]int32, 16), Params{}, nil)
	if err != nil || len(res.Tokens) != 0 || res.FinishReason != FinishLength {
		t.Fatalf("prompt filling the context: %v %+v, want no tokens, length", err, res)
	}
}

func TestCancelAndEmitError(t *testing.T) {
	tok, m, prompt := testTokenizer(t), testModel(t, 64), testPrompt(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	n := 0
	res, err := Generate(ctx, m, tok, prompt, Params{MaxTokens: 20}, func(Token) error {
		if n++; n == 3 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) || len(res.Tokens) != 3 {
		t.Fatalf("cancel after 3 tokens: err %v, %d tokens", err, len(res.Tokens))
	}
	if want, _ := tok.DecodeString(res.Tokens); res.Text != want {
		t.Fatalf("text after cancel %q, want %q", res.Text, want)
	}
	boom := errors.New("client went away")
	res, err = Generate(t.Context(), m, nil, prompt, Params{MaxTokens: 20}, func(Token) error { return boom })
	if !errors.Is(err, boom) || len(res.Tokens) != 1 {
		t.Fatalf("emit error: err %v, %d tokens", err, len(res.Tokens))
	}
}

func TestInvalidParams(t *testing.T) {
	for _, p := range []Params{
		{Temperature: -1}, {TopP: 1.5}, {TopK: -1}, {MaxTokens: -1}, {TopLogprobs: 21}, {Stop: []string{""}},
	} {
		if err := p.Validate(); !errors.Is(err, ErrParams) {
			t.Errorf("%+v: err %v, want ErrParams", p, err)
		}
	}
}

func TestSamplerDistribution(t *testing.T) {
	// Logits of probabilities 0.5, 0.3, 0.2, ~0: frequencies of 20000
	// draws must match, and top_k=2 must renormalise over the first two.
	logits := []float32{float32(math.Log(0.5)), float32(math.Log(0.3)), float32(math.Log(0.2)), -100}
	for _, tc := range []struct {
		p    Params
		want []float64
	}{
		{Params{Temperature: 1}, []float64{0.5, 0.3, 0.2, 0}},
		{Params{Temperature: 1, TopK: 2}, []float64{0.625, 0.375, 0, 0}},
		{Params{Temperature: 1, TopP: 0.75}, []float64{0.625, 0.375, 0, 0}},
	} {
		tc.p.Seed = seed(9)
		s, err := NewSampler(tc.p)
		if err != nil {
			t.Fatal(err)
		}
		counts := make([]float64, len(logits))
		const n = 20000
		for range n {
			counts[s.Sample(logits).ID]++
		}
		for i := range counts {
			if got := counts[i] / n; math.Abs(got-tc.want[i]) > 0.02 {
				t.Errorf("%+v: token %d drawn %.3f of the time, want %.3f", tc.p, i, got, tc.want[i])
			}
		}
	}
}

// TestPaddedVocabulary samples from a model whose vocabulary is padded
// past the tokenizer's (as Qwen2's is), with a flat distribution so that
// padding ids come up: they stay in Tokens with their logprobs and add no
// text, instead of failing the generation.
func TestPaddedVocabulary(t *testing.T) {
	tok := testTokenizer(t)
	cfg, err := model.ConfigFor("qwen2", "tiny", tok.VocabSize()+100)
	if err != nil {
		t.Fatal(err)
	}
	cfg.HiddenSize, cfg.IntermediateSize, cfg.NumHiddenLayers = 32, 64, 1
	cfg.NumAttentionHeads, cfg.NumKeyValueHeads, cfg.HeadDim = 4, 2, 8
	cfg.MaxPositionEmbeddings, cfg.TieWordEmbeddings = 128, false
	m, err := model.Init(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	clear(m.LMHead) // every logit 0: uniform over the padded vocabulary
	res, err := Generate(t.Context(), m, tok, testPrompt(t), Params{Temperature: 1, Seed: seed(3), MaxTokens: 40}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var pad []int32
	var known []int32
	for _, id := range res.Tokens {
		if int(id) >= tok.VocabSize() {
			pad = append(pad, id)
		} else {
			known = append(known, id)
		}
	}
	if len(pad) == 0 {
		t.Fatalf("no padding id among %v; pick another seed", res.Tokens)
	}
	if res.FinishReason == FinishStop {
		known = known[:len(known)-1] // the stop token has no text in Text
	}
	want, err := tok.Decode(known)
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != string(want) {
		t.Errorf("text %q, want the known tokens' %q", res.Text, want)
	}
}

// TestSortByLogit checks the radix sort against a comparison sort: highest
// logit first, ties (including -0 and +0) by lower id.
func TestSortByLogit(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	var order []int32
	var keys []uint32
	var tmp []int32
	for _, n := range []int{1, 2, 7, 300, 8192} {
		logits := make([]float32, n)
		for i := range logits {
			switch rng.IntN(6) {
			case 0:
				logits[i] = 0
			case 1:
				logits[i] = float32(math.Copysign(0, -1))
			case 2:
				logits[i] = float32(rng.IntN(5)) // ties
			default:
				logits[i] = float32(rng.NormFloat64() * 10)
			}
		}
		order, keys, tmp = sortByLogit(logits, order, keys, tmp)
		want := make([]int32, n)
		for i := range want {
			want[i] = int32(i)
		}
		slices.SortStableFunc(want, func(a, b int32) int {
			switch {
			case logits[a] > logits[b]:
				return -1
			case logits[a] < logits[b]:
				return 1
			}
			return 0
		})
		if !slices.Equal(order, want) {
			t.Fatalf("n=%d: radix order differs from the comparison sort", n)
		}
	}
}

func BenchmarkSample(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	logits := make([]float32, 8192)
	for i := range logits {
		logits[i] = float32(rng.NormFloat64() * 3)
	}
	s, err := NewSampler(Params{Temperature: 0.8, TopP: 0.95, Seed: seed(1)})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		s.Sample(logits)
	}
}

// TestPromptLogprobs scores a prompt with NoCompletion (only the prefill),
// and with a completion, through Generate and a Batcher that prefills 3
// tokens a step beside a decoding stream: each prompt token's logprob and
// alternatives equal the log-softmax of a separate, whole forward pass's
// rows, bit for bit.
func TestPromptLogprobs(t *testing.T) {
	m, prompt := testModel(t, 64), testPrompt(t)
	rows := fullLogits(t, m, prompt)
	check := func(t *testing.T, res Result) {
		t.Helper()
		if len(res.Prompt) != len(prompt)-1 {
			t.Fatalf("%d prompt tokens scored, want %d", len(res.Prompt), len(prompt)-1)
		}
		for i, tk := range res.Prompt {
			lp := model.LogSoftmax(rows[i])
			if tk.ID != prompt[i+1] || tk.Logprob != lp[prompt[i+1]] {
				t.Fatalf("prompt token %d: %d %g, want %d %g", i+1, tk.ID, tk.Logprob, prompt[i+1], lp[prompt[i+1]])
			}
			if len(tk.Top) != 3 || tk.Top[0].Logprob != slices.Max(lp) {
				t.Fatalf("prompt token %d: alternatives %+v", i+1, tk.Top)
			}
		}
	}
	if len(prompt) < 8 {
		t.Fatalf("prompt of %d tokens: too short to prefill in chunks", len(prompt))
	}
	b := runBatcher(t, BatcherOptions{MaxBatch: 4, PrefillChunk: 3})
	// A stream decoding throughout, so that the Batcher prefills in
	// chunks (with nothing decoding it takes a prompt whole).
	streamCtx, stopStream := context.WithCancel(t.Context())
	streaming := make(chan struct{})
	streamDone := make(chan struct{})
	go func() {
		defer close(streamDone)
		first := true
		b.Generate(streamCtx, m, nil, prompt[:2], []Params{{}}, func(int, Token) error {
			if first {
				close(streaming)
				first = false
			}
			return nil
		})
	}()
	<-streaming
	defer func() { stopStream(); <-streamDone }()
	for _, maxTokens := range []int{0, 4} {
		p := Params{Temperature: 0, MaxTokens: maxTokens, NoCompletion: maxTokens == 0, Logprobs: true, TopLogprobs: 3, PromptLogprobs: true}
		t.Run(fmt.Sprintf("max_tokens=%d", maxTokens), func(t *testing.T) {
			res, err := Generate(t.Context(), m, nil, prompt, p, nil)
			if err != nil {
				t.Fatal(err)
			}
			check(t, res)
			if len(res.Tokens) != maxTokens {
				t.Errorf("%d tokens generated, want %d", len(res.Tokens), maxTokens)
			}
			bres, err := b.Generate(t.Context(), m, nil, prompt, []Params{p, {MaxTokens: maxTokens, NoCompletion: maxTokens == 0}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			check(t, bres[0])
			if bres[1].Prompt != nil {
				t.Error("a choice that did not ask has prompt logprobs")
			}
		})
	}
}

// TestLogitBiasAndPenalties checks that logit_bias and the penalties shape
// what is sampled while the logprobs stay the model's own.
func TestLogitBiasAndPenalties(t *testing.T) {
	m, prompt := testModel(t, 64), testPrompt(t)
	rows := fullLogits(t, m, prompt)
	best := int32(slices.Index(rows[len(rows)-1], slices.Max(rows[len(rows)-1])))
	forced := (best + 7) % int32(m.Config.VocabSize)

	// +100 makes a token certain; -100 rules out the argmax.
	res, err := Generate(t.Context(), m, nil, prompt, Params{Temperature: 1, Seed: seed(1), MaxTokens: 6, LogitBias: map[int32]float32{forced: 100}, Logprobs: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	seq := slices.Clone(prompt)
	for i, id := range res.Tokens {
		if id != forced {
			t.Fatalf("token %d is %d with logit_bias +100 on %d", i, id, forced)
		}
		// The reported logprob is the raw distribution's, not the biased one's.
		raw := model.LogSoftmax(fullLogits(t, m, seq)[len(seq)-1])[id]
		if math.Abs(float64(res.Logprobs[i]-raw)) > 1e-5 {
			t.Fatalf("token %d: logprob %g, raw %g", i, res.Logprobs[i], raw)
		}
		seq = append(seq, id)
	}
	res, err = Generate(t.Context(), m, nil, prompt, Params{MaxTokens: 1, LogitBias: map[int32]float32{best: -100}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Tokens[0] == best {
		t.Errorf("greedy picked %d despite logit_bias -100", best)
	}

	// Greedy decoding of a small model repeats itself; a presence penalty
	// of 2 (with a bias that makes repeating costly) spreads the tokens.
	plain, err := Generate(t.Context(), m, nil, prompt, Params{MaxTokens: 24}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pen, err := Generate(t.Context(), m, nil, prompt, Params{MaxTokens: 24, PresencePenalty: 2, FrequencyPenalty: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	distinct := func(ids []int32) int { return len(slices.Compact(slices.Sorted(slices.Values(ids)))) }
	if distinct(pen.Tokens) <= distinct(plain.Tokens) {
		t.Errorf("penalties gave %d distinct tokens, no more than greedy decoding's %d", distinct(pen.Tokens), distinct(plain.Tokens))
	}
	t.Logf("distinct tokens in 24: greedy %d, with penalties %d", distinct(plain.Tokens), distinct(pen.Tokens))

	for _, p := range []Params{
		{PresencePenalty: 2.5}, {FrequencyPenalty: math.NaN()}, {LogitBias: map[int32]float32{3: 101}}, {LogitBias: map[int32]float32{-1: 1}},
	} {
		if _, err := Generate(t.Context(), m, nil, prompt, p, nil); !errors.Is(err, ErrParams) {
			t.Errorf("%+v: err %v, want ErrParams", p, err)
		}
	}
}
