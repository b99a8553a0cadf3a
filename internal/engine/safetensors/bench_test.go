package safetensors

import (
	"fmt"
	"path/filepath"
	"testing"
)

// checkpoint makes about size bytes of BF16 and F32 tensors in 1 MiB pieces.
func checkpoint(size int) []Tensor {
	const piece = 1 << 20
	var ts []Tensor
	for i := 0; i*piece < size; i++ {
		dt := BF16
		if i%4 == 0 {
			dt = F32
		}
		data := make([]byte, piece)
		for j := range data {
			data[j] = byte(i + j)
		}
		ts = append(ts, Tensor{Name: fmt.Sprintf("layers.%d.weight", i), DType: dt, Shape: []int{piece / dt.Size()}, Data: data})
	}
	return ts
}

func BenchmarkWrite(b *testing.B) {
	const size = 100 << 20
	ts := checkpoint(size)
	path := filepath.Join(b.TempDir(), "model.safetensors")
	b.Run("size=100MiB", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			if err := Write(path, ts, map[string]string{"format": "pt"}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkRead(b *testing.B) {
	const size = 100 << 20
	path := filepath.Join(b.TempDir(), "model.safetensors")
	if err := Write(path, checkpoint(size), nil); err != nil {
		b.Fatal(err)
	}
	b.Run("size=100MiB", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			if _, err := Read(path); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("size=100MiB/header-only", func(b *testing.B) {
		for b.Loop() {
			if _, err := ReadHeader(path); err != nil {
				b.Fatal(err)
			}
		}
	})
}
