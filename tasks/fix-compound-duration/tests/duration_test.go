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
		{"1h30m", 90 * time.Minute},
		{"1m30s", 90 * time.Second},
		{"2d12h", 60 * time.Hour},
		{"1w1d", 8 * 24 * time.Hour},
		{"1h0m0s", time.Hour},
		{"1s500ms", 1500 * time.Millisecond},
		{"-1h30m", -90 * time.Minute},
		{"1.5h30m", 2 * time.Hour},
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
	for _, in := range []string{"", "h", "10", "10y", "-", "1..5h", "1h30", "1h30x", "h30m", "1h-30m", "1h 30m"} {
		if d, err := ParseDuration(in); err == nil {
			t.Errorf("ParseDuration(%q) = %v, want an error", in, d)
		}
	}
}

func TestParseFormatRoundTrip(t *testing.T) {
	for _, d := range []time.Duration{
		time.Second,
		90 * time.Minute,
		36 * time.Hour,
		Week + 2*Day + 3*time.Hour + 4*time.Minute + 5*time.Second,
		-(25*time.Hour + time.Second),
	} {
		s := FormatDuration(d)
		got, err := ParseDuration(s)
		if err != nil {
			t.Errorf("ParseDuration(FormatDuration(%v) = %q): %v", d, s, err)
			continue
		}
		if got != d {
			t.Errorf("ParseDuration(%q) = %v, want %v", s, got, d)
		}
	}
}
