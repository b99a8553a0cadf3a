package trajectory

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func intp(i int) *int { return &i }

// example is the trajectory in testdata/example.jsonl: a two-turn episode
// whose weights changed between turns, then a summarisation that breaks the
// token prefix.
func example() *Trajectory {
	t0 := time.Date(2025, 7, 1, 9, 30, 0, 123456789, time.UTC)
	return &Trajectory{
		Version: Version,
		ID:      "run1-fix-date-parse-3",
		TaskID:  "fix-date-parse",
		Sample:  3,
		GroupID: "run1/step42/fix-date-parse",
		Status:  StatusOK,
		Reward:  0.9,
		RewardParts: map[string]float64{
			"tests":          1,
			"length_penalty": -0.1,
		},
		Flags: []Flag{{Name: "environment_probing", Evidence: "ran `cat /proc/1/cgroup`", Turn: 0}},
		Turns: []Turn{
			{
				Index: 0,
				Messages: []Message{
					{Role: "assistant", Content: "Let me look at the test.", ToolCalls: []ToolCall{
						{ID: "call_1", Name: "read_file", Arguments: `{"path":"date_test.go"}`, Valid: true},
						{ID: "call_2", Name: "run_terminal_cmd", Arguments: `{"command":"cat /proc/1/cgroup"`, Valid: false},
					}},
					{Role: "tool", ToolCallID: "call_1", Name: "read_file", Content: "package date\n\nfunc TestParse(t *testing.T) { if a < b && c > d {} }\n"},
					{Role: "tool", ToolCallID: "call_2", Name: "run_terminal_cmd", Content: "error: arguments are not valid JSON"},
				},
				PromptTokenIDs:     []int32{1, 2, 3, 4},
				CompletionTokenIDs: []int32{5, 6, 7},
				CompletionLogprobs: []float32{-0.25, -1.5, -0.0078125},
				WeightsVersion:     "v41",
				FinishReason:       "tool_calls",
				Observations: []Observation{
					{ToolCallID: "call_1", Tool: "read_file", Output: "package date\n…", DurationMS: 0.4},
					{ToolCallID: "call_2", Tool: "run_terminal_cmd", Error: "arguments are not valid JSON", DurationMS: 0},
				},
				Started:    t0.Add(2 * time.Second),
				DurationMS: 812.5,
			},
			{
				Index: 1,
				Messages: []Message{
					{Role: "assistant", ToolCalls: []ToolCall{
						{ID: "call_3", Name: "run_terminal_cmd", Arguments: `{"command":"go test ./..."}`, Valid: true},
					}},
					{Role: "tool", ToolCallID: "call_3", Name: "run_terminal_cmd", Content: "ok  \texample.com/date\t0.01s\n"},
				},
				PromptTokenIDs:     []int32{1, 2, 3, 4, 5, 6, 7, 8, 9},
				CompletionTokenIDs: []int32{10, 11},
				CompletionLogprobs: []float32{-0.5, -2},
				WeightsVersion:     "v42",
				FinishReason:       "tool_calls",
				Observations: []Observation{
					{ToolCallID: "call_3", Tool: "run_terminal_cmd", Output: "ok  \texample.com/date\t0.01s\n", ExitCode: intp(0), DurationMS: 1520.25},
				},
				Started:    t0.Add(3 * time.Second),
				DurationMS: 300,
			},
			{
				Index: 2,
				Messages: []Message{
					{Role: "assistant", Content: "Fixed: the layout used 01 for the day."},
				},
				PromptTokenIDs:     []int32{1, 2, 20, 21},
				CompletionTokenIDs: []int32{22, 23, 2},
				WeightsVersion:     "v42",
				PrefixBreak:        true,
				FinishReason:       "stop",
				Started:            t0.Add(5 * time.Second),
				DurationMS:         120,
				Summary:            true,
			},
		},
		Started:  t0,
		Finished: t0.Add(7*time.Second + 500*time.Millisecond),
		Timings:  map[string]float64{"sandbox_create": 0.21, "model": 1.2325, "tools": 1.52065, "grade": 2.5},
		Sandbox:  Sandbox{Backend: "local", Image: "host", Persona: "dana", ID: "sb-7f3a"},
		Model:    Model{Endpoint: "http://127.0.0.1:8000/v1", Name: "qwen3-8b", WeightsVersions: []string{"v41", "v42"}},
		Metadata: map[string]string{"suite": "bundled", "run": "run1"},
	}
}

// failed is a minimal infra_error trajectory.
func failed() *Trajectory {
	return &Trajectory{
		Version:  Version,
		TaskID:   "fix-date-parse",
		Sample:   0,
		Status:   StatusInfraError,
		Error:    "create sandbox: no space left on device",
		Started:  time.Date(2025, 7, 1, 9, 30, 0, 0, time.UTC),
		Finished: time.Date(2025, 7, 1, 9, 30, 1, 0, time.UTC),
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*Trajectory)
		want   string // substring of the error; "" for valid
	}{
		{"example is valid", func(*Trajectory) {}, ""},
		{"unknown status", func(tr *Trajectory) { tr.Status = "done" }, `status: unknown status "done"`},
		{"empty status", func(tr *Trajectory) { tr.Status = "" }, `status: unknown status ""`},
		{"version zero", func(tr *Trajectory) { tr.Version = 0 }, "version: 0 is not a known version"},
		{"version too new", func(tr *Trajectory) { tr.Version = Version + 1 }, "version: 2 is not a known version"},
		{"logprobs shorter than completion", func(tr *Trajectory) { tr.Turns[1].CompletionLogprobs = []float32{-1} },
			"turns[1].completion_logprobs: 1 logprobs for 2 completion tokens"},
		{"logprob not finite", func(tr *Trajectory) { tr.Turns[0].CompletionLogprobs[2] = float32(math.Inf(-1)) },
			"turns[0].completion_logprobs[2]: -Inf is not finite"},
		{"non-ok without error", func(tr *Trajectory) { tr.Status = StatusTimeout }, `error: empty for status "timeout"`},
		{"reward NaN", func(tr *Trajectory) { tr.Reward = math.NaN() }, "reward: NaN is not finite"},
		{"reward part infinite", func(tr *Trajectory) { tr.RewardParts["tests"] = math.Inf(1) }, `reward_parts["tests"]: +Inf is not finite`},
		{"timing NaN", func(tr *Trajectory) { tr.Timings["model"] = math.NaN() }, `timings["model"]: NaN is not finite`},
		{"ok without turns", func(tr *Trajectory) { tr.Turns = nil }, "turns: an ok trajectory needs at least one turn"},
		{"failed without turns is fine", func(tr *Trajectory) { tr.Status, tr.Error, tr.Turns = StatusPolicyError, "no reply", nil }, ""},
		{"empty task id", func(tr *Trajectory) { tr.TaskID = "" }, "task_id: empty"},
		{"negative sample", func(tr *Trajectory) { tr.Sample = -1 }, "sample: -1 is negative"},
		{"unmarked prefix break", func(tr *Trajectory) { tr.Turns[2].PrefixBreak = false },
			"turns[2].prefix_break: false, but prompt_token_ids does not begin with turns[1]'s"},
		{"changed token in prefix", func(tr *Trajectory) { tr.Turns[1].PromptTokenIDs[5] = 99 }, "turns[1].prefix_break"},
		{"no token ids, no prefix check", func(tr *Trajectory) {
			for i := range tr.Turns {
				tr.Turns[i].PromptTokenIDs, tr.Turns[i].CompletionTokenIDs, tr.Turns[i].CompletionLogprobs = nil, nil, nil
			}
		}, ""},
		{"observation duration NaN", func(tr *Trajectory) { tr.Turns[0].Observations[1].DurationMS = math.NaN() },
			"turns[0].observations[1].duration_ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := example()
			tt.modify(tr)
			err := tr.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Validate: %v, want nil", err)
			case tt.want == "":
			case err == nil:
				t.Fatalf("Validate: nil, want an error containing %q", tt.want)
			case !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want):
				t.Fatalf("Validate: %v, want ErrInvalid containing %q", err, tt.want)
			}
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	tr := example()
	tr.Status = "weird"
	tr.Reward = math.NaN()
	tr.Turns[1].CompletionLogprobs = nil
	tr.Turns[0].CompletionLogprobs = []float32{0}
	err := tr.Validate()
	for _, want := range []string{"status:", "reward:", "turns[0].completion_logprobs:"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v, want it to mention %q", err, want)
		}
	}
}

func TestTrainable(t *testing.T) {
	for _, tt := range []struct {
		s    Status
		want bool
	}{
		{StatusOK, true}, {StatusInfraError, false}, {StatusTimeout, false}, {StatusPolicyError, false}, {"", false},
	} {
		if got := tt.s.Trainable(); got != tt.want {
			t.Errorf("%q.Trainable() = %v, want %v", tt.s, got, tt.want)
		}
	}
}

func TestPrefixOf(t *testing.T) {
	turn := &Turn{PromptTokenIDs: []int32{1, 2}, CompletionTokenIDs: []int32{3}}
	for _, tt := range []struct {
		prompt []int32
		want   bool
	}{
		{[]int32{1, 2, 3}, true},
		{[]int32{1, 2, 3, 4, 5}, true},
		{[]int32{1, 2}, false},
		{[]int32{1, 2, 4, 3}, false},
		{[]int32{9, 2, 3, 4}, false},
		{nil, false},
	} {
		if got := turn.PrefixOf(tt.prompt); got != tt.want {
			t.Errorf("PrefixOf(%v) = %v, want %v", tt.prompt, got, tt.want)
		}
	}
}

func TestKey(t *testing.T) {
	if got := example().Key(); got != "fix-date-parse/3" {
		t.Errorf("Key() = %q", got)
	}
}
