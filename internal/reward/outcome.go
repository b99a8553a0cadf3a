package reward

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/verisim/verisim/internal/sandbox"
	"github.com/verisim/verisim/internal/task"
)

// command runs the grade command and reads its outcome.
func (r *gradeRun) command(ctx context.Context) (*Result, error) {
	gr := r.g.grade
	p, _ := newParser(gr.Format)
	out := &outputSink{parser: p, tail: tailBuffer{max: outputTail}}
	cmd := sandbox.Cmd{
		Args:    []string{"/bin/bash", "-c", gr.Command},
		Env:     r.g.Env,
		Dir:     r.ws,
		Stdout:  out,
		Stderr:  out,
		Timeout: gr.Timeout,
	}
	if gr.User == "root" {
		u := rootUser
		cmd.User = &u
		cmd.Env = rootEnv(cmd.Env)
	}
	st, err := r.sb.Run(ctx, cmd)
	if err != nil {
		return nil, fmt.Errorf("run grade command: %w", err)
	}
	out.flush()
	res := &Result{ExitCode: st.Code, TimedOut: st.TimedOut, Output: out.tail.String()}
	var notes []string
	switch {
	case st.TimedOut:
		notes = append(notes, fmt.Sprintf("grade command timed out after %v", gr.Timeout))
	case st.OOMKilled:
		notes = append(notes, "grade command killed for lack of memory")
	}
	if gr.Format == task.FormatExit {
		more, err := r.exitOutcome(ctx, res)
		if err != nil {
			return nil, err
		}
		notes = append(notes, more...)
	}
	exitOK := st.Code == 0
	forged := false
	if gr.Format != task.FormatExit {
		reported, canariesFailed, note := r.checkCanaries(p.results())
		if note != "" {
			forged = true
			notes = append(notes, note)
		}
		if canariesFailed {
			// A canary's failure makes the runner exit 1 (go test, unittest,
			// pytest), and must.
			exitOK = st.Code == 1
			if st.Code == 0 {
				forged = true
				notes = append(notes, "the tests the grader placed to fail were reported failing, yet the run exited 0: the report is not the tests' own")
			}
		}
		var missing []string
		var tests []TestResult
		tests, missing = r.g.expect(reported)
		if len(missing) > 0 {
			notes = append(notes, "expected tests that did not report: "+clip(strings.Join(missing, ", "), 500))
		}
		res.count(tests)
	}
	res.Pass = exitOK && !forged && !st.TimedOut && res.Failed == 0 && (res.Total > 0 || gr.Format == task.FormatExit)
	res.Note = strings.Join(notes, "; ")
	return res, nil
}

// count sets the tests and their tally.
func (res *Result) count(tests []TestResult) {
	res.Tests = tests
	res.Passed = 0
	for _, t := range tests {
		if t.Passed {
			res.Passed++
		}
	}
	res.Total = len(tests)
	res.Failed = res.Total - res.Passed
	res.Fraction = 0
	if res.Total > 0 {
		res.Fraction = float64(res.Passed) / float64(res.Total)
	}
}

// exitOutcome grades format exit: the command is the one test, unless a
// reward file gives the reward.
func (r *gradeRun) exitOutcome(ctx context.Context, res *Result) ([]string, error) {
	ok := res.ExitCode == 0 && !res.TimedOut
	name := "exit"
	frac := 0.0
	if ok {
		frac = 1
	}
	var notes []string
	if rf := r.g.grade.RewardFile; rf != "" {
		name = "reward_file"
		full := rf
		if !path.IsAbs(full) {
			full = r.abs(rf)
		}
		var note string
		var err error
		if frac, note, err = r.readReward(ctx, full); err != nil {
			return nil, err
		}
		if note != "" {
			notes = append(notes, note)
		}
		ok = frac == 1
	}
	res.Tests = []TestResult{{Name: name, Passed: ok}}
	res.Total = 1
	if ok {
		res.Passed = 1
	} else {
		res.Failed = 1
	}
	res.Fraction = frac
	return notes, nil
}

// readReward reads a reward file: a number from 0 to 1. Anything else is
// 0, with a note, since a grade command that fails to write its reward
// has not shown the work is done.
// readReward reads the reward the grade command wrote. A file that is not
// there or holds no number is a zero, with a note; a machine that cannot be
// read is an error, never a zero.
func (r *gradeRun) readReward(ctx context.Context, full string) (float64, string, error) {
	data, err := r.sb.ReadFile(ctx, full)
	if err != nil {
		if isMissing(err) || errors.Is(err, syscall.EISDIR) || errors.Is(err, fs.ErrPermission) || errors.Is(err, sandbox.ErrNotRegular) {
			return 0, fmt.Sprintf("reward file %s: %v", full, err), nil
		}
		return 0, "", fmt.Errorf("read reward file %s: %w", full, err)
	}
	s := strings.TrimSpace(string(data))
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 || v > 1 || v != v {
		return 0, fmt.Sprintf("reward file %s: %q is not a number from 0 to 1", full, clip(s, 40)), nil
	}
	return v, "", nil
}

// expect applies the expected tests to what the output reported: with
// Grade.Tests, only those count; otherwise every reported test counts.
// An expected test that did not report is added, failed.
func (g *Grader) expect(tests []TestResult) ([]TestResult, []string) {
	var missing []string
	if len(g.grade.Tests) > 0 {
		var kept []TestResult
		for _, t := range tests {
			if slices.ContainsFunc(g.grade.Tests, func(e string) bool { return testMatches(e, t.Name) }) {
				kept = append(kept, t)
			}
		}
		for _, e := range g.grade.Tests {
			if !slices.ContainsFunc(kept, func(t TestResult) bool { return testMatches(e, t.Name) }) {
				kept = append(kept, TestResult{Name: e})
				missing = append(missing, e)
			}
		}
		return kept, missing
	}
	have := map[string]bool{}
	for _, t := range tests {
		have[finalElement(t.Name)] = true
	}
	for _, e := range g.expected {
		if !have[e] {
			tests = append(tests, TestResult{Name: e})
			missing = append(missing, e)
		}
	}
	return tests, missing
}

// testMatches reports whether the Grade.Tests entry names the reported
// test: exactly, as a trailing part of its id ("Class.test_x" for
// "mod.Class.test_x", "test_x.py::test_y" for "tests/test_x.py::test_y"),
// or without its parameters ("t.py::test_y" for "t.py::test_y[1]").
func testMatches(entry, name string) bool {
	if name == entry {
		return true
	}
	if i := strings.IndexByte(name, '['); i > 0 && name[:i] == entry {
		return true
	}
	for _, sep := range []string{".", "::", "/"} {
		if strings.HasSuffix(name, sep+entry) {
			return true
		}
	}
	return false
}

// finalElement is the function name in a reported test name:
// "pkg.mod.Class.test_x" and "tests/t.py::Class::test_x[1]" give "test_x".
func finalElement(name string) string {
	if i := strings.LastIndex(name, "::"); i >= 0 {
		name = name[i+2:]
	}
	if i := strings.IndexByte(name, '['); i > 0 {
		name = name[:i]
	}
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		name = name[i+1:]
	}
	return name
}
