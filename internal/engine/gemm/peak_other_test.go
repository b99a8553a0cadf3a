//go:build !amd64 || purego

package gemm

// measurePeak has no register-only FMA loop on this build; benchmarks then
// omit the fraction-of-peak metric.
func measurePeak(threads int) float64 { return 0 }
