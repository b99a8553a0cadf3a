package timeparse

import (
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	cases := []struct {
		in   string
		want time.Duration
	}{
		{"0", 0},
		{"45s", 45 * time.Second},
		{"90m", 90 * time.Minute},
		{"1.5h", 90 * time.Minute},
		{"2d", 48 * time.Hour},
		{"1w", 7 * 24 * time.Hour},
		{"250ms", 250 * time.Millisecond},
		{"-3h", -3 * time.Hour},
		{" 10m ", 10 * time.Minute},
	}
	for _, c := range cases {
		got, err := ParseDuration(c.in)
		if err != nil {
			t.Errorf("ParseDuration(%q): %v", c.in, err)
			continue
		}
		if got != c.want {
			t.Errorf("ParseDuration(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestParseDurationErrors(t *testing.T) {
	for _, in := range []string{"", "h", "10", "10y", "-", "1..5h"} {
		if d, err := ParseDuration(in); err == nil {
			t.Errorf("ParseDuration(%q) = %v, want an error", in, d)
		}
	}
}
