package reward

import "testing"

func TestProtectGlob(t *testing.T) {
	tests := []struct {
		pattern, name string
		want          bool
	}{
		{"tests/**", "tests/test_x.py", true},
		{"tests/**", "tests/sub/deep/x.py", true},
		{"tests/**", "src/tests/x.py", false},
		{"tests/**", "tests", true},
		{"**/*_test.go", "a/b/c_test.go", true},
		{"**/*_test.go", "c_test.go", true},
		{"*_test.go", "pkg/sub/x_test.go", true}, // no slash: any depth
		{"*_test.go", "x.go", false},
		{"/x_test.go", "x_test.go", true}, // leading slash anchors
		{"/x_test.go", "pkg/x_test.go", false},
		{"tests", "pkg/tests/a.py", true}, // a directory protects what is below it
		{"tests/", "tests", false},        // trailing slash: directories only
		{"tests/", "tests/a.py", true},
		{"./tests/*.py", "tests/a.py", true},
		{"tests/*.py", "tests/sub/a.py", false},
		{"src/**/fixtures/*.json", "src/a/b/fixtures/x.json", true},
		{"src/**/fixtures/*.json", "src/fixtures/x.json", true},
		{"test_[a-c].py", "t/test_b.py", true},
		{"test_[a-c].py", "t/test_d.py", false},
		{"tests/**", "../tests/x", false},
		{"tests/**", "/tests/x", false},
	}
	for _, tc := range tests {
		g, err := compileProtect(tc.pattern)
		if err != nil {
			t.Fatalf("compile %q: %v", tc.pattern, err)
		}
		if got := g.match(tc.name); got != tc.want {
			t.Errorf("%q matches %q = %v, want %v", tc.pattern, tc.name, got, tc.want)
		}
	}
}

func TestProtectGlobInvalid(t *testing.T) {
	for _, p := range []string{"", "/", "tests/[", "a/../b", "a//b"} {
		if _, err := compileProtect(p); err == nil {
			t.Errorf("compileProtect(%q) accepted", p)
		}
	}
}

func TestProtectSetCovers(t *testing.T) {
	ps, err := newProtectSet([]string{"tests/**", "*_test.go"}, []string{"spec/hidden_spec.rb", "/abs/tests/t.py"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		p    string
		want bool
	}{
		{"tests", true},            // holds tests/**
		{"spec", true},             // holds a hidden test
		{"/abs/tests", true},       // holds an absolute hidden test
		{"pkg", false},             // *_test.go may be anywhere; pkg is not taken to hold one
		{"build", false},           // rm -rf build is not tampering
		{".", false},               // nor is acting on the whole workspace
		{"pkg/x_test.go", true},    // the file itself
		{"spec/other.rb", false},   // not a hidden test
		{"/abs/tests/t.py", true},  // an absolute hidden test itself
		{"/abs/tests/u.py", false}, // a neighbour of it
	}
	for _, tc := range tests {
		if got := ps.covers(tc.p); got != tc.want {
			t.Errorf("covers(%q) = %v, want %v", tc.p, got, tc.want)
		}
	}
}

func TestWalkRoots(t *testing.T) {
	compile := func(ps ...string) []protectGlob {
		var out []protectGlob
		for _, p := range ps {
			g, err := compileProtect(p)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, g)
		}
		return out
	}
	tests := []struct {
		globs []string
		want  []string
	}{
		{[]string{"tests/**", "tests/unit/*.py", "spec/x.rb"}, []string{"spec", "tests"}},
		{[]string{"tests/**", "*_test.go"}, []string{"."}},
		{[]string{"*/x.py"}, []string{"."}},
		{[]string{"x.py"}, []string{"."}},
	}
	for _, tc := range tests {
		got := walkRoots(compile(tc.globs...))
		if len(got) != len(tc.want) {
			t.Errorf("walkRoots(%v) = %v, want %v", tc.globs, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("walkRoots(%v) = %v, want %v", tc.globs, got, tc.want)
			}
		}
	}
}
