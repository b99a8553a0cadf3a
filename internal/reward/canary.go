package reward

import (
	"context"
	"crypto/rand"
	"fmt"
	"path"
	"strings"

	"github.com/verisim/verisim/internal/lazyregexp"
	"github.com/verisim/verisim/internal/task"
)

// Canaries: the agent's code runs inside the test process, where it can
// print a report of its own ("--- PASS: TestX" for every test it finds,
// then exit 0 before any runs) or stop the tests from failing. So the
// grader puts, beside the hidden tests of each Go package and of each
// directory of Python test modules, one more test that fails, under a name
// and with a body no different from an ordinary test's. A run whose report does not show it failed did not run the
// tests as written: the grade fails, with a note. A run that shows it
// failed is graded on the other tests, and the non-zero exit it causes is
// expected.

// canary is a test placed to fail.
type canary struct {
	name string
	file string // absolute
	// mustReport: a run that does not report it at all is not the tests'
	// own either. Go's hidden tests make every package with a canary run;
	// a Python grade command may name the test modules it runs, and leave
	// the canary's out.
	mustReport bool
}

var goPackageRE = lazyregexp.New(`(?m)^package\s+([A-Za-z_][A-Za-z0-9_]*)`)

// placeCanaries writes a failing test into each directory that holds
// hidden tests of format go, unittest or pytest. They are sealed with the
// hidden tests.
func (r *gradeRun) placeCanaries(ctx context.Context) error {
	switch r.g.grade.Format {
	case task.FormatGo:
	case task.FormatUnittest, task.FormatPytest:
		return r.placePythonCanaries(ctx)
	default:
		return nil
	}
	pkgs := map[string]string{} // directory → package clause
	var dirs []string
	for _, t := range r.g.tests {
		if !strings.HasSuffix(t.Path, "_test.go") {
			continue
		}
		dir := path.Dir(path.Join(r.target, t.Path))
		m := goPackageRE.FindSubmatch(t.Data)
		if m == nil {
			continue
		}
		if _, ok := pkgs[dir]; !ok {
			pkgs[dir] = string(m[1])
			dirs = append(dirs, dir)
		}
	}
	for _, dir := range dirs {
		c := canary{name: "Test" + word(true) + word(true), file: path.Join(dir, word(false)+"_"+word(false)+"_test.go"), mustReport: true}
		want, got := word(false), word(false)
		src := fmt.Sprintf("package %s\n\nimport \"testing\"\n\nfunc %s(t *testing.T) {\n\tif got, want := %q, %q; got != want {\n\t\tt.Errorf(\"got %%q, want %%q\", got, want)\n\t}\n}\n", pkgs[dir], c.name, got, want)
		if err := r.sb.WriteFile(ctx, c.file, []byte(src), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", c.file, err)
		}
		r.canaries = append(r.canaries, c)
	}
	return nil
}

// placePythonCanaries writes a failing test module beside the hidden test
// modules, in each directory that holds some: a runner the agent's code
// patched to pass every test (unittest.TestCase._callTestMethod replaced
// on import) reports it passing.
func (r *gradeRun) placePythonCanaries(ctx context.Context) error {
	seen := map[string]bool{}
	for _, t := range r.g.tests {
		base := path.Base(t.Path)
		if !strings.HasSuffix(base, ".py") || !(strings.HasPrefix(base, "test") || strings.HasSuffix(base, "_test.py")) {
			continue
		}
		dir := path.Dir(path.Join(r.target, t.Path))
		if seen[dir] {
			continue
		}
		seen[dir] = true
		method := "test_" + word(false) + "_" + word(false)
		c := canary{name: method, file: path.Join(dir, "test_"+word(false)+".py")}
		want, got := word(false), word(false)
		src := fmt.Sprintf("import unittest\n\n\nclass %sTest(unittest.TestCase):\n    def %s(self):\n        self.assertEqual(%q, %q)\n", word(true), method, got, want)
		if err := r.sb.WriteFile(ctx, c.file, []byte(src), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", c.file, err)
		}
		r.canaries = append(r.canaries, c)
	}
	return nil
}

// word is a random lowercase word of 6 to 9 letters, capitalised with
// upper; two never come out the same in practice.
func word(upper bool) string {
	var b [10]byte
	_, _ = rand.Read(b[:])
	n := 6 + int(b[0])%4
	out := make([]byte, n)
	for i := range out {
		out[i] = 'a' + b[i+1]%26
	}
	if upper {
		out[0] -= 'a' - 'A'
	}
	return string(out)
}

// checkCanaries takes the canaries out of the reported tests, and reports
// whether any was reported failing (then the run's exit status is that of
// a failed test run), or, in note, why the report is not the tests' own.
func (r *gradeRun) checkCanaries(tests []TestResult) (rest []TestResult, failed bool, note string) {
	if len(r.canaries) == 0 {
		return tests, false, ""
	}
	seen := map[string]bool{} // canary name → reported passing
	for _, t := range tests {
		if c, ok := r.canaryOf(t.Name); ok {
			seen[c] = seen[c] || t.Passed
			continue
		}
		rest = append(rest, t)
	}
	failed = false
	for _, c := range r.canaries {
		passed, reported := seen[c.name]
		switch {
		case !reported && c.mustReport:
			return rest, false, fmt.Sprintf("a test the grader placed to fail (%s) was not reported: its package did not build or run, or the report is not the tests' own", c.name)
		case passed:
			return rest, false, fmt.Sprintf("a test the grader placed to fail (%s) was reported passing: the report is not the tests' own", c.name)
		case reported:
			failed = true
		}
	}
	return rest, failed, ""
}

// canaryOf reports the canary a reported test name is: Go's by name,
// Python's by the method, at the end of a dotted (unittest) or :: (pytest)
// id.
func (r *gradeRun) canaryOf(name string) (string, bool) {
	for _, c := range r.canaries {
		if name == c.name || strings.HasSuffix(name, "."+c.name) || strings.HasSuffix(name, "::"+c.name) {
			return c.name, true
		}
	}
	return "", false
}
