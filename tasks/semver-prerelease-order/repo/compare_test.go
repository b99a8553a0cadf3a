package relver

import "testing"

func mustParse(t *testing.T, s string) Version {
	t.Helper()
	v, err := Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestCompare(t *testing.T) {
	cases := []struct {
		a, b string
		want int
	}{
		{"1.0.0", "1.0.0", 0},
		{"1.0.0", "2.0.0", -1},
		{"2.1.0", "2.0.9", 1},
		{"1.10.0", "1.9.0", 1},
		{"1.0.1", "1.0.0", 1},
		{"1.0.0+a", "1.0.0+b", 0},
	}
	for _, c := range cases {
		if got := Compare(mustParse(t, c.a), mustParse(t, c.b)); got != c.want {
			t.Errorf("Compare(%s, %s) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestLatest(t *testing.T) {
	tags := []string{"v1.2.0", "v1.10.0", "junk", "v1.9.3"}
	if got := Latest(tags, false); got != "v1.10.0" {
		t.Errorf("Latest = %q", got)
	}
	if got := Latest([]string{"nope"}, true); got != "" {
		t.Errorf("Latest of no versions = %q", got)
	}
}
