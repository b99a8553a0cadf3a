package policy

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// Scripted is a model that answers from a script instead of a server: a
// test double of the model only, for tests and benchmarks of everything
// around it (harness, sandboxes, grading). It is safe for concurrent use
// when Reply is.
type Scripted struct {
	// Reply returns the assistant's message for a request; it sees the
	// whole conversation so far, so a script can branch on what the tools
	// returned. An error is returned by Complete as the server's.
	Reply func(ctx context.Context, req Request) (Message, error)
	// Name is reported as the model (default "scripted").
	Name  string
	calls atomic.Int64
}

// Complete answers req from the script.
func (s *Scripted) Complete(ctx context.Context, req Request) (*Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	start := time.Now()
	m, err := s.Reply(ctx, req)
	if err != nil {
		return nil, err
	}
	m.Role = "assistant"
	n := s.calls.Add(1)
	for i := range m.ToolCalls {
		if m.ToolCalls[i].ID == "" {
			m.ToolCalls[i].ID = fmt.Sprintf("call_%d_%d", n, i)
		}
	}
	finish := "stop"
	if len(m.ToolCalls) > 0 {
		finish = "tool_calls"
	}
	name := s.Name
	if name == "" {
		name = "scripted"
	}
	return &Response{
		ID: fmt.Sprintf("scripted-%d", n), Model: name, Message: m, FinishReason: finish,
		WeightsVersion: name, Attempts: 1, Started: start, Duration: time.Since(start),
	}, nil
}

// Calls is the number of completions answered so far.
func (s *Scripted) Calls() int64 { return s.calls.Load() }

// Turn is the number of assistant replies in req's conversation: 0 for the
// first request of an episode.
func Turn(req Request) int {
	n := 0
	for _, m := range req.Messages {
		if m.Role == "assistant" {
			n++
		}
	}
	return n
}
