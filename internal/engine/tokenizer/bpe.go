package tokenizer

import "math"

// heapAbove is the word length past which bpe switches from rescanning a
// rank array (quadratic, but fast for the short words that dominate) to a
// heap of candidate merges.
const heapAbove = 64

const noRank = math.MaxInt32

// scratch holds per-call buffers so one Encode allocates them once.
type scratch struct {
	syms, ranks, next, prev []int32
	heap                    []cand
}

// bpe appends the ids of one pre-tokenized word to out.
func (t *Tokenizer) bpe(word []byte, out []int32, sc *scratch) []int32 {
	if len(word) == 1 {
		return append(out, t.byteID[word[0]])
	}
	if t.ignoreMerges {
		if id, ok := t.vocab[byteLevel(word)]; ok {
			return append(out, id)
		}
	}
	if len(word) > heapAbove {
		return t.mergeHeap(word, out, sc)
	}
	return t.mergeScan(word, out, sc)
}

func (t *Tokenizer) rank(a, b int32) (int32, int32) {
	if m, ok := t.merges[pairKey(a, b)]; ok {
		return m.rank, m.id
	}
	return noRank, 0
}

// mergeScan applies the lowest-ranked merge, leftmost on ties, until none
// applies, keeping each adjacent pair's rank so a merge costs two lookups.
func (t *Tokenizer) mergeScan(word []byte, out []int32, sc *scratch) []int32 {
	syms, ranks := sc.syms[:0], sc.ranks[:0]
	for _, c := range word {
		syms = append(syms, t.byteID[c])
	}
	for i := 0; i+1 < len(syms); i++ {
		r, _ := t.rank(syms[i], syms[i+1])
		ranks = append(ranks, r)
	}
	for {
		best, bestRank := -1, int32(noRank)
		for i, r := range ranks {
			if r < bestRank {
				best, bestRank = i, r
			}
		}
		if best < 0 {
			break
		}
		_, id := t.rank(syms[best], syms[best+1])
		syms[best] = id
		syms = append(syms[:best+1], syms[best+2:]...)
		ranks = append(ranks[:best], ranks[best+1:]...)
		if best > 0 {
			ranks[best-1], _ = t.rank(syms[best-1], id)
		}
		if best < len(ranks) {
			ranks[best], _ = t.rank(id, syms[best+1])
		}
	}
	sc.syms, sc.ranks = syms, ranks
	return append(out, syms...)
}

// cand is a possible merge of the symbol at pos with its right neighbour,
// valid while those two symbols are still left and right.
type cand struct {
	rank, pos, left, right, id int32
}

func (a cand) less(b cand) bool {
	return a.rank < b.rank || (a.rank == b.rank && a.pos < b.pos)
}

// mergeHeap gives mergeScan's result in O(n log n) for long words: symbols
// form a linked list and candidate merges wait in a min-heap ordered by
// (rank, position); a popped candidate whose symbols have since changed is
// dropped.
func (t *Tokenizer) mergeHeap(word []byte, out []int32, sc *scratch) []int32 {
	n := len(word)
	syms, next, prev, h := sc.syms[:0], sc.next[:0], sc.prev[:0], sc.heap[:0]
	for i, c := range word {
		syms = append(syms, t.byteID[c])
		next = append(next, int32(i+1))
		prev = append(prev, int32(i-1))
	}
	next[n-1] = -1
	push := func(pos int32) {
		r := next[pos]
		if r < 0 {
			return
		}
		rank, id := t.rank(syms[pos], syms[r])
		if rank == noRank {
			return
		}
		h = append(h, cand{rank, pos, syms[pos], syms[r], id})
		for i := len(h) - 1; i > 0; {
			p := (i - 1) / 2
			if !h[i].less(h[p]) {
				break
			}
			h[i], h[p] = h[p], h[i]
			i = p
		}
	}
	pop := func() cand {
		top := h[0]
		last := len(h) - 1
		h[0] = h[last]
		h = h[:last]
		for i := 0; ; {
			l, m := 2*i+1, i
			if l < len(h) && h[l].less(h[m]) {
				m = l
			}
			if l+1 < len(h) && h[l+1].less(h[m]) {
				m = l + 1
			}
			if m == i {
				break
			}
			h[i], h[m] = h[m], h[i]
			i = m
		}
		return top
	}
	for i := range n - 1 {
		push(int32(i))
	}
	const gone = -2
	for len(h) > 0 {
		c := pop()
		r := next[c.pos]
		if prev[c.pos] == gone || r < 0 || syms[c.pos] != c.left || syms[r] != c.right {
			continue
		}
		syms[c.pos] = c.id
		next[c.pos] = next[r]
		if nr := next[r]; nr >= 0 {
			prev[nr] = c.pos
		}
		prev[r] = gone
		if p := prev[c.pos]; p >= 0 {
			push(p)
		}
		push(c.pos)
	}
	for i := int32(0); i >= 0; i = next[i] {
		out = append(out, syms[i])
	}
	sc.syms, sc.next, sc.prev, sc.heap = syms, next, prev, h
	return out
}
