package safetensors

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
)

// Tensor is one named tensor: its element type, its shape (row-major; an
// empty shape is a scalar) and its raw little-endian bytes.
type Tensor struct {
	Name  string
	DType DType
	Shape []int
	Data  []byte
}

// NumElements is the product of the shape, 1 for a scalar. It returns -1 if
// a dimension is negative or the product overflows an int.
func (t Tensor) NumElements() int {
	n, ok := numElements(t.Shape)
	if !ok {
		return -1
	}
	return n
}

func numElements(shape []int) (int, bool) {
	n := uint64(1)
	for _, d := range shape {
		if d < 0 {
			return 0, false
		}
		hi, lo := bits.Mul64(n, uint64(d))
		if hi != 0 || lo > math.MaxInt {
			return 0, false
		}
		n = lo
	}
	return int(n), true
}

// check reports what is wrong with t as something to write, or nil.
func (t Tensor) check() error {
	size, _, ok := t.DType.info()
	if !ok {
		return fmt.Errorf("tensor %q: unknown dtype %q", t.Name, t.DType)
	}
	n, ok := numElements(t.Shape)
	if !ok {
		return fmt.Errorf("tensor %q: invalid shape %v", t.Name, t.Shape)
	}
	hi, want := bits.Mul64(uint64(n), uint64(size))
	if hi != 0 || want != uint64(len(t.Data)) {
		return fmt.Errorf("tensor %q: %s%v needs %d×%d bytes, data holds %d", t.Name, t.DType, t.Shape, n, size, len(t.Data))
	}
	return nil
}

// Float32s decodes an F32, BF16 or F16 tensor into float32s. The widening
// is exact; NaN payloads survive.
func (t Tensor) Float32s() ([]float32, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	d := t.Data
	switch t.DType {
	case F32:
		out := make([]float32, len(d)/4)
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(d[4*i:]))
		}
		return out, nil
	case BF16, F16:
		widen := Float32FromBF16
		if t.DType == F16 {
			widen = Float32FromF16
		}
		out := make([]float32, len(d)/2)
		for i := range out {
			out[i] = widen(binary.LittleEndian.Uint16(d[2*i:]))
		}
		return out, nil
	}
	return nil, fmt.Errorf("tensor %q: cannot decode %s as float32", t.Name, t.DType)
}

// BF16s returns a BF16 tensor's values as bfloat16 bit patterns, as
// stored: no widening.
func (t Tensor) BF16s() ([]uint16, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	if t.DType != BF16 {
		return nil, fmt.Errorf("tensor %q is %s, not %s", t.Name, t.DType, BF16)
	}
	out := make([]uint16, len(t.Data)/2)
	for i := range out {
		out[i] = binary.LittleEndian.Uint16(t.Data[2*i:])
	}
	return out, nil
}

// FromFloat32 builds a tensor of dtype dt (F32, BF16 or F16) from v, which
// must hold exactly the number of elements the shape calls for. Narrowing
// rounds to nearest, ties to even.
func FromFloat32(name string, shape []int, v []float32, dt DType) (Tensor, error) {
	n, ok := numElements(shape)
	if !ok {
		return Tensor{}, fmt.Errorf("tensor %q: invalid shape %v", name, shape)
	}
	if n != len(v) {
		return Tensor{}, fmt.Errorf("tensor %q: shape %v holds %d elements, got %d values", name, shape, n, len(v))
	}
	var data []byte
	switch dt {
	case F32:
		data = make([]byte, 4*len(v))
		for i, f := range v {
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(f))
		}
	case BF16, F16:
		narrow := BF16FromFloat32
		if dt == F16 {
			narrow = F16FromFloat32
		}
		data = make([]byte, 2*len(v))
		for i, f := range v {
			binary.LittleEndian.PutUint16(data[2*i:], narrow(f))
		}
	default:
		return Tensor{}, fmt.Errorf("tensor %q: cannot encode float32 as %s", name, dt)
	}
	return Tensor{Name: name, DType: dt, Shape: append([]int(nil), shape...), Data: data}, nil
}
