// Package timelog parses tally's plain-text time log.
package timelog

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// Entry is one line of the log.
type Entry struct {
	Date    time.Time
	Start   time.Duration // since midnight
	End     time.Duration
	Project string
	Note    string
}

// Minutes is the length of the entry.
func (e Entry) Minutes() int { return int((e.End - e.Start) / time.Minute) }

// Parse reads a log.
func Parse(r io.Reader) ([]Entry, error) {
	var out []Entry
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 3 {
			return nil, fmt.Errorf("line %d: want DATE SPAN PROJECT [NOTE]", n)
		}
		date, err := time.Parse("2006-01-02", f[0])
		if err != nil {
			return nil, fmt.Errorf("line %d: bad date %q", n, f[0])
		}
		from, to, ok := strings.Cut(f[1], "-")
		if !ok {
			return nil, fmt.Errorf("line %d: bad span %q", n, f[1])
		}
		start, err1 := clock(from)
		end, err2 := clock(to)
		if err1 != nil || err2 != nil || end <= start {
			return nil, fmt.Errorf("line %d: bad span %q", n, f[1])
		}
		out = append(out, Entry{Date: date, Start: start, End: end, Project: f[2], Note: strings.Join(f[3:], " ")})
	}
	return out, sc.Err()
}

func clock(s string) (time.Duration, error) {
	t, err := time.Parse("15:04", s)
	if err != nil {
		return 0, err
	}
	return time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute, nil
}

// Total is the time spent on one project.
type Total struct {
	Project string
	Minutes int
}

// Totals sums entries per project, largest first, ties by name.
func Totals(entries []Entry) []Total {
	sum := map[string]int{}
	for _, e := range entries {
		sum[e.Project] += e.Minutes()
	}
	out := make([]Total, 0, len(sum))
	for p, m := range sum {
		out = append(out, Total{p, m})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Minutes != out[j].Minutes {
			return out[i].Minutes > out[j].Minutes
		}
		return out[i].Project < out[j].Project
	})
	return out
}
