package train

import (
	"math"
	"time"

	"github.com/verisim/verisim/internal/engine/gemm"
	"github.com/verisim/verisim/internal/engine/model"
)

// matmul runs every matrix product of the forward and backward passes
// through the gemm kernels. When timed is set (benchmarks ask for it) it
// adds the time spent in them to spent; otherwise it costs one branch.
type matmul struct {
	cfg   gemm.Config
	timed bool
	spent time.Duration
}

// sgemm is gemm.Config.Sgemm: C = alpha·op(A)·op(B) + beta·C.
func (mm *matmul) sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if !mm.timed {
		mm.cfg.Sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	start := time.Now()
	mm.cfg.Sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	mm.spent += time.Since(start)
}

// linear sets y[rows, out] = x[rows, in]·wᵀ (+ b), w stored [out, in].
func (mm *matmul) linear(y, x, w, b []float32, rows, out, in int) {
	mm.sgemm(false, true, rows, out, in, 1, x, in, w, in, 0, y, out)
	model.AddBias(y, b)
}

// linearBackward is the backward pass of linear for the output gradient
// dy: dx = dy·w (added to dx when accumulate is set), gw += dyᵀ·x and
// gb += Σ_rows dy (gb nil when the layer has no bias).
func (mm *matmul) linearBackward(dx, dy, x, w, gw, gb []float32, rows, out, in int, accumulate bool) {
	beta := float32(0)
	if accumulate {
		beta = 1
	}
	mm.sgemm(false, false, rows, in, out, 1, dy, out, w, in, beta, dx, in)
	mm.sgemm(true, false, out, in, rows, 1, dy, out, x, in, 1, gw, in)
	colSum(gb, dy[:rows*out])
}

// rmsNorm sets each row of dst to the row of x divided by its root mean
// square, times w, exactly as the engine's forward does, and stores each
// row's inverse root mean square in inv for the backward pass.
func rmsNorm(dst, x, w, inv []float32, eps float32) {
	n := len(w)
	for r := range len(x) / n {
		row := x[r*n : (r+1)*n]
		var ss float32
		for _, v := range row {
			ss += v * v
		}
		scale := float32(1 / math.Sqrt(float64(ss/float32(n)+eps)))
		inv[r] = scale
		out := dst[r*n : (r+1)*n]
		for i, v := range row {
			out[i] = w[i] * (v * scale)
		}
	}
}

// rmsNormBackward adds to dx and gw the gradients of y = w ⊙ x·s, s =
// (mean(x²)+eps)^(-1/2), for the output gradient dy:
// dx_j += s·w_j·dy_j − x_j·s³/n · Σ_i dy_i·w_i·x_i and gw_j += Σ_rows dy_j·x_j·s.
func rmsNormBackward(dx, dy, x, w, inv, gw []float32) {
	n := len(w)
	for r := range len(x) / n {
		xr, dyr, dxr := x[r*n:(r+1)*n], dy[r*n:(r+1)*n], dx[r*n:(r+1)*n]
		s := inv[r]
		var dot float64
		for i, d := range dyr {
			dot += float64(d * w[i] * xr[i])
		}
		c := float32(dot) * s * s * s / float32(n)
		for i, d := range dyr {
			dxr[i] += s*w[i]*d - xr[i]*c
			gw[i] += d * xr[i] * s
		}
	}
}

// ropeTables fills cos and sin, [n, headDim/2], for positions 0 … n-1 and
// frequencies theta^(-2i/headDim), as the engine does.
func ropeTables(cos, sin []float32, n, headDim int, theta float64) {
	half := headDim / 2
	for t := range n {
		for i := range half {
			invFreq := math.Pow(theta, -float64(2*i)/float64(headDim))
			s, c := math.Sincos(float64(t) * invFreq)
			cos[t*half+i], sin[t*half+i] = float32(c), float32(s)
		}
	}
}

// rope rotates x, rows of heads of headDim, in place in the rotate_half
// layout (element i pairs with i+headDim/2), row t by the angles of
// position t. With inverse set it rotates the other way, which is also
// the backward pass: the rotation is orthogonal, so its transpose is its
// inverse.
func rope(x, cos, sin []float32, headDim int, inverse bool) {
	half := headDim / 2
	rows := len(cos) / half
	width := len(x) / rows
	sign := float32(1)
	if inverse {
		sign = -1
	}
	for t := range rows {
		c, s := cos[t*half:(t+1)*half], sin[t*half:(t+1)*half]
		for h := t * width; h < (t+1)*width; h += headDim {
			a, b := x[h:h+half], x[h+half:h+headDim]
			for i := range half {
				si := sign * s[i]
				a[i], b[i] = a[i]*c[i]-b[i]*si, b[i]*c[i]+a[i]*si
			}
		}
	}
}

// attnShape is causal grouped-query attention over one sequence of rows
// positions: q [rows, heads·headDim], k and v [rows, kvHeads·headDim];
// query head h reads kv head h/(heads/kvHeads).
type attnShape struct {
	rows, heads, kvHeads, headDim int
}

func (s attnShape) scale() float32 { return float32(1 / math.Sqrt(float64(s.headDim))) }

// attention writes softmax(q·kᵀ/√d, causal)·v to out, as the engine does,
// and keeps each score row's maximum and inverse sum (rowMax, rowInv,
// [heads, rows]) so the backward pass can rebuild the probabilities
// without storing them. scores needs rows·rows values.
func (mm *matmul) attention(s attnShape, out, q, k, v, scores, rowMax, rowInv []float32) {
	T, hd := s.rows, s.headDim
	qDim, kvDim, group := s.heads*hd, s.kvHeads*hd, s.heads/s.kvHeads
	sc := scores[:T*T]
	for h := range s.heads {
		kvOff := (h / group) * hd
		mm.sgemm(false, true, T, T, hd, s.scale(), q[h*hd:], qDim, k[kvOff:], kvDim, 0, sc, T)
		for t := range T {
			rowMax[h*T+t], rowInv[h*T+t] = model.SoftmaxPrefix(sc[t*T:(t+1)*T], t+1)
		}
		mm.sgemm(false, false, T, hd, T, 1, sc, T, v[kvOff:], kvDim, 0, out[h*hd:], qDim)
	}
}

// attentionBackward sets dq, dk and dv from dout, the gradient of
// attention's output, with q, k, v and the row statistics the forward
// pass kept. Per head, with P the probabilities and S the scaled scores:
// dP = dO·Vᵀ, dV += Pᵀ·dO, dS = P ⊙ (dP − rowsum(dP ⊙ P)), dQ = dS·K/√d,
// dK += dSᵀ·Q/√d. p and dp need rows·rows values each.
func (mm *matmul) attentionBackward(s attnShape, dq, dk, dv, dout, q, k, v, rowMax, rowInv, p, dp []float32) {
	T, hd := s.rows, s.headDim
	qDim, kvDim, group := s.heads*hd, s.kvHeads*hd, s.heads/s.kvHeads
	scale := s.scale()
	p, dp = p[:T*T], dp[:T*T]
	clear(dk)
	clear(dv)
	for h := range s.heads {
		kvOff := (h / group) * hd
		mm.sgemm(false, true, T, T, hd, scale, q[h*hd:], qDim, k[kvOff:], kvDim, 0, p, T)
		for t := range T {
			row := p[t*T : (t+1)*T]
			see := t + 1
			maxS, inv := rowMax[h*T+t], rowInv[h*T+t]
			for j := range row[:see] {
				row[j] = model.Exp32(row[j]-maxS) * inv
			}
			clear(row[see:])
		}
		mm.sgemm(false, true, T, T, hd, 1, dout[h*hd:], qDim, v[kvOff:], kvDim, 0, dp, T)
		mm.sgemm(true, false, T, hd, T, 1, p, T, dout[h*hd:], qDim, 1, dv[kvOff:], kvDim)
		for t := range T {
			pr, dr := p[t*T:(t+1)*T], dp[t*T:(t+1)*T]
			see := t + 1
			var dot float32
			for j := range pr[:see] {
				dot += pr[j] * dr[j]
			}
			for j := range pr[:see] {
				dr[j] = pr[j] * (dr[j] - dot)
			}
			clear(dr[see:])
		}
		mm.sgemm(false, false, T, hd, T, scale, dp, T, k[kvOff:], kvDim, 0, dq[h*hd:], qDim)
		mm.sgemm(true, false, T, hd, T, scale, dp, T, q[h*hd:], qDim, 1, dk[kvOff:], kvDim)
	}
}

// swiGLU sets act[i] = silu(gate[i])·up[i], as the engine does.
func swiGLU(act, gate, up []float32) {
	for i, g := range gate {
		act[i] = model.SiLU(g) * up[i]
	}
}

// swiGLUBackward sets dgate and dup from dact, the gradient of swiGLU's
// output: with σ the logistic function, silu'(g) = σ(g)·(1 + g·(1−σ(g))).
// dgate may be dact itself.
func swiGLUBackward(dgate, dup, dact, gate, up []float32) {
	for i, g := range gate {
		sig := 1 / (1 + model.Exp32(-g))
		d := dact[i]
		dup[i] = d * g * sig
		dgate[i] = d * up[i] * sig * (1 + g*(1-sig))
	}
}

// colSum adds the column sums of x (rows of len(dst)) to dst; a nil dst
// adds nothing.
func colSum(dst, x []float32) {
	if dst == nil {
		return
	}
	for r := 0; r < len(x); r += len(dst) {
		model.AddTo(dst, x[r:r+len(dst)])
	}
}

// grow returns buf resized to n elements, reusing its storage when it can.
func grow[E any](buf []E, n int) []E {
	if cap(buf) < n {
		return make([]E, n)
	}
	return buf[:n]
}
