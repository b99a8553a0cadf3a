package generate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/verisim/verisim/internal/engine/model"
	"github.com/verisim/verisim/internal/engine/tokenizer"
)

// ErrClosed is returned for generations a Batcher could not finish because
// its Run returned.
var ErrClosed = errors.New("batcher stopped")

// BatcherOptions configures a Batcher.
type BatcherOptions struct {
	// MaxBatch is the most sequences one forward pass decodes; more
	// active sequences take turns. Default 32.
	MaxBatch int
	// Observe, if set, is called after every decode step with the number
	// of sequences the step decoded and the number active (decoding or
	// waiting their turn), and with (0, 0) when the last active sequence
	// has finished. It runs on Run's goroutine and must be quick.
	Observe func(batch, active int)
}

// Batcher decodes the sequences of many concurrent generations together:
// each step runs one token of every active sequence through one
// model.ForwardBatch call, so the weights stream from memory once per step
// rather than once per sequence. A request's prompt is prefilled once, on
// the caller's goroutine, and its n choices decode from copies of that
// cache. Sequences join and leave between steps (continuous batching);
// sequences on different *model.Model values (before and after a weight
// reload) are batched apart.
//
// Run must be running for Generate to make progress. A Batcher is safe
// for concurrent use by any number of Generate callers.
type Batcher struct {
	opts   BatcherOptions
	submit chan []*batchSeq
	closed chan struct{}
}

// NewBatcher returns a Batcher; start its Run.
func NewBatcher(opts BatcherOptions) *Batcher {
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 32
	}
	return &Batcher{opts: opts, submit: make(chan []*batchSeq), closed: make(chan struct{})}
}

// batchSeq is one choice of one request while the Batcher decodes it.
type batchSeq struct {
	ctx    context.Context
	m      *model.Model
	cache  *model.KVCache
	d      *decoder
	choice int
	out    *eventQueue
}

// event is what Run tells a Generate call: a sampled token of a choice,
// or (done) that the choice finished, with err if it failed.
type event struct {
	choice int
	tok    Token
	done   bool
	err    error
}

// eventQueue is an unbounded queue from Run to one Generate call, so that
// a slow consumer (a client reading a stream slowly) never stalls the
// decode loop.
type eventQueue struct {
	mu     sync.Mutex
	list   []event
	signal chan struct{}
}

func (q *eventQueue) push(e event) {
	q.mu.Lock()
	q.list = append(q.list, e)
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

func (q *eventQueue) take() []event {
	q.mu.Lock()
	defer q.mu.Unlock()
	l := q.list
	q.list = nil
	return l
}

// Run decodes submitted sequences until ctx ends; then every sequence
// still active finishes with ErrClosed, later Generate calls fail with
// ErrClosed, and Run returns nil.
func (b *Batcher) Run(ctx context.Context) error {
	var active []*batchSeq
	defer func() {
		close(b.closed)
		for _, s := range active {
			s.finish(ErrClosed)
		}
	}()
	for {
		if len(active) == 0 {
			select {
			case <-ctx.Done():
				return nil
			case ss := <-b.submit:
				active = append(active, ss...)
			}
		}
	drain:
		for {
			select {
			case ss := <-b.submit:
				active = append(active, ss...)
			default:
				break drain
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		active = b.step(active)
		if len(active) == 0 && b.opts.Observe != nil {
			b.opts.Observe(0, 0)
		}
	}
}

func (s *batchSeq) finish(err error) {
	s.out.push(event{choice: s.choice, done: true, err: err})
}

// step decodes one token of every active sequence and returns those that
// go on.
func (b *Batcher) step(active []*batchSeq) []*batchSeq {
	live := active[:0]
	for _, s := range active {
		if err := s.ctx.Err(); err != nil {
			s.finish(err)
			continue
		}
		live = append(live, s)
	}
	// Sequences of one model decode together, in the order they arrived.
	var order []*model.Model
	groups := map[*model.Model][]*batchSeq{}
	for _, s := range live {
		if _, ok := groups[s.m]; !ok {
			order = append(order, s.m)
		}
		groups[s.m] = append(groups[s.m], s)
	}
	next := live[:0]
	for _, m := range order {
		g := groups[m]
		for len(g) > 0 {
			chunk := g[:min(len(g), b.opts.MaxBatch)]
			g = g[len(chunk):]
			next = append(next, b.decode(m, chunk, len(live))...)
		}
	}
	return next
}

// decode runs one step of chunk, sequences of m, out of active sequences
// in all, and returns those that go on.
func (b *Batcher) decode(m *model.Model, chunk []*batchSeq, active int) []*batchSeq {
	seqs := make([]model.Seq, len(chunk))
	for i, s := range chunk {
		seqs[i] = model.Seq{Cache: s.cache, Tokens: []int32{s.d.last()}, Pos: s.d.pos()}
	}
	logits, err := m.ForwardBatch(seqs)
	if b.opts.Observe != nil {
		b.opts.Observe(len(chunk), active)
	}
	if err != nil {
		for _, s := range chunk {
			s.finish(fmt.Errorf("decode at position %d: %w", s.d.pos(), err))
		}
		return nil
	}
	V := m.Config.VocabSize
	var goOn []*batchSeq
	for i, s := range chunk {
		s.d.ran(s.cache)
		t, err := s.d.next(logits[i*V : (i+1)*V])
		if err != nil {
			s.finish(err)
			continue
		}
		s.out.push(event{choice: s.choice, tok: t})
		if s.d.done {
			s.finish(nil)
			continue
		}
		goOn = append(goOn, s)
	}
	return goOn
}

// Generate samples len(params) completions of prompt from m, choice i
// under params[i], as the package-level Generate would one by one, with
// the prompt prefilled once. emit, if not nil, sees each sampled token
// with its choice's index, on the caller's goroutine; an error from it
// stops every choice and is returned. When ctx ends, every choice stops
// and ctx's error is returned. The results hold what was generated either
// way.
func (b *Batcher) Generate(ctx context.Context, m *model.Model, tok *tokenizer.Tokenizer, prompt []int32, params []Params, emit func(choice int, t Token) error) ([]Result, error) {
	if len(params) == 0 {
		return nil, fmt.Errorf("%w: no choices", ErrParams)
	}
	ds := make([]*decoder, len(params))
	results := func() []Result {
		out := make([]Result, len(ds))
		for i, d := range ds {
			out[i] = d.result()
		}
		return out
	}
	for i, p := range params {
		d, err := newDecoder(m, tok, prompt, p)
		if err != nil {
			return nil, err
		}
		ds[i] = d
	}
	if !slices.ContainsFunc(ds, func(d *decoder) bool { return !d.done || d.p.PromptLogprobs }) {
		return results(), nil // max_tokens 0
	}
	if err := ctx.Err(); err != nil {
		return results(), err
	}
	cache := m.NewKVCache()
	all, err := prefill(m, cache, prompt)
	if err != nil {
		return results(), err
	}
	for _, d := range ds {
		d.prefilled(cache, all)
	}
	logits := all[len(all)-m.Config.VocabSize:]

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	q := &eventQueue{signal: make(chan struct{}, 1)}
	var firstErr error
	fail := func(err error) {
		if firstErr == nil {
			firstErr = err
			cancel()
		}
	}
	var seqs []*batchSeq
	for i, d := range ds {
		if d.done {
			continue
		}
		t, err := d.next(logits)
		if err != nil {
			return results(), err
		}
		if emit != nil && firstErr == nil {
			if err := emit(i, t); err != nil {
				fail(err)
			}
		}
		if d.done {
			continue
		}
		c := cache
		if i < len(ds)-1 {
			c = cache.Clone()
		}
		seqs = append(seqs, &batchSeq{ctx: ctx, m: m, cache: c, d: d, choice: i, out: q})
	}
	if firstErr != nil || len(seqs) == 0 {
		return results(), firstErr
	}
	select {
	case b.submit <- seqs:
	case <-b.closed:
		return results(), ErrClosed
	case <-ctx.Done():
		return results(), ctx.Err()
	}
	for pending := len(seqs); pending > 0; {
		<-q.signal
		for _, e := range q.take() {
			switch {
			case e.done:
				pending--
				if e.err != nil {
					fail(e.err)
				}
			case emit != nil && firstErr == nil:
				if err := emit(e.choice, e.tok); err != nil {
					fail(err)
				}
			}
		}
	}
	return results(), firstErr
}
