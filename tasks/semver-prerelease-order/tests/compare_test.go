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
		{"1.2.0-rc.1", "1.2.0", -1},
		{"1.2.0", "1.2.0-rc.1", 1},
		{"1.2.0-rc.1", "1.1.9", 1},
		{"1.2.0-rc.1+x", "1.2.0-rc.1+y", 0},
		{"1.2.0-rc.2", "1.2.0-rc.10", -1},
		{"1.2.0-rc.10", "1.2.0-rc.2", 1},
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

// The precedence example from semver.org, section 11.
func TestComparePrereleaseChain(t *testing.T) {
	chain := []string{
		"1.0.0-alpha",
		"1.0.0-alpha.1",
		"1.0.0-alpha.beta",
		"1.0.0-beta",
		"1.0.0-beta.2",
		"1.0.0-beta.11",
		"1.0.0-rc.1",
		"1.0.0",
	}
	for i := range chain {
		for j := range chain {
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := Compare(mustParse(t, chain[i]), mustParse(t, chain[j])); got != want {
				t.Errorf("Compare(%s, %s) = %d, want %d", chain[i], chain[j], got, want)
			}
		}
	}
}

func TestCompareNumericBeforeAlnum(t *testing.T) {
	if got := Compare(mustParse(t, "1.0.0-1"), mustParse(t, "1.0.0-a")); got != -1 {
		t.Errorf("Compare(1.0.0-1, 1.0.0-a) = %d, want -1", got)
	}
	if got := Compare(mustParse(t, "1.0.0-rc.1"), mustParse(t, "1.0.0-rc.1a")); got != -1 {
		t.Errorf("Compare(1.0.0-rc.1, 1.0.0-rc.1a) = %d, want -1", got)
	}
	if got := Compare(mustParse(t, "1.0.0-B"), mustParse(t, "1.0.0-a")); got != -1 {
		t.Errorf("Compare(1.0.0-B, 1.0.0-a) = %d, want -1 (ASCII order)", got)
	}
}

func TestLatestPrefersRelease(t *testing.T) {
	for _, tags := range [][]string{
		{"v1.2.0-rc.1", "v1.2.0", "v1.1.0"},
		{"v1.2.0", "v1.2.0-rc.1", "v1.1.0"},
		{"v1.1.0", "v1.2.0-rc.2", "v1.2.0", "v1.2.0-rc.1"},
	} {
		if got := Latest(tags, true); got != "v1.2.0" {
			t.Errorf("Latest(%v, true) = %q, want v1.2.0", tags, got)
		}
	}
	if got := Latest([]string{"v1.2.0-rc.2", "v1.2.0-rc.10", "v1.1.0"}, true); got != "v1.2.0-rc.10" {
		t.Errorf("Latest of rcs = %q, want v1.2.0-rc.10", got)
	}
}
