package generate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/verisim/verisim/internal/engine/model"
	"github.com/verisim/verisim/internal/engine/tokenizer"
)

// Finish reasons, as OpenAI's API names them.
const (
	FinishStop   = "stop"
	FinishLength = "length"
)

// Result is a finished (or, with an error, interrupted) generation.
type Result struct {
	// Tokens are the completion's ids, the one that ended it included.
	Tokens []int32
	// Logprobs[i] is Tokens[i]'s logprob, when Params.Logprobs is set.
	Logprobs []float32
	// Text is the decoded completion of Tokens without the stop token's
	// text and without a matched stop string or anything after it; empty
	// when Generate ran without a tokenizer.
	Text string
	// FinishReason is FinishStop or FinishLength; empty after an error.
	FinishReason string
	// PromptTokens is len(prompt).
	PromptTokens int
	// Prompt, with Params.PromptLogprobs, scores prompt tokens 1 to
	// len(prompt)-1 (the first has nothing before it): Prompt[i-1] is
	// prompt[i] with its logprob given prompt[:i].
	Prompt []Token
	// For a mixture-of-experts model, the experts each position was
	// routed to, in model.KVCache.Routes' layout (layer·k + j):
	// PromptRoutes one entry per prompt token, Routes one per completion
	// token. The last completion token was never run through the model,
	// so its entry is empty. Nil for a dense model.
	PromptRoutes, Routes [][]int32
}

// ContextError reports a prompt that does not fit the model's context.
type ContextError struct {
	Prompt, Max int
}

func (e *ContextError) Error() string {
	return fmt.Sprintf("prompt of %d tokens exceeds the model's context of %d positions", e.Prompt, e.Max)
}

// Generate samples a completion of prompt from m. tok decodes the text that
// stop strings are matched against and names the default stop tokens
// (EndOfText and ImEnd, where it has them); it may be nil when p.Stop is
// empty, and then only p.StopTokens stop generation.
//
// emit, if not nil, is called with each token as soon as it is sampled; an
// error from it ends generation and is returned. When ctx ends, Generate
// returns what it has generated so far together with ctx's error.
//
// Generate decodes one sequence on its own; a Batcher decodes the
// sequences of concurrent requests together.
func Generate(ctx context.Context, m *model.Model, tok *tokenizer.Tokenizer, prompt []int32, p Params, emit func(Token) error) (Result, error) {
	d, err := newDecoder(m, tok, prompt, p)
	if err != nil || d.done && !p.PromptLogprobs {
		return d.result(), err
	}
	if err := ctx.Err(); err != nil {
		return d.result(), err
	}
	cache := m.NewKVCache()
	all, err := prefill(m, cache, prompt)
	if err != nil {
		return d.result(), err
	}
	d.prefilled(cache, all)
	if d.done {
		return d.result(), nil // max_tokens 0: the prompt scored
	}
	logits := all[len(all)-m.Config.VocabSize:]
	for {
		t, err := d.next(logits)
		if err != nil {
			return d.result(), err
		}
		if emit != nil {
			if err := emit(t); err != nil {
				return d.result(), err
			}
		}
		if d.done {
			return d.result(), nil
		}
		if err := ctx.Err(); err != nil {
			return d.result(), err
		}
		if logits, err = m.Forward(cache, []int32{t.ID}, d.pos()); err != nil {
			return d.result(), fmt.Errorf("decode at position %d: %w", d.pos(), err)
		}
		d.ran(cache)
	}
}

// prefill runs prompt through m into an empty cache and returns the
// logits of every position, len(prompt) rows.
func prefill(m *model.Model, cache *model.KVCache, prompt []int32) ([]float32, error) {
	logits, err := m.Forward(cache, prompt, 0)
	if err != nil {
		return nil, fmt.Errorf("prefill %d tokens: %w", len(prompt), err)
	}
	return logits, nil
}

// decoder is the state of one sequence being generated, whoever runs the
// model for it: the sampler, the stop conditions and what was generated.
type decoder struct {
	tok    *tokenizer.Tokenizer
	p      Params
	s      *Sampler
	stops  []int32
	text   stopMatcher
	budget int
	prompt int
	res    Result
	done   bool
	moe    bool
	// promptIDs is the prompt, kept to score it (Params.PromptLogprobs).
	promptIDs []int32
}

// newDecoder validates a generation of prompt with p on m. A zero budget
// (max_tokens 0 asked for, or a prompt that fills the context) gives a
// decoder that is already done.
func newDecoder(m *model.Model, tok *tokenizer.Tokenizer, prompt []int32, p Params) (*decoder, error) {
	d := &decoder{tok: tok, p: p, prompt: len(prompt), moe: m.Config.MoE()}
	if p.PromptLogprobs {
		d.promptIDs = prompt
	}
	d.res.PromptTokens = len(prompt)
	if len(prompt) == 0 {
		return d, fmt.Errorf("%w: empty prompt", ErrParams)
	}
	if len(p.Stop) > 0 && tok == nil {
		return d, fmt.Errorf("%w: stop strings need a tokenizer", ErrParams)
	}
	maxPos := m.Config.MaxPositionEmbeddings
	if len(prompt) > maxPos {
		return d, &ContextError{Prompt: len(prompt), Max: maxPos}
	}
	s, err := NewSampler(p)
	if err != nil {
		return d, err
	}
	d.s = s
	d.budget = maxPos - len(prompt)
	if p.MaxTokens > 0 {
		d.budget = min(d.budget, p.MaxTokens)
	}
	if p.NoCompletion {
		d.budget = 0
	}
	if d.budget == 0 {
		d.res.FinishReason, d.done = FinishLength, true
	}
	d.stops = stopTokens(tok, p.StopTokens)
	d.text = stopMatcher{stops: p.Stop}
	return d, nil
}

// next samples the token that follows from logits (one row) and records
// it; d.done says whether it ended the generation.
func (d *decoder) next(logits []float32) (Token, error) {
	t := d.s.Sample(logits)
	d.res.Tokens = append(d.res.Tokens, t.ID)
	if d.p.Logprobs {
		d.res.Logprobs = append(d.res.Logprobs, t.Logprob)
	}
	stopped := slices.Contains(d.stops, t.ID)
	if !stopped && d.tok != nil {
		// A model's vocabulary may be padded past the tokenizer's (as
		// Qwen2's is); an id in the padding has no text, and the token
		// stays in Tokens with its logprob.
		b, err := d.tok.Decode([]int32{t.ID})
		if err != nil && !errors.Is(err, tokenizer.ErrUnknownID) {
			return t, fmt.Errorf("decode sampled token: %w", err)
		}
		stopped = d.text.add(b)
	}
	switch {
	case stopped:
		d.res.FinishReason, d.done = FinishStop, true
	case len(d.res.Tokens) == d.budget:
		d.res.FinishReason, d.done = FinishLength, true
	}
	return t, nil
}

// pos is the position of the last sampled token, the one to run next.
func (d *decoder) pos() int { return d.prompt + len(d.res.Tokens) - 1 }

// last is the last sampled token.
func (d *decoder) last() int32 { return d.res.Tokens[len(d.res.Tokens)-1] }

// prefilled records the prompt's routes from cache, which holds just the
// prompt, and with PromptLogprobs scores the prompt from the prefill's
// logits (all, one row per prompt position).
func (d *decoder) prefilled(cache *model.KVCache, all []float32) {
	if d.moe {
		d.res.PromptRoutes = cache.Routes(0, d.prompt)
	}
	if d.p.PromptLogprobs {
		V := len(all) / d.prompt
		d.res.Prompt = make([]Token, 0, d.prompt-1)
		for i := 1; i < d.prompt; i++ {
			d.res.Prompt = append(d.res.Prompt, score(all[(i-1)*V:i*V], d.promptIDs[i], d.p))
		}
	}
}

// ran records the routes of the last sampled token, which cache has just
// run through the model.
func (d *decoder) ran(cache *model.KVCache) {
	if d.moe {
		p := d.pos()
		d.res.Routes = append(d.res.Routes, cache.Routes(p, p+1)[0])
	}
}

func (d *decoder) result() Result {
	r := d.res
	r.Text = d.text.String()
	if d.moe && len(r.Routes) < len(r.Tokens) {
		r.Routes = append(r.Routes[:len(r.Routes):len(r.Routes)], []int32{})
	}
	return r
}

// stopTokens is extra plus the tokenizer's end-of-text and end-of-turn ids.
func stopTokens(tok *tokenizer.Tokenizer, extra []int32) []int32 {
	stops := slices.Clone(extra)
	if tok == nil {
		return stops
	}
	for _, name := range []string{tokenizer.EndOfText, tokenizer.ImEnd} {
		if id, ok := tok.Special(name); ok {
			stops = append(stops, id)
		}
	}
	return stops
}

// stopMatcher accumulates decoded text and finds the earliest stop string.
type stopMatcher struct {
	stops []string
	buf   strings.Builder
	cut   int // length of the text kept; -1 until a stop string matched
	done  bool
}

// add appends b and reports whether the text now contains a stop string;
// only the region b could have completed is searched.
func (m *stopMatcher) add(b []byte) bool {
	start := m.buf.Len()
	m.buf.Write(b)
	if len(m.stops) == 0 {
		return false
	}
	s := m.buf.String()
	first := -1
	for _, stop := range m.stops {
		from := max(0, start-len(stop)+1)
		if i := strings.Index(s[from:], stop); i >= 0 && (first < 0 || from+i < first) {
			first = from + i
		}
	}
	if first < 0 {
		return false
	}
	m.cut, m.done = first, true
	return true
}

func (m *stopMatcher) String() string {
	s := m.buf.String()
	if m.done {
		return s[:m.cut]
	}
	return s
}
