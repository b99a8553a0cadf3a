package model

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync/atomic"

	"github.com/verisim/verisim/internal/engine/gemm"
)

// KVCache holds one sequence's keys and values, per layer [pos, kv_heads,
// head_dim] with RoPE already applied to the keys, for a mixture-of-experts
// model the experts each position was routed to (see Routes), plus the
// scratch space a forward pass reuses. It grows as tokens are appended, up
// to the model's max_position_embeddings. A KVCache belongs to one
// sequence and one goroutine at a time.
type KVCache struct {
	k, v  [][]float32
	n     int
	max   int
	kvDim int
	// routes is [pos][layer·k + j], routeLen = layers·k values a position
	// (0 for a dense model).
	routes   []int32
	routeLen int

	x, h, q, kk, vv, att, gate, up, cos, sin, scores []float32
	moe                                              moeScratch
}

// NewKVCache returns an empty cache for a sequence run through m.
func (m *Model) NewKVCache() *KVCache {
	c := m.Config
	kc := &KVCache{
		k:     make([][]float32, c.NumHiddenLayers),
		v:     make([][]float32, c.NumHiddenLayers),
		max:   c.MaxPositionEmbeddings,
		kvDim: c.NumKeyValueHeads * c.HeadDim,
	}
	if c.MoE() {
		kc.routeLen = c.NumHiddenLayers * c.NumExpertsPerTok
	}
	return kc
}

// fits reports whether c was made by NewKVCache of a model of cfg's shape.
func (c *KVCache) fits(cfg Config) bool {
	routeLen := 0
	if cfg.MoE() {
		routeLen = cfg.NumHiddenLayers * cfg.NumExpertsPerTok
	}
	return len(c.k) == cfg.NumHiddenLayers && c.kvDim == cfg.NumKeyValueHeads*cfg.HeadDim && c.routeLen == routeLen
}

// Len is the number of positions the cache holds.
func (c *KVCache) Len() int { return c.n }

// truncate drops every position from n on.
func (c *KVCache) truncate(n int) {
	for i := range c.k {
		c.k[i] = c.k[i][:n*c.kvDim]
		c.v[i] = c.v[i][:n*c.kvDim]
	}
	c.routes = c.routes[:n*c.routeLen]
	c.n = n
}

// grow returns buf resized to n elements, reusing its storage when it can.
func grow(buf []float32, n int) []float32 {
	if cap(buf) < n {
		return make([]float32, n)
	}
	return buf[:n]
}

// Forward runs tokens, which sit at positions pos, pos+1, … of the
// sequence, through the model and returns their logits, a flat
// [len(tokens) × vocab] slice the caller owns. The cache must hold at least
// pos positions; any beyond pos are dropped first (so pos < cache.Len()
// rewinds), and the new tokens' keys and values are appended. One call with
// the whole prompt (prefill) and then one call per token (decode) give the
// same logits as a single call over everything, up to float rounding.
//
// A Model is read-only here: any number of goroutines may call Forward at
// once, each with its own cache.
func (m *Model) Forward(cache *KVCache, tokens []int32, pos int) ([]float32, error) {
	return m.ForwardBatch([]Seq{{Cache: cache, Tokens: tokens, Pos: pos}})
}

// Seq is one sequence's share of a ForwardBatch call: tokens at positions
// Pos, Pos+1, … appended to Cache as Forward appends them.
type Seq struct {
	Cache  *KVCache
	Tokens []int32
	Pos    int
	// Replay, for a mixture-of-experts model only, forces the routing
	// ("router replay"): nil, or one entry per token in KVCache.Routes'
	// layout. A token's entry lists, layer after layer, the
	// num_experts_per_tok distinct experts its MLP uses instead of the
	// router's top k; their weights are still the softmax of the router's
	// logits over the experts given, so replaying the routes a forward
	// pass recorded reproduces its logits bit for bit. A nil entry routes
	// that token normally. The experts used are recorded in Cache either
	// way.
	Replay [][]int32
}

// ForwardBatch runs several sequences through the model in one pass and
// returns the logits of all their tokens, sequence after sequence, a flat
// [Σ len(Tokens) × vocab] slice the caller owns. Each sequence gets the
// logits Forward would give it alone (up to float rounding): the
// projections and the MLP (or each expert, the rows routed to it) multiply
// the rows of every sequence at once,
// which is what makes decoding a batch of sequences a token each cheaper
// than decoding them one by one, and attention runs per sequence over its
// own cache. The caches must be distinct; the first one's scratch space
// serves the whole call.
func (m *Model) ForwardBatch(seqs []Seq) ([]float32, error) {
	cfg := m.Config
	H, V := cfg.HiddenSize, cfg.VocabSize
	if len(seqs) == 0 {
		return nil, fmt.Errorf("forward: no sequences")
	}
	T, scoreLen := 0, 0
	for i, s := range seqs {
		if err := m.checkSeq(s); err != nil {
			if len(seqs) > 1 {
				err = fmt.Errorf("sequence %d: %w", i, err)
			}
			return nil, err
		}
		for j := range i {
			if seqs[j].Cache == s.Cache {
				return nil, fmt.Errorf("forward: sequences %d and %d share a cache", j, i)
			}
		}
		T += len(s.Tokens)
		// attention's scores: a block of rows by the positions it sees.
		scoreLen = max(scoreLen, min(len(s.Tokens), attentionBlock)*(s.Pos+len(s.Tokens)))
	}
	for _, s := range seqs {
		s.Cache.truncate(s.Pos)
	}

	nH, nKV, hd := cfg.NumAttentionHeads, cfg.NumKeyValueHeads, cfg.HeadDim
	qDim, kvDim, I := nH*hd, nKV*hd, cfg.IntermediateSize
	eps := float32(cfg.RMSNormEps)
	c := seqs[0].Cache
	c.x, c.h = grow(c.x, T*H), grow(c.h, T*H)
	c.q, c.att = grow(c.q, T*qDim), grow(c.att, T*qDim)
	c.kk, c.vv = grow(c.kk, T*kvDim), grow(c.vv, T*kvDim)
	rowsMLP := T
	if cfg.MoE() {
		// Each token goes through k experts, their rows gathered together.
		rowsMLP = T * cfg.NumExpertsPerTok
		c.moe.reserve(seqs, T, cfg)
		for _, s := range seqs {
			sc := s.Cache
			sc.routes = slices.Grow(sc.routes, len(s.Tokens)*sc.routeLen)[:(s.Pos+len(s.Tokens))*sc.routeLen]
		}
	}
	c.gate, c.up = grow(c.gate, rowsMLP*I), grow(c.up, rowsMLP*I)
	c.cos, c.sin = grow(c.cos, T*hd/2), grow(c.sin, T*hd/2)
	// attention's tasks are its (sequence, head) pairs, each thread with
	// scores of its own.
	attThreads := min(threadsOf(m.Compute), nH*len(seqs))
	c.scores = grow(c.scores, attThreads*scoreLen)
	x, h := c.x, c.h
	row := 0
	for _, s := range seqs {
		n := len(s.Tokens)
		ropeTables(c.cos[row*hd/2:(row+n)*hd/2], c.sin[row*hd/2:(row+n)*hd/2], s.Pos, n, hd, cfg.RopeTheta)
		for t, tok := range s.Tokens {
			m.embed(x[(row+t)*H:(row+t+1)*H], int(tok))
		}
		row += n
	}
	mm := m.Compute
	prof := m.Profile
	start := prof.now()
	for li := range m.Layers {
		l := &m.Layers[li]
		rmsNorm(h, x, l.InputNorm, eps)
		t0 := prof.now()
		project(mm, c.q, h, l.Q, l.BF16.Q, T, qDim, H)
		project(mm, c.kk, h, l.K, l.BF16.K, T, kvDim, H)
		project(mm, c.vv, h, l.V, l.BF16.V, T, kvDim, H)
		prof.add(profMatmul, t0)
		AddBias(c.q, l.QBias)
		AddBias(c.kk, l.KBias)
		AddBias(c.vv, l.VBias)
		rope(c.q, c.cos, c.sin, hd)
		rope(c.kk, c.cos, c.sin, hd)
		t0 = prof.now()
		row := 0
		for _, s := range seqs {
			n, sc := len(s.Tokens), s.Cache
			sc.k[li] = append(sc.k[li], c.kk[row*kvDim:(row+n)*kvDim]...)
			sc.v[li] = append(sc.v[li], c.vv[row*kvDim:(row+n)*kvDim]...)
			row += n
		}
		attendAll(mm, attThreads, c, seqs, li, scoreLen, nH, nKV, hd)
		prof.add(profAttention, t0)
		t0 = prof.now()
		project(mm, h, c.att, l.O, l.BF16.O, T, H, qDim)
		prof.add(profMatmul, t0)
		AddBias(h, l.OBias)
		AddTo(x, h)

		rmsNorm(h, x, l.PostNorm, eps)
		t0 = prof.now()
		if cfg.MoE() {
			m.moeMLP(c, l, li, seqs)
		} else {
			project(mm, c.gate, h, l.Gate, l.BF16.Gate, T, I, H)
			project(mm, c.up, h, l.Up, l.BF16.Up, T, I, H)
			swiGLU(c.gate, c.up)
			project(mm, h, c.gate, l.Down, l.BF16.Down, T, H, I)
		}
		prof.add(profMatmul, t0)
		AddTo(x, h)
	}
	for _, s := range seqs {
		s.Cache.n = s.Pos + len(s.Tokens)
	}
	clear(c.moe.replay) // the caller's slices, not ours to keep alive
	rmsNorm(h, x, m.Norm, eps)
	logits := make([]float32, T*V)
	t0 := prof.now()
	project(mm, logits, h, m.LMHead, m.BF16.LMHead, T, V, H)
	prof.add(profMatmul, t0)
	prof.add(profTotal, start)
	return logits, nil
}

// checkSeq reports a sequence Forward cannot run.
func (m *Model) checkSeq(s Seq) error {
	T, V := len(s.Tokens), m.Config.VocabSize
	switch {
	case s.Cache == nil:
		return fmt.Errorf("forward: no cache")
	case !s.Cache.fits(m.Config):
		return fmt.Errorf("forward: the cache was made by a model of another shape")
	case T == 0:
		return fmt.Errorf("forward: no tokens")
	case s.Pos < 0 || s.Pos > s.Cache.n:
		return fmt.Errorf("forward: position %d, cache holds %d", s.Pos, s.Cache.n)
	case s.Pos+T > s.Cache.max:
		return fmt.Errorf("forward: positions up to %d exceed max_position_embeddings %d", s.Pos+T, s.Cache.max)
	}
	for _, t := range s.Tokens {
		if t < 0 || int(t) >= V {
			return fmt.Errorf("forward: token %d outside vocabulary of %d", t, V)
		}
	}
	if err := m.checkReplay(s); err != nil {
		return fmt.Errorf("forward: %w", err)
	}
	return nil
}

// Clone returns a copy of c's keys, values and routes that grows on its
// own: the n samples of one request prefill their prompt once and decode
// from clones.
func (c *KVCache) Clone() *KVCache {
	d := &KVCache{
		k: make([][]float32, len(c.k)), v: make([][]float32, len(c.v)), n: c.n, max: c.max, kvDim: c.kvDim,
		routes: slices.Clone(c.routes), routeLen: c.routeLen,
	}
	for i := range c.k {
		d.k[i] = slices.Clone(c.k[i])
		d.v[i] = slices.Clone(c.v[i])
	}
	return d
}

// rmsNorm sets each row of dst (rows of len(w)) to the row of x divided by
// its root mean square, times w, as Hugging Face's LlamaRMSNorm does in
// fp32.
func rmsNorm(dst, x, w []float32, eps float32) {
	n := len(w)
	for r := 0; r < len(x); r += n {
		row := x[r : r+n]
		var ss float32
		for _, v := range row {
			ss += v * v
		}
		scale := float32(1 / math.Sqrt(float64(ss/float32(n)+eps)))
		out := dst[r : r+n]
		for i, v := range row {
			out[i] = w[i] * (v * scale)
		}
	}
}

// ropeTables fills cos and sin, [n, headDim/2], for positions pos0 … pos0+n-1
// and frequencies theta^(-2i/headDim).
func ropeTables(cos, sin []float32, pos0, n, headDim int, theta float64) {
	half := headDim / 2
	for t := range n {
		for i := range half {
			invFreq := math.Pow(theta, -float64(2*i)/float64(headDim))
			s, c := math.Sincos(float64(pos0+t) * invFreq)
			cos[t*half+i], sin[t*half+i] = float32(c), float32(s)
		}
	}
}

// rope rotates x, rows of heads of headDim, in place with the tables of its
// rows' positions, in Hugging Face's rotate_half layout: element i pairs
// with element i+headDim/2.
func rope(x, cos, sin []float32, headDim int) {
	half := headDim / 2
	rows := len(cos) / half
	width := len(x) / rows
	for t := range rows {
		c, s := cos[t*half:(t+1)*half], sin[t*half:(t+1)*half]
		for h := t * width; h < (t+1)*width; h += headDim {
			a, b := x[h:h+half], x[h+half:h+headDim]
			for i := range half {
				a[i], b[i] = a[i]*c[i]-b[i]*s[i], b[i]*c[i]+a[i]*s[i]
			}
		}
	}
}

// project computes out = in·Wᵀ (rows × n from rows × k) with the weight
// matrix the model holds: w in float32, or wh in bfloat16 when w is nil.
// Both give the same bits for the same values.
func project(mm gemm.Config, out, in, w []float32, wh []uint16, rows, n, k int) {
	if w == nil && wh != nil {
		mm.MatMulTBF16(out, in, wh, rows, n, k)
		return
	}
	mm.MatMulT(out, in, w, rows, n, k)
}

// embed copies token tok's embedding into dst, widening it when the model
// keeps the embedding in bfloat16.
func (m *Model) embed(dst []float32, tok int) {
	H := len(dst)
	if m.Embed == nil && m.BF16.Embed != nil {
		for i, h := range m.BF16.Embed[tok*H : (tok+1)*H] {
			dst[i] = math.Float32frombits(uint32(h) << 16)
		}
		return
	}
	copy(dst, m.Embed[tok*H:(tok+1)*H])
}

// attendHead computes causal grouped-query attention of query head h for
// the rows of q (queries at positions pos0, pos0+1, …, [rows,
// heads·headDim]) over the cached keys and values ([pos,
// kvHeads·headDim], the new rows included), writing that head's columns
// of out ([rows, heads·headDim]). Query head h reads kv head
// h/(heads/kvHeads). scores needs room for min(rows, attentionBlock) ×
// cached positions. It touches no other head's columns, so heads may run
// side by side, each with scores of its own.
//
// The scores Q·Kᵀ and the output P·V are two strided matrix products
// through the gemm kernels, the mask and softmax per row in between. The
// rows go in blocks of attentionBlock, each over only the positions its
// last row may see, so a prompt's products cover about half the full rows
// × positions square; the few scores a block's earlier rows may not see
// are computed and then dropped.
func attendHead(mm gemm.Config, out, q, k, v, scores []float32, pos0, h, heads, kvHeads, headDim int) {
	qDim, kvDim, group := heads*headDim, kvHeads*headDim, heads/kvHeads
	rows := len(q) / qDim
	scale := float32(1 / math.Sqrt(float64(headDim)))
	kvOff := (h / group) * headDim
	for r0 := 0; r0 < rows; r0 += attentionBlock {
		r1 := min(rows, r0+attentionBlock)
		n, ctx := r1-r0, pos0+r1
		sc := scores[:n*ctx]
		mm.Sgemm(false, true, n, ctx, headDim, scale, q[r0*qDim+h*headDim:], qDim, k[kvOff:], kvDim, 0, sc, ctx)
		for t := range n {
			SoftmaxPrefix(sc[t*ctx:(t+1)*ctx], pos0+r0+t+1)
		}
		mm.Sgemm(false, false, n, headDim, ctx, 1, sc, ctx, v[kvOff:], kvDim, 0, out[r0*qDim+h*headDim:], qDim)
	}
}

// threadsOf is how many threads multiplies with mm may use.
func threadsOf(mm gemm.Config) int {
	if mm.Threads > 0 {
		return mm.Threads
	}
	return runtime.GOMAXPROCS(0)
}

// parallelAttentionFlops is the least attention work (in flops, a layer's
// sequences and heads together) worth spreading over threads.
const parallelAttentionFlops = 1 << 18

// attendAll runs attention at layer li for every sequence of the batch
// (its rows of c.q and c.att, one after another, over its own cache).
// Each (sequence, head) pair is a task of its own, and the tasks run side
// by side over the threads mm may use, each product on one thread, with
// the same bits as one after another: gemm sums in the same order
// whatever its thread count. Before, only a block's products split (over
// the columns of C), and the softmax between them and every product too
// small to split ran on one thread: half a prefill and a third of a
// batch-32 decode step. c.scores holds scoreLen floats for each of
// threads.
func attendAll(mm gemm.Config, threads int, c *KVCache, seqs []Seq, li, scoreLen, heads, kvHeads, headDim int) {
	qDim := heads * headDim
	type task struct{ s, row, h int }
	var tasks []task
	flops, row := 0, 0
	for i, s := range seqs {
		n := len(s.Tokens)
		for h := range heads {
			tasks = append(tasks, task{i, row, h})
		}
		flops += 4 * n * (s.Pos + n) * headDim * heads
		row += n
	}
	run := func(mm gemm.Config, t task, scores []float32) {
		s := seqs[t.s]
		n, sc := len(s.Tokens), s.Cache
		attendHead(mm, c.att[t.row*qDim:(t.row+n)*qDim], c.q[t.row*qDim:(t.row+n)*qDim], sc.k[li], sc.v[li], scores, s.Pos, t.h, heads, kvHeads, headDim)
	}
	workers := min(threads, len(tasks))
	if workers <= 1 || flops < parallelAttentionFlops {
		for _, t := range tasks {
			run(mm, t, c.scores[:scoreLen])
		}
		return
	}
	one := mm
	one.Threads = 1
	var next atomic.Int32
	gemm.Spread(workers, func(w int) {
		scores := c.scores[w*scoreLen : (w+1)*scoreLen]
		for i := next.Add(1) - 1; int(i) < len(tasks); i = next.Add(1) - 1 {
			run(one, tasks[i], scores)
		}
	})
}

// attentionBlock is how many query rows attention multiplies at once: big
// enough to keep the products efficient, small enough that skipping each
// block's unseen positions saves most of the masked half.
const attentionBlock = 128

// SoftmaxPrefix sets row[:see] to its softmax and row[see:] to 0 (the
// positions a causal row may not attend to), and returns the row's max and
// the reciprocal of its sum of exponentials, from which the trainer
// rebuilds the probabilities in its backward pass. Engine and trainer
// share it so that their logprobs come from the same arithmetic.
func SoftmaxPrefix(row []float32, see int) (maxS, inv float32) {
	maxS = float32(math.Inf(-1))
	for _, x := range row[:see] {
		maxS = max(maxS, x)
	}
	var sum float32
	for s := range row[:see] {
		row[s] = Exp32(row[s] - maxS)
		sum += row[s]
	}
	inv = 1 / sum
	for s := range row[:see] {
		row[s] *= inv
	}
	clear(row[see:])
	return maxS, inv
}

// SiLU is g·σ(g), computed as g / (1 + e^−g); engine and trainer share it.
func SiLU(g float32) float32 { return g / (1 + Exp32(-g)) }

// swiGLU sets gate[i] = silu(gate[i]) · up[i].
func swiGLU(gate, up []float32) {
	for i, g := range gate {
		gate[i] = SiLU(g) * up[i]
	}
}

// AddBias adds b to every row of x; a nil b adds nothing. The trainer's
// forward pass uses it too.
func AddBias(x, b []float32) {
	if b == nil {
		return
	}
	for r := 0; r < len(x); r += len(b) {
		AddTo(x[r:r+len(b)], b)
	}
}

// AddTo adds src to dst element by element.
func AddTo(dst, src []float32) {
	for i, v := range src {
		dst[i] += v
	}
}

// LogSoftmax returns log(softmax(logits)) for one row of logits, computed
// stably in float64.
func LogSoftmax(logits []float32) []float32 {
	if len(logits) == 0 {
		return nil
	}
	m := float64(slices.Max(logits))
	var sum float64
	for _, v := range logits {
		sum += math.Exp(float64(v) - m)
	}
	lse := m + math.Log(sum)
	out := make([]float32, len(logits))
	for i, v := range logits {
		out[i] = float32(float64(v) - lse)
	}
	return out
}
