// Package gemm is the float32 matrix multiply behind the CPU inference
// engine: BLAS-style Sgemm on row-major slices, plus the two shapes a
// transformer layer needs, MatMulT (C = A·Bᵀ, weights stored [out, in] as in
// HF checkpoints, the prefill and decode hot path) and MatMul (C = A·B).
//
// # Design
//
// Three paths share one driver shape (split columns of C across goroutines,
// block for cache, call a register-blocked micro-kernel):
//
//   - A·Bᵀ with both operands' rows running along k needs no packing: 4×4
//     tiles of dot products, 16 AVX-512 accumulators, masked loads for the
//     k%16 tail, reduced horizontally once per tile. One kernel call runs
//     a whole block of rows of A (up to 64) against four rows of B and adds
//     alpha times the sums into C itself: with the short k of a small model
//     (256) a tile is only ~50 ns of FMAs, and a Go loop around each tile
//     cost as much again.
//   - A·Bᵀ with m ≤ 2 (batch-1 decode is m = 1, a GEMV) runs one GEMV per
//     row of A instead, where a 4×4 tile would waste most of its FMAs: each
//     16-float chunk of A is loaded once and FMA'd with 8 rows of B (8
//     accumulators), over all of k in one call, with no per-call packing.
//     Large weight matrices make this bound by the rate B streams in from
//     cache or memory, not by the FMA units.
//   - Every other transpose combination packs op(B) into 32-column and
//     alpha·op(A) into 8-row micro-panels (kc = 256, mc = 128, nc = 1024) and
//     runs an 8×32 broadcast-FMA kernel (16 zmm accumulators). Edge tiles go
//     through a scratch tile, so the kernel never writes outside its range.
//
// # Bfloat16 weights
//
// Batch-1 decode runs every weight matrix through a GEMV once per token,
// which is bound by the rate the weights stream in from memory, not by the
// FMA units. MatMulTBF16 takes the weights as bfloat16 bit patterns (the
// high 16 bits of a float32), which halves the bytes streamed; activations,
// products and sums stay float32, and each weight widens exactly
// (uint32(v)<<16 reinterpreted as float32). The result is bit-identical to
// MatMulT on the widened weights with the same Config, whatever Threads is:
// the GEMV path (m ≤ 2) runs kernelGemv8BF16, kernelGemv8 with each chunk
// of B loaded as 16-bit lanes and widened in a register before the same
// FMAs, masked tail and reduction; larger m widen each 4-row × kc block of
// B (one kernel call) into an L1-sized per-goroutine scratch and run the
// float32 path's dot kernel over it, in the same blocks and order as MatMulT. That identity is
// what keeps the logprobs the engine serves from bf16 weights equal to
// those of a trainer or scoring pass that uses the same weights in float32.
// (The portable kernels likewise mirror their float32 counterparts.)
//
// # Why Go assembly and not GOEXPERIMENT=simd
//
// The toolchain does ship simd/archsimd, but only under GOEXPERIMENT=simd,
// and the project builds and tests without experiments: with archsimd the
// default build would get only the portable kernel. The micro-kernels are
// small and fixed, so they are written once in Go assembly
// (kernel_amd64.s) and picked at run time with golang.org/x/sys/cpu
// (AVX-512F, which also covers OS support for ZMM state). Other CPUs and
// architectures, and builds with -tags purego, use pure-Go kernels over the
// same packing and blocking code, which the tests exercise on every machine.
//
// # Promises
//
// All functions are safe for concurrent use on distinct outputs. Config is a
// value: the zero Config splits large products over runtime.GOMAXPROCS(0)
// goroutines and waits for them before returning; Config{Threads: 1} stays
// on the caller's goroutine. The goroutines are a team shared by every
// call, which stay awake (spinning, yielding to any other runnable
// goroutine) for 200 µs after each job and then park: a goroutine
// handed to an idle core started 70–100 µs later on the VM measured, as
// long as a batch-1 product, and the multiplies of a decode step come microseconds apart
// (see team.go). A split that finds the team busy with another, or that
// is wider than its 16 workers, starts goroutines of its own. Spread runs other work (a mixture-of-experts
// layer's experts) on the same team. Each element of C is summed in the same order
// whatever Threads is, so results are bit-identical across settings. As in
// BLAS, beta == 0 overwrites C without reading it, and bad dimensions,
// leading dimensions or short slices panic with a message naming the
// operand.
package gemm
