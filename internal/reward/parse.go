package reward

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/verisim/verisim/internal/task"

	"github.com/verisim/verisim/internal/lazyregexp"
)

// TestResult is one test as the grade command's output reported it.
type TestResult struct {
	Name   string `json:"name"`
	Passed bool   `json:"passed"`
}

// Parse reads the tests a grade command's output reports, in the given
// format (task.Format*). A test reported more than once passes only if
// every report of it passed. Format exit reports no tests: the exit status
// is the test, and only the grader knows it.
func Parse(format, output string) ([]TestResult, error) {
	p, err := newParser(format)
	if err != nil {
		return nil, err
	}
	if p == nil {
		return nil, nil
	}
	s := &outputSink{parser: p}
	s.Write([]byte(output))
	s.flush()
	return p.results(), nil
}

// lineParser reads output one line at a time, so that the grader can parse
// output far longer than the tail it keeps.
type lineParser interface {
	line(s string)
	results() []TestResult
}

// newParser returns the parser for format; nil for exit.
func newParser(format string) (lineParser, error) {
	switch format {
	case task.FormatExit, "":
		return nil, nil
	case task.FormatGo:
		return &goParser{}, nil
	case task.FormatUnittest:
		return &unittestParser{}, nil
	case task.FormatPytest:
		return &pytestParser{}, nil
	case task.FormatTAP:
		return &tapParser{}, nil
	}
	return nil, fmt.Errorf("unknown grade format %q", format)
}

// tally collects test outcomes in order of first report; a failure of a
// name overrides any pass of it, so that a test that passes in one package
// and fails in another, or passes and then errors in teardown, fails.
type tally struct {
	order []string
	pass  map[string]bool
}

func (t *tally) add(name string, passed bool) {
	if t.pass == nil {
		t.pass = map[string]bool{}
	}
	prev, seen := t.pass[name]
	if !seen {
		t.order = append(t.order, name)
		t.pass[name] = passed
		return
	}
	t.pass[name] = prev && passed
}

func (t *tally) has(name string) bool { _, ok := t.pass[name]; return ok }

func (t *tally) results() []TestResult {
	out := make([]TestResult, len(t.order))
	for i, n := range t.order {
		out[i] = TestResult{Name: n, Passed: t.pass[n]}
	}
	return out
}

// goParser reads "go test -v". Only top-level tests count: subtests are
// indented and their outcome is already part of their parent's.
type goParser struct {
	t tally
	// broken is set by a package that did not build: its tests never ran,
	// so no test in the output is trusted to have passed.
	broken bool
}

var (
	goResultRE = lazyregexp.New(`^--- (PASS|FAIL|SKIP): (\S+)`)
	goBrokenRE = lazyregexp.New(`^FAIL\s+(\S+)\s+\[(build failed|setup failed)\]`)
)

func (p *goParser) line(s string) {
	if !strings.HasPrefix(s, "--- ") && !strings.HasPrefix(s, "FAIL") {
		return // most of a verbose run's output is the tests' own logging
	}
	if m := goResultRE.FindStringSubmatch(s); m != nil {
		p.t.add(m[2], m[1] == "PASS")
		return
	}
	if m := goBrokenRE.FindStringSubmatch(s); m != nil {
		p.broken = true
		p.t.add(m[1]+" ["+m[2]+"]", false)
	}
}

func (p *goParser) results() []TestResult {
	r := p.t.results()
	if p.broken {
		for i := range r {
			r[i].Passed = false
		}
	}
	return r
}

// unittestParser reads "python3 -m unittest -v". Tests are named by their
// full dotted id, "pkg.mod.Class.test_x": Python 3.11 prints that id in
// parentheses while older versions print "pkg.mod.Class", and the method is
// appended when missing so that both spell a test the same way.
//
// A result may be separated from its test's line: a docstring puts it on
// the next line, and output the test prints (without a newline) comes
// before it. A test with failing subtests gets no result line of its own,
// only indented subtest lines and a "FAIL: name (id)" section below.
type unittestParser struct {
	t       tally
	pending string // id of the test whose result line has not come yet
}

var (
	utHeaderRE  = lazyregexp.New(`^(\w+) \(([\w.]+)\)(.*)$`)
	utSubtestRE = lazyregexp.New(`^\s+\w+ \([\w.]+\) \(.*\) \.\.\. (.*)$`)
	utSectionRE = lazyregexp.New(`^(FAIL|ERROR|UNEXPECTED SUCCESS): (\w+) \(([\w.]+)\)`)
)

func utID(method, id string) string {
	if id == method || strings.HasSuffix(id, "."+method) {
		return id
	}
	return id + "." + method
}

// utOutcome reads the status unittest prints after " ... ", possibly
// preceded by what the test printed. ok=false means s holds no status.
func utOutcome(s string) (passed, ok bool) {
	switch {
	case strings.HasSuffix(s, "expected failure"), strings.HasSuffix(s, "ok"):
		return true, true
	case strings.HasSuffix(s, "FAIL"), strings.HasSuffix(s, "ERROR"), strings.HasSuffix(s, "unexpected success"):
		return false, true
	case strings.Contains(s, "skipped"):
		return false, true
	}
	return false, false
}

func (p *unittestParser) line(s string) {
	if m := utSectionRE.FindStringSubmatch(s); m != nil {
		p.t.add(utID(m[2], m[3]), false)
		return
	}
	if m := utSubtestRE.FindStringSubmatch(s); m != nil {
		if passed, ok := utOutcome(m[1]); ok && !passed && p.pending != "" {
			p.t.add(p.pending, false)
		}
		return
	}
	if m := utHeaderRE.FindStringSubmatch(s); m != nil && utLooksLikeTest(m[1], m[2]) {
		p.flushPending()
		id := utID(m[1], m[2])
		if rest, found := strings.CutPrefix(m[3], " ... "); found {
			if passed, ok := utOutcome(rest); ok {
				p.t.add(id, passed)
				return
			}
		}
		p.pending = id
		return
	}
	if p.pending == "" {
		return
	}
	// A docstring line ("Doc. ... ok") or a bare status after printed lines.
	st := s
	if i := strings.LastIndex(s, " ... "); i >= 0 {
		st = s[i+len(" ... "):]
	} else if !utBareStatus(s) {
		return
	}
	if passed, ok := utOutcome(st); ok {
		p.t.add(p.pending, passed)
		p.pending = ""
	}
}

// utLooksLikeTest keeps lines a test happens to print, such as
// "value (x.y)", from being read as tests.
func utLooksLikeTest(method, id string) bool {
	switch {
	case strings.HasPrefix(method, "test"),
		strings.HasPrefix(id, "unittest.loader."),
		method == "setUpClass", method == "tearDownClass",
		method == "setUpModule", method == "tearDownModule":
		return true
	}
	return false
}

func utBareStatus(s string) bool {
	switch s {
	case "ok", "FAIL", "ERROR", "expected failure", "unexpected success":
		return true
	}
	return strings.HasPrefix(s, "skipped")
}

// flushPending settles a test whose status never came: it did not report
// passing, so it failed (unless a failing subtest already said so).
func (p *unittestParser) flushPending() {
	if p.pending != "" && !p.t.has(p.pending) {
		p.t.add(p.pending, false)
	}
	p.pending = ""
}

func (p *unittestParser) results() []TestResult {
	p.flushPending()
	return p.t.results()
}

// pytestParser reads the short summary of "pytest -rA" ("PASSED node",
// "FAILED node - msg") and also the verbose form "node PASSED [ 50%]", so a
// command with -v as well gives the same answer. SKIPPED summary lines name
// a file and line rather than a test and are ignored: an expected test that
// was skipped is caught by the grader's expected-test check. Only PASSED
// passes; XFAIL and XPASS do not, as the task format says.
type pytestParser struct{ t tally }

var (
	pytestSummaryRE = lazyregexp.New(`^(PASSED|FAILED|ERROR|XFAIL|XPASS|SKIPPED) (\S+)`)
	pytestVerboseRE = lazyregexp.New(`^(\S+::\S+) (PASSED|FAILED|ERROR|XFAIL|XPASS|SKIPPED)\b`)
)

func (p *pytestParser) line(s string) {
	var status, node string
	if m := pytestSummaryRE.FindStringSubmatch(s); m != nil {
		status, node = m[1], m[2]
		if status == "SKIPPED" && !strings.Contains(node, "::") {
			return
		}
	} else if m := pytestVerboseRE.FindStringSubmatch(s); m != nil {
		node, status = m[1], m[2]
	} else {
		return
	}
	p.t.add(node, status == "PASSED")
}

func (p *pytestParser) results() []TestResult { return p.t.results() }

// tapParser reads the Test Anything Protocol. Indented lines (subtests,
// YAML diagnostics) are not top-level tests. "# SKIP" does not pass, so
// that a test skipped by a broken environment is not a pass; "# TODO"
// tests are expected to fail and do not count. A plan ("1..N") whose tests
// did not all report adds the missing ones as failed: the script died.
type tapParser struct {
	t       tally
	plan    int
	seen    map[int]bool
	next    int
	bailed  bool
	descSeq map[string]int
}

// maxTAPPlan bounds the tests a plan may say are missing; a larger plan is
// not one any real suite prints, and would cost a result per number.
const maxTAPPlan = 100_000

var (
	tapTestRE = lazyregexp.New(`^(not ok|ok)\b[ \t]*(\d+)?[ \t]*(?:-[ \t]*)?([^#]*?)[ \t]*(?:#[ \t]*(.*))?$`)
	tapPlanRE = lazyregexp.New(`^1\.\.(\d+)`)
)

func (p *tapParser) line(s string) {
	if p.bailed {
		return
	}
	if strings.HasPrefix(s, "Bail out!") {
		p.bailed = true
		return
	}
	if m := tapPlanRE.FindStringSubmatch(s); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil && n <= maxTAPPlan {
			p.plan = n
		}
		return
	}
	m := tapTestRE.FindStringSubmatch(s)
	if m == nil {
		return
	}
	p.next++
	num := p.next
	if m[2] != "" {
		if n, err := strconv.Atoi(m[2]); err == nil {
			num = n
			p.next = n
		}
	}
	if p.seen == nil {
		p.seen = map[int]bool{}
	}
	p.seen[num] = true
	directive := strings.ToUpper(m[4])
	if strings.HasPrefix(directive, "TODO") {
		return
	}
	passed := m[1] == "ok" && !strings.HasPrefix(directive, "SKIP")
	p.t.add(p.name(m[3], num), passed)
}

// name is the test's description, made unique: TAP does not require
// descriptions to differ, and two tests must not merge into one.
func (p *tapParser) name(desc string, num int) string {
	if desc == "" {
		return "#" + strconv.Itoa(num)
	}
	if p.descSeq == nil {
		p.descSeq = map[string]int{}
	}
	p.descSeq[desc]++
	if p.descSeq[desc] > 1 || p.t.has(desc) {
		return fmt.Sprintf("%s (#%d)", desc, num)
	}
	return desc
}

func (p *tapParser) results() []TestResult {
	for n := 1; n <= p.plan; n++ {
		if !p.seen[n] {
			p.t.add("#"+strconv.Itoa(n), false)
		}
	}
	if p.bailed {
		// The run gave up: whatever it reported before does not make a
		// pass.
		p.t.add("Bail out!", false)
	}
	return p.t.results()
}
