package safetensors

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/golden.safetensors from Write")

var allDTypes = []DType{BOOL, U8, I8, F8E5M2, F8E4M3, I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64}

// randomTensors makes one or more tensors of every dtype with random bytes,
// random shapes (scalars and zero-size ones included) and, for the float
// types, the awkward values: NaN payloads, ±0, ±Inf, denormals.
func randomTensors(r *rand.Rand) []Tensor {
	specials32 := []uint32{0x7fc00000, 0x7f800001, 0xffbfffff, 0x7fffffff, 0x80000000, 0, 0x00000001, 0x807fffff, 0x7f800000, 0xff800000}
	specials16 := []uint16{0x7e00, 0x7c01, 0xfc01, 0x8000, 0, 0x0001, 0x83ff, 0x7c00, 0x7fc1, 0xff81, 0x0040}
	var ts []Tensor
	shapes := [][]int{{}, {0}, {3, 0, 2}, {1}, {7}, {2, 3}, {4, 1, 5}, {33}}
	for _, dt := range allDTypes {
		for i, shape := range shapes {
			if r.IntN(2) == 0 && i > 2 {
				continue
			}
			n, _ := numElements(shape)
			data := make([]byte, n*dt.Size())
			for j := range data {
				data[j] = byte(r.Uint32())
			}
			switch dt.Size() {
			case 4:
				for j := 0; j+4 <= len(data) && j/4 < len(specials32); j += 4 {
					binary.LittleEndian.PutUint32(data[j:], specials32[j/4])
				}
			case 2:
				for j := 0; j+2 <= len(data) && j/2 < len(specials16); j += 2 {
					binary.LittleEndian.PutUint16(data[j:], specials16[j/2])
				}
			}
			ts = append(ts, Tensor{Name: fmt.Sprintf("layer.%d.%s", i, dt), DType: dt, Shape: shape, Data: data})
		}
	}
	return ts
}

func sameTensors(t *testing.T, got map[string]Tensor, want []Tensor) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("got %d tensors, want %d", len(got), len(want))
	}
	for _, w := range want {
		g, ok := got[w.Name]
		if !ok {
			t.Errorf("tensor %q missing", w.Name)
			continue
		}
		if g.Name != w.Name || g.DType != w.DType || !slices.Equal(g.Shape, w.Shape) || !bytes.Equal(g.Data, w.Data) {
			t.Errorf("tensor %q: got %s%v %d bytes, want %s%v %d bytes (or data differs)", w.Name, g.DType, g.Shape, len(g.Data), w.DType, w.Shape, len(w.Data))
		}
	}
}

func TestWriteReadRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	tensors := randomTensors(r)
	meta := map[string]string{"format": "pt", "zz": "last", "quote\"": "<&>\u2028\x01"}
	path := filepath.Join(t.TempDir(), "m.safetensors")
	if err := Write(path, tensors, meta); err != nil {
		t.Fatal(err)
	}
	f, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	sameTensors(t, f.Tensors, tensors)
	if !mapsEqual(f.Metadata, meta) {
		t.Errorf("metadata = %v, want %v", f.Metadata, meta)
	}

	// Every tensor is aligned to its element size within the file, which is
	// what the reference layout order buys.
	h, err := ReadHeader(path)
	if err != nil {
		t.Fatal(err)
	}
	if h.DataOffset%8 != 0 {
		t.Errorf("data buffer starts at %d, not 8-aligned", h.DataOffset)
	}
	for _, ti := range h.Tensors {
		if ti.Begin%int64(ti.DType.Size()) != 0 {
			t.Errorf("tensor %q (%s) starts at %d, misaligned", ti.Name, ti.DType, ti.Begin)
		}
	}
	if len(h.Tensors) != len(tensors) || !slices.Equal(f.Names, namesOf(h.Tensors)) {
		t.Errorf("ReadHeader and Read disagree on tensor order")
	}

	// Determinism: the same tensors in another order give the same bytes.
	first, _ := os.ReadFile(path)
	shuffled := slices.Clone(tensors)
	r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	if err := Write(path, shuffled, meta); err != nil {
		t.Fatal(err)
	}
	second, _ := os.ReadFile(path)
	if !bytes.Equal(first, second) {
		t.Error("Write is not deterministic across input order")
	}
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
		t.Errorf("directory holds %d entries after Write, want 1 (temp file left behind?)", len(ents))
	}
}

func namesOf(tis []TensorInfo) []string {
	var out []string
	for _, ti := range tis {
		out = append(out, ti.Name)
	}
	return out
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestGolden(t *testing.T) {
	golden := filepath.Join("testdata", "golden.safetensors")
	want := []Tensor{
		{Name: "pos", DType: I64, Shape: []int{2}, Data: le(int64(-1), int64(1)<<40)},
		{Name: "empty", DType: F32, Shape: []int{0, 3}, Data: []byte{}},
		{Name: "ln.bias", DType: F32, Shape: []int{3}, Data: le(float32(0.5), float32(math.Copysign(0, -1)), float32(1e-40))},
		{Name: "ln.weight", DType: F32, Shape: []int{3}, Data: le(uint32(0x3f800000), uint32(0x7fc00001), uint32(0xff800000))},
		{Name: "step", DType: I32, Shape: []int{}, Data: le(int32(42))},
		{Name: "embed.weight", DType: BF16, Shape: []int{2, 3}, Data: le(uint16(0x3f80), uint16(0xbf80), uint16(0), uint16(0x8000), uint16(0x7f80), uint16(1))},
		{Name: "half", DType: F16, Shape: []int{2}, Data: le(uint16(0x3c00), uint16(1))},
		{Name: "mask", DType: U8, Shape: []int{4}, Data: []byte{0, 1, 255, 7}},
	}
	meta := map[string]string{"format": "pt", "note": "a\"b<c>&\n"}
	// Hand the tensors over in reverse to show the layout order is Write's.
	in := slices.Clone(want)
	slices.Reverse(in)
	if *update {
		if err := Write(golden, in, meta); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}

	f, err := Read(golden)
	if err != nil {
		t.Fatal(err)
	}
	sameTensors(t, f.Tensors, want)
	if !slices.Equal(f.Names, namesOf(tensorInfos(want))) {
		t.Errorf("file order %v, want %v", f.Names, namesOf(tensorInfos(want)))
	}
	if !mapsEqual(f.Metadata, meta) {
		t.Errorf("metadata = %q, want %q", f.Metadata, meta)
	}
	got, err := f.Tensors["embed.weight"].Float32s()
	if err != nil {
		t.Fatal(err)
	}
	if w := []float32{1, -1, 0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), 0x1p-133}; !bitsEqual(got, w) {
		t.Errorf("embed.weight = %v, want %v", got, w)
	}
	if got, _ := f.Tensors["half"].Float32s(); !bitsEqual(got, []float32{1, 0x1p-24}) {
		t.Errorf("half = %v", got)
	}

	out := filepath.Join(t.TempDir(), "out.safetensors")
	if err := Write(out, in, meta); err != nil {
		t.Fatal(err)
	}
	written, _ := os.ReadFile(out)
	if !bytes.Equal(written, raw) {
		t.Errorf("Write differs from the golden file:\n got %q\nwant %q", written, raw)
	}
}

func tensorInfos(ts []Tensor) []TensorInfo {
	var out []TensorInfo
	for _, t := range ts {
		out = append(out, TensorInfo{Name: t.Name})
	}
	return out
}

func bitsEqual(a, b []float32) bool {
	return slices.EqualFunc(a, b, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
}

func le(vs ...any) []byte {
	var b []byte
	for _, v := range vs {
		b, _ = binary.Append(b, binary.LittleEndian, v)
	}
	return b
}

// The byte strings the reference implementation's own serializer tests
// expect (huggingface/safetensors, safetensors/src/tensor.rs).
func TestReferenceSerializerVectors(t *testing.T) {
	floats := le(float32(0), float32(1), float32(2), float32(3), float32(4), float32(5))
	tests := []struct {
		name    string
		tensors []Tensor
		meta    map[string]string
		want    []byte
	}{
		{
			name:    "attn.0",
			tensors: []Tensor{{Name: "attn.0", DType: F32, Shape: []int{1, 2, 3}, Data: floats}},
			want: append([]byte{64, 0, 0, 0, 0, 0, 0, 0},
				append([]byte(`{"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}}`), floats...)...),
		},
		{
			name:    "forced alignment",
			tensors: []Tensor{{Name: "attn0", DType: F32, Shape: []int{1, 1, 2, 3}, Data: floats}},
			want: append([]byte{72, 0, 0, 0, 0, 0, 0, 0},
				append([]byte(`{"attn0":{"dtype":"F32","shape":[1,1,2,3],"data_offsets":[0,24]}}       `), floats...)...),
		},
		{
			name: "empty",
			want: []byte{8, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' ', ' ', ' ', ' ', ' '},
		},
		{
			name: "empty with metadata",
			meta: map[string]string{"framework": "pt"},
			want: append([]byte{40, 0, 0, 0, 0, 0, 0, 0}, []byte(`{"__metadata__":{"framework":"pt"}}     `)...),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := marshal(tt.tensors, tt.meta)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tt.want) {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
			if _, err := parse(tt.want, tt.name); err != nil {
				t.Errorf("parse reference bytes: %v", err)
			}
		})
	}
}

// file builds a safetensors file from a header string and data, unpadded.
func file(header string, data []byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	return append(append(b, header...), data...)
}

func TestReadRejects(t *testing.T) {
	valid := file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"U8","shape":[4],"data_offsets":[8,12]}}`, make([]byte, 12))
	tests := []struct {
		name   string
		raw    []byte
		tensor string // tensor the error must name, if any
		want   string
	}{
		{"too short", []byte{1, 2, 3}, "", "too short for the 8-byte header length"},
		{"truncated data", valid[:len(valid)-3], "b", "data_offsets [8, 12] run past the 9-byte data buffer"},
		{"truncated header", valid[:40], "", "header length 107 runs past the end of the 40-byte file"},
		{"header length over limit", binary.LittleEndian.AppendUint64(nil, MaxHeaderSize+1), "", "exceeds the 100000000-byte limit"},
		{"header length huge", binary.LittleEndian.AppendUint64(nil, math.MaxUint64), "", "exceeds the 100000000-byte limit"},
		{"bad json", file(`{,}`, nil), "", "header JSON: invalid character ','"},
		{"truncated json", file(`{"a":{"dtype":"F32",`, nil), "a", "header entry: unexpected EOF"},
		{"not an object", file(`[1,2]`, nil), "", "header JSON: expected an object"},
		{"trailing json", file(`{}{}`, nil), "", "trailing data after the top-level object"},
		{"not utf-8", file("{\"\xff\":1}", nil), "", "not valid UTF-8"},
		{"unknown dtype", file(`{"a":{"dtype":"Q4","shape":[2],"data_offsets":[0,2]}}`, make([]byte, 2)), "a", `unknown dtype "Q4"`},
		{"overlap", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`, make([]byte, 12)), "b", `data_offsets [4, 12] overlap tensor "a", which ends at 8`},
		{"duplicate range", file(`{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}`, make([]byte, 4)), "b", `overlap tensor "a"`},
		{"gap", file(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}}`, make([]byte, 12)), "b", "leave a gap: bytes [4, 8) belong to no tensor"},
		{"gap at start", file(`{"a":{"dtype":"U8","shape":[4],"data_offsets":[4,8]}}`, make([]byte, 8)), "a", "leave a gap: bytes [0, 4)"},
		{"uncovered tail", file(`{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}`, make([]byte, 6)), "", "tensors cover 4 bytes but the data buffer holds 6"},
		{"shape size mismatch", file(`{"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,8]}}`, make([]byte, 8)), "a", "F32[2 2] needs 16 bytes but data_offsets [0, 8] span 8"},
		{"offsets past buffer", file(`{"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]}}`, make([]byte, 4)), "a", "run past the 4-byte data buffer"},
		{"reversed offsets", file(`{"a":{"dtype":"U8","shape":[0],"data_offsets":[4,0]}}`, make([]byte, 4)), "a", "not an ordered range"},
		{"three offsets", file(`{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4,4]}}`, make([]byte, 4)), "a", "data_offsets has 3 numbers"},
		{"missing shape", file(`{"a":{"dtype":"U8","data_offsets":[0,4]}}`, make([]byte, 4)), "a", `lacks "shape"`},
		{"null shape", file(`{"a":{"dtype":"U8","shape":null,"data_offsets":[0,1]}}`, make([]byte, 1)), "a", "shape is not an array"},
		{"negative dim", file(`{"a":{"dtype":"U8","shape":[-4],"data_offsets":[0,4]}}`, make([]byte, 4)), "a", "header entry: json: cannot unmarshal number -4"},
		{"shape overflow", file(`{"a":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,0]}}`, nil), "a", "overflows"},
		{"dimension too large", file(`{"a":{"dtype":"U8","shape":[0,18446744073709551615],"data_offsets":[0,0]}}`, nil), "a", "dimension too large"},
		{"duplicate name", file(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`, make([]byte, 2)), "", `duplicate key "a"`},
		{"metadata not strings", file(`{"__metadata__":{"n":1}}`, nil), "", `__metadata__ "n": value must be a string`},
		{"metadata not object", file(`{"__metadata__":"x"}`, nil), "", "expected an object"},
	}
	dir := t.TempDir()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_")+".safetensors")
			if err := os.WriteFile(path, tt.raw, 0o644); err != nil {
				t.Fatal(err)
			}
			readers := map[string]func(string) error{
				"Read":       func(p string) error { _, err := Read(p); return err },
				"ReadHeader": func(p string) error { _, err := ReadHeader(p); return err },
			}
			for rname, read := range readers {
				err := read(path)
				if err == nil {
					t.Fatalf("%s accepted a corrupt file", rname)
				}
				var fe *FormatError
				if !errors.Is(err, ErrFormat) || !errors.As(err, &fe) {
					t.Fatalf("%s: error %v is not a FormatError", rname, err)
				}
				msg := err.Error()
				if !strings.Contains(msg, tt.want) || !strings.Contains(msg, path) {
					t.Errorf("%s: error %q, want it to contain %q and the path", rname, msg, tt.want)
				}
				if fe.Tensor != tt.tensor {
					t.Errorf("%s: error names tensor %q, want %q", rname, fe.Tensor, tt.tensor)
				}
			}
		})
	}
	t.Run("valid base", func(t *testing.T) {
		if _, err := parse(valid, "valid"); err != nil {
			t.Fatalf("the base file of the table is itself rejected: %v", err)
		}
	})
}

func TestReadMissingFile(t *testing.T) {
	_, err := Read(filepath.Join(t.TempDir(), "nope.safetensors"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("err = %v, want ErrNotExist", err)
	}
}

func TestWriteRejects(t *testing.T) {
	ok := Tensor{Name: "a", DType: F32, Shape: []int{2}, Data: make([]byte, 8)}
	tests := []struct {
		name    string
		tensors []Tensor
		meta    map[string]string
		want    string
	}{
		{"size mismatch", []Tensor{{Name: "a", DType: F32, Shape: []int{3}, Data: make([]byte, 8)}}, nil, `tensor "a": F32[3] needs 3×4 bytes, data holds 8`},
		{"unknown dtype", []Tensor{{Name: "a", DType: "F128", Data: make([]byte, 16)}}, nil, `unknown dtype "F128"`},
		{"negative dim", []Tensor{{Name: "a", DType: U8, Shape: []int{-1}}}, nil, "invalid shape [-1]"},
		{"duplicate", []Tensor{ok, ok}, nil, `tensor "a" appears twice`},
		{"reserved name", []Tensor{{Name: "__metadata__", DType: U8, Shape: []int{0}}}, nil, "reserved"},
		{"bad utf-8 name", []Tensor{{Name: "\xff", DType: U8, Shape: []int{0}}}, nil, "not valid UTF-8"},
		{"bad utf-8 metadata", []Tensor{ok}, map[string]string{"k": "\xfe"}, `metadata "k": not valid UTF-8`},
	}
	dir := t.TempDir()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, "x.safetensors")
			err := Write(path, tt.tensors, tt.meta)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Errorf("failed Write left %d entries behind", len(ents))
			}
		})
	}
	if err := Write(filepath.Join(dir, "missing", "x.safetensors"), []Tensor{ok}, nil); err == nil {
		t.Error("Write into a missing directory succeeded")
	}
}

func TestTensorHelpers(t *testing.T) {
	if n := (Tensor{Shape: []int{2, 3, 4}}).NumElements(); n != 24 {
		t.Errorf("NumElements = %d, want 24", n)
	}
	if n := (Tensor{}).NumElements(); n != 1 {
		t.Errorf("scalar NumElements = %d, want 1", n)
	}
	if n := (Tensor{Shape: []int{1 << 40, 1 << 40}}).NumElements(); n != -1 {
		t.Errorf("overflowing NumElements = %d, want -1", n)
	}
	v := []float32{1, -2.5, 0x1p-130, float32(math.NaN()), 65504, 3.14159}
	for _, dt := range []DType{F32, BF16, F16} {
		tn, err := FromFloat32("w", []int{2, 3}, v, dt)
		if err != nil {
			t.Fatal(err)
		}
		if len(tn.Data) != 6*dt.Size() {
			t.Errorf("%s: %d bytes", dt, len(tn.Data))
		}
		got, err := tn.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		for i, g := range got {
			want := v[i]
			switch dt {
			case BF16:
				want = Float32FromBF16(BF16FromFloat32(want))
			case F16:
				want = Float32FromF16(F16FromFloat32(want))
			}
			if math.Float32bits(g) != math.Float32bits(want) && !(g != g && want != want) {
				t.Errorf("%s[%d] = %g, want %g", dt, i, g, want)
			}
		}
	}
	if got, _ := (Tensor{DType: F32, Shape: []int{1}, Data: le(uint32(0x7fc00123))}).Float32s(); math.Float32bits(got[0]) != 0x7fc00123 {
		t.Errorf("F32 NaN payload lost: %#x", math.Float32bits(got[0]))
	}
	if _, err := FromFloat32("w", []int{4}, v, F32); err == nil || !strings.Contains(err.Error(), "holds 4 elements, got 6") {
		t.Errorf("shape mismatch: err = %v", err)
	}
	if _, err := FromFloat32("w", []int{6}, v, I32); err == nil {
		t.Error("FromFloat32 into I32 succeeded")
	}
	if _, err := (Tensor{Name: "i", DType: I32, Shape: []int{1}, Data: make([]byte, 4)}).Float32s(); err == nil {
		t.Error("Float32s of I32 succeeded")
	}
	if _, err := (Tensor{Name: "s", DType: F32, Shape: []int{2}, Data: make([]byte, 4)}).Float32s(); err == nil {
		t.Error("Float32s of a short tensor succeeded")
	}
}
