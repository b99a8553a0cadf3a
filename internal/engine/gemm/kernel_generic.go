package gemm

// portableKernels computes the same tiles as the assembly kernels in plain
// Go, on the same packed layout, so the blocking logic is shared and tested
// on every architecture.
//
// Every product that is summed is converted to float32 explicitly
// (float32(x*y)), which forbids the compiler to fuse it with the sum into
// one FMA, as it otherwise may (GOAMD64=v3 and other architectures): the
// portable kernels then round alike, and agree with each other, whatever
// the build targets.
var portableKernels = kernels{
	name: "portable", packed: packedGo, dotPanel: dotPanelGo, gemv: gemvGo,
	gemvBF16: gemvGoBF16, widen: widenGo, widenRows: widenRowsGo,
}

func packedGo(kc int, a, b, c []float32, ldc int) {
	a = a[:kc*mr]
	b = b[:kc*nr]
	for i := range mr {
		var acc [nr]float32
		for p := range kc {
			av := a[p*mr+i]
			bp := b[p*nr : p*nr+nr]
			for j, bv := range bp {
				acc[j] += float32(av * bv)
			}
		}
		crow := c[i*ldc : i*ldc+nr]
		for j, v := range acc {
			crow[j] += v
		}
	}
}

func dotPanelGo(k int, a []float32, lda, rows int, b *[4][]float32, alpha float32, c []float32, ldc, cols int) {
	var (
		ar  [4][]float32
		out [16]float32
	)
	for i := 0; i < rows; i += 4 {
		n := min(4, rows-i)
		for r := range ar {
			off := (i + min(r, n-1)) * lda
			ar[r] = a[off : off+k]
		}
		dotGo(k, &ar, b, &out)
		for r := range n {
			crow := c[(i+r)*ldc : (i+r)*ldc+cols]
			for j := range crow {
				crow[j] += float32(alpha * out[r*4+j])
			}
		}
	}
}

// dotGo sets out[4i+j] = Σ_{p<k} a[i][p]·b[j][p].
func dotGo(k int, a, b *[4][]float32, out *[16]float32) {
	for i, ai := range a {
		ai = ai[:k]
		for j, bj := range b {
			bj = bj[:k]
			var s0, s1 float32
			p := 0
			for ; p+1 < k; p += 2 {
				s0 += float32(ai[p] * bj[p])
				s1 += float32(ai[p+1] * bj[p+1])
			}
			if p < k {
				s0 += float32(ai[p] * bj[p])
			}
			out[i*4+j] = s0 + s1
		}
	}
}

func gemvGo(k int, alpha float32, a, b []float32, ldb int, c []float32) {
	a = a[:k]
	for j := range c {
		bj := b[j*ldb : j*ldb+k]
		var s0, s1 float32
		p := 0
		for ; p+1 < k; p += 2 {
			s0 += float32(a[p] * bj[p])
			s1 += float32(a[p+1] * bj[p+1])
		}
		if p < k {
			s0 += float32(a[p] * bj[p])
		}
		c[j] += float32(alpha * (s0 + s1))
	}
}

// gemvGoBF16 is gemvGo with B in bfloat16: the same two-way split and
// summation order on the exactly widened values, so it matches gemvGo on
// the widened rows bit for bit.
func gemvGoBF16(k int, alpha float32, a []float32, b []uint16, ldb int, c []float32) {
	a = a[:k]
	for j := range c {
		bj := b[j*ldb : j*ldb+k]
		var s0, s1 float32
		p := 0
		for ; p+1 < k; p += 2 {
			s0 += float32(a[p] * bf16ToFloat32(bj[p]))
			s1 += float32(a[p+1] * bf16ToFloat32(bj[p+1]))
		}
		if p < k {
			s0 += float32(a[p] * bf16ToFloat32(bj[p]))
		}
		c[j] += float32(alpha * (s0 + s1))
	}
}

// widenGo sets dst[i] = widen(src[i]) for i < len(src) ≤ len(dst).
func widenGo(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = bf16ToFloat32(v)
	}
}

// widenRowsGo sets dst[r·ldd+i] = widen(src[r·lds+i]) for r < rows and
// i < n.
func widenRowsGo(dst []float32, ldd int, src []uint16, lds, rows, n int) {
	for r := range rows {
		widenGo(dst[r*ldd:r*ldd+n], src[r*lds:r*lds+n])
	}
}
