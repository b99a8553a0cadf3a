package gemm

import (
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestTeamRuns: every range runs exactly once, whether the workers are
// spinning (back to back) or parked (after an idle spell longer than
// spinWindow), and a team grows to the ranges asked of it.
func TestTeamRuns(t *testing.T) {
	var tm team
	for i := range 60 {
		n := 2 + i%4
		ranges := make([][2]int, n)
		for r := range ranges {
			ranges[r] = [2]int{10 * r, 10*r + 10}
		}
		var mu sync.Mutex
		seen := map[[2]int]int{}
		ok := tm.run(func(j0, j1 int) {
			mu.Lock()
			seen[[2]int{j0, j1}]++
			mu.Unlock()
		}, ranges)
		if !ok {
			t.Fatal("an idle team refused a split")
		}
		for _, r := range ranges {
			if seen[r] != 1 {
				t.Fatalf("round %d: range %v ran %d times", i, r, seen[r])
			}
		}
		if len(seen) != n {
			t.Fatalf("round %d: ran %v, asked %v", i, seen, ranges)
		}
		if i%10 == 9 {
			// Long enough for every worker to park.
			deadline := time.Now().Add(10 * time.Second)
			for !allParked(&tm) {
				if time.Now().After(deadline) {
					t.Fatal("workers still spinning 10 s after their last job")
				}
				time.Sleep(spinWindow)
			}
		}
	}
	if len(tm.workers) != 4 {
		t.Errorf("team of %d workers, want 4 (the most ranges asked, 5, less the caller's)", len(tm.workers))
	}
}

func allParked(tm *team) bool {
	for _, w := range tm.workers {
		if !w.parked.Load() {
			return false
		}
	}
	return true
}

// TestTeamBusy: a split that finds the team held runs nothing and says
// so (split then starts goroutines of its own).
func TestTeamBusy(t *testing.T) {
	var tm team
	tm.mu.Lock()
	defer tm.mu.Unlock()
	if tm.run(func(int, int) { t.Error("ran on a busy team") }, [][2]int{{0, 1}, {1, 2}}) {
		t.Error("a busy team took a split")
	}
}

// TestSplitConcurrent: many goroutines multiplying at once (one holds the
// shared team, the others fall back to goroutines of their own) all get
// the single-threaded result, bit for bit.
func TestSplitConcurrent(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	const m, n, k = 1, 2051, 1030
	a, bt := randSlice(r, m*k), randSlice(r, n*k)
	want := make([]float32, m*n)
	Config{Threads: 1}.MatMulT(want, a, bt, m, n, k)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			c := make([]float32, m*n)
			for range 20 {
				Config{Threads: 2 + g%3}.MatMulT(c, a, bt, m, n, k)
				for i := range c {
					if math.Float32bits(c[i]) != math.Float32bits(want[i]) {
						t.Errorf("goroutine %d: element %d is %g, want %g", g, i, c[i], want[i])
						return
					}
				}
			}
		})
	}
	wg.Wait()
}

// TestSpread: fn runs once for each index, on the team when it is free
// and on goroutines of its own when a split holds it.
func TestSpread(t *testing.T) {
	for _, busy := range []bool{false, true} {
		for _, n := range []int{0, 1, 2, 5} {
			if busy {
				workers.mu.Lock()
			}
			var mu sync.Mutex
			got := map[int]int{}
			Spread(n, func(i int) {
				mu.Lock()
				got[i]++
				mu.Unlock()
			})
			if busy {
				workers.mu.Unlock()
			}
			for i := range n {
				if got[i] != 1 {
					t.Errorf("busy=%v n=%d: fn(%d) ran %d times", busy, n, i, got[i])
				}
			}
			if len(got) != n {
				t.Errorf("busy=%v n=%d: ran %v", busy, n, got)
			}
		}
	}
}

// TestTeamCallerPanics: when the caller's own range panics, the panic
// reaches the caller only after the workers are done with fn, and the
// team serves the next call.
func TestTeamCallerPanics(t *testing.T) {
	var tm team
	var workerDone atomic.Bool
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the caller's panic was lost")
			}
			if !workerDone.Load() {
				t.Error("the panic came back while a worker was still in fn")
			}
		}()
		tm.run(func(j0, _ int) {
			if j0 == 0 {
				panic("caller")
			}
			time.Sleep(20 * time.Millisecond)
			workerDone.Store(true)
		}, [][2]int{{0, 1}, {1, 2}})
	}()
	ran := 0
	if !tm.run(func(int, int) { ran++ }, [][2]int{{0, 1}}) || ran != 1 {
		t.Errorf("the team after a panic: ran %d", ran)
	}
}

// TestTeamCap: a split wider than maxWorkers is refused (split and Spread
// then start goroutines of their own) and grows no worker.
func TestTeamCap(t *testing.T) {
	var tm team
	if tm.run(func(int, int) { t.Error("ran") }, make([][2]int, maxWorkers+2)) {
		t.Error("the team took more ranges than maxWorkers")
	}
	if len(tm.workers) != 0 {
		t.Errorf("%d workers started", len(tm.workers))
	}
	var mu sync.Mutex
	seen := 0
	Spread(maxWorkers+3, func(int) {
		mu.Lock()
		seen++
		mu.Unlock()
	})
	if seen != maxWorkers+3 {
		t.Errorf("Spread beyond the cap ran %d of %d", seen, maxWorkers+3)
	}
}
