package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/verisim/verisim/internal/engine/tokenizer"
	"github.com/verisim/verisim/internal/train/data"
	"github.com/verisim/verisim/internal/train/run"
)

func (a *app) pretrainCmd() *cobra.Command {
	var (
		o     run.PretrainOptions
		optim optimFlags
	)
	c := &cobra.Command{
		Use:   "pretrain --model DIR --out DIR [--corpus DIR] [--steps N]",
		Short: "Train a model on a corpus of code with next-token prediction",
		Long: `Trains the model in --model (config.json, safetensors weights and
tokenizer.json, as "verisim model init" writes them) on the text files under
--corpus with the built-in trainer: next-token cross-entropy on sequences of
--seq-len tokens, AdamW, a linear warm-up and a cosine decay.

Files are split into training and held-out sets by a hash of their path
(2% held out). Every --eval-every steps the loss on a fixed set of held-out
sequences is measured and compared with the unigram baseline: the
cross-entropy of token frequencies alone, which a model that uses context
must beat.

--out receives checkpoint/ (every --save-every steps and at the end: the
model with its tokenizer.json, which the engine loads like any model
directory, plus the optimiser state), and beside it metrics.jsonl (one line
per step), loss.png and run-state.json (where the data order stands). --resume continues from them: the same batches in the
same order, so the curve is the one an uninterrupted run draws. Ctrl-C saves
the last completed step before exiting.`,
		Example: `  verisim model init --tokenizer tokenizer.json --size tiny --dtype f32 --out models/tiny
  verisim pretrain --model models/tiny --out runs/tiny-go --steps 300 --max-files 2000
  verisim pretrain --model models/tiny --out runs/tiny-go --steps 600 --resume`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.CorpusDir == "" {
				o.CorpusDir = tokenizer.GoSource()
			}
			o.Schedule = optim.schedule()
			o.Progress, o.IsTerminal = os.Stderr, stderrIsTerminal()
			_, err := run.Pretrain(cmd.Context(), o)
			return runErr(err)
		},
	}
	f := c.Flags()
	f.StringVar(&o.ModelDir, "model", "", "model directory to start from (config.json, weights, tokenizer.json)")
	f.StringVar(&o.CorpusDir, "corpus", "", "directory of text to train on (default: the Go installation's src)")
	f.StringVar(&o.Out, "out", "", "directory for checkpoints, metrics.jsonl and loss.png")
	f.IntVar(&o.Steps, "steps", 200, "optimiser steps to train for, counting those of a resumed run")
	f.IntVar(&o.Corpus.SeqLen, "seq-len", 128, "tokens predicted per sequence")
	f.IntVar(&o.Batch, "batch", 8, "sequences per step")
	optim.register(f, 1e-3, "a tenth of --steps, at most 20")
	f.IntVar(&o.EvalEvery, "eval-every", 50, "measure the held-out loss every this many steps (0: only at the start and end)")
	f.IntVar(&o.SaveEvery, "save-every", 100, "save a checkpoint every this many steps (0: only at the end)")
	f.Uint64Var(&o.Seed, "seed", 1, "seed of the data order")
	f.BoolVar(&o.Resume, "resume", false, "continue the run whose checkpoint is in --out")
	f.StringSliceVar(&o.Corpus.Exts, "ext", []string{".go"}, "file extensions to read (empty: every text file)")
	f.IntVar(&o.Corpus.MaxFiles, "max-files", 0, "read at most this many files, a fixed sample spread over the tree (0: all)")
	f.Int64Var(&o.Corpus.MaxBytes, "max-bytes", 0, "stop adding files to the sample past this many bytes (0: no limit)")
	f.Float64Var(&o.Corpus.HeldOutFraction, "held-out", data.DefaultHeldOutFraction, "fraction of files held out for evaluation")
	f.IntVar(&o.Corpus.HeldOutSeqs, "eval-seqs", 32, "held-out sequences to evaluate on")
	return c
}
