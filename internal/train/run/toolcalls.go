package run

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/verisim/verisim/internal/engine/generate"
	"github.com/verisim/verisim/internal/engine/model"
	"github.com/verisim/verisim/internal/engine/tokenizer"
	"github.com/verisim/verisim/internal/task"
	"github.com/verisim/verisim/internal/train/data"
)

// CallRate counts sampled replies by the tool calls they hold.
type CallRate struct {
	Samples int
	// Opened counts replies with a <tool_call> tag; WellFormed those with
	// at least one call and no malformed block; KnownTools the
	// well-formed ones whose calls all name an agent tool.
	Opened, WellFormed, KnownTools int
}

// WellFormedRate is the fraction of samples with well-formed tool calls.
func (c CallRate) WellFormedRate() float64 {
	return float64(c.WellFormed) / float64(max(1, c.Samples))
}

func (c CallRate) String() string {
	return fmt.Sprintf("%d samples: %d open a tool call, %d well-formed (%.0f%%), %d of those name only known tools",
		c.Samples, c.Opened, c.WellFormed, 100*c.WellFormedRate(), c.KnownTools)
}

// evalPrompts are the prompts the agent gives the model at the start of
// each task, tokenised with the generation prompt.
func evalPrompts(tok *tokenizer.Tokenizer, tasks []*task.Task) [][]int32 {
	tools := data.AgentTools()
	var out [][]int32
	for _, t := range tasks {
		out = append(out, tok.Encode(generate.RenderChat(data.AgentPrompt(t), tools, true)))
	}
	return out
}

// toolCallEval samples replies to prompts and counts those with
// well-formed tool calls.
type toolCallEval struct {
	prompts     [][]int32
	samples     int
	maxTokens   int
	temperature float64
	seed        uint64
}

// run samples the replies of m to every prompt and counts them
// (generate.ParseToolCalls finds at least one call and no malformed
// block). The samples are seeded: the same model gives the same counts.
func (e toolCallEval) run(ctx context.Context, m *model.Model, tok *tokenizer.Tokenizer) (CallRate, error) {
	var known []string
	for _, t := range data.AgentTools() {
		known = append(known, t.Name)
	}
	var c CallRate
	for i, p := range e.prompts {
		for j := range e.samples {
			seed := e.seed*1000 + uint64(i*e.samples+j)
			res, err := generate.Generate(ctx, m, tok, p, generate.Params{Temperature: e.temperature, MaxTokens: e.maxTokens, Seed: &seed}, nil)
			if err != nil {
				return c, fmt.Errorf("evaluate tool calls: %w", err)
			}
			c.Samples++
			if strings.Contains(res.Text, tokenizer.ToolCall) {
				c.Opened++
			}
			_, calls, malformed := generate.ParseToolCalls(res.Text)
			if len(calls) > 0 && len(malformed) == 0 {
				c.WellFormed++
				if !slices.ContainsFunc(calls, func(tc generate.ToolCall) bool { return !slices.Contains(known, tc.Name) }) {
					c.KnownTools++
				}
			}
		}
	}
	return c, nil
}
