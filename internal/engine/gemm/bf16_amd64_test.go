//go:build amd64 && !purego

package gemm

// asmGemvBF16Impls returns the assembly bf16 GEMV this CPU uses and the
// fallback for AVX-512 CPUs without AVX-512BW, which runs here too.
func asmGemvBF16Impls() []gemvBF16Impl {
	ks, ok := asmKernels()
	if !ok {
		return nil
	}
	return []gemvBF16Impl{
		{ks.name, ks.gemv, ks.gemvBF16},
		{"avx512-widened", gemvAVX512, gemvBF16Widened},
	}
}
