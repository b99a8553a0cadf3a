//go:build !amd64 || purego

package gemm

// asmKernels reports that this build has no assembly kernels; every call
// uses the portable ones.
func asmKernels() (kernels, bool) { return kernels{}, false }
