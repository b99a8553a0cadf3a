package relver

import "testing"

func TestParse(t *testing.T) {
	v, err := Parse("v1.4.0-beta.2+build.7")
	if err != nil {
		t.Fatal(err)
	}
	if v.Major != 1 || v.Minor != 4 || v.Patch != 0 || len(v.Pre) != 2 || v.Pre[1] != "2" || v.Build != "build.7" {
		t.Fatalf("Parse = %+v", v)
	}
	if v.String() != "1.4.0-beta.2+build.7" {
		t.Errorf("String = %q", v.String())
	}
}

func TestParseErrors(t *testing.T) {
	for _, s := range []string{"", "1.2", "1.2.3.4", "01.2.3", "1.2.x", "1.2.3-", "1.2.3-a..b", "1.2.3+"} {
		if _, err := Parse(s); err == nil {
			t.Errorf("Parse(%q) succeeded", s)
		}
	}
}
