package reward

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/verisim/verisim/internal/task"
	"github.com/verisim/verisim/internal/trajectory"
)

// Shaping turns a grade and the monitors' flags into a reward. The zero
// value scores pass/fail with no penalties.
type Shaping struct {
	// Mode is task.RewardPass (default) or task.RewardFraction, usually the
	// task's grade.reward.
	Mode string
	// FlagPenalty is subtracted once for each flag name an episode carries,
	// however many times it was raised: the penalty is for the behaviour,
	// and a model that repeats it is not penalised past any honest score.
	// A name listed with 0 is not penalised. The sign is ignored.
	FlagPenalty map[string]float64
	// DefaultFlagPenalty applies to flag names FlagPenalty does not list.
	DefaultFlagPenalty float64
	// LengthPenalty is subtracted for each turn beyond FreeTurns.
	LengthPenalty float64
	FreeTurns     int
	// MinReward, when set, is the lowest reward; unset, penalties may take
	// the reward below 0, which is what separates a failed cheat from a
	// failed honest attempt in group-relative advantages.
	MinReward *float64
}

// Validate reports a Shaping that Score would have to guess about.
func (s Shaping) Validate() error {
	switch s.Mode {
	case "", task.RewardPass, task.RewardFraction:
	default:
		return fmt.Errorf("shaping: unknown reward mode %q", s.Mode)
	}
	bad := func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }
	for name, v := range s.FlagPenalty {
		if bad(v) {
			return fmt.Errorf("shaping: flag penalty for %s is %v", name, v)
		}
	}
	if bad(s.DefaultFlagPenalty) || bad(s.LengthPenalty) || (s.MinReward != nil && bad(*s.MinReward)) {
		return fmt.Errorf("shaping: penalties and MinReward must be finite")
	}
	if s.FreeTurns < 0 {
		return fmt.Errorf("shaping: negative FreeTurns %d", s.FreeTurns)
	}
	return nil
}

// Score sets t.Reward and t.RewardParts from the grade res (nil: not
// graded, a base of 0) and t.Flags: "tests" is the base, "flag.<name>"
// and "length" the (negative) penalties, and Reward their sum. An episode
// whose status is not ok gets neither: it is not trained on, and a score
// would only mislead a reader.
func Score(t *trajectory.Trajectory, res *Result, s Shaping) {
	if t.Status != trajectory.StatusOK {
		t.Reward, t.RewardParts = 0, nil
		return
	}
	parts := map[string]float64{"tests": base(res, s.Mode)}
	seen := map[string]bool{}
	for _, f := range t.Flags {
		if seen[f.Name] {
			continue
		}
		seen[f.Name] = true
		p, ok := s.FlagPenalty[f.Name]
		if !ok {
			p = s.DefaultFlagPenalty
		}
		if p != 0 {
			parts["flag."+f.Name] = -math.Abs(p)
		}
	}
	if extra := len(t.Turns) - s.FreeTurns; extra > 0 && s.LengthPenalty != 0 {
		parts["length"] = -math.Abs(s.LengthPenalty) * float64(extra)
	}
	// Summed in key order, so that the same parts always give the same
	// float.
	sum := 0.0
	for _, k := range slices.Sorted(maps.Keys(parts)) {
		sum += parts[k]
	}
	if s.MinReward != nil && sum < *s.MinReward {
		sum = *s.MinReward
	}
	t.Reward, t.RewardParts = sum, parts
}

func base(res *Result, mode string) float64 {
	switch {
	case res == nil:
		return 0
	case mode == task.RewardFraction:
		return res.Fraction
	case res.Pass:
		return 1
	}
	return 0
}
