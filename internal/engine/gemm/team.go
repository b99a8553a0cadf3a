package gemm

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// spinWindow is how long a worker stays awake after a job, looking for the
// next one, before it parks.
const spinWindow = 200 * time.Microsecond

// team is a set of worker goroutines that split multiplies with their
// caller and stay awake a moment between them. On the 2-core VM the
// kernels are measured on, a goroutine started (or woken by a channel send)
// while the other core is idle begins running there 70–100 µs later (p50
// 85 µs), though a pipe round trip between two processes takes 15–30 µs
// there: the time is in how the scheduler brings an idle thread back to
// take the goroutine, not in the kernel's wake alone. That is about what a
// batch-1 GEMV of a 2048×768 layer takes in all: the second core arrived
// when the first had done most of the work, and two threads ran no faster
// than one. The multiplies of one decode step come back to back, microseconds apart, so
// workers that spin for spinWindow after each job (yielding their P to any
// other runnable goroutine meanwhile) are there for the next one; an idle
// engine's workers park after that.
type team struct {
	mu      sync.Mutex // held by the one split using the team
	workers []*worker
}

// worker runs the jobs published to it one at a time.
type worker struct {
	seq    atomic.Uint64 // jobs published
	done   atomic.Uint64 // jobs finished
	parked atomic.Bool
	wake   chan struct{} // capacity 1: a parked worker waits here

	// The job, written before seq is raised and read after.
	fn     func(j0, j1 int)
	j0, j1 int
}

// workers is the team every Config shares.
var workers team

// Spread calls fn(i) for each i < n side by side, fn(0) on the calling
// goroutine, and returns when all have returned: on the workers the
// multiplies use (awake between the multiplies of a step) when no split
// holds them, on goroutines of its own otherwise. It is for work beside
// the multiplies, such as a mixture-of-experts layer's experts, each
// running its own multiplies on one thread.
func Spread(n int, fn func(i int)) {
	if n <= 1 {
		if n == 1 {
			fn(0)
		}
		return
	}
	ranges := make([][2]int, n)
	for i := range ranges {
		ranges[i] = [2]int{i, i + 1}
	}
	each := func(i, _ int) { fn(i) }
	if !workers.run(each, ranges) {
		spawn(each, ranges)
	}
}

// spawn calls fn over each range, the first on the calling goroutine and
// each other on a goroutine started for it, and waits for all of them.
func spawn(fn func(j0, j1 int), ranges [][2]int) {
	var wg sync.WaitGroup
	for _, r := range ranges[1:] {
		wg.Go(func() { fn(r[0], r[1]) })
	}
	fn(ranges[0][0], ranges[0][1])
	wg.Wait()
}

// maxWorkers bounds the team: its goroutines live as long as the process
// and spin after each job, so a call asking for more ranges (Threads may
// exceed the cores) starts goroutines of its own instead.
const maxWorkers = 16

// run calls fn over each range, the first on the calling goroutine and
// the others on the team's workers, and returns when all are done, also
// when the caller's own range panics (the panic goes on once the workers
// are done with fn, so the next call cannot hand them a job over one
// still running). It reports false, having run nothing, when another split
// holds the team or the ranges need more than maxWorkers.
func (tm *team) run(fn func(j0, j1 int), ranges [][2]int) bool {
	if len(ranges)-1 > maxWorkers || !tm.mu.TryLock() {
		return false
	}
	defer tm.mu.Unlock()
	for len(tm.workers) < len(ranges)-1 {
		w := &worker{wake: make(chan struct{}, 1)}
		tm.workers = append(tm.workers, w)
		go w.loop()
	}
	busy := tm.workers[:len(ranges)-1]
	defer func() {
		for _, w := range busy {
			for w.done.Load() != w.seq.Load() {
				runtime.Gosched()
			}
			w.fn = nil // keep no operands alive
		}
	}()
	for i, r := range ranges[1:] {
		w := busy[i]
		w.fn, w.j0, w.j1 = fn, r[0], r[1]
		w.seq.Add(1)
		if w.parked.Load() {
			select {
			case w.wake <- struct{}{}:
			default:
			}
		}
	}
	fn(ranges[0][0], ranges[0][1])
	return true
}

// loop waits for each job, spinning for spinWindow and then parking, and
// runs it.
func (w *worker) loop() {
	var last uint64
	for {
		until := time.Now().Add(spinWindow)
		for w.seq.Load() == last {
			if time.Now().Before(until) {
				runtime.Gosched()
				continue
			}
			// Park. A publisher raises seq and then looks at parked; this
			// side sets parked and then looks at seq: one of the two sees
			// the other, so a job is never left waiting. A wake left over
			// from a job already seen costs one more spin.
			w.parked.Store(true)
			if w.seq.Load() == last {
				<-w.wake
			}
			w.parked.Store(false)
			until = time.Now().Add(spinWindow)
		}
		last = w.seq.Load()
		w.fn(w.j0, w.j1)
		w.done.Store(last)
	}
}
