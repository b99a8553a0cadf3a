package run

import "github.com/verisim/verisim/internal/train"

// Schedule is the optimiser's learning-rate schedule: a linear warm-up to
// LR over Warmup steps, then a cosine decay that reaches a tenth of LR at
// step DecaySteps (0: constant after the warm-up).
type Schedule struct {
	LR         float64
	Warmup     int
	DecaySteps int
	// AutoWarmup and AutoDecay derive Warmup and DecaySteps from the
	// run's length instead: a tenth of the steps (at most 20 when
	// pretraining) and the number of steps.
	AutoWarmup, AutoDecay bool
}

// maxAutoWarmup caps a pretraining run's derived warm-up.
const maxAutoWarmup = 20

// resolve fills in the derived settings for a run of steps steps whose
// derived warm-up is at most maxWarmup.
func (s Schedule) resolve(steps, maxWarmup int) Schedule {
	if s.AutoWarmup {
		s.Warmup, s.AutoWarmup = min(maxWarmup, steps/10), false
	}
	if s.AutoDecay {
		s.DecaySteps, s.AutoDecay = steps, false
	}
	return s
}

// TrainOptions are the built-in trainer's default options with the
// schedule's settings; the derived ones must have been resolved.
func (s Schedule) TrainOptions() train.Options {
	o := train.DefaultOptions()
	o.LearningRate, o.WarmupSteps, o.TotalSteps = s.LR, s.Warmup, s.DecaySteps
	return o
}
