package safetensors

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestBF16FromFloat32(t *testing.T) {
	tests := []struct {
		name string
		in   uint32 // float32 bits
		want uint16
	}{
		{"one", 0x3f800000, 0x3f80},
		{"minus one", 0xbf800000, 0xbf80},
		{"zero", 0x00000000, 0x0000},
		{"minus zero", 0x80000000, 0x8000},
		{"just below half", 0x3f807fff, 0x3f80},
		{"halfway to odd rounds down to even", 0x3f808000, 0x3f80},
		{"halfway from odd rounds up to even", 0x3f818000, 0x3f82},
		{"just above half", 0x3f808001, 0x3f81},
		{"negative halfway from odd", 0xbf818000, 0xbf82},
		{"halfway carries into exponent", 0x3fffc000, 0x4000},
		{"largest finite rounds to inf", 0x7f7fffff, 0x7f80},
		{"largest bf16 stays", 0x7f7f0000, 0x7f7f},
		{"halfway below largest finite to even", 0x7f7e8000, 0x7f7e},
		{"halfway at top to inf", 0x7f7f8000, 0x7f80},
		{"smallest denormal to zero", 0x00000001, 0x0000},
		{"denormal halfway to even zero", 0x00008000, 0x0000},
		{"denormal halfway from odd", 0x00018000, 0x0002},
		{"denormal exact", 0x00010000, 0x0001},
		{"inf", 0x7f800000, 0x7f80},
		{"minus inf", 0xff800000, 0xff80},
		{"quiet nan", 0x7fc00000, 0x7fc0},
		{"nan with only low payload stays nan", 0x7f800001, 0x7fc0},
		{"negative nan keeps high payload", 0xffa00000, 0xffe0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := BF16FromFloat32(math.Float32frombits(tt.in)); got != tt.want {
				t.Errorf("BF16FromFloat32(%#08x) = %#04x, want %#04x", tt.in, got, tt.want)
			}
		})
	}
}

func TestF16FromFloat32(t *testing.T) {
	tests := []struct {
		name string
		in   float32
		want uint16
	}{
		{"one", 1, 0x3c00},
		{"minus two", -2, 0xc000},
		{"minus zero", float32(math.Copysign(0, -1)), 0x8000},
		{"max half", 65504, 0x7bff},
		{"halfway above max to inf", 65520, 0x7c00},
		{"just below halfway above max", 65519.996, 0x7bff},
		{"smallest subnormal", 0x1p-24, 0x0001},
		{"half smallest subnormal ties to zero", 0x1p-25, 0x0000},
		{"above half smallest subnormal", 0x1.000002p-25, 0x0001},
		{"1.5 subnormal ties to even 2", 0x3p-25, 0x0002},
		{"largest subnormal", 0x3ffp-24, 0x03ff},
		{"subnormal rounds into smallest normal", 0x7ffp-25, 0x0400},
		{"smallest normal", 0x1p-14, 0x0400},
		{"halfway 1+2^-11 to even", 1 + 0x1p-11, 0x3c00},
		{"halfway 1+3*2^-11 to even", 1 + 3*0x1p-11, 0x3c02},
		{"tiny", 0x1p-30, 0x0000},
		{"inf", float32(math.Inf(1)), 0x7c00},
		{"huge to inf", 1e10, 0x7c00},
		{"nan", math.Float32frombits(0x7fc00000), 0x7e00},
		{"nan low payload stays nan", math.Float32frombits(0xff800001), 0xfe00},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := F16FromFloat32(tt.in); got != tt.want {
				t.Errorf("F16FromFloat32(%g) = %#04x, want %#04x", tt.in, got, tt.want)
			}
		})
	}
}

// Every 16-bit value widens and narrows back to itself (NaNs to a NaN).
func TestHalfWidthExhaustiveRoundTrip(t *testing.T) {
	codecs := []struct {
		name   string
		widen  func(uint16) float32
		narrow func(float32) uint16
	}{
		{"bf16", Float32FromBF16, BF16FromFloat32},
		{"f16", Float32FromF16, F16FromFloat32},
	}
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			for i := range 1 << 16 {
				h := uint16(i)
				f := c.widen(h)
				got := c.narrow(f)
				if f != f {
					if w := c.widen(got); w == w {
						t.Fatalf("%#04x: NaN narrowed to non-NaN %#04x", h, got)
					}
					continue
				}
				if got != h {
					t.Fatalf("%#04x -> %g -> %#04x", h, f, got)
				}
			}
		})
	}
}

// For random finite float32s, the narrowed value is a nearest one, and an
// even one on a tie; checked against float64 arithmetic on the neighbours.
func TestHalfWidthNearestEven(t *testing.T) {
	codecs := []struct {
		name   string
		widen  func(uint16) float32
		narrow func(float32) uint16
	}{
		{"bf16", Float32FromBF16, BF16FromFloat32},
		{"f16", Float32FromF16, F16FromFloat32},
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			for range 200000 {
				f := math.Float32frombits(r.Uint32())
				if c.name == "f16" {
					f = float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(44)-28)))
				}
				if f != f || math.IsInf(float64(f), 0) {
					continue
				}
				h := c.narrow(f)
				got := float64(c.widen(h))
				if math.IsInf(got, 0) {
					continue // overflow is checked by the tables
				}
				d := math.Abs(got - float64(f))
				for _, nb := range []uint16{h - 1, h + 1} {
					w := float64(c.widen(nb))
					if w != w || math.Signbit(w) != math.Signbit(got) && w != 0 && got != 0 {
						continue
					}
					dn := math.Abs(w - float64(f))
					if dn < d || dn == d && nb&1 == 0 {
						t.Fatalf("%g (%#08x) -> %#04x (%g), but %#04x (%g) is nearer or the even tie", f, math.Float32bits(f), h, got, nb, w)
					}
				}
			}
		})
	}
}
