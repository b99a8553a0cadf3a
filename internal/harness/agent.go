package harness

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/verisim/verisim/internal/policy"
	"github.com/verisim/verisim/internal/trajectory"
)

// DefaultSystemPrompt is the system prompt of an Agent whose Config sets
// none.
const DefaultSystemPrompt = `You are a coding agent working in a software repository. ` +
	`Use the tools to read the code, make the change the user asks for, and check it by running the relevant build or tests. ` +
	`Change files with the tools; do not describe edits instead of making them. ` +
	`Be terse. When the work is done, reply with a short summary of what you changed and call no tool.`

// DefaultMaxTurns is the turn budget of an Agent whose Config sets none.
const DefaultMaxTurns = 50

// Why an episode stopped, as Trajectory.Metadata[MetaStop] records it.
const (
	MetaStop = "stop"

	StopAnswer    = "answer"     // the model answered without calling a tool
	StopMaxTurns  = "max_turns"  // Config.MaxTurns model calls were made
	StopMaxTokens = "max_tokens" // Config.MaxTokens completion tokens were spent
	StopMaxWall   = "max_wall"   // Config.MaxWall passed (status timeout)
	StopDeadline  = "deadline"   // the caller's ctx deadline passed (status timeout)
)

// Flags the agent loop itself raises; the reward package's monitors add the
// others.
const (
	FlagMalformedToolCall = "malformed_tool_call"
	FlagNoEditReply       = "no_edit_reply"
)

// Model is what an Agent asks for completions; *policy.Client is one. A
// Model that also has Endpoint() and Model() methods, as *policy.Client
// does, is described in the trajectory.
type Model interface {
	Complete(ctx context.Context, req policy.Request) (*policy.Response, error)
}

// describedModel is the optional capability of a Model to name itself.
type describedModel interface {
	Endpoint() string
	Model() string
}

// Config configures an Agent. The zero value is usable.
type Config struct {
	// System is the system prompt (default DefaultSystemPrompt).
	System string
	// Tools are the tools offered to the model (default DefaultRegistry()).
	// The registry must not be changed while an episode runs.
	Tools *Registry
	// TaskID is written to the trajectory (default "adhoc").
	TaskID string

	// MaxTurns bounds the model calls of an episode (default
	// DefaultMaxTurns).
	MaxTurns int
	// MaxTokens bounds the completion tokens of an episode; 0 means no
	// bound. Each request asks for no more than what is left.
	MaxTokens int
	// MaxWall bounds an episode's wall time; 0 means no bound beyond ctx's.
	MaxWall time.Duration

	// Temperature and MaxCompletionTokens are sent with every request;
	// nil and 0 leave the server's defaults.
	Temperature         *float64
	MaxCompletionTokens int

	// OnTurn, when set, is called with each turn once it is recorded, on the
	// goroutine running the episode; it must not modify the turn.
	OnTurn func(trajectory.Turn)
}

// Agent runs episodes: system prompt and instruction to the model, the
// model's tool calls to a Workspace, their results back to the model, until
// it answers without calling a tool or a budget runs out. An Agent holds no
// episode state; Run may be called from many goroutines at once.
type Agent struct {
	model Model
	cfg   Config
	specs []policy.Tool
}

// NewAgent returns an agent that asks m for completions.
func NewAgent(m Model, cfg Config) (*Agent, error) {
	if m == nil {
		return nil, errors.New("new agent: nil model")
	}
	if cfg.MaxTurns < 0 || cfg.MaxTokens < 0 || cfg.MaxWall < 0 || cfg.MaxCompletionTokens < 0 {
		return nil, errors.New("new agent: negative budget")
	}
	if cfg.System == "" {
		cfg.System = DefaultSystemPrompt
	}
	if cfg.Tools == nil {
		cfg.Tools = DefaultRegistry()
	}
	if cfg.TaskID == "" {
		cfg.TaskID = "adhoc"
	}
	if cfg.MaxTurns == 0 {
		cfg.MaxTurns = DefaultMaxTurns
	}
	return &Agent{model: m, cfg: cfg, specs: cfg.Tools.Specs()}, nil
}

// errWallBudget is the cause of the context that MaxWall ends.
var errWallBudget = errors.New("agent wall-time budget ran out")

// Run runs one episode of instruction in ws and returns its trajectory,
// whatever the outcome: Status says how it ended, Error why when not ok, and
// Metadata[MetaStop] which end it reached. Reward is left for the grader.
// The error is non-nil only for a call that is wrong in itself (a nil
// workspace, an empty instruction).
func (a *Agent) Run(ctx context.Context, ws Workspace, instruction string) (*trajectory.Trajectory, error) {
	if ws == nil {
		return nil, errors.New("agent run: nil workspace")
	}
	if strings.TrimSpace(instruction) == "" {
		return nil, errors.New("agent run: empty instruction")
	}
	e := &episode{
		agent: a,
		ws:    ws,
		traj: &trajectory.Trajectory{
			Version:  trajectory.Version,
			TaskID:   a.cfg.TaskID,
			Started:  time.Now(),
			Metadata: map[string]string{},
		},
		messages: []policy.Message{
			{Role: "system", Content: a.cfg.System},
			{Role: "user", Content: instruction},
		},
	}
	if d, ok := a.model.(describedModel); ok {
		e.traj.Model.Endpoint, e.traj.Model.Name = d.Endpoint(), d.Model()
	}
	runCtx := ctx
	if a.cfg.MaxWall > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeoutCause(ctx, a.cfg.MaxWall, errWallBudget)
		defer cancel()
	}
	e.finish(e.loop(ctx, runCtx))
	return e.traj, nil
}

// outcome is how an episode ended.
type outcome struct {
	status trajectory.Status
	stop   string // for Metadata[MetaStop]; empty when no budget or answer ended it
	err    error  // why, when status is not ok
}

// episode is the state of one Run.
type episode struct {
	agent    *Agent
	ws       Workspace
	traj     *trajectory.Trajectory
	ep       policy.Episode
	messages []policy.Message

	tokens    int  // completion tokens spent
	toolCalls int  // tool calls made
	touched   bool // a call may have changed the workspace
	modelTime time.Duration
	toolTime  time.Duration
}

func (e *episode) loop(parent, ctx context.Context) outcome {
	cfg := &e.agent.cfg
	for turn := 0; ; turn++ {
		if out, ended := e.ctxEnded(parent, ctx); ended {
			return out
		}
		if turn >= cfg.MaxTurns {
			return outcome{status: trajectory.StatusOK, stop: StopMaxTurns}
		}
		if cfg.MaxTokens > 0 && e.tokens >= cfg.MaxTokens {
			return outcome{status: trajectory.StatusOK, stop: StopMaxTokens}
		}

		req := policy.Request{
			Messages:    e.messages,
			Tools:       e.agent.specs,
			Temperature: cfg.Temperature,
			MaxTokens:   e.completionLimit(),
		}
		start := time.Now()
		resp, err := e.agent.model.Complete(ctx, req)
		e.modelTime += time.Since(start)
		if err != nil {
			if out, ended := e.ctxEnded(parent, ctx); ended {
				return out
			}
			return modelFailure(turn, err)
		}
		e.tokens += completionTokens(resp)
		calls := resp.Message.ToolCalls
		nameCalls(calls, turn)
		t := e.ep.Turn(resp)
		e.messages = append(e.messages, resp.Message)

		if len(calls) == 0 {
			if !e.touched {
				e.traj.Flags = append(e.traj.Flags, trajectory.Flag{
					Name:     FlagNoEditReply,
					Evidence: fmt.Sprintf("answered after %d tool calls, none of which could have changed the workspace: %q", e.toolCalls, clip(resp.Message.Content, 300)),
					Turn:     t.Index,
				})
			}
			e.record(t)
			return outcome{status: trajectory.StatusOK, stop: StopAnswer}
		}

		start = time.Now()
		results, durations, err := callEach(ctx, e.ws, cfg.Tools, calls)
		e.toolTime += time.Since(start)
		e.toolCalls += len(calls)
		if err != nil {
			// The failed calls' results are not the model's doing: keep the
			// assistant's message, show it no observations.
			e.record(t)
			if out, ended := e.ctxEnded(parent, ctx); ended {
				return out
			}
			return outcome{status: trajectory.StatusInfraError, err: fmt.Errorf("turn %d: tool calls: %w", turn, err)}
		}
		for i, c := range calls {
			e.observe(&t, i, c, results[i], durations[i])
		}
		e.record(t)
	}
}

// observe records the result of the i-th tool call of turn t and queues it
// for the model.
func (e *episode) observe(t *trajectory.Turn, i int, c policy.ToolCall, res Result, d time.Duration) {
	t.Messages[0].ToolCalls[i].Valid = !res.Malformed
	text := res.Text()
	t.Messages = append(t.Messages, trajectory.Message{Role: "tool", Content: text, ToolCallID: c.ID})
	t.Observations = append(t.Observations, trajectory.Observation{
		ToolCallID: c.ID,
		Tool:       c.Name,
		Output:     res.Output,
		Truncated:  res.Truncated,
		Error:      res.Error,
		DurationMS: float64(d) / 1e6,
	})
	e.messages = append(e.messages, policy.Message{Role: "tool", Content: text, ToolCallID: c.ID})
	if res.Malformed {
		e.traj.Flags = append(e.traj.Flags, trajectory.Flag{
			Name:     FlagMalformedToolCall,
			Evidence: fmt.Sprintf("%s(%s): %s", c.Name, clip(c.Arguments, 200), res.Error),
			Turn:     t.Index,
		})
		return
	}
	if res.Error == "" && mayWrite[c.Name] {
		e.touched = true
	}
}

// mayWrite names the default tools whose successful call may change the
// workspace. A command counts because the harness cannot see what it did:
// no_edit_reply prefers missing a case to accusing a model that edited with
// sed. A user's own tools never count.
var mayWrite = map[string]bool{
	"write_file": true, "edit_file": true, "delete_file": true, "run_terminal_cmd": true,
}

func (e *episode) record(t trajectory.Turn) {
	e.traj.Turns = append(e.traj.Turns, t)
	if e.agent.cfg.OnTurn != nil {
		e.agent.cfg.OnTurn(t)
	}
}

// completionLimit is the max_tokens of the next request: the per-request
// limit, lowered to what is left of the episode's budget.
func (e *episode) completionLimit() int {
	limit := e.agent.cfg.MaxCompletionTokens
	if budget := e.agent.cfg.MaxTokens; budget > 0 {
		left := budget - e.tokens
		if limit == 0 || left < limit {
			limit = left
		}
	}
	return limit
}

// ctxEnded reports whether the episode's context has ended, and how that
// counts: the wall-time budget or the caller's deadline is a timeout; a
// cancellation is an interruption, not the policy's doing.
func (e *episode) ctxEnded(parent, ctx context.Context) (outcome, bool) {
	if ctx.Err() == nil {
		return outcome{}, false
	}
	switch {
	case parent.Err() == nil && errors.Is(context.Cause(ctx), errWallBudget):
		return outcome{status: trajectory.StatusTimeout, stop: StopMaxWall,
			err: fmt.Errorf("wall-time budget of %s ran out", e.agent.cfg.MaxWall)}, true
	case errors.Is(parent.Err(), context.DeadlineExceeded):
		return outcome{status: trajectory.StatusTimeout, stop: StopDeadline,
			err: fmt.Errorf("episode deadline passed: %w", context.Cause(parent))}, true
	}
	return outcome{status: trajectory.StatusInfraError,
		err: fmt.Errorf("episode interrupted: %w", context.Cause(ctx))}, true
}

// modelFailure classifies an error from Model.Complete. A request the
// server refused as such (400, 413, 422: typically a context the model's own
// output overflowed) and an unusable answer are the policy's; an
// unreachable or failing server, and a refusal that means the endpoint or
// credentials are wrong (401, 403, 404, 405), are the infrastructure's.
func modelFailure(turn int, err error) outcome {
	err = fmt.Errorf("turn %d: %w", turn, err)
	var se *policy.StatusError
	switch {
	case errors.Is(err, policy.ErrUnavailable):
	case errors.Is(err, policy.ErrBadResponse):
		return outcome{status: trajectory.StatusPolicyError, err: err}
	case errors.As(err, &se) && se.Code >= 400 && se.Code < 500:
		switch se.Code {
		case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusMethodNotAllowed:
		default:
			return outcome{status: trajectory.StatusPolicyError, err: err}
		}
	}
	return outcome{status: trajectory.StatusInfraError, err: err}
}

func (e *episode) finish(out outcome) {
	t := e.traj
	t.Finished = time.Now()
	t.Status = out.status
	if out.err != nil {
		t.Error = out.err.Error()
	}
	if out.stop != "" {
		t.Metadata[MetaStop] = out.stop
	}
	t.Timings = map[string]float64{
		"model": e.modelTime.Seconds(),
		"tools": e.toolTime.Seconds(),
		"total": t.Finished.Sub(t.Started).Seconds(),
	}
	t.Model.WeightsVersions = e.ep.WeightsVersions()
}

// completionTokens is what a response spent: the server's count, or the
// ids when it gave no usage.
func completionTokens(resp *policy.Response) int {
	if n := resp.Usage.CompletionTokens; n > 0 {
		return n
	}
	return len(resp.CompletionTokenIDs)
}

// nameCalls gives calls the server left without an id one, so that each
// tool message can say which call it answers.
func nameCalls(calls []policy.ToolCall, turn int) {
	for i := range calls {
		if calls[i].ID == "" {
			calls[i].ID = fmt.Sprintf("call_%d_%d", turn, i)
		}
	}
}

// callEach is CallAll with each call timed and its infrastructure failure
// kept apart: it runs every call through CallAll on its own, at most
// MaxParallelCalls at once, and returns results and durations in call order.
func callEach(ctx context.Context, ws Workspace, reg *Registry, calls []policy.ToolCall) ([]Result, []time.Duration, error) {
	results := make([]Result, len(calls))
	durations := make([]time.Duration, len(calls))
	errs := make([]error, len(calls))
	sem := make(chan struct{}, MaxParallelCalls)
	var wg sync.WaitGroup
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{} // holders finish: CallAll returns when ctx ends
			defer func() { <-sem }()
			start := time.Now()
			res, err := CallAll(ctx, ws, reg, calls[i:i+1])
			durations[i] = time.Since(start)
			results[i], errs[i] = res[0], err
		}()
	}
	wg.Wait()
	return results, durations, errors.Join(errs...)
}

// clip shortens s to at most n bytes of valid UTF-8, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
