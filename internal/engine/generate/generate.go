package generate

import (
	"context"
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
func Generate(ctx context.Context, m *model.Model, tok *tokenizer.Tokenizer, prompt []int32, p Params, emit func(Token) error) (res Result, err error) {
	res.PromptTokens = len(prompt)
	if len(prompt) == 0 {
		return res, fmt.Errorf("%w: empty prompt", ErrParams)
	}
	if len(p.Stop) > 0 && tok == nil {
		return res, fmt.Errorf("%w: stop strings need a tokenizer", ErrParams)
	}
	maxPos := m.Config.MaxPositionEmbeddings
	if len(prompt) > maxPos {
		return res, &ContextError{Prompt: len(prompt), Max: maxPos}
	}
	s, err := NewSampler(p)
	if err != nil {
		return res, err
	}
	budget := maxPos - len(prompt)
	if p.MaxTokens > 0 {
		budget = min(budget, p.MaxTokens)
	}
	if budget == 0 {
		res.FinishReason = FinishLength
		return res, nil
	}
	stops := stopTokens(tok, p.StopTokens)
	text := stopMatcher{stops: p.Stop}

	if err := ctx.Err(); err != nil {
		return res, err
	}
	cache := m.NewKVCache()
	logits, err := m.Forward(cache, prompt, 0)
	if err != nil {
		return res, fmt.Errorf("prefill %d tokens: %w", len(prompt), err)
	}
	vocab := m.Config.VocabSize
	logits = logits[len(logits)-vocab:]
	defer func() { res.Text = text.String() }()
	for {
		t := s.Sample(logits)
		res.Tokens = append(res.Tokens, t.ID)
		if p.Logprobs {
			res.Logprobs = append(res.Logprobs, t.Logprob)
		}
		stopped := slices.Contains(stops, t.ID)
		if !stopped && tok != nil {
			b, err := tok.Decode([]int32{t.ID})
			if err != nil {
				return res, fmt.Errorf("decode sampled token: %w", err)
			}
			stopped = text.add(b)
		}
		if emit != nil {
			if err := emit(t); err != nil {
				return res, err
			}
		}
		switch {
		case stopped:
			res.FinishReason = FinishStop
			return res, nil
		case len(res.Tokens) == budget:
			res.FinishReason = FinishLength
			return res, nil
		}
		if err := ctx.Err(); err != nil {
			return res, err
		}
		pos := len(prompt) + len(res.Tokens) - 1
		if logits, err = m.Forward(cache, []int32{t.ID}, pos); err != nil {
			return res, fmt.Errorf("decode at position %d: %w", pos, err)
		}
	}
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
