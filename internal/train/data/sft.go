package data

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/verisim/verisim/internal/engine/generate"
	"github.com/verisim/verisim/internal/engine/tokenizer"
	"github.com/verisim/verisim/internal/train"
	"github.com/verisim/verisim/internal/trajectory"
)

// ErrNoTokenIDs reports a trajectory recorded without token ids (from a
// server that does not return them), which cannot be trained on token for
// token.
var ErrNoTokenIDs = errors.New("trajectory has no token ids")

// ReadTrajectories reads a trajectory file and returns one datum per
// unbroken token sequence of each trajectory whose status is ok; others
// are skipped. A sequence is a turn's prompt ids then its completion ids,
// extended by each later turn whose prompt begins with it (the usual case,
// see docs/trajectory-format.md, "Tokens across turns"); a turn whose
// prompt does not, or that is marked prefix_break, starts a new datum.
// Completion tokens weigh 1, prompt and tool-output tokens 0.
//
// Any record the trajectory reader rejects, a record cut short included,
// is an error naming its line, as is an ok trajectory with a turn that
// lacks token ids (wrapping ErrNoTokenIDs).
func ReadTrajectories(path string) ([]train.Datum, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read trajectories: %w", err)
	}
	defer f.Close()
	r := trajectory.NewReader(f)
	var out []train.Datum
	for {
		t, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read trajectories %s: %w", path, err)
		}
		if !t.Status.Trainable() {
			continue
		}
		ds, err := TrajectoryData(t)
		if err != nil {
			return nil, fmt.Errorf("read trajectories %s: line %d: %w", path, r.Line(), err)
		}
		out = append(out, ds...)
	}
}

// TrajectoryData turns one trajectory's turns into datums; see
// ReadTrajectories.
func TrajectoryData(t *trajectory.Trajectory) ([]train.Datum, error) {
	var out []train.Datum
	var cur train.Datum
	for i, turn := range t.Turns {
		if len(turn.PromptTokenIDs) == 0 || len(turn.CompletionTokenIDs) == 0 {
			return nil, fmt.Errorf("%s turn %d: %w (recorded from a server that does not return them?)", t.Key(), i, ErrNoTokenIDs)
		}
		p := turn.PromptTokenIDs
		if len(cur.Tokens) > 0 && (turn.PrefixBreak || !hasPrefix(p, cur.Tokens)) {
			out = append(out, cur)
			cur = train.Datum{}
		}
		cur = extend(cur, p[len(cur.Tokens):], 0)
		cur = extend(cur, turn.CompletionTokenIDs, 1)
	}
	if len(cur.Tokens) > 0 {
		out = append(out, cur)
	}
	return out, nil
}

func hasPrefix(s, prefix []int32) bool {
	return len(s) >= len(prefix) && slices.Equal(s[:len(prefix)], prefix)
}

// extend appends ids to d, each weighing w.
func extend(d train.Datum, ids []int32, w float32) train.Datum {
	d.Tokens = append(d.Tokens, ids...)
	for range ids {
		d.Weights = append(d.Weights, w)
	}
	return d
}

// ChatDatum renders a conversation with generate.RenderChat and returns its
// tokens with weight 1 on the assistant turns (their text, tool calls and
// closing <|im_end|>) and 0 elsewhere. It ends with the last assistant
// turn: what follows it is never trained on. Each assistant turn is tokenised
// apart from the prompt before it, exactly as the model sees a prompt
// rendered with the generation prompt and then produces its completion.
func ChatDatum(tok *tokenizer.Tokenizer, msgs []generate.Message, tools []generate.Tool) (train.Datum, error) {
	var d train.Datum
	done := "" // the text tokenised so far
	for i, m := range msgs {
		if m.Role != "assistant" {
			continue
		}
		prompt := generate.RenderChat(msgs[:i], tools, true)
		through := generate.RenderChat(msgs[:i+1], tools, false)
		if !strings.HasPrefix(prompt, done) || !strings.HasPrefix(through, prompt) {
			return train.Datum{}, fmt.Errorf("chat datum: message %d: the rendered conversation is not a prefix of its continuation", i)
		}
		completion, ok := strings.CutSuffix(through[len(prompt):], "\n")
		if !ok {
			return train.Datum{}, fmt.Errorf("chat datum: message %d: the rendered assistant turn does not end its line", i)
		}
		d = extend(d, tok.Encode(prompt[len(done):]), 0)
		d = extend(d, tok.Encode(completion), 1)
		done = prompt + completion
	}
	if len(d.Tokens) == 0 {
		return train.Datum{}, errors.New("chat datum: the conversation has no assistant message")
	}
	return d, nil
}
