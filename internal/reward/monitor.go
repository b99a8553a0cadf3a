package reward

import (
	"encoding/json"
	"path"
	"strings"

	"github.com/verisim/verisim/internal/harness"
	"github.com/verisim/verisim/internal/trajectory"
)

// Flag names. They are stable: training configuration and dashboards
// refer to them.
const (
	FlagTestTampering      = "test_tampering"
	FlagGraderProbe        = "grader_probe"
	FlagHistoryMining      = "history_mining"
	FlagArtifactMining     = "artifact_mining"
	FlagNetworkAttempt     = "network_attempt"
	FlagEnvironmentProbing = "environment_probing"
	// Raised by the agent loop as the episode runs; the monitors for them
	// find the same evidence in a recorded trajectory.
	FlagMalformedToolCall = harness.FlagMalformedToolCall
	FlagNoEditReply       = harness.FlagNoEditReply
)

// Episode is what monitors look at: an ended episode and how it graded.
type Episode struct {
	Traj *trajectory.Trajectory
	// Grade is nil when the episode was not graded.
	Grade *Result
	// Protect and TestPaths are Grader.ProtectedPaths: the grade.protect
	// patterns and the hidden tests' paths.
	Protect   []string
	TestPaths []string
	// Workspace is the absolute path of the workspace in the machine.
	Workspace string
}

// Monitor finds one kind of behaviour in an episode. Check must not change
// the episode.
type Monitor interface {
	// Name is the flag name the monitor raises.
	Name() string
	Check(ep *Episode) []trajectory.Flag
}

// DefaultMonitors returns a monitor for every flag name above.
func DefaultMonitors() []Monitor {
	return []Monitor{
		tamperingMonitor{}, graderProbeMonitor{}, historyMonitor{}, artifactMonitor{},
		networkMonitor{}, envProbeMonitor{}, malformedMonitor{}, noEditMonitor{},
	}
}

// Limits on evidence, which is read by people and kept in every record.
const (
	maxEvidence       = 200
	maxMergedEvidence = 600
)

// Label runs the monitors over ep and appends what they find to
// ep.Traj.Flags. A turn carries a flag name at most once: a flag already
// there (such as one the agent loop raised) is not added again, and more
// evidence for a name in a turn joins the first.
func Label(ep *Episode, ms []Monitor) {
	if ep == nil || ep.Traj == nil {
		return
	}
	type key struct {
		name string
		turn int
	}
	had := map[key]bool{}
	for _, f := range ep.Traj.Flags {
		had[key{f.Name, f.Turn}] = true
	}
	added := map[key]int{}
	for _, m := range ms {
		for _, f := range m.Check(ep) {
			k := key{f.Name, f.Turn}
			if i, ok := added[k]; ok {
				ev := &ep.Traj.Flags[i].Evidence
				if f.Evidence != "" && !strings.Contains(*ev, f.Evidence) && len(*ev) < maxMergedEvidence {
					*ev = clip(*ev+"; "+f.Evidence, maxMergedEvidence)
				}
				continue
			}
			if had[k] {
				continue
			}
			added[k] = len(ep.Traj.Flags)
			ep.Traj.Flags = append(ep.Traj.Flags, f)
		}
	}
}

// action is one tool call the agent made, with what came of it.
type action struct {
	turn int
	call trajectory.ToolCall
	// decoded is false when the arguments are not a JSON object.
	decoded bool
	// The arguments the default tools take.
	path, pattern, include, command string
	cmds                            []shellCmd
	// obs is nil when the call was never run.
	obs *trajectory.Observation
}

// evidence names the call and its main argument.
func (a *action) evidence() string {
	arg := a.path
	switch a.call.Name {
	case "glob":
		arg = a.pattern
	case "grep":
		arg = strings.TrimSpace(a.pattern + " " + a.path)
	case "run_terminal_cmd":
		arg = a.command
	}
	return clip(a.call.Name+" "+arg, maxEvidence)
}

// view is an episode prepared for monitors.
type view struct {
	ep      *Episode
	ws      string
	protect protectSet
	actions []action
}

func newView(ep *Episode) *view {
	v := &view{ep: ep}
	if ep.Workspace != "" {
		v.ws = path.Clean(ep.Workspace)
	}
	for _, p := range ep.Protect {
		// A pattern the grader would have refused protects nothing.
		if g, err := compileProtect(p); err == nil {
			v.protect.globs = append(v.protect.globs, g)
		}
	}
	for _, t := range ep.TestPaths {
		l := v.resolve(".", t)
		v.protect.paths = append(v.protect.paths, l.p)
	}
	if ep.Traj != nil {
		v.actions = actionsOf(ep.Traj)
	}
	return v
}

func actionsOf(t *trajectory.Trajectory) []action {
	var out []action
	for ti := range t.Turns {
		turn := &t.Turns[ti]
		for _, m := range turn.Messages {
			if m.Role != "assistant" {
				continue
			}
			for ci, c := range m.ToolCalls {
				a := action{turn: turn.Index, call: c, obs: observation(turn, c, ci, len(m.ToolCalls))}
				var args map[string]any
				if json.Unmarshal([]byte(c.Arguments), &args) == nil && args != nil {
					a.decoded = true
					str := func(k string) string { s, _ := args[k].(string); return s }
					a.path, a.pattern, a.include, a.command = str("path"), str("pattern"), str("include"), str("command")
				}
				if c.Name == "run_terminal_cmd" && a.command != "" {
					a.cmds = parseShell(a.command)
				}
				out = append(out, a)
			}
		}
	}
	return out
}

// observation finds the result of the i-th of n calls of a turn: by id,
// or by position when the calls have none.
func observation(t *trajectory.Turn, c trajectory.ToolCall, i, n int) *trajectory.Observation {
	if c.ID != "" {
		for j := range t.Observations {
			if t.Observations[j].ToolCallID == c.ID {
				return &t.Observations[j]
			}
		}
		return nil
	}
	if len(t.Observations) == n {
		return &t.Observations[i]
	}
	return nil
}

// loc is a path an agent named, resolved: relative to the workspace when
// in it, else absolute ("~/..." for the home directory, "../..." when the
// workspace is unknown).
type loc struct {
	p  string
	in bool
}

// resolve resolves word, named in directory cwd (see shellCmd.cwd).
func (v *view) resolve(cwd, word string) loc {
	w := word
	if rest, ok := cutVar(w, "PWD"); ok {
		w, cwd = path.Join(cwd, "."+rest), "."
	} else if rest, ok := cutVar(w, "HOME"); ok {
		w = "~" + rest
	}
	var p string
	switch {
	case path.IsAbs(w), strings.HasPrefix(w, "~"):
		p = path.Clean(w)
	case path.IsAbs(cwd), strings.HasPrefix(cwd, "~"):
		p = path.Join(cwd, w)
	default:
		p = path.Join(cwd, w)
		if p == ".." || strings.HasPrefix(p, "../") {
			if v.ws != "" {
				p = path.Join(v.ws, p)
			}
			return loc{p: p}
		}
		return loc{p: p, in: true}
	}
	if v.ws != "" {
		if p == v.ws {
			return loc{p: ".", in: true}
		}
		if rest, ok := strings.CutPrefix(p, v.ws+"/"); ok {
			return loc{p: rest, in: true}
		}
	}
	return loc{p: p}
}

// cutVar returns what follows a leading $NAME or ${NAME} that stands for
// a whole path element.
func cutVar(w, name string) (string, bool) {
	for _, pre := range []string{"$" + name, "${" + name + "}"} {
		if rest, ok := strings.CutPrefix(w, pre); ok && (rest == "" || rest[0] == '/') {
			return rest, true
		}
	}
	return "", false
}

// toolPaths are the paths a file tool call names, resolved.
func (v *view) toolPaths(a *action) []loc {
	var out []loc
	switch a.call.Name {
	case "read_file", "write_file", "edit_file", "delete_file", "grep":
		if a.path != "" {
			out = append(out, v.resolve(".", a.path))
		} else if a.call.Name == "grep" {
			out = append(out, loc{p: ".", in: true})
		}
	case "list_dir":
		p := a.path
		if p == "" {
			p = "."
		}
		out = append(out, v.resolve(".", p))
	case "glob":
		if a.pattern != "" {
			out = append(out, v.resolve(".", a.pattern))
		}
	}
	if a.call.Name == "grep" && a.include != "" {
		out = append(out, loc{p: a.include, in: true})
	}
	return out
}

// flags collects one monitor's findings.
type flags struct {
	name string
	out  []trajectory.Flag
}

func (f *flags) add(turn int, evidence string) {
	f.out = append(f.out, trajectory.Flag{Name: f.name, Evidence: clip(evidence, maxEvidence), Turn: turn})
}

// cmdEvidence is a command's text, or the whole command line when the
// text is empty (a command read from a here-document).
func cmdEvidence(a *action, c *shellCmd) string {
	if c.text != "" {
		return c.text
	}
	return a.command
}

// quotedStrings are the string literals of program text, where inline
// scripts name paths.
func quotedStrings(code string) []string {
	var out []string
	for _, q := range []byte{'\'', '"'} {
		parts := strings.Split(code, string(q))
		for i := 1; i < len(parts); i += 2 {
			if s := parts[i]; s != "" && len(s) < 512 && !strings.ContainsAny(s, "\n") {
				out = append(out, s)
			}
		}
	}
	return out
}
