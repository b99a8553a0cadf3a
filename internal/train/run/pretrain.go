package run

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/verisim/verisim/internal/train"
	"github.com/verisim/verisim/internal/train/data"
)

// PretrainOptions configure a continued-pretraining run.
type PretrainOptions struct {
	// ModelDir is the model to start from (config.json, weights,
	// tokenizer.json); CorpusDir the text to train on; Out the output
	// directory (see the package documentation).
	ModelDir, CorpusDir, Out string
	// Corpus says which files of CorpusDir are read and how they are cut;
	// Corpus.SeqLen is required.
	Corpus data.CorpusOptions
	// Steps is the number of optimiser steps the run ends at, counting
	// those of a resumed run; Batch the sequences per step.
	Steps, Batch int
	Schedule     Schedule
	// EvalEvery and SaveEvery measure the held-out loss and save a
	// checkpoint every this many steps; 0: only at the end (the held-out
	// loss also at the start).
	EvalEvery, SaveEvery int
	// Seed is the seed of the data order.
	Seed uint64
	// Resume continues the run whose checkpoint is in Out.
	Resume bool
	// Progress receives what the run reports as it goes (nil: nothing);
	// IsTerminal rewrites the progress line in place.
	Progress   io.Writer
	IsTerminal bool
}

// Summary is what a finished run reached.
type Summary struct {
	Out    string
	Steps  int // optimiser steps the checkpoint holds
	Tokens int // weighted tokens trained on, over every resumed part
	// HeldOutLoss is the last held-out loss measured (nats/token), NaN
	// when there was no held-out data; Baseline the corpus's unigram
	// baseline, NaN for a run without one.
	HeldOutLoss, Baseline float64
}

func (o *PretrainOptions) check() error {
	s := o.Schedule
	switch {
	case o.ModelDir == "" || o.Out == "":
		return usageErr("--model DIR and --out DIR are required")
	case o.CorpusDir == "":
		return usageErr("--corpus DIR is required")
	case o.Steps < 1 || o.Batch < 1:
		return usageErr("--steps and --batch must be at least 1")
	case o.EvalEvery < 0 || o.SaveEvery < 0 || s.Warmup < 0 || s.DecaySteps < 0:
		return usageErr("--eval-every, --save-every, --warmup and --decay-steps cannot be negative")
	case s.DecaySteps > 0 && s.DecaySteps <= s.Warmup:
		return usageErr("--decay-steps %d must exceed --warmup %d (or be 0 for a constant rate)", s.DecaySteps, s.Warmup)
	case o.Corpus.SeqLen < 1:
		return usageErr("--seq-len must be at least 1")
	}
	return nil
}

// Pretrain trains the model in o.ModelDir with next-token cross-entropy on
// the corpus in o.CorpusDir, writing o.Out, until o.Steps steps.
func Pretrain(ctx context.Context, o PretrainOptions) (*Summary, error) {
	o.Schedule = o.Schedule.resolve(o.Steps, maxAutoWarmup)
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
	if o.Corpus.SeqLen+1 > m.Config.MaxPositionEmbeddings {
		return nil, usageErr("--seq-len %d: the model's context is %d positions", o.Corpus.SeqLen, m.Config.MaxPositionEmbeddings)
	}
	var prev *runState
	var prevStep int
	if o.Resume {
		if prev, prevStep, err = checkResume(o.Out, m.Config); err != nil {
			return nil, err
		}
	} else if err := refuseCheckpoint(o.Out, "pass --resume to continue it or choose another --out"); err != nil {
		return nil, err
	}

	start := time.Now()
	fmt.Fprintf(o.Progress, "reading %s…\n", o.CorpusDir)
	corpus, err := data.OpenCorpus(ctx, o.CorpusDir, tok, o.Corpus)
	if err != nil {
		return nil, usageErr("--corpus: %v", err)
	}
	baseline := corpus.UnigramBaseline()
	fmt.Fprintf(o.Progress, "corpus: %d files (%.1f MB, %d skipped) in %.1fs: %d training tokens in %d files, %d sequences of %d; held out: %d files, %d sequences, %d tokens; unigram baseline %.3f nats/token\n",
		len(corpus.TrainFiles)+len(corpus.HeldOutFiles), float64(corpus.Bytes)/1e6, corpus.Skipped, time.Since(start).Seconds(),
		len(corpus.TrainIDs), len(corpus.TrainFiles), corpus.NumSequences(), o.Corpus.SeqLen+1,
		len(corpus.HeldOutFiles), len(corpus.HeldOut()), corpus.EvalTokens(), baseline)

	opts := o.Schedule.TrainOptions()
	opts.Files = map[string][]byte{TokenizerFile: tokJSON}
	tr, err := train.New(m, opts)
	if err != nil {
		return nil, usageErr("%v", err)
	}
	r := &runner{
		out: o.Out, tr: tr,
		settings: settings{
			Corpus: o.CorpusDir, Fingerprint: corpus.Fingerprint(), SeqLen: o.Corpus.SeqLen, Batch: o.Batch,
			LR: o.Schedule.LR, Warmup: o.Schedule.Warmup, DecaySteps: o.Schedule.DecaySteps, Seed: o.Seed,
		},
		src: corpus, order: data.NewOrder(corpus.NumSequences(), o.Seed), held: corpus.HeldOut(), baseline: baseline,
		steps: o.Steps, batch: o.Batch, evalEvery: o.EvalEvery, saveEvery: o.SaveEvery,
		title:     fmt.Sprintf("pretrain %s: loss (nats/token)", filepath.Base(o.ModelDir)),
		resumable: true, progress: o.Progress, tty: o.IsTerminal,
	}
	if prev != nil {
		if err := r.resume(ctx, prev, prevStep); err != nil {
			return nil, err
		}
		if r.step >= o.Steps {
			return nil, usageErr("%s already holds step %d; pass a larger --steps to train further", o.Out, r.step)
		}
		fmt.Fprintf(o.Progress, "resumed at step %d from %s\n", r.step, o.Out)
	} else if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, err
	}
	return r.loop(ctx)
}
