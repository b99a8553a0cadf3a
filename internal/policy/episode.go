package policy

import (
	"slices"

	"github.com/verisim/verisim/internal/trajectory"
)

// Episode turns one episode's responses into trajectory turns, numbering
// them and marking where token continuity breaks. It is for one goroutine;
// the zero value is ready to use.
type Episode struct {
	n        int
	prev     trajectory.Turn // only its token ids are kept
	versions []string
}

// Turn converts resp, the answer to the episode's next model call, into a
// trajectory turn whose Messages hold the assistant's reply (the caller
// appends tool results and observations). PrefixBreak is set when both this
// prompt's ids and the previous turn's ids are known and this prompt does
// not begin with the previous prompt and completion token for token — a
// chat template that drops earlier reasoning, a summarised history. With
// ids missing on either side a break cannot be seen and is not reported.
//
// Tool calls come back with Valid false: whether arguments match a tool's
// schema is the harness's to decide.
func (e *Episode) Turn(resp *Response) trajectory.Turn {
	t := trajectory.Turn{
		Index:              e.n,
		Messages:           []trajectory.Message{resp.Message.trajectory()},
		PromptTokenIDs:     slices.Clone(resp.PromptTokenIDs),
		CompletionTokenIDs: slices.Clone(resp.CompletionTokenIDs),
		CompletionLogprobs: slices.Clone(resp.Logprobs),
		WeightsVersion:     resp.WeightsVersion,
		FinishReason:       resp.FinishReason,
		Started:            resp.Started,
		DurationMS:         float64(resp.Duration) / 1e6,
	}
	if len(t.CompletionLogprobs) != len(t.CompletionTokenIDs) {
		t.CompletionLogprobs = nil // unaligned logprobs cannot be trained on
	}
	prevKnown := len(e.prev.PromptTokenIDs)+len(e.prev.CompletionTokenIDs) > 0
	t.PrefixBreak = e.n > 0 && prevKnown && len(t.PromptTokenIDs) > 0 && !e.prev.PrefixOf(t.PromptTokenIDs)
	e.prev = trajectory.Turn{PromptTokenIDs: t.PromptTokenIDs, CompletionTokenIDs: t.CompletionTokenIDs}
	if v := t.WeightsVersion; v != "" && !slices.Contains(e.versions, v) {
		e.versions = append(e.versions, v)
	}
	e.n++
	return t
}

// WeightsVersions lists, in order of first use, the weights versions of the
// turns converted so far, for trajectory.Model.WeightsVersions.
func (e *Episode) WeightsVersions() []string { return slices.Clone(e.versions) }

func (m Message) trajectory() trajectory.Message {
	out := trajectory.Message{Role: m.Role, Content: m.Content, Name: m.Name, ToolCallID: m.ToolCallID}
	for _, tc := range m.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, trajectory.ToolCall{ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments})
	}
	return out
}
