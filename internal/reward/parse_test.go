package reward

import (
	"slices"
	"strings"
	"testing"

	"github.com/verisim/verisim/internal/task"
)

func TestParse(t *testing.T) {
	type tr = TestResult
	tests := []struct {
		name, format, output string
		want                 []TestResult
	}{
		{
			name:   "go verbose with subtests and skip",
			format: task.FormatGo,
			output: `=== RUN   TestAdd
--- PASS: TestAdd (0.00s)
=== RUN   TestSub
=== RUN   TestSub/neg
    --- FAIL: TestSub/neg (0.00s)
        sub_test.go:12: got 1
=== RUN   TestSub/pos
    --- PASS: TestSub/pos (0.00s)
--- FAIL: TestSub (0.00s)
=== RUN   TestSkip
    x_test.go:3: not here
--- SKIP: TestSkip (0.00s)
FAIL
exit status 1
FAIL	example.com/m	0.003s
`,
			want: []tr{{"TestAdd", true}, {"TestSub", false}, {"TestSkip", false}},
		},
		{
			name:   "go build failure fails everything",
			format: task.FormatGo,
			output: "--- PASS: TestA (0.00s)\nok  \texample.com/m/a\t0.01s\n# example.com/m/b\nb/b.go:3:1: syntax error\nFAIL\texample.com/m/b [build failed]\nFAIL\n",
			want:   []tr{{"TestA", false}, {"example.com/m/b [build failed]", false}},
		},
		{
			name:   "go setup failure",
			format: task.FormatGo,
			output: "FAIL\texample.com/m [setup failed]\n",
			want:   []tr{{"example.com/m [setup failed]", false}},
		},
		{
			name:   "go same test in two packages fails if either fails",
			format: task.FormatGo,
			output: "--- PASS: TestX (0.00s)\n--- FAIL: TestX (0.00s)\n--- PASS: TestX (0.00s)\n",
			want:   []tr{{"TestX", false}},
		},
		{
			name:   "unittest 3.11 with docstring, printed output, subtests, skip",
			format: task.FormatUnittest,
			output: `test_a (test_m.C.test_a) ... hellook
test_b (test_m.C.test_b)
Doc line. ... FAIL
test_c (test_m.C.test_c) ... 
  test_c (test_m.C.test_c) (i=1) ... FAIL
test_d (test_m.C.test_d) ... skipped 'nope'
test_e (test_m.C.test_e) ... expected failure
test_f (test_m.C.test_f) ... ERROR
test_g (test_m.C.test_g) ... printed
on two lines
ok

======================================================================
ERROR: test_f (test_m.C.test_f)
----------------------------------------------------------------------
FAIL: test_c (test_m.C.test_c) (i=1)
----------------------------------------------------------------------
Ran 7 tests in 0.008s

FAILED (failures=2, errors=1, skipped=1, expected failures=1)
`,
			want: []tr{
				{"test_m.C.test_a", true}, {"test_m.C.test_b", false}, {"test_m.C.test_c", false},
				{"test_m.C.test_d", false}, {"test_m.C.test_e", true}, {"test_m.C.test_f", false},
				{"test_m.C.test_g", true},
			},
		},
		{
			name:   "unittest before 3.11 names the class only",
			format: task.FormatUnittest,
			output: "test_parse (tests.test_cfg.ParseTest) ... ok\ntest_dump (tests.test_cfg.ParseTest) ... FAIL\nsetUpClass (tests.test_io.IOTest) ... ERROR\n",
			want: []tr{
				{"tests.test_cfg.ParseTest.test_parse", true}, {"tests.test_cfg.ParseTest.test_dump", false},
				{"tests.test_io.IOTest.setUpClass", false},
			},
		},
		{
			name:   "unittest import error and a test that never finished",
			format: task.FormatUnittest,
			output: "test_broken (unittest.loader._FailedTest.test_broken) ... ERROR\ntest_hang (m.C.test_hang) ... ",
			want:   []tr{{"unittest.loader._FailedTest.test_broken", false}, {"m.C.test_hang", false}},
		},
		{
			name:   "unittest ignores lines a test prints that look like tests",
			format: task.FormatUnittest,
			output: "value (x.y)\ntest_a (m.C.test_a) ... ok\n",
			want:   []tr{{"m.C.test_a", true}},
		},
		{
			name:   "pytest -rA summary",
			format: task.FormatPytest,
			output: `============================= test session starts ==============================
collected 5 items

tests/test_x.py ..F.s                                                    [100%]
=========================== short test summary info ============================
PASSED tests/test_x.py::test_a
PASSED tests/test_x.py::TestK::test_b
PASSED tests/test_x.py::test_p[1-2]
FAILED tests/test_x.py::test_c - AssertionError: assert 1 == 2
SKIPPED [1] tests/test_x.py:20: no network
ERROR tests/test_y.py - ImportError: cannot import name 'f'
XFAIL tests/test_x.py::test_x - reason
==================== 1 failed, 3 passed, 1 skipped in 0.05s ====================
`,
			want: []tr{
				{"tests/test_x.py::test_a", true}, {"tests/test_x.py::TestK::test_b", true},
				{"tests/test_x.py::test_p[1-2]", true}, {"tests/test_x.py::test_c", false},
				{"tests/test_y.py", false}, {"tests/test_x.py::test_x", false},
			},
		},
		{
			name:   "pytest verbose and summary agree; teardown error fails a pass",
			format: task.FormatPytest,
			output: "tests/t.py::test_a PASSED                [ 50%]\ntests/t.py::test_b PASSED   [100%]\nPASSED tests/t.py::test_a\nPASSED tests/t.py::test_b\nERROR tests/t.py::test_b - teardown\n",
			want:   []tr{{"tests/t.py::test_a", true}, {"tests/t.py::test_b", false}},
		},
		{
			name:   "tap with skip, todo, subtests and a plan that was not finished",
			format: task.FormatTAP,
			output: "TAP version 13\n1..6\nok 1 - parses\nnot ok 2 - dumps\n  ---\n  message: bad\n  ...\nok 3 - net # SKIP no network\nnot ok 4 - later # TODO not yet\n    ok 1 - inner\nok 5\n",
			want:   []tr{{"parses", true}, {"dumps", false}, {"net", false}, {"#5", true}, {"#6", false}},
		},
		{
			name:   "tap without numbers, repeated descriptions, bail out",
			format: task.FormatTAP,
			output: "ok - same\nok - same\nnot ok - other\nBail out! broken\nok - after\n1..5\n",
			want:   []tr{{"same", true}, {"same (#2)", true}, {"other", false}, {"Bail out!", false}},
		},
		{
			// What the suite said before it gave up does not make a pass.
			name:   "tap bail out after passing",
			format: task.FormatTAP,
			output: "1..2\nok 1 a\nok 2 b\nBail out! the rest\n",
			want:   []tr{{"a", true}, {"b", true}, {"Bail out!", false}},
		},
		{
			name:   "exit has no tests",
			format: task.FormatExit,
			output: "--- PASS: TestA\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.format, tc.output)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Parse:\n got %v\nwant %v", got, tc.want)
			}
		})
	}
}

func TestParseUnknownFormat(t *testing.T) {
	if _, err := Parse("junit", ""); err == nil {
		t.Fatal("Parse accepted an unknown format")
	}
}

// TestOutputSinkMatchesParse feeds output in awkward pieces through the
// grader's streaming sink and checks it reads what Parse reads.
func TestOutputSinkMatchesParse(t *testing.T) {
	out := "--- PASS: TestA (0.00s)\r\n--- FAIL: TestB (0.00s)\n" + strings.Repeat("x", maxLine+10) + "\n--- PASS: TestC (0.00s)"
	want, _ := Parse(task.FormatGo, out)
	for _, size := range []int{1, 3, 7, 4096, len(out)} {
		p, _ := newParser(task.FormatGo)
		s := &outputSink{parser: p, tail: tailBuffer{max: 100}}
		for i := 0; i < len(out); i += size {
			s.Write([]byte(out[i:min(len(out), i+size)]))
		}
		s.flush()
		if got := p.results(); !slices.Equal(got, want) {
			t.Errorf("chunks of %d: got %v, want %v", size, got, want)
		}
		if tail := s.tail.String(); !strings.HasSuffix(tail, "--- PASS: TestC (0.00s)") || !strings.HasPrefix(tail, "[") {
			t.Errorf("chunks of %d: tail %q", size, tail)
		}
	}
}

func FuzzParse(f *testing.F) {
	seeds := []string{
		"--- PASS: TestA (0.00s)\nFAIL\tx [build failed]\n",
		"test_a (m.C.test_a) ... ok\ntest_b (m.C)\nDoc ... FAIL\n  test_c (m.C.test_c) (i=1) ... FAIL\nERROR: test_d (m.C.test_d)\n",
		"PASSED a.py::t\nFAILED a.py::u - x\nERROR b.py\na.py::v PASSED\n",
		"1..4\nok 1 - a\nnot ok 2 b # TODO\nok 3 # SKIP\nBail out!\n",
		"ok\nnot ok 99999999999999999999\n1..99999999\n",
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, out string) {
		for _, format := range []string{task.FormatGo, task.FormatUnittest, task.FormatPytest, task.FormatTAP} {
			res, err := Parse(format, out)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			for _, r := range res {
				if seen[r.Name] {
					t.Fatalf("%s: %q reported twice", format, r.Name)
				}
				seen[r.Name] = true
			}
			// The grader's tally, with expected tests some of which the
			// output may not report.
			g := &Grader{grade: task.Grade{Format: format}, expected: []string{"TestA", "test_a", "t"}}
			tests, _ := g.expect(res)
			var r Result
			r.count(tests)
			if r.Passed+r.Failed != r.Total || r.Total < len(res) || r.Fraction < 0 || r.Fraction > 1 {
				t.Fatalf("%s: passed %d + failed %d of %d, fraction %v", format, r.Passed, r.Failed, r.Total, r.Fraction)
			}
			// The grader reads output in whatever pieces the machine sends.
			p, _ := newParser(format)
			s := &outputSink{parser: p}
			for i := 0; i < len(out); i += 5 {
				s.Write([]byte(out[i:min(len(out), i+5)]))
			}
			s.flush()
			if got := p.results(); !slices.Equal(got, res) {
				t.Fatalf("%s: in pieces %v, whole %v", format, got, res)
			}
		}
	})
}
