package run

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/verisim/verisim/internal/engine/tokenizer"
	"github.com/verisim/verisim/internal/task"
	"github.com/verisim/verisim/internal/train"
	"github.com/verisim/verisim/internal/train/data"
)

// SFTOptions configure a supervised fine-tuning run: cross-entropy on the
// tokens the model itself wrote, with prompts and tool outputs masked out.
type SFTOptions struct {
	// ModelDir is the model to start from; Out the output directory,
	// which must not hold a checkpoint.
	ModelDir, Out string
	// Data is a trajectory file to train on; FromSolutions trains instead
	// on demonstrations built from the reference solutions of the tasks
	// in Tasks. Exactly one of the two is set.
	Data          string
	FromSolutions bool
	// Tasks is the task suite of FromSolutions and of the tool-call
	// evaluation.
	Tasks string
	// Epochs are passes over the training data, Batch the sequences per
	// step; sequences longer than MaxLen tokens (or the model's context)
	// are left out.
	Epochs, Batch, MaxLen int
	Schedule              Schedule
	// EvalTasks tasks, chosen by a hash of their id, are held out of
	// training; before and after it, EvalSamples replies of at most
	// EvalMaxTokens tokens are sampled at Temperature for each, and those
	// that hold well-formed tool calls counted. 0 tasks: no evaluation.
	EvalTasks, EvalSamples, EvalMaxTokens int
	Temperature                           float64
	// Seed is the seed of the data order and of the evaluation's sampling.
	Seed uint64
	// Progress receives what the run reports as it goes (nil: nothing);
	// IsTerminal rewrites the progress line in place.
	Progress   io.Writer
	IsTerminal bool
}

// SFTSummary is what a finished SFT run reached.
type SFTSummary struct {
	Summary
	// EvalTasks is the number of held-out tasks the tool calls were
	// evaluated on, each EvalSamples times; Before and After are the
	// counts before and after training (zero without evaluation).
	EvalTasks, EvalSamples int
	Before, After          CallRate
}

func (o *SFTOptions) check() error {
	switch {
	case o.ModelDir == "" || o.Out == "":
		return usageErr("--model DIR and --out DIR are required")
	case (o.Data == "") == !o.FromSolutions:
		return usageErr("give one of --data FILE and --from-solutions")
	case o.Epochs < 1 || o.Batch < 1 || o.MaxLen < 2:
		return usageErr("--epochs and --batch must be at least 1, --max-len at least 2")
	case o.EvalTasks < 0 || o.EvalSamples < 1 || o.EvalMaxTokens < 1:
		return usageErr("--eval-tasks cannot be negative; --eval-samples and --eval-max-tokens must be at least 1")
	case o.Schedule.Warmup < 0 || o.Schedule.DecaySteps < 0:
		return usageErr("--warmup and --decay-steps cannot be negative")
	}
	return nil
}

// SFT fine-tunes the model in o.ModelDir, writing o.Out.
func SFT(ctx context.Context, o SFTOptions) (*SFTSummary, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	m, tok, tokJSON, err := loadModel(o.ModelDir, true)
	if err != nil {
		return nil, err
	}
	if err := refuseCheckpoint(o.Out, "choose another --out"); err != nil {
		return nil, err
	}
	var trainSet, evalSet []*task.Task
	if o.FromSolutions || o.EvalTasks > 0 {
		tasks, err := task.LoadSuite(o.Tasks)
		if err != nil {
			return nil, tasksErr(err)
		}
		trainSet, evalSet = splitTasks(tasks, o.EvalTasks)
	}

	var ds, held []train.Datum
	if o.Data != "" {
		if ds, err = data.ReadTrajectories(o.Data); err != nil {
			return nil, usageErr("--data: %v", err)
		}
	} else {
		if ds, err = demonstrations(ctx, tok, trainSet); err != nil {
			return nil, tasksErr(err)
		}
		if held, err = demonstrations(ctx, tok, evalSet); err != nil {
			return nil, tasksErr(err)
		}
	}
	maxLen := min(o.MaxLen, m.Config.MaxPositionEmbeddings)
	ds, dropped := fitting(ds, maxLen)
	held, _ = fitting(held, maxLen)
	if len(ds) == 0 {
		return nil, usageErr("no sequence to train on: %d longer than %d tokens were left out", dropped, maxLen)
	}
	ntok := 0
	for _, d := range ds {
		ntok += len(d.Tokens)
	}
	fmt.Fprintf(o.Progress, "%d training sequences, %d tokens (%d longer than %d left out); %d held-out tasks\n", len(ds), ntok, dropped, maxLen, len(evalSet))

	steps := o.Epochs * ((len(ds) + o.Batch - 1) / o.Batch)
	sched := o.Schedule.resolve(steps, steps)
	opts := sched.TrainOptions()
	opts.Files = map[string][]byte{TokenizerFile: tokJSON}
	tr, err := train.New(m, opts)
	if err != nil {
		return nil, usageErr("%v", err)
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, err
	}
	ev := toolCallEval{prompts: evalPrompts(tok, evalSet), samples: o.EvalSamples, maxTokens: o.EvalMaxTokens, temperature: o.Temperature, seed: o.Seed}
	sum := &SFTSummary{EvalTasks: len(ev.prompts), EvalSamples: o.EvalSamples}
	if len(ev.prompts) > 0 {
		if sum.Before, err = ev.run(ctx, tr.Model(), tok); err != nil {
			return nil, err
		}
		fmt.Fprintf(o.Progress, "before: %s\n", sum.Before)
	}

	r := &runner{
		out: o.Out, tr: tr,
		settings: settings{Corpus: o.Data + o.Tasks, SeqLen: maxLen, Batch: o.Batch, LR: sched.LR, Warmup: sched.Warmup, DecaySteps: sched.DecaySteps, Seed: o.Seed},
		src:      datums(ds), order: data.NewOrder(len(ds), o.Seed), held: held, baseline: math.NaN(),
		steps: steps, batch: o.Batch, evalEvery: max(1, steps/4),
		title:    fmt.Sprintf("sft %s: loss on the model's tokens (nats/token)", filepath.Base(o.ModelDir)),
		progress: o.Progress, tty: o.IsTerminal,
	}
	s, err := r.loop(ctx)
	if err != nil {
		return nil, err
	}
	sum.Summary = *s
	if len(ev.prompts) > 0 {
		if sum.After, err = ev.run(ctx, tr.Model(), tok); err != nil {
			return nil, err
		}
		fmt.Fprintf(o.Progress, "after:  %s\n", sum.After)
	}
	return sum, nil
}

// splitTasks holds n tasks out for evaluation: those first in the order of
// a hash of their id, so the choice does not depend on which other tasks
// exist.
func splitTasks(tasks []*task.Task, n int) (trainSet, evalSet []*task.Task) {
	h := func(id string) uint64 {
		f := fnv.New64a()
		f.Write([]byte("eval\x00" + id))
		return f.Sum64()
	}
	byHash := slices.Clone(tasks)
	slices.SortFunc(byHash, func(a, b *task.Task) int {
		ha, hb := h(a.ID), h(b.ID)
		switch {
		case ha < hb:
			return -1
		case ha > hb:
			return 1
		}
		return 0
	})
	n = min(n, len(byHash))
	evalSet = byHash[:n]
	for _, t := range tasks {
		if !slices.Contains(evalSet, t) {
			trainSet = append(trainSet, t)
		}
	}
	return trainSet, evalSet
}

// demonstrations renders a solution demonstration of each task that has a
// reference solution.
func demonstrations(ctx context.Context, tok *tokenizer.Tokenizer, tasks []*task.Task) ([]train.Datum, error) {
	tools := data.AgentTools()
	var out []train.Datum
	for _, t := range tasks {
		if !t.HasSolution() {
			continue
		}
		msgs, err := data.SolutionDemo(ctx, t)
		if err != nil {
			return nil, err
		}
		d, err := data.ChatDatum(tok, msgs, tools)
		if err != nil {
			return nil, fmt.Errorf("task %s: %w", t.ID, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// fitting returns the datums of at most n tokens and how many were longer.
func fitting(ds []train.Datum, n int) ([]train.Datum, int) {
	var out []train.Datum
	for _, d := range ds {
		if len(d.Tokens) <= n {
			out = append(out, d)
		}
	}
	return out, len(ds) - len(out)
}
