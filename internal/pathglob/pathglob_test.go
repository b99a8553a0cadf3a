package pathglob

import "testing"

func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, name string
		want          bool
	}{
		{"**/*_test.go", "a_test.go", true},
		{"**/*_test.go", "pkg/sub/a_test.go", true},
		{"**/*_test.go", "pkg/a.go", false},
		{"tests/**", "tests/a/b.py", true},
		{"tests/**", "tests", true},
		{"tests/**", "src/tests/a.py", false},
		{"src/*.go", "src/a.go", true},
		{"src/*.go", "src/x/a.go", false},
		{"a/**/b/**/c", "a/x/y/b/c", true},
		{"a/**/b/**/c", "a/x/y/c", false},
		{"[", "[", false},
	} {
		if got := Match(tc.pattern, tc.name); got != tc.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tc.pattern, tc.name, got, tc.want)
		}
	}
}
