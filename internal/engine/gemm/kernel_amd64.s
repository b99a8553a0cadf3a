//go:build !purego

#include "textflag.h"

// GEMV8_ROWS sets the row pointers of an 8-row GEMV tile from the first
// row (R8), the row stride in bytes (BX) and the tile's width (DX):
// R8..R13, DI, BX, where row r stays at row r-1 when r ≥ cols; then it
// clears AX (the offset along the rows) and the accumulators Z0-Z7.
#define GEMV8_ROWS \
	LEAQ    (R8)(BX*1), R9; \
	CMPQ    DX, $1; \
	CMOVQLE R8, R9; \
	LEAQ    (R9)(BX*1), R10; \
	CMPQ    DX, $2; \
	CMOVQLE R9, R10; \
	LEAQ    (R10)(BX*1), R11; \
	CMPQ    DX, $3; \
	CMOVQLE R10, R11; \
	LEAQ    (R11)(BX*1), R12; \
	CMPQ    DX, $4; \
	CMOVQLE R11, R12; \
	LEAQ    (R12)(BX*1), R13; \
	CMPQ    DX, $5; \
	CMOVQLE R12, R13; \
	LEAQ    (R13)(BX*1), DI; \
	CMPQ    DX, $6; \
	CMOVQLE R13, DI; \
	LEAQ    (DI)(BX*1), AX; \
	CMPQ    DX, $7; \
	CMOVQLE DI, AX; \
	MOVQ    AX, BX; \
	XORQ    AX, AX; \
	VPXORD Z0, Z0, Z0; \
	VPXORD Z1, Z1, Z1; \
	VPXORD Z2, Z2, Z2; \
	VPXORD Z3, Z3, Z3; \
	VPXORD Z4, Z4, Z4; \
	VPXORD Z5, Z5, Z5; \
	VPXORD Z6, Z6, Z6; \
	VPXORD Z7, Z7, Z7

// GEMV8_REDUCE_STORE sums each accumulator Z0-Z7 (16 lanes, 16 → 8 lanes,
// then a hadd tree that treats every row alike; Y0 ends as rows 0-3, Y4 as
// 4-7) and adds alpha times the sums to c[0:cols] under a cols-lane mask.
// It reads the c, cols and alpha arguments the GEMV kernels share.
#define GEMV8_REDUCE_STORE \
	VEXTRACTF64X4 $1, Z0, Y16; \
	VADDPS        Y16, Y0, Y0; \
	VEXTRACTF64X4 $1, Z1, Y17; \
	VADDPS        Y17, Y1, Y1; \
	VEXTRACTF64X4 $1, Z2, Y18; \
	VADDPS        Y18, Y2, Y2; \
	VEXTRACTF64X4 $1, Z3, Y19; \
	VADDPS        Y19, Y3, Y3; \
	VEXTRACTF64X4 $1, Z4, Y20; \
	VADDPS        Y20, Y4, Y4; \
	VEXTRACTF64X4 $1, Z5, Y21; \
	VADDPS        Y21, Y5, Y5; \
	VEXTRACTF64X4 $1, Z6, Y22; \
	VADDPS        Y22, Y6, Y6; \
	VEXTRACTF64X4 $1, Z7, Y23; \
	VADDPS        Y23, Y7, Y7; \
	VHADDPS       Y1, Y0, Y0; \
	VHADDPS       Y3, Y2, Y2; \
	VHADDPS       Y5, Y4, Y4; \
	VHADDPS       Y7, Y6, Y6; \
	VHADDPS       Y2, Y0, Y0; \
	VHADDPS       Y6, Y4, Y4; \
	VPERM2F128    $0x20, Y4, Y0, Y8; \
	VPERM2F128    $0x31, Y4, Y0, Y9; \
	VADDPS        Y9, Y8, Y8; \
	MOVQ         c+40(FP), DI; \
	MOVQ         cols+48(FP), CX; \
	MOVQ         $1, DX; \
	SHLQ         CX, DX; \
	DECQ         DX; \
	KMOVW        DX, K2; \
	VBROADCASTSS alpha+8(FP), Z10; \
	VMOVUPS.Z    (DI), K2, Z11; \
	VFMADD231PS  Z8, Z10, Z11; \
	VMOVUPS      Z11, K2, (DI)


// func kernelPacked8x32(kc int, a, b, c *float32, ldc int)
//
// C[8×32] += Â·B̂ where Â is a packed 8-row micro-panel (kc groups of 8)
// and B̂ a packed 32-column micro-panel (kc groups of 32). Z0..Z15 hold the
// tile: row r lives in Z(2r) (columns 0..15) and Z(2r+1) (columns 16..31).
TEXT ·kernelPacked8x32(SB), NOSPLIT, $0-40
	MOVQ kc+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DI
	MOVQ c+24(FP), DX
	MOVQ ldc+32(FP), R8
	SHLQ $2, R8

	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15

	TESTQ CX, CX
	JEQ   store

loop:
	VMOVUPS      (DI), Z16
	VMOVUPS      64(DI), Z17
	VBROADCASTSS (SI), Z18
	VBROADCASTSS 4(SI), Z19
	VFMADD231PS  Z16, Z18, Z0
	VFMADD231PS  Z17, Z18, Z1
	VFMADD231PS  Z16, Z19, Z2
	VFMADD231PS  Z17, Z19, Z3
	VBROADCASTSS 8(SI), Z20
	VBROADCASTSS 12(SI), Z21
	VFMADD231PS  Z16, Z20, Z4
	VFMADD231PS  Z17, Z20, Z5
	VFMADD231PS  Z16, Z21, Z6
	VFMADD231PS  Z17, Z21, Z7
	VBROADCASTSS 16(SI), Z22
	VBROADCASTSS 20(SI), Z23
	VFMADD231PS  Z16, Z22, Z8
	VFMADD231PS  Z17, Z22, Z9
	VFMADD231PS  Z16, Z23, Z10
	VFMADD231PS  Z17, Z23, Z11
	VBROADCASTSS 24(SI), Z24
	VBROADCASTSS 28(SI), Z25
	VFMADD231PS  Z16, Z24, Z12
	VFMADD231PS  Z17, Z24, Z13
	VFMADD231PS  Z16, Z25, Z14
	VFMADD231PS  Z17, Z25, Z15
	ADDQ         $32, SI
	ADDQ         $128, DI
	DECQ         CX
	JNZ          loop

store:
	VADDPS  (DX), Z0, Z0
	VADDPS  64(DX), Z1, Z1
	VMOVUPS Z0, (DX)
	VMOVUPS Z1, 64(DX)
	ADDQ    R8, DX
	VADDPS  (DX), Z2, Z2
	VADDPS  64(DX), Z3, Z3
	VMOVUPS Z2, (DX)
	VMOVUPS Z3, 64(DX)
	ADDQ    R8, DX
	VADDPS  (DX), Z4, Z4
	VADDPS  64(DX), Z5, Z5
	VMOVUPS Z4, (DX)
	VMOVUPS Z5, 64(DX)
	ADDQ    R8, DX
	VADDPS  (DX), Z6, Z6
	VADDPS  64(DX), Z7, Z7
	VMOVUPS Z6, (DX)
	VMOVUPS Z7, 64(DX)
	ADDQ    R8, DX
	VADDPS  (DX), Z8, Z8
	VADDPS  64(DX), Z9, Z9
	VMOVUPS Z8, (DX)
	VMOVUPS Z9, 64(DX)
	ADDQ    R8, DX
	VADDPS  (DX), Z10, Z10
	VADDPS  64(DX), Z11, Z11
	VMOVUPS Z10, (DX)
	VMOVUPS Z11, 64(DX)
	ADDQ    R8, DX
	VADDPS  (DX), Z12, Z12
	VADDPS  64(DX), Z13, Z13
	VMOVUPS Z12, (DX)
	VMOVUPS Z13, 64(DX)
	ADDQ    R8, DX
	VADDPS  (DX), Z14, Z14
	VADDPS  64(DX), Z15, Z15
	VMOVUPS Z14, (DX)
	VMOVUPS Z15, 64(DX)
	VZEROUPPER
	RET

// Load 16 floats under mask K1 from each row pointer at byte offset AX and
// accumulate a_i·b_j into Z(4i+j) for the 4×4 dot tile.
#define DOT_STEP \
	VMOVUPS.Z (R10)(AX*1), K1, Z16; \
	VMOVUPS.Z (R11)(AX*1), K1, Z17; \
	VMOVUPS.Z (R12)(AX*1), K1, Z18; \
	VMOVUPS.Z (R13)(AX*1), K1, Z19; \
	VMOVUPS.Z (SI)(AX*1), K1, Z20; \
	VFMADD231PS Z16, Z20, Z0; \
	VFMADD231PS Z17, Z20, Z1; \
	VFMADD231PS Z18, Z20, Z2; \
	VFMADD231PS Z19, Z20, Z3; \
	VMOVUPS.Z (DI)(AX*1), K1, Z21; \
	VFMADD231PS Z16, Z21, Z4; \
	VFMADD231PS Z17, Z21, Z5; \
	VFMADD231PS Z18, Z21, Z6; \
	VFMADD231PS Z19, Z21, Z7; \
	VMOVUPS.Z (R8)(AX*1), K1, Z22; \
	VFMADD231PS Z16, Z22, Z8; \
	VFMADD231PS Z17, Z22, Z9; \
	VFMADD231PS Z18, Z22, Z10; \
	VFMADD231PS Z19, Z22, Z11; \
	VMOVUPS.Z (R9)(AX*1), K1, Z23; \
	VFMADD231PS Z16, Z23, Z12; \
	VFMADD231PS Z17, Z23, Z13; \
	VFMADD231PS Z18, Z23, Z14; \
	VFMADD231PS Z19, Z23, Z15


// Reduce four 16-lane accumulators into the four sums of one tile row (in
// XA; the upper lanes of ZA end zero) and add alpha (Z24) times them to
// the row of C at (CX) under the cols-lane mask K2: alpha·sum is rounded
// before it is added, as a Go "c += alpha*s" would.
#define REDUCE_STORE_ROW(ZA, ZB, ZC, ZD, YA, YB, YC, YD, XA, XB) \
	VEXTRACTF64X4 $1, ZA, Y16; \
	VADDPS        Y16, YA, YA; \
	VEXTRACTF64X4 $1, ZB, Y17; \
	VADDPS        Y17, YB, YB; \
	VEXTRACTF64X4 $1, ZC, Y18; \
	VADDPS        Y18, YC, YC; \
	VEXTRACTF64X4 $1, ZD, Y19; \
	VADDPS        Y19, YD, YD; \
	VHADDPS       YB, YA, YA; \
	VHADDPS       YD, YC, YC; \
	VHADDPS       YC, YA, YA; \
	VEXTRACTF128  $1, YA, XB; \
	VADDPS        XB, XA, XA; \
	VMULPS        Z24, ZA, ZA; \
	VMOVUPS.Z     (CX), K2, Z25; \
	VADDPS        Z25, ZA, ZA; \
	VMOVUPS       ZA, K2, (CX)

// func kernelDotPanel(k int, a *float32, lda, rows int, b0, b1, b2, b3 *float32, c *float32, ldc, cols int, alpha float32)
//
// c[i·ldc+j] += alpha·Σ_p a_i[p]·b_j[p] for i < rows (≥ 1) and j < cols
// (1 ≤ cols ≤ 4), where a_i is the row at a + i·lda, in 4×4 tiles down
// the rows: accumulator Z(4r+j) holds 16 partial sums of tile row r and
// column j, the k%16 tail uses a masked load, which never touches memory
// past k, and a tile past the last row repeats it (its sums are not
// stored). Each sum is reduced in the same tree as kernelGemv8's.
TEXT ·kernelDotPanel(SB), NOSPLIT, $0-92
	MOVQ         a+8(FP), SI
	MOVQ         lda+16(FP), R15
	SHLQ         $2, R15
	MOVQ         rows+24(FP), R14
	MOVQ         b0+32(FP), R10
	MOVQ         b1+40(FP), R11
	MOVQ         b2+48(FP), R12
	MOVQ         b3+56(FP), R13
	MOVQ         c+64(FP), DX
	MOVQ         cols+80(FP), CX
	MOVQ         $1, BX
	SHLQ         CX, BX
	DECQ         BX
	KMOVW        BX, K2
	VBROADCASTSS alpha+88(FP), Z24

paneltile:
	// Rows of this tile past the last repeat it.
	LEAQ    (SI)(R15*1), DI
	CMPQ    R14, $1
	CMOVQLE SI, DI
	LEAQ    (DI)(R15*1), R8
	CMPQ    R14, $2
	CMOVQLE DI, R8
	LEAQ    (R8)(R15*1), R9
	CMPQ    R14, $3
	CMOVQLE R8, R9

	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15

	MOVQ  k+0(FP), CX
	XORQ  AX, AX
	MOVQ  $0xffff, BX
	KMOVW BX, K1
	CMPQ  CX, $16
	JLT   paneltail

panelloop:
	DOT_STEP
	ADDQ $64, AX
	SUBQ $16, CX
	CMPQ CX, $16
	JGE  panelloop

paneltail:
	TESTQ CX, CX
	JEQ   panelstore
	MOVQ  $1, BX
	SHLQ  CX, BX
	DECQ  BX
	KMOVW BX, K1
	DOT_STEP

panelstore:
	MOVQ ldc+72(FP), BX
	SHLQ $2, BX
	MOVQ DX, CX
	REDUCE_STORE_ROW(Z0, Z1, Z2, Z3, Y0, Y1, Y2, Y3, X0, X1)
	CMPQ R14, $1
	JLE  panelnext
	ADDQ BX, CX
	REDUCE_STORE_ROW(Z4, Z5, Z6, Z7, Y4, Y5, Y6, Y7, X4, X5)
	CMPQ R14, $2
	JLE  panelnext
	ADDQ BX, CX
	REDUCE_STORE_ROW(Z8, Z9, Z10, Z11, Y8, Y9, Y10, Y11, X8, X9)
	CMPQ R14, $3
	JLE  panelnext
	ADDQ BX, CX
	REDUCE_STORE_ROW(Z12, Z13, Z14, Z15, Y12, Y13, Y14, Y15, X12, X13)

panelnext:
	LEAQ (DX)(BX*4), DX
	LEAQ (SI)(R15*4), SI
	SUBQ $4, R14
	JGT  paneltile
	VZEROUPPER
	RET

// func fmaPeak(iters int)
//
// Issues iters×16 independent 16-lane FMAs from registers only: the
// machine's fp32 FMA ceiling for one core (512 flops per iteration).
TEXT ·fmaPeak(SB), NOSPLIT, $0-8
	MOVQ   iters+0(FP), CX
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	TESTQ  CX, CX
	JEQ    peakdone

peakloop:
	VFMADD231PS Z16, Z17, Z0
	VFMADD231PS Z16, Z17, Z1
	VFMADD231PS Z16, Z17, Z2
	VFMADD231PS Z16, Z17, Z3
	VFMADD231PS Z16, Z17, Z4
	VFMADD231PS Z16, Z17, Z5
	VFMADD231PS Z16, Z17, Z6
	VFMADD231PS Z16, Z17, Z7
	VFMADD231PS Z16, Z17, Z8
	VFMADD231PS Z16, Z17, Z9
	VFMADD231PS Z16, Z17, Z10
	VFMADD231PS Z16, Z17, Z11
	VFMADD231PS Z16, Z17, Z12
	VFMADD231PS Z16, Z17, Z13
	VFMADD231PS Z16, Z17, Z14
	VFMADD231PS Z16, Z17, Z15
	DECQ        CX
	JNZ         peakloop

peakdone:
	VZEROUPPER
	RET


// func kernelGemv8(k int, alpha float32, a, b *float32, ldb int, c *float32, cols int)
//
// c[j] += alpha·Σ_p a[p]·b_j[p] for j < cols (1 ≤ cols ≤ 8, k ≥ 1), where
// b_j is the row at b + min(j, cols-1)·ldb: missing rows repeat the last
// valid one, so every sum runs the same instruction sequence wherever its
// row sits in the tile. Z(j) holds row j's 16 partial sums; each 16-float
// chunk of a is loaded once and FMA'd with all eight rows (B comes in as
// the FMA's memory operand). The k%16 tail uses masked loads, which never
// touch memory past k, and the result goes to C under a cols-lane mask.
TEXT ·kernelGemv8(SB), NOSPLIT, $0-56
	MOVQ k+0(FP), CX
	MOVQ a+16(FP), SI
	MOVQ b+24(FP), R8
	MOVQ ldb+32(FP), BX
	SHLQ $2, BX
	MOVQ cols+48(FP), DX

	GEMV8_ROWS

	CMPQ CX, $16
	JLT  gemvtail

gemvloop:
	VMOVUPS     (SI)(AX*1), Z16
	VFMADD231PS (R8)(AX*1), Z16, Z0
	VFMADD231PS (R9)(AX*1), Z16, Z1
	VFMADD231PS (R10)(AX*1), Z16, Z2
	VFMADD231PS (R11)(AX*1), Z16, Z3
	VFMADD231PS (R12)(AX*1), Z16, Z4
	VFMADD231PS (R13)(AX*1), Z16, Z5
	VFMADD231PS (DI)(AX*1), Z16, Z6
	VFMADD231PS (BX)(AX*1), Z16, Z7
	ADDQ        $64, AX
	SUBQ        $16, CX
	CMPQ        CX, $16
	JGE         gemvloop

gemvtail:
	TESTQ     CX, CX
	JEQ       gemvreduce
	MOVQ      $1, DX
	SHLQ      CX, DX
	DECQ      DX
	KMOVW     DX, K1
	VMOVUPS.Z (SI)(AX*1), K1, Z16
	VMOVUPS.Z (R8)(AX*1), K1, Z17
	VFMADD231PS Z17, Z16, Z0
	VMOVUPS.Z (R9)(AX*1), K1, Z18
	VFMADD231PS Z18, Z16, Z1
	VMOVUPS.Z (R10)(AX*1), K1, Z19
	VFMADD231PS Z19, Z16, Z2
	VMOVUPS.Z (R11)(AX*1), K1, Z20
	VFMADD231PS Z20, Z16, Z3
	VMOVUPS.Z (R12)(AX*1), K1, Z21
	VFMADD231PS Z21, Z16, Z4
	VMOVUPS.Z (R13)(AX*1), K1, Z22
	VFMADD231PS Z22, Z16, Z5
	VMOVUPS.Z (DI)(AX*1), K1, Z23
	VFMADD231PS Z23, Z16, Z6
	VMOVUPS.Z (BX)(AX*1), K1, Z24
	VFMADD231PS Z24, Z16, Z7

gemvreduce:
	GEMV8_REDUCE_STORE
	VZEROUPPER
	RET

// Load 16 bfloat16 values from (ROW)(AX*1), widen them exactly to float32
// (zero-extend each 16-bit pattern to 32 bits, then shift it into the high
// half) and accumulate a·b into ACC, with a's 16 floats in Z16.
#define BF16_FMA(ROW, ZT, ACC) \
	VPMOVZXWD   (ROW)(AX*1), ZT; \
	VPSLLD      $16, ZT, ZT; \
	VFMADD231PS ZT, Z16, ACC

// As BF16_FMA for the k%16 tail: the 16-bit load runs under mask K1, so it
// never touches memory past k, and the masked-off lanes widen to +0 just as
// kernelGemv8's zeroing float32 loads do.
#define BF16_FMA_TAIL(ROW, YT, ZT, ACC) \
	VMOVDQU16.Z (ROW)(AX*1), K1, YT; \
	VPMOVZXWD   YT, ZT; \
	VPSLLD      $16, ZT, ZT; \
	VFMADD231PS ZT, Z16, ACC

// func kernelGemv8BF16(k int, alpha float32, a *float32, b *uint16, ldb int, c *float32, cols int)
//
// kernelGemv8 with B in bfloat16: c[j] += alpha·Σ_p a[p]·widen(b_j[p]) for
// j < cols (1 ≤ cols ≤ 8, k ≥ 1), where b_j is the row of uint16 at
// b + min(j, cols-1)·ldb. Each 16-value chunk of a row of B is loaded as 32
// bytes and widened in a register (exactly: bfloat16 is the high half of a
// float32), then goes through the same FMAs, masked tail and reduction as
// kernelGemv8, so the result is bit-identical to kernelGemv8 on the widened
// rows. AX counts bytes of B; a is addressed at twice that. Needs
// AVX-512BW for the masked 16-bit tail load.
TEXT ·kernelGemv8BF16(SB), NOSPLIT, $0-56
	MOVQ k+0(FP), CX
	MOVQ a+16(FP), SI
	MOVQ b+24(FP), R8
	MOVQ ldb+32(FP), BX
	SHLQ $1, BX
	MOVQ cols+48(FP), DX

	GEMV8_ROWS

	CMPQ CX, $16
	JLT  bgemvtail

bgemvloop:
	VMOVUPS (SI)(AX*2), Z16
	BF16_FMA(R8, Z17, Z0)
	BF16_FMA(R9, Z18, Z1)
	BF16_FMA(R10, Z19, Z2)
	BF16_FMA(R11, Z20, Z3)
	BF16_FMA(R12, Z21, Z4)
	BF16_FMA(R13, Z22, Z5)
	BF16_FMA(DI, Z23, Z6)
	BF16_FMA(BX, Z24, Z7)
	ADDQ    $32, AX
	SUBQ    $16, CX
	CMPQ    CX, $16
	JGE     bgemvloop

bgemvtail:
	TESTQ     CX, CX
	JEQ       bgemvreduce
	MOVQ      $1, DX
	SHLQ      CX, DX
	DECQ      DX
	KMOVW     DX, K1
	VMOVUPS.Z (SI)(AX*2), K1, Z16
	BF16_FMA_TAIL(R8, Y17, Z17, Z0)
	BF16_FMA_TAIL(R9, Y18, Z18, Z1)
	BF16_FMA_TAIL(R10, Y19, Z19, Z2)
	BF16_FMA_TAIL(R11, Y20, Z20, Z3)
	BF16_FMA_TAIL(R12, Y21, Z21, Z4)
	BF16_FMA_TAIL(R13, Y22, Z22, Z5)
	BF16_FMA_TAIL(DI, Y23, Z23, Z6)
	BF16_FMA_TAIL(BX, Y24, Z24, Z7)

bgemvreduce:
	GEMV8_REDUCE_STORE
	VZEROUPPER
	RET

// func widenBF16x16(chunks int, dst *float32, src *uint16)
//
// dst[i] = widen(src[i]) for i < 16·chunks, 16 values per step, exactly
// (zero-extend to 32 bits, shift into the high half).
TEXT ·widenBF16x16(SB), NOSPLIT, $0-24
	MOVQ  chunks+0(FP), CX
	MOVQ  dst+8(FP), DI
	MOVQ  src+16(FP), SI
	TESTQ CX, CX
	JEQ   widendone

widenloop:
	VPMOVZXWD (SI), Z0
	VPSLLD    $16, Z0, Z0
	VMOVUPS   Z0, (DI)
	ADDQ      $32, SI
	ADDQ      $64, DI
	DECQ      CX
	JNZ       widenloop

widendone:
	VZEROUPPER
	RET

// func widenBF16Rows(chunks int, dst *float32, ldd int, src *uint16, lds int, rows int)
//
// widenBF16x16 over rows ≥ 1 rows: row r of dst (at dst + r·ldd floats)
// gets the 16·chunks widened values of row r of src (at src + r·lds), in
// one call for the 4-row blocks of the bf16 dot path.
TEXT ·widenBF16Rows(SB), NOSPLIT, $0-48
	MOVQ  chunks+0(FP), CX
	MOVQ  dst+8(FP), DI
	MOVQ  ldd+16(FP), R8
	SHLQ  $2, R8
	MOVQ  src+24(FP), SI
	MOVQ  lds+32(FP), R9
	SHLQ  $1, R9
	MOVQ  rows+40(FP), DX
	TESTQ CX, CX
	JEQ   rowsdone

rowsloop:
	MOVQ CX, BX
	XORQ AX, AX

rowloop:
	VPMOVZXWD (SI)(AX*1), Z0
	VPSLLD    $16, Z0, Z0
	VMOVUPS   Z0, (DI)(AX*2)
	ADDQ      $32, AX
	DECQ      BX
	JNZ       rowloop
	ADDQ      R8, DI
	ADDQ      R9, SI
	DECQ      DX
	JNZ       rowsloop

rowsdone:
	VZEROUPPER
	RET
