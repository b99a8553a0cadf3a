// Package bench measures sandboxes the way issue-level targets are stated:
// latency percentiles over many runs, side by side with the peers the field
// uses (bubblewrap, runc, a bare fork/exec) doing the same work in the same
// run. Numbers are reported, never asserted.
//
// "verisim bench sandbox" and the package's Go benchmarks both call it.
package bench

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// Samples are latencies of one scenario for one subject.
type Samples []time.Duration

// Quantile returns the q-quantile (0..1) by nearest rank.
func (s Samples) Quantile(q float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	c := append(Samples(nil), s...)
	sort.Slice(c, func(i, j int) bool { return c[i] < c[j] })
	i := int(q*float64(len(c))+0.5) - 1
	i = max(0, min(len(c)-1, i))
	return c[i]
}

// Time runs f n times after warm warm-up runs and returns the latencies.
func Time(ctx context.Context, n, warm int, f func(ctx context.Context) error) (Samples, error) {
	for range warm {
		if err := f(ctx); err != nil {
			return nil, err
		}
	}
	out := make(Samples, 0, n)
	for range n {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		start := time.Now()
		if err := f(ctx); err != nil {
			return out, err
		}
		out = append(out, time.Since(start))
	}
	return out, nil
}

// TimeInterleaved runs each of fs until it has n samples, in turns: a
// block of block runs of one subject, then of the next, the order rotating
// from turn to turn, after warm runs of each. The first run of every block
// is not recorded: it absorbs whatever the previous subject left the
// kernel to finish (namespace and cgroup teardown is partly deferred).
// Subjects compared this way share whatever the machine does meanwhile
// (another tenant's load, a slower minute) instead of one subject getting a
// quiet minute and the next a busy one. A subject that fails is dropped
// from later turns and its error returned in its place.
func TimeInterleaved(ctx context.Context, n, warm, block int, fs []func(ctx context.Context) error) ([]Samples, []error) {
	out := make([]Samples, len(fs))
	errs := make([]error, len(fs))
	block = max(block, 2)
	for i, f := range fs {
		for range warm {
			if errs[i] = f(ctx); errs[i] != nil {
				break
			}
		}
	}
	for turn := 0; ; turn++ {
		busy := false
		for k := range fs {
			i := (turn + k) % len(fs)
			if errs[i] != nil || len(out[i]) >= n {
				continue
			}
			busy = true
			for r := 0; r < block && len(out[i]) < n; r++ {
				if err := ctx.Err(); err != nil {
					errs[i] = err
					break
				}
				start := time.Now()
				if err := fs[i](ctx); err != nil {
					errs[i] = err
					break
				}
				if r > 0 {
					out[i] = append(out[i], time.Since(start))
				}
			}
		}
		if !busy {
			return out, errs
		}
	}
}

// Cell is one subject's result in one row.
type Cell struct {
	Samples Samples
	// Value is used instead of Samples for non-latency rows.
	Value string
	// Note explains a missing or skipped cell.
	Note string
}

// Row is one scenario across subjects.
type Row struct {
	Scenario string
	Cells    map[string]Cell
}

// Table is a benchmark run's results.
type Table struct {
	Subjects []string
	Rows     []Row
	Notes    []string
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d.Microseconds())/1000) }

// Write prints the table with p50/p99 in milliseconds.
func (t *Table) Write(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "scenario\t%s\n", strings.Join(t.Subjects, "\t"))
	for _, r := range t.Rows {
		fmt.Fprintf(tw, "%s", r.Scenario)
		for _, s := range t.Subjects {
			c, ok := r.Cells[s]
			switch {
			case !ok:
				fmt.Fprint(tw, "\t-")
			case c.Note != "":
				fmt.Fprintf(tw, "\t(%s)", c.Note)
			case c.Value != "":
				fmt.Fprintf(tw, "\t%s", c.Value)
			default:
				fmt.Fprintf(tw, "\t%s / %s ms (n=%d)", ms(c.Samples.Quantile(0.5)), ms(c.Samples.Quantile(0.99)), len(c.Samples))
			}
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range t.Notes {
		fmt.Fprintln(w, n)
	}
	return nil
}
