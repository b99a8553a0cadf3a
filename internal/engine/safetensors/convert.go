package safetensors

import "math"

// BF16FromFloat32 rounds f to bfloat16, to nearest with ties to even.
// A NaN stays a NaN (the top of its payload is kept and the quiet bit is set,
// so truncation cannot turn it into an infinity); values beyond the bfloat16
// range round to ±Inf.
func BF16FromFloat32(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x0040
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// Float32FromBF16 widens a bfloat16 to float32; it is exact.
func Float32FromBF16(h uint16) float32 {
	return math.Float32frombits(uint32(h) << 16)
}

// F16FromFloat32 rounds f to IEEE 754 half precision, to nearest with ties
// to even, producing subnormals where needed. A NaN stays a NaN (quiet bit
// set, top of the payload kept); values beyond the half range round to ±Inf.
func F16FromFloat32(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	man := b & 0x7fffff
	if exp == 0xff {
		if man != 0 {
			return sign | 0x7e00 | uint16(man>>13)
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15 // biased half exponent
	switch {
	case e >= 0x1f:
		return sign | 0x7c00
	case e < -10:
		// Below half the smallest subnormal (2^-25): rounds to zero.
		return sign
	case e <= 0:
		// A half subnormal m·2^-24; the float is man24·2^(exp-150).
		man |= 0x800000
		shift := uint(14 - e)
		m := man >> shift
		rem := man & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || rem == half && m&1 == 1 {
			m++ // may carry into the smallest normal, which is the right encoding
		}
		return sign | uint16(m)
	}
	h := uint32(e)<<10 | man>>13
	rem := man & 0x1fff
	if rem > 0x1000 || rem == 0x1000 && h&1 == 1 {
		h++ // a carry into the exponent is correct, up to and including Inf
	}
	return sign | uint16(h)
}

// Float32FromF16 widens an IEEE 754 half to float32; it is exact, and a NaN
// keeps its payload.
func Float32FromF16(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	man := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	case exp == 0 && man == 0:
		return math.Float32frombits(sign)
	case exp == 0:
		// Subnormal: normalise into a float32 normal.
		e := uint32(127 - 15 + 1)
		for man&0x400 == 0 {
			man <<= 1
			e--
		}
		return math.Float32frombits(sign | e<<23 | (man&0x3ff)<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | man<<13)
}
