package policy

import (
	"slices"
	"testing"
	"time"

	"github.com/verisim/verisim/internal/trajectory"
)

func TestEpisodePrefixBreak(t *testing.T) {
	type step struct {
		prompt, completion []int32
		version            string
		wantBreak          bool
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"prompt extends previous prompt and completion", []step{
			{[]int32{1, 2, 3}, []int32{4, 5}, "v1", false},
			{[]int32{1, 2, 3, 4, 5, 6, 7}, []int32{8}, "v1", false},
			{[]int32{1, 2, 3, 4, 5, 6, 7, 8, 9}, []int32{10}, "v2", false},
		}},
		// A template that drops earlier reasoning: turn 0's completion
		// <think>(4 5)</think> answer(6) is re-rendered as just 6.
		{"template drops reasoning", []step{
			{[]int32{1, 2}, []int32{4, 5, 6}, "v1", false},
			{[]int32{1, 2, 6, 7}, []int32{9}, "v1", true},
			{[]int32{1, 2, 6, 7, 9, 11}, []int32{12}, "v1", false},
		}},
		{"prompt shorter than history", []step{
			{[]int32{1, 2, 3}, []int32{4}, "", false},
			{[]int32{1, 2}, []int32{5}, "", true},
		}},
		{"ids missing on one side: no break claimed", []step{
			{nil, nil, "v1", false},
			{[]int32{7, 8}, []int32{9}, "v1", false},
			{nil, nil, "v1", false},
			{[]int32{1}, []int32{2}, "v1", false}, // the turn before carries no ids
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e Episode
			tr := trajectory.Trajectory{Version: trajectory.Version, TaskID: "t", Status: trajectory.StatusOK}
			for i, s := range tt.steps {
				resp := &Response{
					Message:            Message{Role: "assistant", Content: "x", ToolCalls: []ToolCall{{ID: "c", Name: "grep", Arguments: "{"}}},
					PromptTokenIDs:     s.prompt,
					CompletionTokenIDs: s.completion,
					Logprobs:           make([]float32, len(s.completion)),
					WeightsVersion:     s.version,
					FinishReason:       "tool_calls",
					Started:            time.Unix(100, 0),
					Duration:           1500 * time.Microsecond,
				}
				turn := e.Turn(resp)
				if turn.Index != i || turn.PrefixBreak != s.wantBreak {
					t.Errorf("turn %d: index %d prefix_break %v, want %d %v", i, turn.Index, turn.PrefixBreak, i, s.wantBreak)
				}
				if turn.DurationMS != 1.5 || turn.FinishReason != "tool_calls" || turn.Messages[0].ToolCalls[0].Arguments != "{" {
					t.Errorf("turn %d fields: %+v", i, turn)
				}
				tr.Turns = append(tr.Turns, turn)
			}
			// The trajectory package's own continuity rule agrees with ours.
			if err := tr.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}

func TestEpisodeWeightsVersionsAndCopies(t *testing.T) {
	var e Episode
	ids := []int32{1, 2}
	for _, v := range []string{"v1", "v2", "v1", "", "v3"} {
		e.Turn(&Response{PromptTokenIDs: ids, WeightsVersion: v})
	}
	if got, want := e.WeightsVersions(), []string{"v1", "v2", "v3"}; !slices.Equal(got, want) {
		t.Errorf("versions = %v, want %v", got, want)
	}
	var e2 Episode
	turn := e2.Turn(&Response{PromptTokenIDs: ids, CompletionTokenIDs: []int32{3}, Logprobs: []float32{-1, -2}})
	ids[0] = 99
	if turn.PromptTokenIDs[0] != 1 {
		t.Error("turn shares the response's id slice")
	}
	if turn.CompletionLogprobs != nil {
		t.Errorf("unaligned logprobs kept: %v", turn.CompletionLogprobs)
	}
}
