package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"time"

	"github.com/verisim/verisim/internal/atomicfile"
	"github.com/verisim/verisim/internal/plot"
	"github.com/verisim/verisim/internal/train"
	"github.com/verisim/verisim/internal/train/data"
)

// source is what a run draws its training batches from: the next size
// items of the order, and their indices.
type source interface {
	Batch(o *data.Order, size int) (train.Batch, []int)
}

// datums is a source of ready-made sequences trained with cross-entropy.
type datums []train.Datum

func (d datums) Batch(o *data.Order, size int) (train.Batch, []int) {
	b := train.Batch{Data: make([]train.Datum, size), Loss: train.LossCrossEntropy}
	idx := make([]int, size)
	for i := range size {
		idx[i] = o.Next()
		b.Data[i] = d[idx[i]]
	}
	return b, idx
}

// runner is one training run, pretraining or SFT: the trainer, the data,
// what to do at each step, where the run stands and what it has measured.
type runner struct {
	out      string
	tr       train.Trainer // saves the tokenizer into its checkpoints
	settings settings
	src      source
	order    *data.Order
	held     []train.Datum // evaluated on; none: no held-out loss
	baseline float64       // the unigram baseline, NaN for none

	steps, batch         int
	evalEvery, saveEvery int // 0: only at the end
	title                string
	resumable            bool // whether an interrupted run can be resumed
	progress             io.Writer
	tty                  bool

	state   runState
	step    int // optimiser steps done
	saved   int // the step of the last checkpoint written
	tokens  int // weighted tokens trained on
	metrics []Metric
}

func (r *runner) path(name string) string { return filepath.Join(r.out, name) }

// resume loads the checkpoint of step in r.out, the data order saved
// with it, and the metrics up to that step.
func (r *runner) resume(ctx context.Context, st *runState, step int) error {
	if st.Settings != r.settings {
		return usageErr("--resume: %s was trained with different settings: %s", r.out, jsonDiff(st.Settings, r.settings, "%s was %v, now %v"))
	}
	i := slices.IndexFunc(st.Saves, func(s savePoint) bool { return s.Step == step })
	if i < 0 {
		return fmt.Errorf("--resume: %s has no data state for its checkpoint of step %d", r.path(RunStateFile), step)
	}
	if err := r.order.Restore(st.Saves[i].Order); err != nil {
		return usageErr("--resume: %v", err)
	}
	ms, err := readMetrics(r.path(MetricsFile), step)
	if err != nil {
		return err
	}
	if err := r.tr.Load(ctx, r.path(CheckpointDir)); err != nil {
		return fmt.Errorf("--resume: %w", err)
	}
	r.state = *st
	r.metrics = ms
	r.step, r.saved = step, step
	for _, m := range ms {
		r.tokens = max(r.tokens, m.Tokens)
	}
	return nil
}

// save writes a checkpoint of the current step: the run state with the
// new save point, then the trainer's checkpoint. It runs to the end even
// when ctx is cancelled.
func (r *runner) save(ctx context.Context) error {
	ctx = context.WithoutCancel(ctx)
	r.state.Settings = r.settings
	r.state.Saves = append(r.state.Saves, savePoint{Step: r.step, Order: r.order.State()})
	if n := len(r.state.Saves); n > 2 {
		r.state.Saves = r.state.Saves[n-2:]
	}
	b, err := json.MarshalIndent(r.state, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(r.path(RunStateFile), append(b, '\n'), 0o644); err != nil {
		return err
	}
	if err := r.tr.Save(ctx, r.path(CheckpointDir), fmt.Sprintf("step-%d", r.step)); err != nil {
		return fmt.Errorf("save checkpoint of step %d: %w", r.step, err)
	}
	r.saved = r.step
	return nil
}

// record appends m to the metrics.
func (r *runner) record(m Metric) error {
	if err := appendMetric(r.path(MetricsFile), m); err != nil {
		return err
	}
	r.metrics = append(r.metrics, m)
	return nil
}

// evaluate measures the held-out loss; ok is false when there is nothing
// to measure it on.
func (r *runner) evaluate(ctx context.Context) (loss float64, ok bool, err error) {
	if len(r.held) == 0 {
		return 0, false, nil
	}
	l, err := heldOutLoss(ctx, r.tr, r.held)
	if err != nil || math.IsNaN(l) {
		return 0, false, err
	}
	return l, true, nil
}

// heldOutLoss returns the mean negative logprob over the positions of
// data with a nonzero weight (all but the first when Weights is nil); NaN
// when no position has a weight.
func heldOutLoss(ctx context.Context, tr train.Trainer, held []train.Datum) (float64, error) {
	lps, err := tr.Logprobs(ctx, held)
	if err != nil {
		return 0, fmt.Errorf("held-out loss: %w", err)
	}
	var sum, n float64
	for i, d := range held {
		for t := 1; t < len(d.Tokens); t++ {
			w := 1.0
			if d.Weights != nil {
				w = float64(d.Weights[t])
			}
			sum -= w * float64(lps[i][t])
			n += w
		}
	}
	if n == 0 {
		return math.NaN(), nil
	}
	return sum / n, nil
}

// drawLoss draws the training and held-out loss, and the baseline, to
// loss.png.
func (r *runner) drawLoss() error {
	var trained, held plot.Series
	trained.Name, held.Name = "train", "held-out"
	for _, m := range r.metrics {
		if m.Loss != nil {
			trained.X, trained.Y = append(trained.X, float64(m.Step)), append(trained.Y, *m.Loss)
		}
		if m.HeldOutLoss != nil {
			held.X, held.Y = append(held.X, float64(m.Step)), append(held.Y, *m.HeldOutLoss)
		}
	}
	c := plot.Chart{Title: r.title, XLabel: "step", Series: []plot.Series{trained, held}}
	if !math.IsNaN(r.baseline) {
		c.HLines = []plot.HLine{{Name: fmt.Sprintf("unigram %.2f", r.baseline), Y: r.baseline}}
	}
	return c.WritePNG(r.path(LossPlotFile))
}

// baselineNote is " (unigram baseline B)", or "" without a baseline.
func (r *runner) baselineNote() string {
	if math.IsNaN(r.baseline) {
		return ""
	}
	return fmt.Sprintf(" (unigram baseline %.3f)", r.baseline)
}

// loop trains from r.step to r.steps: it measures the held-out loss at
// the start of a fresh run, every evalEvery steps and at the end, saves
// every saveEvery steps and at the end, and on cancellation saves the
// last completed step before returning.
func (r *runner) loop(ctx context.Context) (*Summary, error) {
	if err := writeMetrics(r.path(MetricsFile), r.metrics); err != nil { // drop lines past the checkpoint
		return nil, err
	}
	if r.step == 0 {
		l, ok, err := r.evaluate(ctx)
		if err != nil {
			return nil, err
		}
		if ok {
			if err := r.record(Metric{Step: 0, HeldOutLoss: &l}); err != nil {
				return nil, err
			}
			fmt.Fprintf(r.progress, "step 0: held-out loss %.3f%s\n", l, r.baselineNote())
		}
	}
	prog := newProgress(r.progress, r.tty, r.steps, r.step, r.baseline)
	defer prog.finish()
	for r.step < r.steps && ctx.Err() == nil {
		before := r.order.State()
		batch, idx := r.src.Batch(r.order, r.batch)
		taken, err := r.trainStep(ctx, batch, prog)
		if err == nil {
			continue
		}
		if taken {
			return nil, err
		}
		// The step did not happen: its batch must be drawn again.
		if rerr := r.order.Restore(before); rerr != nil {
			return nil, rerr
		}
		if errors.Is(err, train.ErrNonFinite) {
			where := "nothing was saved"
			if r.saved > 0 {
				where = fmt.Sprintf("the last good checkpoint in %s is of step %d", r.out, r.saved)
			}
			return nil, fmt.Errorf("step %d: %w on the batch of sequences %v; stopped without saving: %s", r.step+1, err, idx, where)
		}
		if ctx.Err() != nil {
			break
		}
		return nil, fmt.Errorf("step %d: %w", r.step+1, err)
	}
	prog.finish()
	if ctx.Err() != nil {
		if r.step > r.saved {
			if err := r.save(ctx); err != nil {
				return nil, err
			}
			if err := r.drawLoss(); err != nil {
				return nil, err
			}
		}
		msg := fmt.Sprintf("interrupted; %s holds step %d", r.out, r.saved)
		if r.resumable {
			msg += ": continue with --resume"
		}
		return nil, errors.New(msg)
	}
	s := &Summary{Out: r.out, Steps: r.step, Tokens: r.tokens, HeldOutLoss: math.NaN(), Baseline: r.baseline}
	for _, m := range slices.Backward(r.metrics) {
		if m.HeldOutLoss != nil {
			s.HeldOutLoss = *m.HeldOutLoss
			break
		}
	}
	msg := fmt.Sprintf("trained %d steps, %d tokens", s.Steps, s.Tokens)
	if !math.IsNaN(s.HeldOutLoss) {
		msg += fmt.Sprintf("; held-out loss %.3f nats/token%s", s.HeldOutLoss, r.baselineNote())
	}
	fmt.Fprintf(r.progress, "%s; wrote %s\n", msg, r.out)
	return s, nil
}

// trainStep takes one optimiser step on batch, then evaluates, records,
// draws and saves as the step calls for. taken says whether the step was
// taken; an error without it left the weights untouched.
func (r *runner) trainStep(ctx context.Context, batch train.Batch, prog *progress) (taken bool, err error) {
	t0 := time.Now()
	fb, err := r.tr.ForwardBackward(ctx, batch)
	if err != nil {
		return false, err
	}
	st, err := r.tr.OptimStep(ctx)
	if err != nil {
		return false, err
	}
	r.step++
	r.tokens += fb.Tokens
	loss := fb.Loss
	m := Metric{Step: r.step, Loss: &loss, LR: st.LearningRate, GradNorm: st.GradNorm, Tokens: r.tokens, Seconds: time.Since(t0).Seconds()}
	last := r.step == r.steps
	if (r.evalEvery > 0 && r.step%r.evalEvery == 0) || last {
		l, ok, err := r.evaluate(ctx)
		if err != nil && ctx.Err() == nil {
			return true, err
		}
		if ok && err == nil {
			m.HeldOutLoss = &l
		}
	}
	if err := r.record(m); err != nil {
		return true, err
	}
	prog.update(m, fb.Tokens)
	if m.HeldOutLoss != nil || last {
		if err := r.drawLoss(); err != nil {
			return true, err
		}
	}
	if (r.saveEvery > 0 && r.step%r.saveEvery == 0) || last {
		if err := r.save(ctx); err != nil {
			return true, err
		}
	}
	return true, nil
}
