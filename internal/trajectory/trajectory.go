package trajectory

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// Version is the schema version this package writes and the newest it reads.
// Adding a field keeps the version; changing or removing one bumps it.
const Version = 1

// ErrInvalid is wrapped by every error Validate returns.
var ErrInvalid = errors.New("invalid trajectory")

// Status says how an episode ended. Only StatusOK episodes carry their
// reward into training: an infrastructure failure scored as 0 would bias the
// group-relative advantages of the episodes that did run.
type Status string

const (
	StatusOK          Status = "ok"           // the episode ran to an end and was graded
	StatusInfraError  Status = "infra_error"  // sandbox, model server or grader failed
	StatusTimeout     Status = "timeout"      // the episode ran out of wall time
	StatusPolicyError Status = "policy_error" // the model's output could not be used
)

// Trainable reports whether an episode with this status may be trained on.
func (s Status) Trainable() bool { return s == StatusOK }

func (s Status) known() bool {
	switch s {
	case StatusOK, StatusInfraError, StatusTimeout, StatusPolicyError:
		return true
	}
	return false
}

// Trajectory is the record of one episode. docs/trajectory-format.md is the
// specification of its encoding; keep the two in step.
type Trajectory struct {
	Version     int                `json:"version"`
	ID          string             `json:"id,omitzero"`
	TaskID      string             `json:"task_id"`
	Sample      int                `json:"sample"`
	GroupID     string             `json:"group_id,omitzero"`
	Status      Status             `json:"status"`
	Error       string             `json:"error,omitzero"`
	Reward      float64            `json:"reward"`
	RewardParts map[string]float64 `json:"reward_parts,omitzero"`
	Flags       []Flag             `json:"flags,omitzero"`
	Turns       []Turn             `json:"turns,omitzero"`
	Started     time.Time          `json:"started"`
	Finished    time.Time          `json:"finished"`
	Timings     map[string]float64 `json:"timings,omitzero"` // seconds
	Sandbox     Sandbox            `json:"sandbox,omitzero"`
	Model       Model              `json:"model,omitzero"`
	Metadata    map[string]string  `json:"metadata,omitzero"`
}

// Key is the identity of an episode within a run: "task_id/sample".
func (t *Trajectory) Key() string { return Key(t.TaskID, t.Sample) }

// Key returns the key of sample number sample of task taskID, as
// Trajectory.Key and Finished spell it.
func Key(taskID string, sample int) string { return fmt.Sprintf("%s/%d", taskID, sample) }

// Flag is a monitor's finding, such as "test_tampering".
type Flag struct {
	Name     string `json:"name"`
	Evidence string `json:"evidence,omitzero"`
	Turn     int    `json:"turn"` // index of the turn with the evidence; -1 for the episode as a whole
}

// Sandbox describes the machine the episode ran in.
type Sandbox struct {
	Backend string `json:"backend,omitzero"`
	Image   string `json:"image,omitzero"`
	Persona string `json:"persona,omitzero"`
	ID      string `json:"id,omitzero"`
}

// Model describes the policy that acted.
type Model struct {
	Endpoint string `json:"endpoint,omitzero"`
	Name     string `json:"name,omitzero"`
	// WeightsVersions lists, in order of first use, every weights version
	// that produced a completion in this episode.
	WeightsVersions []string `json:"weights_versions,omitzero"`
}

// Turn is one model call and the tool calls it led to.
type Turn struct {
	Index int `json:"index"`
	// Messages are the chat messages this turn added to the conversation:
	// the assistant's reply, then the tool results, in order.
	Messages           []Message `json:"messages,omitzero"`
	PromptTokenIDs     []int32   `json:"prompt_token_ids,omitzero"`
	CompletionTokenIDs []int32   `json:"completion_token_ids,omitzero"`
	// CompletionLogprobs holds the sampled tokens' log-probabilities under
	// the serving weights, one per completion token, when the server gave them.
	CompletionLogprobs []float32 `json:"completion_logprobs,omitzero"`
	WeightsVersion     string    `json:"weights_version,omitzero"`
	// PrefixBreak is set when PromptTokenIDs does not begin with the previous
	// turn's prompt and completion token for token (a chat template that
	// drops reasoning, a summarisation); see Turn.PrefixOf.
	PrefixBreak  bool          `json:"prefix_break,omitzero"`
	FinishReason string        `json:"finish_reason,omitzero"`
	Observations []Observation `json:"observations,omitzero"`
	Started      time.Time     `json:"started"`
	DurationMS   float64       `json:"duration_ms"`
	Summary      bool          `json:"summary,omitzero"` // a self-summarisation segment
}

// PrefixOf reports whether prompt begins with t's prompt and completion
// token ids, that is whether a turn with that prompt extends t.
func (t *Turn) PrefixOf(prompt []int32) bool {
	p, c := t.PromptTokenIDs, t.CompletionTokenIDs
	if len(prompt) < len(p)+len(c) {
		return false
	}
	return equalIDs(prompt[:len(p)], p) && equalIDs(prompt[len(p):len(p)+len(c)], c)
}

func equalIDs(a, b []int32) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Message is one chat message in the OpenAI chat-completions shape.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content,omitzero"`
	Name       string     `json:"name,omitzero"`
	ToolCallID string     `json:"tool_call_id,omitzero"`
	ToolCalls  []ToolCall `json:"tool_calls,omitzero"`
}

// ToolCall is a tool call as the model produced it.
type ToolCall struct {
	ID   string `json:"id,omitzero"`
	Name string `json:"name"`
	// Arguments is the raw text the model produced, valid JSON or not.
	Arguments string `json:"arguments"`
	Valid     bool   `json:"valid"` // Arguments parsed and matched the tool's schema
}

// Observation is the result of one tool call.
type Observation struct {
	ToolCallID string  `json:"tool_call_id,omitzero"`
	Tool       string  `json:"tool"`
	Output     string  `json:"output,omitzero"`
	Truncated  bool    `json:"truncated,omitzero"`
	Error      string  `json:"error,omitzero"`
	ExitCode   *int    `json:"exit_code,omitzero"` // commands only
	DurationMS float64 `json:"duration_ms"`
}

// Validate reports every way t breaks the rules of the format, naming the
// field (and turn) of each. Writers refuse, and readers reject, a record that
// does not validate. The error wraps ErrInvalid.
func (t *Trajectory) Validate() error {
	var p []string
	add := func(format string, args ...any) { p = append(p, fmt.Sprintf(format, args...)) }

	if t.Version < 1 || t.Version > Version {
		add("version: %d is not a known version (1 to %d)", t.Version, Version)
	}
	if t.TaskID == "" {
		add("task_id: empty")
	}
	if t.Sample < 0 {
		add("sample: %d is negative", t.Sample)
	}
	switch {
	case !t.Status.known():
		add("status: unknown status %q", t.Status)
	case t.Status != StatusOK && t.Error == "":
		add("error: empty for status %q; say why the episode is not ok", t.Status)
	case t.Status == StatusOK && len(t.Turns) == 0:
		add("turns: an ok trajectory needs at least one turn")
	}
	if !finite(t.Reward) {
		add("reward: %v is not finite", t.Reward)
	}
	for _, k := range sortedKeys(t.RewardParts) {
		if !finite(t.RewardParts[k]) {
			add("reward_parts[%q]: %v is not finite", k, t.RewardParts[k])
		}
	}
	for _, k := range sortedKeys(t.Timings) {
		if !finite(t.Timings[k]) {
			add("timings[%q]: %v is not finite", k, t.Timings[k])
		}
	}
	for i := range t.Turns {
		turn := &t.Turns[i]
		if n, m := len(turn.CompletionLogprobs), len(turn.CompletionTokenIDs); n > 0 && n != m {
			add("turns[%d].completion_logprobs: %d logprobs for %d completion tokens", i, n, m)
		}
		for j, lp := range turn.CompletionLogprobs {
			if !finite(float64(lp)) {
				add("turns[%d].completion_logprobs[%d]: %v is not finite", i, j, lp)
				break
			}
		}
		if i > 0 && !turn.PrefixBreak && len(turn.PromptTokenIDs) > 0 {
			prev := &t.Turns[i-1]
			if len(prev.PromptTokenIDs)+len(prev.CompletionTokenIDs) > 0 && !prev.PrefixOf(turn.PromptTokenIDs) {
				add("turns[%d].prefix_break: false, but prompt_token_ids does not begin with turns[%d]'s prompt and completion", i, i-1)
			}
		}
		if !finite(turn.DurationMS) {
			add("turns[%d].duration_ms: %v is not finite", i, turn.DurationMS)
		}
		for j, o := range turn.Observations {
			if !finite(o.DurationMS) {
				add("turns[%d].observations[%d].duration_ms: %v is not finite", i, j, o.DurationMS)
			}
		}
	}
	if len(p) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalid, strings.Join(p, "; "))
	}
	return nil
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// inUTC sets every time in t to UTC, dropping monotonic clock readings, so
// that the wire format is in UTC and a decoded record compares equal to a
// re-decoded one.
func (t *Trajectory) inUTC() {
	t.Started = t.Started.UTC()
	t.Finished = t.Finished.UTC()
	for i := range t.Turns {
		t.Turns[i].Started = t.Turns[i].Started.UTC()
	}
}
