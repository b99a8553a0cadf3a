//go:build !amd64 || purego

package gemm

// asmGemvBF16Impls returns no kernels: this build has only the portable
// ones.
func asmGemvBF16Impls() []gemvBF16Impl { return nil }
