package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/verisim/verisim/internal/harness"
	"github.com/verisim/verisim/internal/policy"
	"github.com/verisim/verisim/internal/sandbox"
	"github.com/verisim/verisim/internal/trajectory"
)

// agentOpts are the flags of "verisim agent".
type agentOpts struct {
	model      modelFlags
	dir        string
	yes        bool
	sandbox    bool
	maxTurns   int
	maxTokens  int
	timeout    time.Duration
	trajectory string
}

func (a *app) agentCmd() *cobra.Command {
	var o agentOpts
	c := &cobra.Command{
		Use:   "agent --model URL [flags] INSTRUCTION",
		Short: "Run the coding agent on your checkout",
		Long: `Runs the production coding agent, the same harness and tools as training, on
the directory --dir with any OpenAI-compatible chat-completions server that
calls tools (vLLM, SGLang, a hosted API).

By default the agent works on --dir itself and asks on the terminal before
each shell command it wants to run ("run: CMD? [y/N]"); --yes runs them
without asking. Without a terminal on stdin and without --yes, commands are
refused. File edits are not asked about.

--sandbox runs the agent in a fresh sandbox instead, over a copy-on-write
view of the git checkout --dir: the agent sees your directory as it is,
uncommitted work included, commands run without asking, everything it
changes stays in the sandbox (your directory is not touched), and the diff of
what it changed is printed at the end. The sandbox's user takes the uid of
the directory's owner (a directory owned by root is refused).

Progress goes to stderr, the agent's final answer (and, with --sandbox, the
diff) to stdout. The API key is read from the environment variable that
--api-key-env names, never from a flag. Exit status: 0 when the episode ended
normally, 1 when the model's output could not be used, 124 past --timeout,
125 when the model server or the sandbox failed.`,
		Example: `  verisim agent --model http://localhost:8000 "fix the flaky date parsing test"
  verisim agent --model http://localhost:8000 --yes --dir ~/src/app "add a --verbose flag"
  verisim agent --model http://localhost:8000 --sandbox "make the tests pass"
  OPENAI_API_KEY=... verisim agent --model https://api.openai.com --model-name gpt-4.1 "explain main.go"
  verisim agent --model http://localhost:8000 --trajectory runs/mine.jsonl "rename Foo to Bar"`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 || strings.TrimSpace(args[0]) == "" {
				return usageErr("give the instruction as one argument, quoted")
			}
			return o.model.check()
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runAgent(cmd, &o, args[0])
		},
	}
	f := c.Flags()
	o.model.register(f)
	f.StringVar(&o.dir, "dir", ".", "directory to work on (with --sandbox: a git checkout, cloned into the sandbox)")
	f.BoolVarP(&o.yes, "yes", "y", false, "run the agent's commands without asking")
	f.BoolVar(&o.sandbox, "sandbox", false, "work in a fresh sandbox over a copy-on-write view of --dir; changes stay there and the diff is printed")
	f.IntVar(&o.maxTurns, "max-turns", harness.DefaultMaxTurns, "most model calls in the episode")
	f.IntVar(&o.maxTokens, "max-tokens", 0, "most tokens the model may write in one turn (0: the server's default)")
	f.DurationVar(&o.timeout, "timeout", 0, "stop the episode after this long (0 = never)")
	f.StringVar(&o.trajectory, "trajectory", "", "append the episode's trajectory to this JSONL file")
	return c
}

func (a *app) runAgent(cmd *cobra.Command, o *agentOpts, instruction string) error {
	ctx := cmd.Context()
	if o.maxTurns <= 0 || o.timeout < 0 || o.maxTokens < 0 {
		return usageErr("--max-turns must be positive, --timeout and --max-tokens not negative")
	}
	client, err := o.model.client(ctx)
	if err != nil {
		return err
	}
	model := &watchedModel{Client: client}
	agent, err := harness.NewAgent(model, harness.Config{MaxTurns: o.maxTurns, MaxWall: o.timeout, MaxCompletionTokens: o.maxTokens, OnTurn: printTurn})
	if err != nil {
		return err
	}

	var (
		ws   harness.Workspace
		sb   sandbox.Sandbox
		meta trajectory.Sandbox
	)
	var baseline string
	if o.sandbox {
		if _, err := os.Stat(filepath.Join(o.dir, ".git")); err != nil {
			return usageErr("--sandbox shows the agent's changes as a git diff: --dir %s is not a git checkout", o.dir)
		}
		m := machineFlags{cmd: cmd, image: "host", view: o.dir, limits: defaultLimits}
		var rt sandbox.Runtime
		var spec sandbox.Spec
		sb, rt, spec, err = a.newSandbox(ctx, &m)
		if err != nil {
			return err
		}
		defer sb.Close(context.WithoutCancel(ctx))
		ws = harness.SandboxWorkspace(sb, spec.Dir)
		meta = trajectory.Sandbox{Backend: rt.Name(), Image: m.image, ID: sb.ID()}
		if baseline, err = workTree(ctx, sb, spec.Dir); err != nil {
			return withCode(exitFailure, err)
		}
	} else {
		dws, err := harness.DirWorkspace(o.dir)
		if err != nil {
			return usageErr("--dir: %v", err)
		}
		ws = dws
		if !o.yes {
			ws = harness.ConfirmWorkspace(dws, askFunc(os.Stdin, os.Stderr))
		}
	}

	traj, err := agent.Run(ctx, ws, instruction)
	if err != nil {
		return err
	}
	traj.Sandbox = meta
	if o.trajectory != "" {
		if err := appendTrajectory(o.trajectory, traj); err != nil {
			return withCode(exitFailure, err)
		}
	}
	if err := agentStatus(ctx, o, model, traj); err != nil {
		return err
	}
	if ans := finalAnswer(traj); ans != "" {
		fmt.Println(ans)
	} else {
		fmt.Fprintf(os.Stderr, "verisim: the agent stopped (%s) before it answered\n", traj.Metadata[harness.MetaStop])
	}
	if sb != nil {
		return printChanges(ctx, sb, ws.Root(), baseline)
	}
	return nil
}

// agentStatus turns how the episode ended into the command's exit status.
func agentStatus(ctx context.Context, o *agentOpts, m *watchedModel, traj *trajectory.Trajectory) error {
	switch traj.Status {
	case trajectory.StatusOK:
		return nil
	case trajectory.StatusTimeout:
		return withCode(exitTimeout, fmt.Errorf("the agent ran past --timeout %v", o.timeout))
	case trajectory.StatusPolicyError:
		return withCode(1, fmt.Errorf("the model's output could not be used: %s", oneLine(errors.New(traj.Error))))
	}
	if ctx.Err() != nil {
		return withCode(130, nil)
	}
	if m.err != nil {
		if errors.Is(m.err, policy.ErrUnavailable) {
			return withCode(exitFailure, fmt.Errorf("cannot reach the model at %s: %s; check --model", o.model.url, oneLine(m.err)))
		}
		return withCode(exitFailure, fmt.Errorf("the model at %s refused: %s; check --model, --model-name and --api-key-env", o.model.url, oneLine(m.err)))
	}
	return withCode(exitFailure, errors.New(oneLine(errors.New(traj.Error))))
}

// watchedModel keeps the last error of the model, so that an
// infrastructure failure can be told apart from the workspace's.
type watchedModel struct {
	*policy.Client
	err error // written by the episode's goroutine only
}

func (m *watchedModel) Complete(ctx context.Context, req policy.Request) (*policy.Response, error) {
	r, err := m.Client.Complete(ctx, req)
	if err != nil {
		m.err = err
	}
	return r, err
}

// servedModel asks an OpenAI-compatible server which model it serves.
func servedModel(ctx context.Context, base, apiKey string) (string, error) {
	u := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSpace(base), "/"), "/v1") + "/v1/models"
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	if apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+apiKey)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&list); err != nil {
		return "", fmt.Errorf("GET %s: %w", u, err)
	}
	if len(list.Data) == 0 || list.Data[0].ID == "" {
		return "", fmt.Errorf("GET %s: no models listed", u)
	}
	return list.Data[0].ID, nil
}

// askFunc asks on the terminal before each command. Without a terminal on
// stdin it refuses every command, and says so once.
func askFunc(in *os.File, out io.Writer) harness.AskFunc {
	if !term.IsTerminal(int(in.Fd())) {
		fmt.Fprintln(out, "verisim: stdin is not a terminal, so the agent's commands will be refused; pass --yes to run them")
		return func(context.Context, string) (bool, error) { return false, nil }
	}
	return (&lineAsker{in: bufio.NewReader(in), out: out}).ask
}

// lineAsker reads one answer per question. ConfirmWorkspace serialises
// calls to ask.
type lineAsker struct {
	in  *bufio.Reader
	out io.Writer
	// pending is a read an earlier ask started and left when its ctx ended;
	// the next ask takes its line rather than race it for the reader.
	pending chan string
}

func (l *lineAsker) ask(ctx context.Context, command string) (bool, error) {
	fmt.Fprintf(l.out, "run: %s? [y/N] ", command)
	if l.pending == nil {
		ch := make(chan string, 1)
		go func() { // ends at the next line or EOF; stdin reads cannot be cancelled
			line, _ := l.in.ReadString('\n')
			ch <- line
		}()
		l.pending = ch
	}
	select {
	case line := <-l.pending:
		l.pending = nil
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			return true, nil
		}
		return false, nil
	case <-ctx.Done():
		fmt.Fprintln(l.out)
		return false, context.Cause(ctx)
	}
}

// printTurn shows a turn compactly on stderr: one line per tool call.
func printTurn(t trajectory.Turn) {
	if len(t.Messages) == 0 {
		return
	}
	for _, c := range t.Messages[0].ToolCalls {
		fmt.Fprintf(os.Stderr, "→ %s %s\n", c.Name, firstArg(c.Arguments))
	}
	for _, ob := range t.Observations {
		if ob.Error != "" {
			fmt.Fprintf(os.Stderr, "  %s: %s\n", ob.Tool, clipLine(ob.Error, 100))
		}
	}
}

// firstArg is the first value of a tool call's arguments object, in the
// model's own order, on one short line.
func firstArg(raw string) string {
	dec := json.NewDecoder(strings.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return clipLine(raw, 60)
	}
	if _, err := dec.Token(); err != nil { // the key
		return ""
	}
	var v any
	if err := dec.Decode(&v); err != nil {
		return ""
	}
	if s, ok := v.(string); ok {
		return clipLine(s, 60)
	}
	b, _ := json.Marshal(v)
	return clipLine(string(b), 60)
}

func clipLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

func oneLine(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }

// finalAnswer is the text of the model's last reply.
func finalAnswer(t *trajectory.Trajectory) string {
	if len(t.Turns) == 0 {
		return ""
	}
	last := t.Turns[len(t.Turns)-1]
	if len(last.Messages) == 0 || len(last.Messages[0].ToolCalls) > 0 {
		return ""
	}
	return strings.TrimSpace(last.Messages[0].Content)
}

func appendTrajectory(path string, t *trajectory.Trajectory) error {
	w, c, err := trajectory.OpenFile(path)
	if err != nil {
		return err
	}
	if err := w.Write(t); err != nil {
		c.Close()
		return fmt.Errorf("write trajectory to %s: %w", path, err)
	}
	return c.Close()
}

// printChanges shows on stdout what the agent changed in the sandbox's
// clone: the diff of tracked files, then the short status, which lists
// new files too.
func printChanges(ctx context.Context, sb sandbox.Sandbox, dir, baseline string) error {
	after, err := workTree(ctx, sb, dir)
	if err != nil {
		return withCode(exitFailure, err)
	}
	for _, args := range [][]string{
		{"git", "--no-pager", "diff", "--stat", baseline, after},
		{"git", "--no-pager", "diff", baseline, after},
	} {
		st, err := sb.Run(ctx, sandbox.Cmd{Args: args, Dir: dir, Stdout: os.Stdout, Stderr: os.Stderr, Timeout: time.Minute})
		if err != nil {
			return withCode(exitFailure, fmt.Errorf("show changes: %s: %w", strings.Join(args[:3], " "), err))
		}
		if st.Code != 0 {
			return withCode(exitFailure, fmt.Errorf("show changes: %s exited %d", strings.Join(args[:3], " "), st.Code))
		}
	}
	return nil
}

// workTree records the whole working tree of the checkout at dir in the
// sandbox (untracked files included, ignored ones not) as a git tree and
// returns its id. A separate index leaves the checkout's own index, refs
// and history as they were: the agent sees the user's checkout, and the
// diff between two such trees is exactly what changed in between,
// uncommitted work the user had before included in neither.
func workTree(ctx context.Context, sb sandbox.Sandbox, dir string) (string, error) {
	var out, errb strings.Builder
	st, err := sb.Run(ctx, sandbox.Cmd{
		Args: []string{"/bin/sh", "-c", `set -e
idx=$(mktemp)
trap 'rm -f "$idx"' EXIT
if [ -f "$(git rev-parse --git-dir)/index" ]; then cp "$(git rev-parse --git-dir)/index" "$idx"; else rm -f "$idx"; fi
GIT_INDEX_FILE=$idx git add -A
GIT_INDEX_FILE=$idx git write-tree`},
		Dir: dir, Stdout: &out, Stderr: &errb, Timeout: 5 * time.Minute,
	})
	if err != nil {
		return "", fmt.Errorf("record the working tree: %w", err)
	}
	if st.Code != 0 {
		return "", fmt.Errorf("record the working tree: exit %d: %s", st.Code, strings.TrimSpace(errb.String()))
	}
	return strings.TrimSpace(out.String()), nil
}
