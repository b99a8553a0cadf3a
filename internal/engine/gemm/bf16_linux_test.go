//go:build linux

package gemm

import (
	"fmt"
	"math/rand/v2"
	"os"
	"syscall"
	"testing"
	"unsafe"
)

// guarded returns n uint16 that end exactly where a PROT_NONE page begins,
// so any read past the last element faults.
func guarded[T any](t *testing.T, n int) []T {
	t.Helper()
	page := os.Getpagesize()
	var zero T
	size := int(unsafe.Sizeof(zero))
	data := (n*size + page - 1) / page * page
	mem, err := syscall.Mmap(-1, 0, data+page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Skipf("mmap: %v", err)
	}
	t.Cleanup(func() { syscall.Munmap(mem) })
	if err := syscall.Mprotect(mem[data:], syscall.PROT_NONE); err != nil {
		t.Skipf("mprotect: %v", err)
	}
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&mem[data-n*size])), n)
}

// TestBF16NoReadPastEnd places A and B so that their last element is the
// last byte before an unmapped page: a kernel that loads past k on the
// last row (an unmasked tail, a 16-value step over the end) faults
// instead of passing.
func TestBF16NoReadPastEnd(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 28))
	cfgs := kernelConfigs(t)
	ks := []int{1, 2, 7, 8, 15, 16, 17, 31, 33, 100}
	for _, m := range []int{1, 2, 3} {
		for _, n := range []int{1, 3, 8, 9} {
			for _, k := range ks {
				a := guarded[float32](t, m*k)
				copy(a, randSlice(r, m*k))
				b := guarded[uint16](t, n*k)
				copy(b, randBF16(r, n*k))
				bw := widenSlice(b)
				for _, cfg := range cfgs {
					want, got := make([]float32, m*n), make([]float32, m*n)
					cfg.MatMulT(want, a, bw, m, n, k)
					cfg.MatMulTBF16(got, a, b, m, n, k)
					sameBits(t, got, want, fmt.Sprintf("%dx%dx%d %s", m, n, k, cfgName(cfg)))
				}
			}
		}
	}
	// The kernel tiles directly, with the tile's last row at the guard.
	for _, im := range append([]gemvBF16Impl{{"portable", portableKernels.gemv, portableKernels.gemvBF16}}, asmGemvBF16Impls()...) {
		for _, k := range ks {
			for cols := 1; cols <= gemvCols; cols++ {
				a := guarded[float32](t, k)
				copy(a, randSlice(r, k))
				ldb := k + 3
				b := guarded[uint16](t, (cols-1)*ldb+k)
				copy(b, randBF16(r, len(b)))
				want, got := make([]float32, cols), make([]float32, cols)
				im.gemv(k, 1, a, widenSlice(b), ldb, want)
				im.gemvBF16(k, 1, a, b, ldb, got)
				sameBits(t, got, want, fmt.Sprintf("%s k=%d cols=%d", im.name, k, cols))
			}
		}
	}
}
