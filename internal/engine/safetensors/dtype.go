package safetensors

// DType is a safetensors element type, spelled as it is in the header.
type DType string

// The element types. The set is the reference implementation's, less the
// sub-byte float formats, which this package has no use for.
const (
	BOOL   DType = "BOOL"
	U8     DType = "U8"
	I8     DType = "I8"
	F8E5M2 DType = "F8_E5M2"
	F8E4M3 DType = "F8_E4M3"
	I16    DType = "I16"
	U16    DType = "U16"
	F16    DType = "F16"
	BF16   DType = "BF16"
	I32    DType = "I32"
	U32    DType = "U32"
	F32    DType = "F32"
	F64    DType = "F64"
	I64    DType = "I64"
	U64    DType = "U64"
)

// info gives each known dtype's element size and its rank in the reference
// implementation's Dtype enum, which orders tensors on write: the enum rises
// with alignment, so writing in falling rank keeps every tensor aligned to
// its element size. ok is false for an unknown dtype.
func (d DType) info() (size, rank int, ok bool) {
	switch d {
	case BOOL:
		return 1, 0, true
	case U8:
		return 1, 1, true
	case I8:
		return 1, 2, true
	case F8E5M2:
		return 1, 3, true
	case F8E4M3:
		return 1, 4, true
	case I16:
		return 2, 5, true
	case U16:
		return 2, 6, true
	case F16:
		return 2, 7, true
	case BF16:
		return 2, 8, true
	case I32:
		return 4, 9, true
	case U32:
		return 4, 10, true
	case F32:
		return 4, 11, true
	case F64:
		return 8, 12, true
	case I64:
		return 8, 13, true
	case U64:
		return 8, 14, true
	}
	return 0, 0, false
}

// Size is the size of one element in bytes, or 0 for an unknown dtype.
func (d DType) Size() int {
	size, _, _ := d.info()
	return size
}

// Valid reports whether d is a dtype this package knows.
func (d DType) Valid() bool {
	_, _, ok := d.info()
	return ok
}
