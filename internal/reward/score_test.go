package reward

import (
	"maps"
	"math"
	"testing"

	"github.com/verisim/verisim/internal/task"
	"github.com/verisim/verisim/internal/trajectory"
)

func TestScore(t *testing.T) {
	floor := -0.5
	passed := &Result{Pass: true, Passed: 2, Total: 2, Fraction: 1}
	half := &Result{Passed: 1, Failed: 1, Total: 2, Fraction: 0.5}
	flagged := []trajectory.Flag{
		{Name: FlagTestTampering, Turn: 1}, {Name: FlagTestTampering, Turn: 3},
		{Name: FlagNetworkAttempt, Turn: 2}, {Name: FlagNoEditReply, Turn: 4},
	}
	penalties := Shaping{FlagPenalty: map[string]float64{FlagTestTampering: 1, FlagNoEditReply: 0}, DefaultFlagPenalty: 0.2}
	tests := []struct {
		name   string
		status trajectory.Status
		res    *Result
		flags  []trajectory.Flag
		turns  int
		s      Shaping
		reward float64
		parts  map[string]float64
	}{
		{name: "pass", res: passed, reward: 1, parts: map[string]float64{"tests": 1}},
		{name: "fail", res: half, reward: 0, parts: map[string]float64{"tests": 0}},
		{name: "fraction", res: half, s: Shaping{Mode: task.RewardFraction}, reward: 0.5, parts: map[string]float64{"tests": 0.5}},
		{name: "not graded", res: nil, reward: 0, parts: map[string]float64{"tests": 0}},
		{
			name: "flags once per name, listed zero means none", res: passed, flags: flagged, s: penalties,
			reward: -0.2 /* tests 1, flags -1 and -0.2 */, parts: map[string]float64{"tests": 1, "flag.test_tampering": -1, "flag.network_attempt": -0.2},
		},
		{
			name: "length", res: passed, turns: 12, s: Shaping{LengthPenalty: 0.01, FreeTurns: 10},
			reward: 0.98, parts: map[string]float64{"tests": 1, "length": -0.02},
		},
		{
			name: "floor", res: half, flags: flagged, s: Shaping{DefaultFlagPenalty: 1, MinReward: &floor},
			reward: -0.5, parts: map[string]float64{"tests": 0, "flag.test_tampering": -1, "flag.network_attempt": -1, "flag.no_edit_reply": -1},
		},
		{name: "infra error is not scored", status: trajectory.StatusInfraError, res: passed, flags: flagged, s: penalties},
		{name: "timeout is not scored", status: trajectory.StatusTimeout, res: passed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := &trajectory.Trajectory{Status: tc.status, Flags: tc.flags, Turns: make([]trajectory.Turn, max(tc.turns, 1)),
				Reward: 7, RewardParts: map[string]float64{"stale": 7}}
			if tr.Status == "" {
				tr.Status = trajectory.StatusOK
			}
			if err := tc.s.Validate(); err != nil {
				t.Fatal(err)
			}
			Score(tr, tc.res, tc.s)
			if math.Abs(tr.Reward-tc.reward) > 1e-12 || !maps.Equal(tr.RewardParts, tc.parts) {
				t.Fatalf("reward %v parts %v, want %v %v", tr.Reward, tr.RewardParts, tc.reward, tc.parts)
			}
		})
	}
}

func TestShapingValidate(t *testing.T) {
	nan := math.NaN()
	for _, s := range []Shaping{
		{Mode: "best"},
		{FlagPenalty: map[string]float64{"x": math.Inf(1)}},
		{LengthPenalty: nan},
		{MinReward: &nan},
		{FreeTurns: -1},
	} {
		if s.Validate() == nil {
			t.Errorf("Validate accepted %+v", s)
		}
	}
}
