package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/verisim/verisim/internal/policy"
)

// Tool is a function the model may call.
type Tool interface {
	// Name is the stable name the model calls the tool by.
	Name() string
	// Description tells the model what the tool does.
	Description() string
	// Parameters is the JSON Schema of the arguments object.
	Parameters() json.RawMessage
	// Call runs the tool with the model's raw arguments. Mistakes of the
	// model, malformed arguments included, come back in Result.Error; a
	// non-nil error means the workspace or the context failed.
	Call(ctx context.Context, ws Workspace, args json.RawMessage) (Result, error)
}

// Result is what a tool call produced, for the model to read.
type Result struct {
	Output string
	// Error is a mistake of the model's the model should see ("no such
	// file"); empty when the call did what was asked.
	Error string
	// Truncated reports that Output was cut to fit.
	Truncated bool
	// Malformed reports that the call itself was broken: arguments that are
	// not a JSON object or lack or mistype a field, or an unknown tool.
	Malformed bool
}

// Text is the observation the model reads.
func (r Result) Text() string {
	if r.Error == "" {
		return r.Output
	}
	if r.Output == "" {
		return "Error: " + r.Error
	}
	return "Error: " + r.Error + "\n" + r.Output
}

func modelError(format string, args ...any) Result {
	return Result{Error: fmt.Sprintf(format, args...)}
}

// Registry is an ordered set of tools with unique names.
type Registry struct {
	tools  []Tool
	byName map[string]Tool
}

// NewRegistry returns a registry holding tools, in order.
func NewRegistry(tools ...Tool) (*Registry, error) {
	r := &Registry{byName: make(map[string]Tool, len(tools))}
	for _, t := range tools {
		if err := r.Register(t); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Register adds t after the tools already there.
func (r *Registry) Register(t Tool) error {
	name := t.Name()
	if name == "" {
		return errors.New("register tool: empty name")
	}
	if _, dup := r.byName[name]; dup {
		return fmt.Errorf("register tool %s: name already registered", name)
	}
	if !json.Valid(t.Parameters()) {
		return fmt.Errorf("register tool %s: parameters are not valid JSON", name)
	}
	if r.byName == nil {
		r.byName = make(map[string]Tool)
	}
	r.tools = append(r.tools, t)
	r.byName[name] = t
	return nil
}

// Lookup returns the tool called name.
func (r *Registry) Lookup(name string) (Tool, bool) {
	t, ok := r.byName[name]
	return t, ok
}

// Tools returns the registered tools in order.
func (r *Registry) Tools() []Tool { return append([]Tool(nil), r.tools...) }

// Specs describes the tools for a policy request, in order.
func (r *Registry) Specs() []policy.Tool {
	out := make([]policy.Tool, len(r.tools))
	for i, t := range r.tools {
		out[i] = policy.Tool{Name: t.Name(), Description: t.Description(), Parameters: t.Parameters()}
	}
	return out
}

// MaxParallelCalls bounds how many calls of one message CallAll runs at once.
const MaxParallelCalls = 8

// CallAll runs the tool calls of one assistant message concurrently and
// returns their results in call order. Unknown tools and malformed
// arguments yield a model-facing Result. The error joins the
// infrastructure failures of all calls; the failed calls' Results are zero
// and must not be shown to the model as if they were its doing.
func CallAll(ctx context.Context, ws Workspace, reg *Registry, calls []policy.ToolCall) ([]Result, error) {
	results := make([]Result, len(calls))
	errs := make([]error, len(calls))
	sem := make(chan struct{}, MaxParallelCalls)
	var wg sync.WaitGroup
	for i, c := range calls {
		t, ok := reg.Lookup(c.Name)
		if !ok {
			results[i] = Result{Error: unknownTool(reg, c.Name), Malformed: true}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				errs[i] = fmt.Errorf("tool %s: %w", c.Name, context.Cause(ctx))
				return
			}
			defer func() { <-sem }()
			results[i], errs[i] = safeCall(ctx, t, ws, json.RawMessage(c.Arguments))
			if errs[i] != nil {
				results[i] = Result{}
				errs[i] = fmt.Errorf("tool %s (call %s): %w", c.Name, c.ID, errs[i])
			}
		}()
	}
	wg.Wait()
	return results, errors.Join(errs...)
}

// safeCall turns a panicking tool, maybe a user's, into an infrastructure
// error instead of a crashed trainer.
func safeCall(ctx context.Context, t Tool, ws Workspace, args json.RawMessage) (res Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v\n%s", p, debug.Stack())
		}
	}()
	return t.Call(ctx, ws, args)
}

func unknownTool(reg *Registry, name string) string {
	names := make([]string, len(reg.tools))
	for i, t := range reg.tools {
		names[i] = t.Name()
	}
	return fmt.Sprintf("unknown tool %q; available tools: %s", name, strings.Join(names, ", "))
}

// param is one argument of a tool; a tool's schema and its argument checks
// are both derived from its params.
type param struct {
	name, typ, desc string
	required        bool
}

func schema(params ...param) json.RawMessage {
	type prop struct {
		Type        string `json:"type"`
		Description string `json:"description"`
	}
	props := make(map[string]prop, len(params))
	required := []string{}
	for _, p := range params {
		props[p.name] = prop{Type: p.typ, Description: p.desc}
		if p.required {
			required = append(required, p.name)
		}
	}
	b, err := json.Marshal(struct {
		Type       string          `json:"type"`
		Properties map[string]prop `json:"properties"`
		Required   []string        `json:"required"`
	}{"object", props, required})
	if err != nil {
		panic(err) // static data
	}
	return b
}

// parseArgs decodes the model's arguments into dst, a pointer to a struct
// with json tags. It returns a model-facing message, or "" on success.
// Empty arguments are an empty object; unknown fields are ignored.
func parseArgs(raw json.RawMessage, params []param, dst any) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return "arguments are not a valid JSON object: " + err.Error()
	}
	for _, p := range params {
		v, ok := fields[p.name]
		if !ok || string(v) == "null" {
			if p.required {
				return fmt.Sprintf("missing required argument %q", p.name)
			}
			continue
		}
		if !hasType(v, p.typ) {
			return fmt.Sprintf("argument %q must be of type %s", p.name, p.typ)
		}
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return "invalid arguments: " + err.Error()
	}
	return ""
}

// hasType reports whether the JSON value v is of the JSON Schema type typ.
func hasType(v json.RawMessage, typ string) bool {
	switch typ {
	case "string":
		return v[0] == '"'
	case "boolean":
		return string(v) == "true" || string(v) == "false"
	case "integer":
		if v[0] == '"' {
			return false
		}
		var n json.Number
		if json.Unmarshal(v, &n) != nil {
			return false
		}
		_, err := n.Int64()
		return err == nil
	}
	return true
}

// call is the shared front half of the default tools: parse the arguments,
// then run fn with them, turning a model error from the workspace into a
// Result.
func call[A any](ctx context.Context, raw json.RawMessage, params []param, fn func(A) (Result, error)) (Result, error) {
	var args A
	if msg := parseArgs(raw, params, &args); msg != "" {
		return Result{Error: msg, Malformed: true}, nil
	}
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	return fn(args)
}

// fsResult turns err from a Workspace file operation on path into a
// model-facing Result when it is the model's mistake, and passes it on
// otherwise.
func fsResult(path string, err error) (Result, error) {
	if isModelError(err) {
		return modelError("%s", describeError(path, err)), nil
	}
	return Result{}, err
}
