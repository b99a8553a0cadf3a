package bench

import (
	"strings"
	"testing"
	"time"
)

func constSamples(d time.Duration, n int) Samples {
	s := make(Samples, n)
	for i := range s {
		s[i] = d
	}
	return s
}

func TestLifecycleVerdict(t *testing.T) {
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	r := Row{Scenario: "create → true → destroy", Cells: map[string]Cell{
		SubjectVerisim: {Samples: append(constSamples(ms(4), 98), ms(20), ms(20))},
		SubjectBwrap:   {Samples: constSamples(ms(5), 100)},
		SubjectRunc:    {Samples: constSamples(ms(18), 100)},
	}}
	got := strings.Join(LifecycleVerdict(r), "\n")
	for _, want := range []string{
		"verisim p50 4.00 ms (≤ 5: met), p99 20.00 ms (≤ 15: not met)",
		"bwrap p50 5.00 ms, verisim 1.25× faster (faster than bwrap: met)",
		"runc p50 18.00 ms, verisim 4.50× faster (≥ 5×: not met)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("verdict lacks %q:\n%s", want, got)
		}
	}
	r.Cells[SubjectBwrap] = Cell{Samples: constSamples(ms(3), 100)}
	delete(r.Cells, SubjectRunc)
	got = strings.Join(LifecycleVerdict(r), "\n")
	if !strings.Contains(got, "verisim 1.33× slower (faster than bwrap: not met)") || strings.Contains(got, "runc") {
		t.Errorf("verdict with bwrap faster and no runc:\n%s", got)
	}
	if v := LifecycleVerdict(Row{Cells: map[string]Cell{SubjectVerisim: {Note: "failed: x"}}}); v != nil {
		t.Errorf("verdict for a failed verisim cell: %q", v)
	}
}
