package model

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sync/atomic"

	"github.com/verisim/verisim/internal/engine/gemm"
)

// parallelExpertFlops is the least work (in flops, all experts together)
// worth spreading the experts of a layer over goroutines: below it the
// start-up cost rivals the work.
const parallelExpertFlops = 1 << 21

// GroupByExpert sorts the slots of experts (each slot's expert, token by
// token) by expert, stably: start[e] is where expert e's slots begin in
// order and start[E] the end; order lists the slots. next is scratch of E.
// The engine and the trainer group alike, so each expert multiplies its
// rows in the same order in both.
func GroupByExpert(experts []int32, start, next []int, order []int32) {
	E := len(start) - 1
	clear(start)
	for _, e := range experts {
		start[e+1]++
	}
	for e := range E {
		start[e+1] += start[e]
	}
	copy(next, start[:E])
	for slot, e := range experts {
		order[next[e]] = int32(slot)
		next[e]++
	}
}

// moeScratch is the space a mixture-of-experts layer reuses from call to
// call, kept in the KVCache whose scratch serves a ForwardBatch call. A
// slot is one (token, j) pair, j < k: slot t·k + j is token t's j-th
// expert.
type moeScratch struct {
	logits  []float32 // [T, experts] router logits
	experts []int32   // [T·k] each slot's expert
	weights []float32 // [T·k] each slot's weight
	start   []int     // [experts+1] where each expert's slots begin in order
	next    []int     // [experts] cursor while filling order
	active  []int32   // the experts with slots, most slots first
	order   []int32   // [T·k] the slots grouped by expert, tokens in order
	rows    []float32 // [T·k, hidden] the slots' inputs gathered, then their experts' outputs
	replay  [][]int32 // [T] each token's Seq.Replay entry, nil to route
}

// reserve sizes the scratch for T tokens of seqs and collects their replay
// entries.
func (s *moeScratch) reserve(seqs []Seq, T int, cfg Config) {
	E, k := cfg.NumLocalExperts, cfg.NumExpertsPerTok
	s.logits = grow(s.logits, T*E)
	s.weights = grow(s.weights, T*k)
	s.rows = grow(s.rows, T*k*cfg.HiddenSize)
	s.experts = growSlice(s.experts, T*k)
	s.order = growSlice(s.order, T*k)
	s.start = growSlice(s.start, E+1)
	s.next = growSlice(s.next, E)
	s.active = growSlice(s.active, E)
	s.replay = growSlice(s.replay, T)
	row := 0
	for _, q := range seqs {
		for t := range q.Tokens {
			s.replay[row+t] = nil
			if q.Replay != nil {
				s.replay[row+t] = q.Replay[t]
			}
		}
		row += len(q.Tokens)
	}
}

// growSlice is grow for any element type.
func growSlice[E any](buf []E, n int) []E {
	if cap(buf) < n {
		return make([]E, n)
	}
	return buf[:n]
}

// moeMLP runs layer li's sparse mixture of experts over the normed rows in
// c.h (every token of seqs, in order) and leaves its output in c.h, as
// Mixtral's block_sparse_moe does: per token, router logits, the top k
// experts (or the replayed ones), weights the softmax of their logits, and
// Σ_j w_j · expert_j(h). Each token's experts are recorded in its cache.
//
// The tokens are grouped by expert so that each expert's three
// projections multiply all of its rows at once, and the weighted outputs
// are summed per token in expert order, as transformers sums them.
func (m *Model) moeMLP(c *KVCache, l *Layer, li int, seqs []Seq) {
	cfg := m.Config
	H, I, E, k := cfg.HiddenSize, cfg.IntermediateSize, cfg.NumLocalExperts, cfg.NumExpertsPerTok
	s, h, mm := &c.moe, c.h, m.Compute
	T := len(h) / H
	mm.MatMulT(s.logits, h, l.Router, T, E, H)
	for t := range T {
		var given []int32
		if r := s.replay[t]; len(r) > 0 {
			given = r[li*k : (li+1)*k]
		}
		Route(s.experts[t*k:(t+1)*k], s.weights[t*k:(t+1)*k], s.logits[t*E:(t+1)*E], given)
	}
	row := 0
	for _, q := range seqs {
		sc := q.Cache
		for t := range q.Tokens {
			copy(sc.routes[(q.Pos+t)*sc.routeLen+li*k:][:k], s.experts[(row+t)*k:(row+t+1)*k])
		}
		row += len(q.Tokens)
	}

	// The slots grouped by expert, their inputs gathered.
	GroupByExpert(s.experts, s.start, s.next, s.order)
	for p, slot := range s.order {
		t := int(slot) / k
		copy(s.rows[p*H:(p+1)*H], h[t*H:(t+1)*H])
	}
	s.active = s.active[:0]
	for e := range E {
		if s.start[e+1] > s.start[e] {
			s.active = append(s.active, int32(e))
		}
	}
	slices.SortStableFunc(s.active, func(a, b int32) int {
		return cmp.Compare(s.start[b+1]-s.start[b], s.start[a+1]-s.start[a])
	})
	runExpert := func(mm gemm.Config, e int32) {
		p0, p1 := s.start[e], s.start[e+1]
		x, n := &l.Experts[e], p1-p0
		rows, gate, up := s.rows[p0*H:p1*H], c.gate[p0*I:p1*I], c.up[p0*I:p1*I]
		project(mm, gate, rows, x.Gate, x.BF16.Gate, n, I, H)
		project(mm, up, rows, x.Up, x.BF16.Up, n, I, H)
		swiGLU(gate, up)
		project(mm, rows, gate, x.Down, x.BF16.Down, n, H, I)
	}
	threads := threadsOf(mm)
	workers := min(threads, len(s.active))
	if workers <= 1 || 6*T*k*I*H < parallelExpertFlops {
		for _, e := range s.active {
			runExpert(mm, e)
		}
	} else {
		// A decode step gives each expert a row or a few: too little for
		// gemm to split, so the experts themselves run side by side, the
		// busiest first, each multiply with its share of the threads.
		// Results do not depend on the split: gemm sums in the same order
		// whatever its thread count.
		sub := mm
		sub.Threads = max(1, threads/workers)
		var next atomic.Int32
		work := func() {
			for i := next.Add(1) - 1; int(i) < len(s.active); i = next.Add(1) - 1 {
				runExpert(sub, s.active[i])
			}
		}
		gemm.Spread(workers, func(int) { work() })
	}
	CombineExperts(h, s.rows, s.order, s.weights, k, H)
}

// CombineExperts sets out (tokens × H) to each token's expert outputs
// weighted by the router: rows holds the experts' outputs, H wide, in the
// order of GroupByExpert's order, weights each slot's weight, k slots per
// token. The engine and the trainer combine alike.
func CombineExperts(out, rows []float32, order []int32, weights []float32, k, H int) {
	clear(out)
	for p, slot := range order {
		w, t := weights[slot], int(slot)/k
		dst := out[t*H : (t+1)*H]
		for i, v := range rows[p*H : (p+1)*H] {
			dst[i] += w * v
		}
	}
}

// Route picks one token's experts from its router logits: the len(experts)
// highest logits, highest first, a tie going to the lower expert index; or
// the given experts when replaying. weights gets the softmax of the logits
// over the chosen experts, which is Mixtral's softmax over all experts
// renormalised over the top k. The trainer routes with it too, so that
// both sides choose and weigh experts with the same arithmetic.
func Route(experts []int32, weights, logits []float32, given []int32) {
	if given != nil {
		copy(experts, given)
	} else {
		var taken [MaxExperts / 64]uint64
		for j := range experts {
			best := -1
			for e, v := range logits {
				if taken[e/64]&(1<<(e%64)) == 0 && (best < 0 || v > logits[best]) {
					best = e
				}
			}
			taken[best/64] |= 1 << (best % 64)
			experts[j] = int32(best)
		}
	}
	top := math.Inf(-1)
	for _, e := range experts {
		top = max(top, float64(logits[e]))
	}
	var sum float64
	for _, e := range experts {
		sum += math.Exp(float64(logits[e]) - top)
	}
	for j, e := range experts {
		weights[j] = float32(math.Exp(float64(logits[e])-top) / sum)
	}
}

// checkReplay reports a Seq.Replay the model cannot follow.
func (m *Model) checkReplay(s Seq) error {
	if s.Replay == nil {
		return nil
	}
	if err := m.Config.CheckRoutes(s.Replay, len(s.Tokens), s.Pos); err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	return nil
}

// CheckRoutes reports routes (one entry per token, for tokens at positions
// pos0, pos0+1, …; Routes' layout) that a forward pass of this model cannot
// replay: routes for a dense model, a count other than tokens, an entry
// that is neither empty (route afresh) nor layers·k experts, an expert out
// of range, or one given twice within a layer. The engine's Seq.Replay and
// the trainer's Datum.Routes are checked by it alike.
func (c Config) CheckRoutes(routes [][]int32, tokens, pos0 int) error {
	if !c.MoE() {
		return fmt.Errorf("routes given for a dense model: model_type %q has no experts to route", c.ModelType)
	}
	if len(routes) != tokens {
		return fmt.Errorf("%d route entries for %d tokens", len(routes), tokens)
	}
	L, k, E := c.NumHiddenLayers, c.NumExpertsPerTok, c.NumLocalExperts
	for t, r := range routes {
		if len(r) == 0 {
			continue
		}
		pos := pos0 + t
		if len(r) != L*k {
			return fmt.Errorf("route of position %d: %d experts, want %d (%d layers × num_experts_per_tok %d)", pos, len(r), L*k, L, k)
		}
		for li := range L {
			layer := r[li*k : (li+1)*k]
			for j, e := range layer {
				if e < 0 || int(e) >= E {
					return fmt.Errorf("route of position %d, layer %d: expert %d outside 0..%d", pos, li, e, E-1)
				}
				if slices.Contains(layer[:j], e) {
					return fmt.Errorf("route of position %d, layer %d: expert %d given twice", pos, li, e)
				}
			}
		}
	}
	return nil
}

// Routes returns the experts a mixture-of-experts model sent positions
// from … to-1 of the cache to, one entry per position: layers·k expert
// indices (k = num_experts_per_tok), layer after layer, so entry[l·k + j]
// is layer l's j-th expert. Experts the router chose come highest weight
// first (a tie in its logits goes to the lower index); replayed ones come
// in the order Seq.Replay gave them. It is Seq.Replay's layout: passing
// the entries back as Replay reproduces the forward pass. The entries are
// the caller's to keep. A dense model routes nothing, and its entries are
// empty. Routes panics unless 0 ≤ from ≤ to ≤ Len().
func (c *KVCache) Routes(from, to int) [][]int32 {
	if from < 0 || from > to || to > c.n {
		panic(fmt.Sprintf("model: Routes(%d, %d) of a cache holding %d positions", from, to, c.n))
	}
	n := c.routeLen
	flat := slices.Clone(c.routes[from*n : to*n])
	out := make([][]int32, to-from)
	for i := range out {
		out[i] = flat[i*n : (i+1)*n : (i+1)*n]
	}
	return out
}
