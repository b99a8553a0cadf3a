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
	// has finished. It runs on Run's goroutine and must be quick. Chunks of
	// prompts a step carries are not counted, and a step that only
	// prefills is not observed.
	Observe func(batch, active int)
	// PrefillChunk is the most prompt tokens one step takes from a
	// prompt waiting to be prefilled while sequences are decoding; default
	// 256. Prompts are prefilled by the decode loop, a chunk per step
	// alongside the active sequences' tokens, so that a long prompt delays
	// each of their tokens by a chunk's worth of work, not by its whole
	// prefill, and the two never compete for the CPUs. With nothing
	// decoding, the rest of a prompt goes in one step.
	PrefillChunk int
}

// Batcher decodes the sequences of many concurrent generations together:
// each step runs one token of every active sequence through one
// model.ForwardBatch call, so the weights stream from memory once per step
// rather than once per sequence. A request's prompt is prefilled once, in
// chunks the decode steps carry (BatcherOptions.PrefillChunk), and its n
// choices decode from copies of that cache. Sequences join and leave
// between steps (continuous batching);
// sequences on different *model.Model values (before and after a weight
// reload) are batched apart.
//
// Run must be running for Generate to make progress. A Batcher is safe
// for concurrent use by any number of Generate callers.
type Batcher struct {
	opts   BatcherOptions
	submit chan submission
	closed chan struct{}
}

// submission is what a Generate call hands Run: sequences to decode, or a
// prompt to prefill.
type submission struct {
	seqs []*batchSeq
	pre  *prefillJob
}

// prefillJob is a prompt Run prefills in chunks into cache. Run sends the
// logits on done when the last chunk has run: every row with all set,
// else the last.
type prefillJob struct {
	ctx    context.Context
	m      *model.Model
	cache  *model.KVCache
	prompt []int32
	next   int // prompt[:next] is in the cache
	all    bool
	logits []float32
	done   chan prefillResult
}

type prefillResult struct {
	logits []float32
	err    error
}

// NewBatcher returns a Batcher; start its Run.
func NewBatcher(opts BatcherOptions) *Batcher {
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 32
	}
	if opts.PrefillChunk <= 0 {
		opts.PrefillChunk = 256
	}
	return &Batcher{opts: opts, submit: make(chan submission), closed: make(chan struct{})}
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
	var pending []*prefillJob
	defer func() {
		close(b.closed)
		for _, s := range active {
			s.finish(ErrClosed)
		}
		for _, p := range pending {
			p.done <- prefillResult{err: ErrClosed}
		}
	}()
	take := func(s submission) {
		active = append(active, s.seqs...)
		if s.pre != nil {
			pending = append(pending, s.pre)
		}
	}
	for {
		if len(active) == 0 && len(pending) == 0 {
			select {
			case <-ctx.Done():
				return nil
			case s := <-b.submit:
				take(s)
			}
		}
	drain:
		for {
			select {
			case s := <-b.submit:
				take(s)
			default:
				break drain
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		active, pending = b.step(active, pending)
		if len(active) == 0 && len(pending) == 0 && b.opts.Observe != nil {
			b.opts.Observe(0, 0)
		}
	}
}

func (s *batchSeq) finish(err error) {
	s.out.push(event{choice: s.choice, done: true, err: err})
}

// step decodes one token of every active sequence, and runs the next
// chunk of the oldest pending prompt with the sequences of its model (or
// on its own), and returns the sequences and prompts that go on.
func (b *Batcher) step(active []*batchSeq, pending []*prefillJob) ([]*batchSeq, []*prefillJob) {
	live := active[:0]
	for _, s := range active {
		if err := s.ctx.Err(); err != nil {
			s.finish(err)
			continue
		}
		live = append(live, s)
	}
	waiting := pending[:0]
	for _, p := range pending {
		if err := p.ctx.Err(); err != nil {
			p.done <- prefillResult{err: err}
			continue
		}
		waiting = append(waiting, p)
	}
	var pre *prefillJob
	if len(waiting) > 0 {
		pre = waiting[0]
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
	if pre != nil && groups[pre.m] == nil {
		order = append(order, pre.m)
	}
	next := live[:0]
	for _, m := range order {
		g := groups[m]
		for first := true; first || len(g) > 0; first = false {
			chunk := g[:min(len(g), b.opts.MaxBatch)]
			g = g[len(chunk):]
			var p *prefillJob
			if first && pre != nil && pre.m == m {
				p = pre
			}
			next = append(next, b.decode(m, chunk, p, len(live))...)
		}
	}
	if pre != nil && pre.next == len(pre.prompt) {
		waiting = waiting[1:]
	}
	return next, waiting
}

// decode runs one step of chunk, sequences of m, with the next chunk of
// pre's prompt when pre is set, out of active sequences and prompts in
// all, and returns the sequences that go on.
func (b *Batcher) decode(m *model.Model, chunk []*batchSeq, pre *prefillJob, active int) []*batchSeq {
	seqs := make([]model.Seq, len(chunk), len(chunk)+1)
	for i, s := range chunk {
		seqs[i] = model.Seq{Cache: s.cache, Tokens: []int32{s.d.last()}, Pos: s.d.pos()}
	}
	var preTokens []int32
	if pre != nil {
		// A last chunk of one or two tokens goes with the one before: a
		// product of at most two rows takes the GEMV path, whose sums
		// round differently, and a prompt's logits should not depend on
		// how it was cut.
		// With no sequence decoding, no one waits on this step: the
		// rest of the prompt goes at once (chunks cost a long prompt up
		// to a tenth more).
		n := b.opts.PrefillChunk
		if active == 0 || len(pre.prompt)-pre.next-n <= 2 {
			n = len(pre.prompt) - pre.next
		}
		preTokens = pre.prompt[pre.next : pre.next+n]
		seqs = append(seqs, model.Seq{Cache: pre.cache, Tokens: preTokens, Pos: pre.next})
	}
	logits, err := m.ForwardBatch(seqs)
	if b.opts.Observe != nil && len(chunk) > 0 {
		b.opts.Observe(len(chunk), active)
	}
	if err != nil {
		for _, s := range chunk {
			s.finish(fmt.Errorf("decode at position %d: %w", s.d.pos(), err))
		}
		if pre != nil {
			pre.next = len(pre.prompt)
			pre.done <- prefillResult{err: fmt.Errorf("prefill %d tokens: %w", len(pre.prompt), err)}
		}
		return nil
	}
	V := m.Config.VocabSize
	if pre != nil {
		rows := logits[len(chunk)*V:]
		pre.next += len(preTokens)
		if pre.all {
			pre.logits = append(pre.logits, rows...)
		}
		if pre.next == len(pre.prompt) {
			if !pre.all {
				pre.logits = slices.Clone(rows[len(rows)-V:])
			}
			pre.done <- prefillResult{logits: pre.logits}
		}
	}
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

// prefill has Run prefill prompt into cache, a chunk per step, and returns
// the logits of every prompt position with all, else of the last.
func (b *Batcher) prefill(ctx context.Context, m *model.Model, cache *model.KVCache, prompt []int32, all bool) ([]float32, error) {
	job := &prefillJob{ctx: ctx, m: m, cache: cache, prompt: prompt, all: all, done: make(chan prefillResult, 1)}
	select {
	case b.submit <- submission{pre: job}:
	case <-b.closed:
		return nil, ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	r := <-job.done
	return r.logits, r.err
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
	all, err := b.prefill(ctx, m, cache, prompt, slices.ContainsFunc(ds, func(d *decoder) bool { return d.p.PromptLogprobs }))
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
	case b.submit <- submission{seqs: seqs}:
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
