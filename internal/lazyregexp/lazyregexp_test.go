package lazyregexp

import "testing"

func TestLazy(t *testing.T) {
	r := New(`^a(b+)c$`)
	if r.String() != `^a(b+)c$` {
		t.Errorf("String() = %q", r.String())
	}
	if !r.MatchString("abbc") || r.MatchString("ac") {
		t.Error("MatchString disagrees with regexp")
	}
	if m := r.FindStringSubmatch("abbbc"); len(m) != 2 || m[1] != "bbb" {
		t.Errorf("FindStringSubmatch = %q", m)
	}
	defer func() {
		if recover() == nil {
			t.Error("a bad pattern did not panic on first use")
		}
	}()
	New(`(`).MatchString("x")
}
