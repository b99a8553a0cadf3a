package reward

import (
	"fmt"
	"strings"
	"testing"

	"github.com/verisim/verisim/internal/task"
)

func BenchmarkLabel(b *testing.B) {
	tr := cleanEpisode()
	calls := 0
	for _, t := range tr.Turns {
		calls += len(t.Messages[0].ToolCalls)
	}
	ms := DefaultMonitors()
	b.ReportAllocs()
	for b.Loop() {
		tr.Flags = nil
		Label(newEpisode(tr), ms)
	}
	b.ReportMetric(float64(calls*b.N)/b.Elapsed().Seconds(), "toolcalls/s")
}

func BenchmarkParse(b *testing.B) {
	for _, lines := range []int{1_000, 100_000} {
		var sb strings.Builder
		for i := range lines {
			if i%10 == 0 {
				fmt.Fprintf(&sb, "--- PASS: Test%d (0.00s)\n", i)
			} else {
				fmt.Fprintf(&sb, "    log line %d of a chatty test\n", i)
			}
		}
		out := sb.String()
		b.Run(fmt.Sprintf("format=go/lines=%d", lines), func(b *testing.B) {
			b.SetBytes(int64(len(out)))
			for b.Loop() {
				if _, err := Parse(task.FormatGo, out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
