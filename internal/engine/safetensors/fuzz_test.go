package safetensors

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// FuzzRead: parsing arbitrary bytes never panics and fails only with a
// FormatError; whatever parses re-encodes (as Write would) into a file that
// parses to the same tensors and metadata, and re-encoding that is a fixed
// point.
func FuzzRead(f *testing.F) {
	if golden, err := os.ReadFile(filepath.Join("testdata", "golden.safetensors")); err == nil {
		f.Add(golden)
	}
	seed, _ := marshal(randomTensors(rand.New(rand.NewPCG(5, 6))), map[string]string{"k": "v"})
	f.Add(seed)
	f.Add(file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"U8","shape":[0],"data_offsets":[8,8]}}`, make([]byte, 8)))
	f.Add(file(`{"__metadata__":{"a\u0000":"\ud800"},"\n":{"dtype":"BOOL","shape":[],"data_offsets":[0,1]}}`, []byte{1}))
	f.Add(file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`, make([]byte, 12)))
	f.Add([]byte{})

	f.Fuzz(func(t *testing.T, raw []byte) {
		in, err := parse(bytes.Clone(raw), "fuzz")
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("parse error is not a FormatError: %v", err)
			}
			return
		}
		var tensors []Tensor
		for _, name := range in.Names {
			tensors = append(tensors, in.Tensors[name])
		}
		out, err := marshal(tensors, in.Metadata)
		if err != nil {
			t.Fatalf("cannot re-encode a file that parsed: %v", err)
		}
		again, err := parse(out, "again")
		if err != nil {
			t.Fatalf("re-encoded file does not parse: %v\n%q", err, out)
		}
		sameTensors(t, again.Tensors, tensors)
		if !mapsEqual(again.Metadata, in.Metadata) {
			t.Fatalf("metadata %q became %q", in.Metadata, again.Metadata)
		}
		var tensors2 []Tensor
		for _, name := range again.Names {
			tensors2 = append(tensors2, again.Tensors[name])
		}
		out2, err := marshal(tensors2, again.Metadata)
		if err != nil || !bytes.Equal(out, out2) {
			t.Fatalf("re-encoding is not a fixed point (err %v)", err)
		}
	})
}
