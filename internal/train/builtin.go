package train

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/verisim/verisim/internal/engine/gemm"
	"github.com/verisim/verisim/internal/engine/model"
	"github.com/verisim/verisim/internal/engine/safetensors"
)

// Options configure the built-in trainer. Start from DefaultOptions: the
// zero value of several fields (Beta1, WeightDecay, ClipNorm, MinLRRatio)
// is a meaningful setting, so zero does not mean "default".
type Options struct {
	// LearningRate is the peak learning rate.
	LearningRate float64 `json:"learning_rate"`
	// WarmupSteps ramp the rate linearly from LearningRate/WarmupSteps to
	// LearningRate; then, if TotalSteps > 0, it decays along a cosine to
	// MinLRRatio·LearningRate at step TotalSteps and stays there. With
	// TotalSteps 0 it stays at LearningRate after the warm-up.
	WarmupSteps int     `json:"warmup_steps"`
	TotalSteps  int     `json:"total_steps"`
	MinLRRatio  float64 `json:"min_lr_ratio"`
	// AdamW. WeightDecay applies to the 2-D weight matrices (projections,
	// the embedding and an untied LM head), not to norms or biases.
	Beta1       float64 `json:"beta1"`
	Beta2       float64 `json:"beta2"`
	Eps         float64 `json:"eps"`
	WeightDecay float64 `json:"weight_decay"`
	// ClipNorm bounds the global L2 norm of the averaged gradient; 0
	// disables clipping.
	ClipNorm float64 `json:"clip_norm"`
	// PublishDType is the dtype Save writes the checkpoint's weights in:
	// F32 (also the zero value), BF16 or F16. The master weights stay fp32;
	// with a narrower dtype Save also stores them with the optimiser state.
	PublishDType safetensors.DType `json:"publish_dtype"`
	// Compute is how the matrix products run.
	Compute gemm.Config `json:"-"`
	// Files are written into every checkpoint Save makes, beside the
	// weights: base name → content, such as the model's tokenizer.json,
	// so that a checkpoint is a model directory the engine serves. They
	// land with the rest of the checkpoint in its one rename.
	Files map[string][]byte `json:"-"`
}

// DefaultOptions returns the usual settings for small decoder models:
// peak rate 3e-4, no warm-up, constant rate, AdamW (0.9, 0.95, 1e-8)
// with weight decay 0.1, clipping at norm 1, fp32 checkpoints, all CPUs.
func DefaultOptions() Options {
	return Options{
		LearningRate: 3e-4,
		MinLRRatio:   0.1,
		Beta1:        0.9,
		Beta2:        0.95,
		Eps:          1e-8,
		WeightDecay:  0.1,
		ClipNorm:     1.0,
		PublishDType: safetensors.F32,
	}
}

func (o Options) validate() error {
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	switch {
	case !(o.LearningRate > 0) || !finite(o.LearningRate):
		return fmt.Errorf("learning rate %g, want > 0", o.LearningRate)
	case o.WarmupSteps < 0 || o.TotalSteps < 0:
		return fmt.Errorf("warmup steps %d and total steps %d, want both ≥ 0", o.WarmupSteps, o.TotalSteps)
	case o.TotalSteps > 0 && o.TotalSteps <= o.WarmupSteps:
		return fmt.Errorf("total steps %d, want more than the %d warm-up steps (or 0 for no decay)", o.TotalSteps, o.WarmupSteps)
	case !(o.MinLRRatio >= 0 && o.MinLRRatio <= 1):
		return fmt.Errorf("min lr ratio %g, want in [0, 1]", o.MinLRRatio)
	case !(o.Beta1 >= 0 && o.Beta1 < 1) || !(o.Beta2 >= 0 && o.Beta2 < 1):
		return fmt.Errorf("betas %g, %g, want both in [0, 1)", o.Beta1, o.Beta2)
	case !(o.Eps > 0) || !finite(o.Eps):
		return fmt.Errorf("eps %g, want > 0", o.Eps)
	case !(o.WeightDecay >= 0) || !finite(o.WeightDecay):
		return fmt.Errorf("weight decay %g, want ≥ 0", o.WeightDecay)
	case !(o.ClipNorm >= 0) || !finite(o.ClipNorm):
		return fmt.Errorf("clip norm %g, want ≥ 0 (0 disables clipping)", o.ClipNorm)
	}
	switch o.PublishDType {
	case safetensors.F32, safetensors.BF16, safetensors.F16:
	default:
		return fmt.Errorf("publish dtype %q, want F32, BF16 or F16", o.PublishDType)
	}
	for name := range o.Files {
		switch {
		case name == "" || name == "." || name == ".." || filepath.Base(name) != name:
			return fmt.Errorf("checkpoint file %q: want a plain file name", name)
		case checkpointOwn[name]:
			return fmt.Errorf("checkpoint file %q: Save writes that file itself", name)
		}
	}
	return nil
}

// checkpointOwn are the files of a checkpoint Save writes itself.
var checkpointOwn = map[string]bool{
	model.ConfigFile: true, safetensors.SingleFile: true, safetensors.IndexFile: true,
	OptimizerFile: true, StateFile: true,
}

// learningRate is the rate of the update that follows step completed
// updates.
func (o Options) learningRate(step int) float64 {
	if step < o.WarmupSteps {
		return o.LearningRate * float64(step+1) / float64(o.WarmupSteps)
	}
	if o.TotalSteps <= 0 {
		return o.LearningRate
	}
	progress := min(1, float64(step-o.WarmupSteps)/float64(o.TotalSteps-o.WarmupSteps))
	return o.LearningRate * (o.MinLRRatio + (1-o.MinLRRatio)*0.5*(1+math.Cos(math.Pi*progress)))
}

// Builtin trains a model.Model in process: hand-written forward and
// backward passes over the gemm kernels and AdamW on fp32 master weights.
// It implements Trainer. Its methods may be called from any goroutine but
// run one at a time.
type Builtin struct {
	mu   sync.Mutex
	opts Options

	model *model.Model
	// grad is the gradient accumulated since the last step (unnormalised:
	// Σ over data and positions), sumW the weights it sums over and
	// pending whether it holds anything (its content is stale when not).
	// Each ForwardBackward call computes into call and merges it into grad
	// only once it is known to be finite. gradSq caches grad's per-chunk
	// sums of squares when gradSqValid.
	grad, call     *model.Model
	gradSq, callSq []float64
	gradSqValid    bool
	sumW           float64
	pending        bool
	expAvg         *model.Model // AdamW's first moment
	expAvgSq       *model.Model // and second
	step           int
	params         []tensor // tensors(model), and the same list for each set
	gradT, callT   []tensor
	avgT, avgSqT   []tensor
	chunks         []chunk

	mm  matmul
	net *network
	// Per-position scratch of the loss head: logprobs, softmax sums and
	// dL/dlogprob.
	headLp, headSum, headGrad []float64
}

var _ Trainer = (*Builtin)(nil)

// New returns a trainer for m. It takes ownership of m's weights, which
// become the fp32 master weights: the trainer updates them in place, so m
// must not be used by anything else while it trains (Model returns it for
// reading between calls).
func New(m *model.Model, opts Options) (*Builtin, error) {
	if opts.PublishDType == "" {
		opts.PublishDType = safetensors.F32
	}
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("new trainer: %w", err)
	}
	if err := checkModel(m); err != nil {
		return nil, fmt.Errorf("new trainer: %w", err)
	}
	cfg := m.Config
	b := &Builtin{
		opts:     opts,
		model:    m,
		grad:     zerosLike(cfg),
		call:     zerosLike(cfg),
		expAvg:   zerosLike(cfg),
		expAvgSq: zerosLike(cfg),
		mm:       matmul{cfg: opts.Compute},
	}
	b.params = tensors(m)
	b.gradT, b.callT = tensors(b.grad), tensors(b.call)
	b.avgT, b.avgSqT = tensors(b.expAvg), tensors(b.expAvgSq)
	b.chunks = chunksOf(b.params)
	b.gradSq, b.callSq = make([]float64, len(b.chunks)), make([]float64, len(b.chunks))
	b.net = newNetwork(&b.mm, cfg)
	return b, nil
}

// Model returns the model being trained. Its weights change with every
// OptimStep and Load; read them only between calls.
func (b *Builtin) Model() *model.Model { return b.model }

// badInput is an error wrapping ErrBadInput: a request that can never
// succeed as given.
func badInput(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrBadInput}, args...)...)
}

// checkData validates every datum before anything is computed, so a bad
// batch changes nothing. Its errors wrap ErrBadInput.
func (b *Builtin) checkData(data []Datum, loss string) error {
	if len(data) == 0 {
		return badInput("empty batch")
	}
	c := b.model.Config
	for i, d := range data {
		T := len(d.Tokens)
		switch {
		case T == 0:
			return badInput("datum %d: no tokens", i)
		case T > c.MaxPositionEmbeddings:
			return badInput("datum %d: %d tokens exceed max_position_embeddings %d", i, T, c.MaxPositionEmbeddings)
		case d.Weights != nil && len(d.Weights) != T:
			return badInput("datum %d: %d weights for %d tokens", i, len(d.Weights), T)
		case d.Advantages != nil && len(d.Advantages) != T:
			return badInput("datum %d: %d advantages for %d tokens", i, len(d.Advantages), T)
		case d.BehaviourLogprobs != nil && len(d.BehaviourLogprobs) != T:
			return badInput("datum %d: %d behaviour logprobs for %d tokens", i, len(d.BehaviourLogprobs), T)
		case loss == LossImportanceSampling && (d.Advantages == nil || d.BehaviourLogprobs == nil):
			return badInput("datum %d: %s needs advantages and behaviour_logprobs", i, loss)
		}
		for t, tok := range d.Tokens {
			if tok < 0 || int(tok) >= c.VocabSize {
				return badInput("datum %d: token %d at position %d outside vocabulary of %d", i, tok, t, c.VocabSize)
			}
		}
		if err := checkRoutes(c, d); err != nil {
			return badInput("datum %d: %w", i, err)
		}
	}
	return nil
}

// checkRoutes reports Datum.Routes the model cannot replay: routes for a
// dense model, or not one entry per token of layers·k distinct experts in
// range. An empty entry routes its position afresh, as in the engine's
// Seq.Replay (the last sampled token, never run through the server's
// model, has none).
func checkRoutes(c model.Config, d Datum) error {
	if len(d.Routes) == 0 {
		return nil
	}
	return c.CheckRoutes(d.Routes, len(d.Tokens), 0)
}

func lossName(s string) (string, error) {
	switch s {
	case "", LossCrossEntropy:
		return LossCrossEntropy, nil
	case LossImportanceSampling:
		return s, nil
	}
	return "", badInput("unknown loss %q; have %q, %q", s, LossCrossEntropy, LossImportanceSampling)
}

// ForwardBackward implements Trainer. The gradient it adds is the sum over
// data and positions (not a mean): OptimStep divides by the summed
// weights. On any error, ErrNonFinite included, the accumulated gradient
// and the weights are as they were before the call. ForwardSeconds
// includes the loss and its gradient with respect to the logits.
func (b *Builtin) ForwardBackward(ctx context.Context, batch Batch) (Metrics, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	loss, err := lossName(batch.Loss)
	if err != nil {
		return Metrics{}, fmt.Errorf("forward-backward: %w", err)
	}
	if err := b.checkData(batch.Data, loss); err != nil {
		return Metrics{}, fmt.Errorf("forward-backward: %w", err)
	}
	b.parallel(func(c chunk, _ int) { clear((*b.callT[c.p].data)[c.lo:c.hi]) })

	var (
		acc   lossAcc
		fwd   time.Duration
		bwd   time.Duration
		V     = b.model.Config.VocabSize
		start time.Time
	)
	b.headGrad = grow(b.headGrad, b.maxLen(batch.Data))
	for i, d := range batch.Data {
		if err := ctx.Err(); err != nil {
			return Metrics{}, fmt.Errorf("forward-backward: %w", err)
		}
		start = time.Now()
		b.net.forward(b.model, d.Tokens, d.Routes)
		lps, sums := b.headLogprobs(d.Tokens)
		// dL/dlp per position, summed sequentially so the metrics do not
		// depend on the thread count.
		cs := b.headGrad[:len(d.Tokens)]
		for t := 1; t < len(d.Tokens); t++ {
			if cs[t], err = acc.add(loss, d, t, lps[t]); err != nil {
				return Metrics{}, fmt.Errorf("forward-backward: datum %d %w", i, err)
			}
		}
		b.parallelRows(len(d.Tokens)-1, func(lo, hi int) {
			for r := lo; r < hi; r++ {
				softmaxGrad(b.net.logits[r*V:(r+1)*V], sums[r+1], d.Tokens[r+1], cs[r+1])
			}
		})
		fwd += time.Since(start)

		start = time.Now()
		dx := b.net.backward(b.model, b.call, d.Tokens)
		bwd += time.Since(start)
		if !allFinite(dx) {
			return Metrics{}, fmt.Errorf("forward-backward: datum %d: gradient: %w", i, ErrNonFinite)
		}
	}
	if err := b.mergeCall(); err != nil {
		return Metrics{}, fmt.Errorf("forward-backward: batch of %d data: %w", len(batch.Data), err)
	}
	b.sumW += acc.sumW
	met := acc.metrics()
	met.ForwardSeconds, met.BackwardSeconds = fwd.Seconds(), bwd.Seconds()
	return met, nil
}

// lossAcc sums one call's loss terms and metrics.
type lossAcc struct {
	total, sumW float64
	tokens      int
	gap, k3     float64
	nk3         int
}

// add accounts for position t of d, whose trainer logprob is lp, and
// returns the derivative of the loss with respect to lp.
func (a *lossAcc) add(loss string, d Datum, t int, lp float64) (float64, error) {
	if math.IsNaN(lp) || math.IsInf(lp, 0) {
		return 0, fmt.Errorf("position %d: logprob %g: %w", t, lp, ErrNonFinite)
	}
	w := 1.0
	if d.Weights != nil {
		w = float64(d.Weights[t])
	}
	if d.BehaviourLogprobs != nil && d.BehaviourLogprobs[t] != 0 {
		diff := float64(d.BehaviourLogprobs[t]) - lp
		a.gap = max(a.gap, math.Abs(diff))
		a.k3 += math.Exp(diff) - diff - 1
		a.nk3++
	}
	if w == 0 {
		return 0, nil
	}
	var term, c float64
	switch loss {
	case LossCrossEntropy:
		term, c = -w*lp, -w
	case LossImportanceSampling:
		ratio := math.Exp(lp - float64(d.BehaviourLogprobs[t]))
		c = -w * float64(d.Advantages[t]) * ratio
		term = c
	}
	if math.IsNaN(term) || math.IsInf(term, 0) || math.IsNaN(c) || math.IsInf(c, 0) {
		return 0, fmt.Errorf("position %d: loss term %g: %w", t, term, ErrNonFinite)
	}
	a.total += term
	a.sumW += w
	a.tokens++
	return c, nil
}

func (a *lossAcc) metrics() Metrics {
	m := Metrics{Tokens: a.tokens, SumWeights: a.sumW, MaxLogprobGap: a.gap}
	if a.sumW != 0 {
		m.Loss = a.total / a.sumW
	}
	if a.nk3 > 0 {
		m.KLk3 = a.k3 / float64(a.nk3)
	}
	return m
}

func allFinite(v []float32) bool {
	for _, x := range v {
		if x-x != 0 { // NaN or ±Inf
			return false
		}
	}
	return true
}

// sumSquares sets sq[i] to the sum of squares of chunk i of ts. A sum is
// NaN or infinite exactly when its chunk holds a NaN or an infinity (fp32
// squares cannot overflow float64).
func (b *Builtin) sumSquares(sq []float64, ts []tensor) {
	b.parallel(func(c chunk, i int) {
		var s float64
		for _, g := range (*ts[c.p].data)[c.lo:c.hi] {
			s += float64(g) * float64(g)
		}
		sq[i] = s
	})
}

// mergeCall adds this call's gradient to the accumulated one if every
// value is finite. When nothing was accumulated it swaps the buffers
// instead of adding, and keeps the sums of squares it checked with for
// OptimStep's norm.
func (b *Builtin) mergeCall() error {
	sq := b.callSq
	b.sumSquares(sq, b.callT)
	for i, s := range sq {
		if math.IsNaN(s) || math.IsInf(s, 0) {
			return fmt.Errorf("gradient of %s: %w", b.params[b.chunks[i].p].name, ErrNonFinite)
		}
	}
	if !b.pending {
		b.grad, b.call = b.call, b.grad
		b.gradT, b.callT = b.callT, b.gradT
		b.gradSq, b.callSq = b.callSq, b.gradSq
		b.pending, b.gradSqValid = true, true
		return nil
	}
	b.parallel(func(c chunk, _ int) {
		model.AddTo((*b.gradT[c.p].data)[c.lo:c.hi], (*b.callT[c.p].data)[c.lo:c.hi])
	})
	b.gradSqValid = false
	return nil
}

// OptimStep implements Trainer: it divides the accumulated gradient by the
// accumulated weights, clips its global norm to ClipNorm, and applies one
// bias-corrected AdamW update (decoupled weight decay, as PyTorch's AdamW:
// w ← w·(1 − lr·wd) − lr·m̂/(√v̂ + eps)) at the schedule's rate.
func (b *Builtin) OptimStep(ctx context.Context) (StepResult, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return StepResult{}, fmt.Errorf("optim step: %w", err)
	}
	if !b.pending || b.sumW == 0 {
		return StepResult{}, errors.New("optim step: no gradient accumulated (no weighted tokens since the last step)")
	}
	o := b.opts
	scale := 1 / b.sumW
	if !b.gradSqValid {
		b.sumSquares(b.gradSq, b.gradT)
	}
	var total float64
	for _, s := range b.gradSq {
		total += s
	}
	norm := math.Sqrt(total) * scale
	res := StepResult{GradNorm: norm}
	if o.ClipNorm > 0 && norm > o.ClipNorm {
		scale *= o.ClipNorm / norm
		res.Clipped = true
	}
	lr := o.learningRate(b.step)
	b.step++
	// m̂/(√v̂ + eps) = (m/bc1)/(√v/√bc2 + eps), with the divisions by the
	// bias corrections hoisted out of the loop.
	stepSize := lr / (1 - math.Pow(o.Beta1, float64(b.step)))
	invSqrtBc2 := 1 / math.Sqrt(1-math.Pow(o.Beta2, float64(b.step)))
	b1, b2 := o.Beta1, o.Beta2
	b.parallel(func(c chunk, _ int) {
		w := (*b.params[c.p].data)[c.lo:c.hi]
		g := (*b.gradT[c.p].data)[c.lo:c.hi]
		m := (*b.avgT[c.p].data)[c.lo:c.hi]
		v := (*b.avgSqT[c.p].data)[c.lo:c.hi]
		g, m, v = g[:len(w)], m[:len(w)], v[:len(w)]
		decay := 1.0
		if b.params[c.p].kind == kindMatrix {
			decay = 1 - lr*o.WeightDecay
		}
		for i := range w {
			gi := float64(g[i]) * scale
			mi := b1*float64(m[i]) + (1-b1)*gi
			vi := b2*float64(v[i]) + (1-b2)*gi*gi
			m[i], v[i] = float32(mi), float32(vi)
			w[i] = float32(float64(w[i])*decay - stepSize*mi/(math.Sqrt(vi)*invSqrtBc2+o.Eps))
		}
	})
	b.pending, b.sumW = false, 0
	res.Step, res.LearningRate = b.step, lr
	return res, nil
}

// Logprobs implements Trainer.
func (b *Builtin) Logprobs(ctx context.Context, data []Datum) ([][]float32, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.checkData(data, LossCrossEntropy); err != nil {
		return nil, fmt.Errorf("logprobs: %w", err)
	}
	out := make([][]float32, len(data))
	for i, d := range data {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("logprobs: %w", err)
		}
		b.net.forward(b.model, d.Tokens, d.Routes)
		lps, _ := b.headLogprobs(d.Tokens)
		out[i] = make([]float32, len(d.Tokens))
		for t := 1; t < len(d.Tokens); t++ {
			out[i][t] = float32(lps[t])
		}
	}
	return out, nil
}

func (b *Builtin) maxLen(data []Datum) int {
	n := 0
	for _, d := range data {
		n = max(n, len(d.Tokens))
	}
	return n
}

// headLogprobs turns the logits forward left into softmax numerators in
// place and returns, per position t ≥ 1, log p(tokens[t] | tokens[:t]) and
// the softmax's sum (entry 0 unused). Rows run in parallel; each row's
// arithmetic is the same whatever the thread count.
func (b *Builtin) headLogprobs(tokens []int32) (lps, sums []float64) {
	V := b.model.Config.VocabSize
	b.headLp, b.headSum = grow(b.headLp, len(tokens)), grow(b.headSum, len(tokens))
	lps, sums = b.headLp, b.headSum
	b.parallelRows(len(tokens)-1, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			row := b.net.logits[r*V : (r+1)*V]
			logit := row[tokens[r+1]]
			lse, sum := softmaxRow(row)
			lps[r+1], sums[r+1] = float64(logit)-lse, sum
		}
	})
	return lps, sums
}

// parallelRows splits [0, n) into contiguous ranges over the configured
// threads and waits for them.
func (b *Builtin) parallelRows(n int, fn func(lo, hi int)) {
	threads := b.opts.Compute.Threads
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	threads = min(threads, n/8) // a few rows are not worth a goroutine
	if threads <= 1 {
		fn(0, n)
		return
	}
	per := (n + threads - 1) / threads
	gemm.Spread((n+per-1)/per, func(i int) { fn(i*per, min((i+1)*per, n)) })
}
