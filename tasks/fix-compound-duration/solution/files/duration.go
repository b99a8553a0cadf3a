// Package timeparse parses and formats human-friendly durations such as
// "90m", "2d" or "1w", extending time.ParseDuration with days and weeks.
package timeparse

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Day and Week are the units time.Duration lacks.
const (
	Day  = 24 * time.Hour
	Week = 7 * Day
)

var units = map[string]time.Duration{
	"ms": time.Millisecond,
	"s":  time.Second,
	"m":  time.Minute,
	"h":  time.Hour,
	"d":  Day,
	"w":  Week,
}

// ParseDuration parses a duration such as "45s", "90m", "1.5h", "2d",
// "1w" or a sequence of them like "1h30m" or "2d12h". A leading '-' or '+'
// sets the sign of the whole value.
func ParseDuration(s string) (time.Duration, error) {
	orig := s
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("timeparse: empty duration")
	}
	neg := false
	if s[0] == '-' || s[0] == '+' {
		neg = s[0] == '-'
		s = s[1:]
	}
	if s == "0" {
		return 0, nil
	}
	if s == "" {
		return 0, fmt.Errorf("timeparse: invalid duration %q", orig)
	}
	var d time.Duration
	for s != "" {
		i := 0
		for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
			i++
		}
		if i == 0 {
			return 0, fmt.Errorf("timeparse: invalid duration %q", orig)
		}
		n, err := strconv.ParseFloat(s[:i], 64)
		if err != nil {
			return 0, fmt.Errorf("timeparse: invalid duration %q", orig)
		}
		s = s[i:]
		j := 0
		for j < len(s) && (s[j] < '0' || s[j] > '9') && s[j] != '.' {
			j++
		}
		if j == 0 {
			return 0, fmt.Errorf("timeparse: missing unit in duration %q", orig)
		}
		unit, ok := units[s[:j]]
		if !ok {
			return 0, fmt.Errorf("timeparse: unknown unit %q in duration %q", s[:j], orig)
		}
		s = s[j:]
		d += time.Duration(n * float64(unit))
	}
	if neg {
		d = -d
	}
	return d, nil
}

// MustParse is like ParseDuration but panics on error. It is meant for
// constants and tests.
func MustParse(s string) time.Duration {
	d, err := ParseDuration(s)
	if err != nil {
		panic(err)
	}
	return d
}
