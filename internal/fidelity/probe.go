package fidelity

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/verisim/verisim/internal/sandbox"
)

// Severity says how much a tell gives away.
type Severity string

const (
	// Strong tells are essentially never seen on a real developer machine.
	Strong Severity = "strong"
	// Weak tells are suggestive, but real machines show them at times.
	Weak Severity = "weak"
)

// Status is the outcome of one probe.
type Status string

const (
	// StatusOK means the probe found nothing that gives the sandbox away.
	StatusOK Status = "ok"
	// StatusTell means the probe found something a model could use to tell
	// it is in a sandbox.
	StatusTell Status = "tell"
	// StatusError means the probe could not observe or decide; it is neither
	// a pass nor a tell.
	StatusError Status = "error"
)

// defaultProbeTimeout bounds a probe that does not set its own Timeout.
const defaultProbeTimeout = 15 * time.Second

// Probe is one check for a tell. Its observation runs inside the machine as
// the machine's default user; its judgement runs here, optionally against the
// same probe's observation on a real machine (a Profile).
type Probe struct {
	// Name is stable and kebab-case; profiles and reports key on it.
	Name string `json:"name"`
	// Why says in one sentence how a model could use the tell.
	Why string `json:"why"`
	// Severity is how much the tell gives away.
	Severity Severity `json:"severity"`
	// Limitation is set when a backend may be unable to remove the tell; it
	// says why and what a different backend (a microVM) would change.
	Limitation string `json:"limitation,omitempty"`
	// Timeout bounds the observation; zero means defaultProbeTimeout.
	Timeout time.Duration `json:"-"`

	// keys are the facts every successful observation holds.
	keys    []string
	observe func(ctx context.Context, m machine) (Facts, error)
	// judge decides from an observation; ref is the reference machine's
	// observation of the same probe, or nil.
	judge func(obs, ref Facts) verdict
}

// Probes returns the built-in probe set, in report order. The slice is the
// caller's to keep.
func Probes() []Probe {
	return slices.Concat(
		containerProbes(),
		identityProbes(),
		userProbes(),
		processProbes(),
		kernelProbes(),
		mountProbes(),
		gitProbes(),
	)
}

// selectProbes returns the built-in probes named in names, in report order;
// no names selects them all.
func selectProbes(names []string) ([]Probe, error) {
	all := Probes()
	if len(names) == 0 {
		return all, nil
	}
	want := make(map[string]bool, len(names))
	for _, n := range names {
		if !slices.ContainsFunc(all, func(p Probe) bool { return p.Name == n }) {
			return nil, fmt.Errorf("unknown probe %q", n)
		}
		want[n] = true
	}
	return slices.DeleteFunc(all, func(p Probe) bool { return !want[p.Name] }), nil
}

func (p Probe) timeout() time.Duration {
	if p.Timeout > 0 {
		return p.Timeout
	}
	return defaultProbeTimeout
}

// gather runs the probe's observation in sb. An observation that cannot be
// made (a broken sandbox, a timeout, a script that reports it cannot see)
// is an error, never a tell.
func (p Probe) gather(ctx context.Context, sb sandbox.Sandbox) (facts Facts, err error) {
	timeout := p.timeout()
	// The sandbox's own timeout fires first, so a slow probe is reported as
	// timed out rather than as a cancelled context.
	ctx, cancel := context.WithTimeout(ctx, timeout+5*time.Second)
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			facts, err = nil, fmt.Errorf("observation panicked: %v", r)
		}
	}()
	facts, err = p.observe(ctx, machine{sb: sb, timeout: timeout})
	if err != nil {
		return nil, err
	}
	if msg, ok := facts[errorFact]; ok {
		return nil, fmt.Errorf("cannot observe: %s", firstLine(msg))
	}
	for _, k := range p.keys {
		if _, ok := facts[k]; !ok {
			return nil, fmt.Errorf("observation lacks %q", k)
		}
	}
	return facts, nil
}

// decide judges an observation. An observation identical to the reference
// machine's is realistic by definition, whatever the built-in rules say.
func (p Probe) decide(obs, ref Facts) (v verdict) {
	defer func() {
		if r := recover(); r != nil {
			v = undecided("judgement panicked: %v", r)
		}
	}()
	if ref != nil && maps.Equal(obs, ref) {
		return ok("same as the reference machine")
	}
	return p.judge(obs, ref)
}

// usable reports whether ref can serve as this probe's reference: a profile
// captured by an older probe set may lack facts this one needs.
func (p Probe) usable(ref Facts) bool {
	if ref == nil {
		return false
	}
	for _, k := range p.keys {
		if _, ok := ref[k]; !ok {
			return false
		}
	}
	return true
}

// verdict is a probe's decision with its one-line evidence.
type verdict struct {
	status   Status
	evidence string
}

func ok(format string, a ...any) verdict {
	return verdict{StatusOK, fmt.Sprintf(format, a...)}
}

func tell(format string, a ...any) verdict {
	return verdict{StatusTell, fmt.Sprintf(format, a...)}
}

func undecided(format string, a ...any) verdict {
	return verdict{StatusError, fmt.Sprintf(format, a...)}
}

// tellIf returns a tell listing problems, or ok with okEvidence when there
// are none.
func tellIf(problems []string, okEvidence string) verdict {
	if len(problems) > 0 {
		return tell("%s", strings.Join(problems, "; "))
	}
	return ok("%s", okEvidence)
}

// Facts are what one probe observed, by name. Values are text as the probe's
// script printed it; accessors trim and split.
type Facts map[string]string

// errorFact is the fact a script prints when it cannot observe what it
// needs (a missing tool, no repository); its value is the reason.
const errorFact = "error"

// factMarker starts a fact's section in a probe script's output.
const factMarker = "@@fact "

// parseFacts reads a probe script's output: each line "@@fact NAME" starts
// the fact NAME, whose value is every line up to the next marker. A name
// printed twice gets both values, joined by a newline.
func parseFacts(out string) Facts {
	f := Facts{}
	var (
		key  string
		open bool
		b    strings.Builder
	)
	flush := func() {
		if !open {
			return
		}
		v := strings.Trim(b.String(), "\n")
		switch prev, dup := f[key]; {
		case dup && v == "":
			v = prev
		case dup && prev != "":
			v = prev + "\n" + v
		}
		f[key] = v
	}
	for line := range strings.Lines(out) {
		if name, isMarker := strings.CutPrefix(line, factMarker); isMarker {
			flush()
			key, open = strings.TrimRight(name, "\r\n"), true
			b.Reset()
			continue
		}
		if open {
			b.WriteString(line)
		}
	}
	flush()
	return f
}

func (f Facts) get(k string) string { return strings.TrimSpace(f[k]) }

func (f Facts) has(k string) bool {
	_, ok := f[k]
	return ok
}

func (f Facts) yes(k string) bool { return f.get(k) == "yes" }

// lines returns the fact's non-blank lines, right-trimmed.
func (f Facts) lines(k string) []string {
	var out []string
	for l := range strings.Lines(f[k]) {
		l = strings.TrimRight(l, " \t\r\n")
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// num parses the fact's first field as an integer.
func (f Facts) num(k string) (int64, bool) {
	fields := strings.Fields(f[k])
	if len(fields) == 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(fields[0], 10, 64)
	return n, err == nil
}

// nums parses every line of the fact as an integer, skipping the rest.
func (f Facts) nums(k string) []int64 {
	var out []int64
	for _, l := range f.lines(k) {
		if n, err := strconv.ParseInt(strings.TrimSpace(l), 10, 64); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// machine is what a probe observes through: the sandbox, as its default
// user for commands and with root's view for files.
type machine struct {
	sb      sandbox.Sandbox
	timeout time.Duration
}

// prelude is prepended to every probe script. Its first line marks the
// probe's own shells so that process probes can leave them out.
const prelude = `: fidelity-probe
fact() { printf '\n@@fact %s\n' "$1"; }
have() { command -v "$1" >/dev/null 2>&1; }
yesno() { if "$@"; then echo yes; else echo no; fi; }
stamps() { while IFS= read -r f; do stat -c %Y "$f" 2>/dev/null; done; }
`

// probeShellMarker is in the command line of every probe script's shell.
const probeShellMarker = ": fidelity-probe"

// maxOutput bounds what one probe script may print.
const maxOutput = 4 << 20

// sh runs a probe script with /bin/sh as the default user, in the default
// working directory and environment, and parses the facts it prints.
func (m machine) sh(ctx context.Context, body string) (Facts, error) {
	var stdout, stderr cappedBuffer
	stdout.limit, stderr.limit = maxOutput, 64<<10
	st, err := m.sb.Run(ctx, sandbox.Cmd{
		Args:    []string{"/bin/sh", "-c", prelude + body + "\nexit 0\n"},
		Stdout:  &stdout,
		Stderr:  &stderr,
		Timeout: m.timeout,
	})
	switch {
	case err != nil:
		return nil, fmt.Errorf("run /bin/sh: %w", err)
	case st.TimedOut:
		return nil, fmt.Errorf("timed out after %s", m.timeout)
	case st.Code != 0:
		return nil, fmt.Errorf("/bin/sh exited with %d: %s", st.Code, lastLine(stderr.String()))
	}
	return parseFacts(stdout.String()), nil
}

// exists reports whether path exists in the machine.
func (m machine) exists(ctx context.Context, path string) (bool, error) {
	_, err := m.sb.Stat(ctx, path)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, fmt.Errorf("stat %s: %w", path, err)
}

// readFile returns path's contents and whether it exists.
func (m machine) readFile(ctx context.Context, path string) ([]byte, bool, error) {
	data, err := m.sb.ReadFile(ctx, path)
	switch {
	case err == nil:
		return data, true, nil
	case errors.Is(err, fs.ErrNotExist):
		return nil, false, nil
	}
	return nil, false, fmt.Errorf("read %s: %w", path, err)
}

// script is the observation of a probe that only runs a shell script.
func script(body string) func(context.Context, machine) (Facts, error) {
	return func(ctx context.Context, m machine) (Facts, error) { return m.sh(ctx, body) }
}

// cappedBuffer keeps the first limit bytes written to it and drops the rest,
// so a runaway command cannot exhaust memory.
type cappedBuffer struct {
	bytes.Buffer
	limit int
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.limit - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return "no output on stderr"
	}
	return s[strings.LastIndexByte(s, '\n')+1:]
}

// listMax renders items as "a, b, c (+2 more)".
func listMax(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s (+%d more)", strings.Join(items[:n], ", "), len(items)-n)
}
