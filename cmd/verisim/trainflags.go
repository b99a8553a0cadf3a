package main

import (
	"errors"
	"os"

	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/verisim/verisim/internal/train/run"
)

// optimFlags are the optimiser flags pretrain, sft and trainer serve
// share.
type optimFlags struct {
	set                *pflag.FlagSet
	derived            bool
	lr                 float64
	warmup, decaySteps int
}

// register adds --lr (default lr), --warmup and --decay-steps to f. A
// non-empty derivedWarmup says how a training run derives --warmup when
// it is not given (and --decay-steps is then the run's length); empty,
// both default to 0.
func (o *optimFlags) register(f *pflag.FlagSet, lr float64, derivedWarmup string) {
	o.set, o.derived = f, derivedWarmup != ""
	warmupHelp := "steps of linear learning-rate warm-up"
	decayHelp := "step at which the cosine decay reaches 10% of --lr (0: constant after warm-up)"
	if o.derived {
		warmupHelp += " (default: " + derivedWarmup + ")"
		decayHelp += " (default: the number of steps)"
	}
	f.Float64Var(&o.lr, "lr", lr, "peak learning rate")
	f.IntVar(&o.warmup, "warmup", 0, warmupHelp)
	f.IntVar(&o.decaySteps, "decay-steps", 0, decayHelp)
}

func (o *optimFlags) schedule() run.Schedule {
	return run.Schedule{
		LR: o.lr, Warmup: o.warmup, DecaySteps: o.decaySteps,
		AutoWarmup: o.derived && !o.set.Changed("warmup"),
		AutoDecay:  o.derived && !o.set.Changed("decay-steps"),
	}
}

// runErr gives an error of package run its exit status.
func runErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, run.ErrUsage):
		return withCode(exitUsage, err)
	case errors.Is(err, run.ErrTasks):
		return withCode(exitTask, err)
	}
	return withCode(exitFailure, err)
}

// stderrIsTerminal says whether progress lines can be rewritten in place.
func stderrIsTerminal() bool { return term.IsTerminal(int(os.Stderr.Fd())) }
