package safetensors

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"slices"
	"unicode/utf8"
)

// MaxHeaderSize is the largest JSON header accepted, the reference
// implementation's limit.
const MaxHeaderSize = 100_000_000

// metadataKey is the reserved header key for the free-form string map.
const metadataKey = "__metadata__"

// ErrFormat is matched (errors.Is) by every error reporting a malformed file.
var ErrFormat = errors.New("malformed safetensors")

// FormatError reports a malformed file or checkpoint directory.
type FormatError struct {
	Path   string // the file (or index) at fault
	Tensor string // the tensor at fault, if any
	Msg    string
}

func (e *FormatError) Error() string {
	if e.Tensor != "" {
		return fmt.Sprintf("safetensors %s: tensor %q: %s", e.Path, e.Tensor, e.Msg)
	}
	return fmt.Sprintf("safetensors %s: %s", e.Path, e.Msg)
}

// Is makes errors.Is(err, ErrFormat) true.
func (e *FormatError) Is(target error) bool { return target == ErrFormat }

// TensorInfo describes one tensor in a header.
type TensorInfo struct {
	Name  string
	DType DType
	Shape []int
	// Begin and End delimit the tensor's bytes, relative to the start of the
	// data buffer.
	Begin, End int64
}

// Header is a parsed, validated file header.
type Header struct {
	Metadata map[string]string // nil when the file has no __metadata__
	Tensors  []TensorInfo      // in data-buffer order
	// DataOffset is where the data buffer starts in the file: 8 + N.
	DataOffset int64
}

// File is a fully loaded safetensors file.
type File struct {
	Metadata map[string]string // nil when the file has no __metadata__
	Tensors  map[string]Tensor
	Names    []string // tensor names in data-buffer order
}

// ReadHeader reads and validates the header of the file at path without
// loading the data buffer.
func ReadHeader(path string) (*Header, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	var lenBuf [8]byte
	if _, err := io.ReadFull(f, lenBuf[:]); err != nil {
		return nil, &FormatError{Path: path, Msg: fmt.Sprintf("file is %d bytes, too short for the 8-byte header length", fi.Size())}
	}
	n, err := headerLen(lenBuf[:], fi.Size(), path)
	if err != nil {
		return nil, err
	}
	hdr := make([]byte, n)
	if _, err := io.ReadFull(f, hdr); err != nil {
		return nil, fmt.Errorf("safetensors %s: read header: %w", path, err)
	}
	return parseHeader(hdr, fi.Size()-8-n, path)
}

// Read loads and validates the whole file at path.
func Read(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	return parse(b, path)
}

// parse decodes a whole file held in b; path only names it in errors.
// The returned tensors alias b.
func parse(b []byte, path string) (*File, error) {
	if len(b) < 8 {
		return nil, &FormatError{Path: path, Msg: fmt.Sprintf("file is %d bytes, too short for the 8-byte header length", len(b))}
	}
	n, err := headerLen(b[:8], int64(len(b)), path)
	if err != nil {
		return nil, err
	}
	h, err := parseHeader(b[8:8+n], int64(len(b))-8-n, path)
	if err != nil {
		return nil, err
	}
	data := b[8+n:]
	f := &File{
		Metadata: h.Metadata,
		Tensors:  make(map[string]Tensor, len(h.Tensors)),
		Names:    make([]string, len(h.Tensors)),
	}
	for i, ti := range h.Tensors {
		f.Names[i] = ti.Name
		f.Tensors[ti.Name] = Tensor{
			Name:  ti.Name,
			DType: ti.DType,
			Shape: ti.Shape,
			Data:  data[ti.Begin:ti.End:ti.End],
		}
	}
	return f, nil
}

// headerLen decodes the 8-byte header length and checks it against the
// limit and the file size.
func headerLen(b []byte, fileSize int64, path string) (int64, error) {
	n := binary.LittleEndian.Uint64(b)
	if n > MaxHeaderSize {
		return 0, &FormatError{Path: path, Msg: fmt.Sprintf("header length %d exceeds the %d-byte limit", n, MaxHeaderSize)}
	}
	if int64(n) > fileSize-8 {
		return 0, &FormatError{Path: path, Msg: fmt.Sprintf("header length %d runs past the end of the %d-byte file", n, fileSize)}
	}
	return int64(n), nil
}

// parseHeader decodes and validates the JSON header hdr of a file whose data
// buffer is dataLen bytes long.
func parseHeader(hdr []byte, dataLen int64, path string) (*Header, error) {
	bad := func(tensor, format string, args ...any) error {
		return &FormatError{Path: path, Tensor: tensor, Msg: fmt.Sprintf(format, args...)}
	}
	if !utf8.Valid(hdr) {
		return nil, bad("", "header is not valid UTF-8")
	}
	h := &Header{DataOffset: 8 + int64(len(hdr))}
	dec := json.NewDecoder(bytes.NewReader(hdr))
	err := walkObject(dec, func(name string) error {
		if name == metadataKey {
			h.Metadata = map[string]string{}
			return walkObject(dec, func(k string) error {
				var v string
				if err := dec.Decode(&v); err != nil {
					return fmt.Errorf("__metadata__ %q: value must be a string: %w", k, err)
				}
				h.Metadata[k] = v
				return nil
			})
		}
		ti, err := decodeTensorInfo(dec, name)
		if err != nil {
			return err
		}
		h.Tensors = append(h.Tensors, ti)
		return nil
	})
	if err != nil {
		var fe *FormatError
		if errors.As(err, &fe) {
			fe.Path = path
			return nil, fe
		}
		return nil, bad("", "header JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, bad("", "header JSON: trailing data after the top-level object")
	}

	for i := range h.Tensors {
		ti := &h.Tensors[i]
		if ti.End > dataLen {
			return nil, bad(ti.Name, "data_offsets [%d, %d] run past the %d-byte data buffer", ti.Begin, ti.End, dataLen)
		}
	}
	slices.SortFunc(h.Tensors, func(a, b TensorInfo) int {
		return cmp.Or(cmp.Compare(a.Begin, b.Begin), cmp.Compare(a.End, b.End), cmp.Compare(a.Name, b.Name))
	})
	var at int64
	for i, ti := range h.Tensors {
		switch {
		case ti.Begin < at:
			return nil, bad(ti.Name, "data_offsets [%d, %d] overlap tensor %q, which ends at %d", ti.Begin, ti.End, h.Tensors[i-1].Name, at)
		case ti.Begin > at:
			return nil, bad(ti.Name, "data_offsets [%d, %d] leave a gap: bytes [%d, %d) belong to no tensor", ti.Begin, ti.End, at, ti.Begin)
		}
		at = ti.End
	}
	if at != dataLen {
		return nil, bad("", "tensors cover %d bytes but the data buffer holds %d", at, dataLen)
	}
	return h, nil
}

// walkObject reads one JSON object from dec, calling fn with each key while
// the decoder is positioned at the key's value; fn must consume the value.
// It rejects duplicate keys, which encoding/json would silently merge.
func walkObject(dec *json.Decoder, fn func(key string) error) error {
	err := walkObjectEOF(dec, fn)
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

func walkObjectEOF(dec *json.Decoder, fn func(key string) error) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok != json.Delim('{') {
		return fmt.Errorf("expected an object, found %v", tok)
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key := tok.(string) // the decoder guarantees object keys are strings
		if seen[key] {
			return fmt.Errorf("duplicate key %q", key)
		}
		seen[key] = true
		if err := fn(key); err != nil {
			return err
		}
	}
	_, err = dec.Token() // the closing '}'
	return err
}

// decodeTensorInfo reads one tensor's header entry and checks it on its own:
// dtype known, offsets ordered, size matching the shape.
func decodeTensorInfo(dec *json.Decoder, name string) (TensorInfo, error) {
	var (
		dtype       string
		shape, offs []uint64
		have        = map[string]bool{}
	)
	err := walkObject(dec, func(k string) error {
		have[k] = true
		switch k {
		case "dtype":
			return dec.Decode(&dtype)
		case "shape":
			return dec.Decode(&shape)
		case "data_offsets":
			return dec.Decode(&offs)
		}
		var skip json.RawMessage // the reference ignores unknown fields too
		return dec.Decode(&skip)
	})
	bad := func(format string, args ...any) error {
		return &FormatError{Tensor: name, Msg: fmt.Sprintf(format, args...)}
	}
	if err != nil {
		return TensorInfo{}, bad("header entry: %v", err)
	}
	for _, k := range []string{"dtype", "shape", "data_offsets"} {
		if !have[k] {
			return TensorInfo{}, bad("header entry lacks %q", k)
		}
	}
	if shape == nil {
		return TensorInfo{}, bad("shape is not an array")
	}
	dt := DType(dtype)
	size, _, ok := dt.info()
	if !ok {
		return TensorInfo{}, bad("unknown dtype %q", dtype)
	}
	if len(offs) != 2 {
		return TensorInfo{}, bad("data_offsets has %d numbers, want 2", len(offs))
	}
	begin, end := offs[0], offs[1]
	if end < begin || end > math.MaxInt64 {
		return TensorInfo{}, bad("data_offsets [%d, %d] are not an ordered range", begin, end)
	}
	nbytes := uint64(size)
	ishape := make([]int, len(shape))
	for i, d := range shape {
		if d > math.MaxInt {
			return TensorInfo{}, bad("shape %v has a dimension too large", shape)
		}
		hi, lo := bits.Mul64(nbytes, d)
		if hi != 0 || lo > math.MaxInt64 {
			return TensorInfo{}, bad("shape %v overflows", shape)
		}
		nbytes = lo
		ishape[i] = int(d)
	}
	if nbytes != end-begin {
		return TensorInfo{}, bad("%s%v needs %d bytes but data_offsets [%d, %d] span %d", dt, shape, nbytes, begin, end, end-begin)
	}
	return TensorInfo{Name: name, DType: dt, Shape: ishape, Begin: int64(begin), End: int64(end)}, nil
}
