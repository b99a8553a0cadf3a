package train

import (
	"github.com/verisim/verisim/internal/engine/model"
)

// moeActs is what a mixture-of-experts layer's forward pass keeps for its
// backward pass, beside the rows of layerActs' gate, up and act. A slot is
// one (token, j) pair, j < k: slot t·k + j is token t's j-th expert. Rows
// hold one slot each, grouped by expert (expert 0's first), each expert's
// in token order, so that an expert's projections multiply all of its rows
// at once.
type moeActs struct {
	logits  []float32 // [T, E] router logits
	experts []int32   // [T·k] each slot's expert
	weights []float32 // [T·k] each slot's routing weight
	start   []int     // [E+1] where each expert's rows begin
	order   []int32   // [T·k] each row's slot
	out     []float32 // [T·k, H] each row's expert output, unweighted
}

func (m *moeActs) size(c model.Config, T int) {
	E, k := c.NumLocalExperts, c.NumExpertsPerTok
	m.logits = grow(m.logits, T*E)
	m.experts, m.weights = grow(m.experts, T*k), grow(m.weights, T*k)
	m.start, m.order = grow(m.start, E+1), grow(m.order, T*k)
	m.out = grow(m.out, T*k*c.HiddenSize)
}

// moeScratch is the mixture of experts' share of the network's scratch,
// shared by the layers.
type moeScratch struct {
	rows    []float32 // [T·k, H] the rows' inputs, gathered from the normed tokens
	drows   []float32 // [T·k, H] gradients of the rows' outputs, then of their inputs
	dw      []float32 // [T·k] gradients of the slots' weights
	dlogits []float32 // [T, E] gradient of the router logits
	next    []int     // [E] cursors of the counting sort
}

func (s *moeScratch) size(c model.Config, T int) {
	E, k := c.NumLocalExperts, c.NumExpertsPerTok
	s.rows, s.drows = grow(s.rows, T*k*c.HiddenSize), grow(s.drows, T*k*c.HiddenSize)
	s.dw, s.dlogits, s.next = grow(s.dw, T*k), grow(s.dlogits, T*E), grow(s.next, E)
}

// moeForward is layer li's sparse mixture of experts as the engine
// computes it (model's moeMLP), leaving its output in n.tmp: router
// logits, per token the k experts with the highest logits or the ones its
// routes entry gives, their weights the softmax of their logits, and
// Σ_j w_j · expert_j(h). Each expert multiplies its rows at once and each
// token's weighted outputs are summed in expert order, as the engine does,
// so the two agree bit for bit.
func (n *network) moeForward(l *model.Layer, a *layerActs, li int, routes [][]int32, T, H, I int) {
	E, k := n.cfg.NumLocalExperts, n.cfg.NumExpertsPerTok
	m, s, mm := &a.moe, &n.moe, n.mm
	mm.linear(m.logits, a.h2, l.Router, nil, T, E, H)
	for t := range T {
		var given []int32
		if len(routes) > 0 && len(routes[t]) > 0 {
			given = routes[t][li*k : (li+1)*k]
		}
		model.Route(m.experts[t*k:(t+1)*k], m.weights[t*k:(t+1)*k], m.logits[t*E:(t+1)*E], given)
	}

	model.GroupByExpert(m.experts, m.start, s.next, m.order)
	n.gatherRows(m, a.h2, H, k)
	for e := range E {
		p0, p1 := m.start[e], m.start[e+1]
		if p0 == p1 {
			continue
		}
		x, rows := &l.Experts[e], p1-p0
		in, gate, up, act := s.rows[p0*H:p1*H], a.gate[p0*I:p1*I], a.up[p0*I:p1*I], a.act[p0*I:p1*I]
		mm.linear(gate, in, x.Gate, nil, rows, I, H)
		mm.linear(up, in, x.Up, nil, rows, I, H)
		swiGLU(act, gate, up)
		mm.linear(m.out[p0*H:p1*H], act, x.Down, nil, rows, H, I)
	}
	model.CombineExperts(n.tmp[:T*H], m.out, m.order, m.weights, k, H)
}

// moeBackward adds the router's and the used experts' weight gradients to
// g and leaves in n.dh the gradient of the layer's normed input, for dy,
// the gradient of moeForward's output. The choice of experts is discrete
// and has no gradient: the router's gradient flows through the chosen
// experts' weights, the softmax of their logits, as in transformers.
func (n *network) moeBackward(l, g *model.Layer, a *layerActs, dy []float32, T, H, I int) {
	E, k := n.cfg.NumLocalExperts, n.cfg.NumExpertsPerTok
	m, s, mm := &a.moe, &n.moe, n.mm
	// Row p of slot (t, j) outputs w·y_p into token t: its output gradient
	// is w·dy_t and its weight's gradient ⟨dy_t, y_p⟩.
	for p, slot := range m.order {
		t, w := int(slot)/k, m.weights[slot]
		dyt, drow := dy[t*H:(t+1)*H], s.drows[p*H:(p+1)*H]
		var dot float64
		for i, y := range m.out[p*H : (p+1)*H] {
			dot += float64(dyt[i]) * float64(y)
			drow[i] = w * dyt[i]
		}
		s.dw[slot] = float32(dot)
	}
	n.gatherRows(m, a.h2, H, k)
	for e := range E {
		p0, p1 := m.start[e], m.start[e+1]
		if p0 == p1 {
			continue
		}
		x, gx, rows := &l.Experts[e], &g.Experts[e], p1-p0
		in, drows := s.rows[p0*H:p1*H], s.drows[p0*H:p1*H]
		dact, dup := n.dact[p0*I:p1*I], n.dup[p0*I:p1*I]
		mm.linearBackward(dact, drows, a.act[p0*I:p1*I], x.Down, gx.Down, nil, rows, H, I, false)
		swiGLUBackward(dact, dup, dact, a.gate[p0*I:p1*I], a.up[p0*I:p1*I])
		mm.linearBackward(drows, dact, in, x.Gate, gx.Gate, nil, rows, I, H, false)
		mm.linearBackward(drows, dup, in, x.Up, gx.Up, nil, rows, I, H, true)
	}

	// The weights are the softmax of the chosen logits z:
	// dz_j = w_j·(dw_j − Σ_i w_i·dw_i); the other logits get nothing.
	dl := s.dlogits[:T*E]
	clear(dl)
	for t := range T {
		ws, dws := m.weights[t*k:(t+1)*k], s.dw[t*k:(t+1)*k]
		var dot float64
		for j, w := range ws {
			dot += float64(w) * float64(dws[j])
		}
		for j, e := range m.experts[t*k : (t+1)*k] {
			dl[t*E+int(e)] = float32(float64(ws[j]) * (float64(dws[j]) - dot))
		}
	}
	dh := n.dh[:T*H]
	mm.linearBackward(dh, dl, a.h2, l.Router, g.Router, nil, T, E, H, false)
	for p, slot := range m.order {
		t := int(slot) / k
		model.AddTo(dh[t*H:(t+1)*H], s.drows[p*H:(p+1)*H])
	}
}

// gatherRows copies into n.moe.rows each row's input: its token's row of h.
func (n *network) gatherRows(m *moeActs, h []float32, H, k int) {
	for p, slot := range m.order {
		t := int(slot) / k
		copy(n.moe.rows[p*H:(p+1)*H], h[t*H:(t+1)*H])
	}
}
