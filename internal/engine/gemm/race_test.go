//go:build race

package gemm

// raceEnabled trims the largest model shapes under the race detector, whose
// instrumentation makes the float64 reference ~10× slower.
const raceEnabled = true
