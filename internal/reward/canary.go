package reward

import (
	"context"
	"crypto/rand"
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/verisim/verisim/internal/task"
)

// Canaries: the agent's code runs inside the test process, where it can
// print a report of its own ("--- PASS: TestX" for every test it finds,
// then exit 0 before any runs) or stop the tests from failing. So the
// grader puts, beside the hidden tests of each Go package, one more test
// that fails, under a name and with a body no different from an ordinary
// test's. A run whose report does not show it failed did not run the
// tests as written: the grade fails, with a note. A run that shows it
// failed is graded on the other tests, and the non-zero exit it causes is
// expected.

// canary is a test placed to fail.
type canary struct {
	name string
	file string // absolute
}

var goPackageRE = regexp.MustCompile(`(?m)^package\s+([A-Za-z_][A-Za-z0-9_]*)`)

// placeCanaries writes a failing test into each directory that holds
// hidden Go tests (format go only). They are sealed with the hidden tests.
func (r *gradeRun) placeCanaries(ctx context.Context) error {
	if r.g.grade.Format != task.FormatGo {
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
		c := canary{name: "Test" + word(true) + word(true), file: path.Join(dir, word(false)+"_"+word(false)+"_test.go")}
		want, got := word(false), word(false)
		src := fmt.Sprintf("package %s\n\nimport \"testing\"\n\nfunc %s(t *testing.T) {\n\tif got, want := %q, %q; got != want {\n\t\tt.Errorf(\"got %%q, want %%q\", got, want)\n\t}\n}\n", pkgs[dir], c.name, got, want)
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
// whether each was reported failing. ok is true when there are none.
func (r *gradeRun) checkCanaries(tests []TestResult) (rest []TestResult, failed bool, note string) {
	if len(r.canaries) == 0 {
		return tests, false, ""
	}
	seen := map[string]bool{} // name → passed
	for _, t := range tests {
		if r.isCanary(t.Name) {
			seen[t.Name] = seen[t.Name] || t.Passed
			continue
		}
		rest = append(rest, t)
	}
	for _, c := range r.canaries {
		passed, reported := seen[c.name]
		switch {
		case !reported:
			return rest, false, fmt.Sprintf("a test the grader placed to fail (%s) was not reported: its package did not build or run, or the report is not the tests' own", c.name)
		case passed:
			return rest, false, fmt.Sprintf("a test the grader placed to fail (%s) was reported passing: the report is not the tests' own", c.name)
		}
	}
	return rest, true, ""
}

func (r *gradeRun) isCanary(name string) bool {
	for _, c := range r.canaries {
		if name == c.name {
			return true
		}
	}
	return false
}
