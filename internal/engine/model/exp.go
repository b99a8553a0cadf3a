package model

import "math"

// Exp32 is e^x in float32, within 2 ulp of the correctly rounded result
// for x in [-87.3, 88.7] (0 below, +Inf above): Cephes' expf, a range
// reduction x = k·ln2 + r with |r| ≤ ln2/2 and a degree-6 minimax
// polynomial for e^r. It is several times faster than going through
// float64 math.Exp, which matters because attention's softmax and the
// MLP's SiLU take tens of millions of exponentials in one long prefill.
// The trainer uses the same function, so its logprobs and the server's
// come from the same arithmetic.
func Exp32(x float32) float32 {
	const (
		log2e = 1.44269504088896341
		ln2hi = 0.693359375
		ln2lo = -2.12194440e-4
	)
	switch {
	case x > 88.72283905206835:
		return float32(math.Inf(1))
	case x < -87.33654475055310:
		return 0
	case x != x:
		return x
	}
	t := x * log2e
	var k int32
	if t >= 0 {
		k = int32(t + 0.5)
	} else {
		k = int32(t - 0.5)
	}
	kf := float32(k)
	r := x - kf*ln2hi - kf*ln2lo
	p := float32(1.9875691500e-4)
	p = p*r + 1.3981999507e-3
	p = p*r + 8.3334519073e-3
	p = p*r + 4.1665795894e-2
	p = p*r + 1.6666665459e-1
	p = p*r + 5.0000001201e-1
	p = p*r*r + r + 1
	// 2^k: k is in [-126, 128] here; split so neither factor overflows.
	if k > 127 {
		return p * 2 * math.Float32frombits(uint32(k-1+127)<<23)
	}
	return p * math.Float32frombits(uint32(k+127)<<23)
}
