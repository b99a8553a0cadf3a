package train

import (
	"math"

	"github.com/verisim/verisim/internal/engine/model"
)

// layerActs is what one decoder layer's forward pass keeps for its
// backward pass, for one sequence of T positions.
type layerActs struct {
	xIn, h1, r1    []float32 // residual entering the layer [T,H], its norm [T,H], 1/rms [T]
	q, k, v        []float32 // after bias, q and k after RoPE
	rowMax, rowInv []float32 // attention softmax statistics [heads, T]
	att            []float32 // attention output [T, heads·head_dim]
	xMid, h2, r2   []float32 // residual after attention, its norm, 1/rms
	// MLP pre-activations and silu(gate)·up, [T,I]; for a mixture of
	// experts [T·k, I], one row per (token, expert) pair, grouped by expert
	// (see moeActs).
	gate, up, act []float32
	moe           moeActs
}

// network runs the training forward and backward passes of one sequence
// at a time. Its buffers grow to the longest sequence seen and are reused,
// so a steady stream of batches allocates nothing.
type network struct {
	mm  *matmul
	cfg model.Config

	layers     []layerActs
	xF, hF, rF []float32 // final residual, its norm, 1/rms
	// logits holds [T-1, V] logits after forward; the loss turns each row
	// into its gradient in place before backward.
	logits   []float32
	cos, sin []float32
	ropeN    int // positions the tables cover

	tmp, scores, dscores                []float32
	dx, dh, dAtt, dq, dk, dv, dact, dup []float32
	moe                                 moeScratch
}

func newNetwork(mm *matmul, cfg model.Config) *network {
	return &network{mm: mm, cfg: cfg, layers: make([]layerActs, cfg.NumHiddenLayers)}
}

// size makes every buffer hold a sequence of T positions.
func (n *network) size(T int) {
	c := n.cfg
	H, I, V, hd := c.HiddenSize, c.IntermediateSize, c.VocabSize, c.HeadDim
	qDim, kvDim := c.NumAttentionHeads*hd, c.NumKeyValueHeads*hd
	rowsMLP := T
	if c.MoE() {
		rowsMLP = T * c.NumExpertsPerTok
		n.moe.size(c, T)
	}
	for i := range n.layers {
		a := &n.layers[i]
		a.xIn, a.h1, a.r1 = grow(a.xIn, T*H), grow(a.h1, T*H), grow(a.r1, T)
		a.q, a.k, a.v = grow(a.q, T*qDim), grow(a.k, T*kvDim), grow(a.v, T*kvDim)
		a.rowMax, a.rowInv = grow(a.rowMax, c.NumAttentionHeads*T), grow(a.rowInv, c.NumAttentionHeads*T)
		a.att = grow(a.att, T*qDim)
		a.xMid, a.h2, a.r2 = grow(a.xMid, T*H), grow(a.h2, T*H), grow(a.r2, T)
		a.gate, a.up, a.act = grow(a.gate, rowsMLP*I), grow(a.up, rowsMLP*I), grow(a.act, rowsMLP*I)
		if c.MoE() {
			a.moe.size(c, T)
		}
	}
	n.xF, n.hF, n.rF = grow(n.xF, T*H), grow(n.hF, T*H), grow(n.rF, T)
	n.logits = grow(n.logits, max(T-1, 0)*V)
	n.tmp, n.scores, n.dscores = grow(n.tmp, T*H), grow(n.scores, T*T), grow(n.dscores, T*T)
	n.dx, n.dh, n.dAtt = grow(n.dx, T*H), grow(n.dh, T*H), grow(n.dAtt, T*qDim)
	n.dq, n.dk, n.dv = grow(n.dq, T*qDim), grow(n.dk, T*kvDim), grow(n.dv, T*kvDim)
	n.dact, n.dup = grow(n.dact, rowsMLP*I), grow(n.dup, rowsMLP*I)
	if T > n.ropeN {
		half := hd / 2
		n.cos, n.sin = make([]float32, T*half), make([]float32, T*half)
		ropeTables(n.cos, n.sin, T, hd, c.RopeTheta)
		n.ropeN = T
	}
}

func (n *network) attnShape(T int) attnShape {
	c := n.cfg
	return attnShape{rows: T, heads: c.NumAttentionHeads, kvHeads: c.NumKeyValueHeads, headDim: c.HeadDim}
}

// forward runs tokens through w, keeping the activations, and leaves the
// logits of positions 0 … T-2 (those that predict a next token) in
// n.logits. It follows the engine's Forward operation for operation, so
// the two agree to float rounding. routes, for a mixture-of-experts model,
// is nil or Datum.Routes (checked): the experts to use instead of the
// router's choice.
func (n *network) forward(w *model.Model, tokens []int32, routes [][]int32) {
	c := n.cfg
	T, H, V := len(tokens), c.HiddenSize, c.VocabSize
	hd, I := c.HeadDim, c.IntermediateSize
	qDim, kvDim := c.NumAttentionHeads*hd, c.NumKeyValueHeads*hd
	eps := float32(c.RMSNormEps)
	n.size(T)
	cos, sin := n.cos[:T*hd/2], n.sin[:T*hd/2]
	mm := n.mm

	x := n.xF
	if len(n.layers) > 0 {
		x = n.layers[0].xIn
	}
	for t, tok := range tokens {
		copy(x[t*H:(t+1)*H], w.Embed[int(tok)*H:(int(tok)+1)*H])
	}
	for li := range w.Layers {
		l, a := &w.Layers[li], &n.layers[li]
		rmsNorm(a.h1, a.xIn, l.InputNorm, a.r1, eps)
		mm.linear(a.q, a.h1, l.Q, l.QBias, T, qDim, H)
		mm.linear(a.k, a.h1, l.K, l.KBias, T, kvDim, H)
		mm.linear(a.v, a.h1, l.V, l.VBias, T, kvDim, H)
		rope(a.q, cos, sin, hd, false)
		rope(a.k, cos, sin, hd, false)
		mm.attention(n.attnShape(T), a.att, a.q, a.k, a.v, n.scores, a.rowMax, a.rowInv)
		mm.linear(n.tmp, a.att, l.O, l.OBias, T, H, qDim)
		copy(a.xMid, a.xIn)
		model.AddTo(a.xMid, n.tmp)

		rmsNorm(a.h2, a.xMid, l.PostNorm, a.r2, eps)
		next := n.xF
		if li+1 < len(n.layers) {
			next = n.layers[li+1].xIn
		}
		n.mlpForward(l, a, li, routes, T, H, I)
		copy(next, a.xMid)
		model.AddTo(next, n.tmp)
	}
	rmsNorm(n.hF, n.xF, w.Norm, n.rF, eps)
	if T > 1 {
		mm.linear(n.logits, n.hF, w.LMHead, nil, T-1, V, H)
	}
}

// mlpForward is the MLP of layer li, the dense SwiGLU or the mixture of
// experts, leaving its output in n.tmp.
func (n *network) mlpForward(l *model.Layer, a *layerActs, li int, routes [][]int32, T, H, I int) {
	if n.cfg.MoE() {
		n.moeForward(l, a, li, routes, T, H, I)
		return
	}
	n.mm.linear(a.gate, a.h2, l.Gate, nil, T, I, H)
	n.mm.linear(a.up, a.h2, l.Up, nil, T, I, H)
	swiGLU(a.act, a.gate, a.up)
	n.mm.linear(n.tmp, a.act, l.Down, nil, T, H, I)
}

// mlpBackward adds the MLP's weight gradients to g and leaves the gradient
// of its input (the post-attention norm's output) in n.dh, for dy, the
// gradient of its output.
func (n *network) mlpBackward(l, g *model.Layer, a *layerActs, dy []float32, T, H, I int) {
	if n.cfg.MoE() {
		n.moeBackward(l, g, a, dy, T, H, I)
		return
	}
	mm := n.mm
	mm.linearBackward(n.dact, dy, a.act, l.Down, g.Down, nil, T, H, I, false)
	swiGLUBackward(n.dact, n.dup, n.dact, a.gate, a.up)
	mm.linearBackward(n.dh, n.dact, a.h2, l.Gate, g.Gate, nil, T, I, H, false)
	mm.linearBackward(n.dh, n.dup, a.h2, l.Up, g.Up, nil, T, I, H, true)
}

// backward adds to g the gradient of the loss whose gradient with respect
// to the logits forward left is in n.logits (rows 0 … T-2), and returns
// the gradient of the embedding outputs, [T,H] (already added to g).
func (n *network) backward(w, g *model.Model, tokens []int32) []float32 {
	c := n.cfg
	T, H, V := len(tokens), c.HiddenSize, c.VocabSize
	hd, I := c.HeadDim, c.IntermediateSize
	qDim, kvDim := c.NumAttentionHeads*hd, c.NumKeyValueHeads*hd
	cos, sin := n.cos[:T*hd/2], n.sin[:T*hd/2]
	mm := n.mm
	dx, dh := n.dx[:T*H], n.dh[:T*H]

	// Final norm and LM head; the last position predicts nothing.
	clear(dh[(T-1)*H:])
	if T > 1 {
		mm.linearBackward(dh, n.logits, n.hF, w.LMHead, g.LMHead, nil, T-1, V, H, false)
	}
	clear(dx)
	rmsNormBackward(dx, dh, n.xF, w.Norm, n.rF, g.Norm)

	for li := len(w.Layers) - 1; li >= 0; li-- {
		l, gl, a := &w.Layers[li], &g.Layers[li], &n.layers[li]
		// dx is the gradient of the layer's output = xMid + mlp(norm(xMid)).
		n.mlpBackward(l, gl, a, dx, T, H, I)
		rmsNormBackward(dx, dh, a.xMid, l.PostNorm, a.r2, gl.PostNorm)

		// dx is now the gradient of xMid = xIn + o(attention(norm(xIn))).
		mm.linearBackward(n.dAtt, dx, a.att, l.O, gl.O, gl.OBias, T, H, qDim, false)
		mm.attentionBackward(n.attnShape(T), n.dq, n.dk, n.dv, n.dAtt, a.q, a.k, a.v, a.rowMax, a.rowInv, n.scores, n.dscores)
		rope(n.dq, cos, sin, hd, true)
		rope(n.dk, cos, sin, hd, true)
		mm.linearBackward(dh, n.dq, a.h1, l.Q, gl.Q, gl.QBias, T, qDim, H, false)
		mm.linearBackward(dh, n.dk, a.h1, l.K, gl.K, gl.KBias, T, kvDim, H, true)
		mm.linearBackward(dh, n.dv, a.h1, l.V, gl.V, gl.VBias, T, kvDim, H, true)
		rmsNormBackward(dx, dh, a.xIn, l.InputNorm, a.r1, gl.InputNorm)
	}
	for t, tok := range tokens {
		model.AddTo(g.Embed[int(tok)*H:(int(tok)+1)*H], dx[t*H:(t+1)*H])
	}
	return dx
}

// softmaxRow replaces row with exp(row − max(row)) and returns the
// log-sum-exp of the original row and the sum of the new one, in float64
// as model.LogSoftmax computes them.
func softmaxRow(row []float32) (lse, sum float64) {
	m := row[0]
	for _, v := range row {
		m = max(m, v)
	}
	mf := float64(m)
	for i, v := range row {
		e := math.Exp(float64(v) - mf)
		row[i] = float32(e)
		sum += e
	}
	return mf + math.Log(sum), sum
}

// softmaxGrad turns row, as softmaxRow left it, into the gradient of a
// loss whose derivative with respect to log p(tok) is c: c·(onehot(tok) −
// softmax).
func softmaxGrad(row []float32, sum float64, tok int32, c float64) {
	if c == 0 {
		clear(row)
		return
	}
	k := float32(-c / sum)
	for i := range row {
		row[i] *= k
	}
	row[tok] += float32(c)
}
