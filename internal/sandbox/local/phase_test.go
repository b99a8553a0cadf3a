package local

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/verisim/verisim/internal/sandbox"
)

func TestPhases(t *testing.T) {
	rt := testRuntimeWarm(t, 2)
	spec := testSpec(t)
	ctx := context.Background()
	var tc, tr, tr2, tx []time.Duration
	for range 100 {
		s := time.Now()
		sb, err := rt.Create(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		tc = append(tc, time.Since(s))
		s = time.Now()
		sb.Run(ctx, sandbox.Cmd{Args: []string{"/bin/true"}})
		tr = append(tr, time.Since(s))
		s = time.Now()
		sb.Run(ctx, sandbox.Cmd{Args: []string{"/bin/true"}})
		tr2 = append(tr2, time.Since(s))
		s = time.Now()
		sb.Close(ctx)
		tx = append(tx, time.Since(s))
	}
	med := func(d []time.Duration) time.Duration { sort.Slice(d, func(i, j int) bool { return d[i] < d[j] }); return d[len(d)/2] }
	t.Logf("create %v run %v run2 %v close %v", med(tc), med(tr), med(tr2), med(tx))
}
