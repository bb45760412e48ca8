#include "textflag.h"

// func foldCopy(crc uint32, dst, src, ahead []byte, k *[12]uint64) uint32
//
// Folding: a 128-bit lane L of the message, d bytes before the bytes B it
// is added to, becomes clmul(L.lo, k.lo) ^ clmul(L.hi, k.hi) ^ B, with k
// the pair for d (see keys): the result has the same remainder modulo the
// polynomial as L shifted by d bytes, added to B. Four 512-bit
// accumulators (Z0-Z3) take the message 256 bytes at a time, so that four
// chains of multiplications run at once; they are then folded onto one
// (Z3), which takes any 64-byte blocks left, and its four lanes onto one
// 128-bit value. The CRC of the message is the CRC of that value's 16
// bytes from a zero register, which two CRC32 instructions compute.
//
// It copies src to dst as it goes (unless dst is empty) and prefetches
// ahead's cache lines, 256 bytes of them for each 256 bytes of src and
// any left at the end. The copy's loads feed the fold, so the
// multiplications of one group run while the loads of the next wait for
// memory.
TEXT ·foldCopy(SB), NOSPLIT, $0-92
	MOVL crc+0(FP), AX
	MOVQ dst_base+8(FP), DI
	MOVQ dst_len+16(FP), R11
	MOVQ src_base+32(FP), SI
	MOVQ src_len+40(FP), CX
	MOVQ ahead_base+56(FP), R9
	MOVQ ahead_len+64(FP), R10
	MOVQ k+80(FP), DX

	VBROADCASTI32X4 (DX), Z8 // 256 bytes

	// The first group starts the accumulators, with the register's
	// initial value added to the message's first 4 bytes.
	VMOVDQU64 (SI), Z10
	VMOVDQU64 64(SI), Z11
	VMOVDQU64 128(SI), Z12
	VMOVDQU64 192(SI), Z13
	VMOVD     AX, X0 // zeroes the rest of Z0
	VPXORQ    Z10, Z0, Z0
	VMOVDQA64 Z11, Z1
	VMOVDQA64 Z12, Z2
	VMOVDQA64 Z13, Z3
	JMP       copy

loop256:
	VMOVDQU64  (SI), Z10
	VMOVDQU64  64(SI), Z11
	VMOVDQU64  128(SI), Z12
	VMOVDQU64  192(SI), Z13
	VPCLMULQDQ $0x00, Z8, Z0, Z4
	VPCLMULQDQ $0x11, Z8, Z0, Z0
	VPTERNLOGD $0x96, Z10, Z4, Z0
	VPCLMULQDQ $0x00, Z8, Z1, Z5
	VPCLMULQDQ $0x11, Z8, Z1, Z1
	VPTERNLOGD $0x96, Z11, Z5, Z1
	VPCLMULQDQ $0x00, Z8, Z2, Z6
	VPCLMULQDQ $0x11, Z8, Z2, Z2
	VPTERNLOGD $0x96, Z12, Z6, Z2
	VPCLMULQDQ $0x00, Z8, Z3, Z7
	VPCLMULQDQ $0x11, Z8, Z3, Z3
	VPTERNLOGD $0x96, Z13, Z7, Z3

copy:
	TESTQ     R11, R11
	JZ        copied
	VMOVDQU64 Z10, (DI)
	VMOVDQU64 Z11, 64(DI)
	VMOVDQU64 Z12, 128(DI)
	VMOVDQU64 Z13, 192(DI)
	ADDQ      $256, DI

copied:
	TESTQ      R10, R10
	JLE        next
	PREFETCHT0 (R9)
	PREFETCHT0 64(R9)
	PREFETCHT0 128(R9)
	PREFETCHT0 192(R9)
	ADDQ       $256, R9
	SUBQ       $256, R10

next:
	ADDQ $256, SI
	SUBQ $256, CX
	CMPQ CX, $256
	JAE  loop256

four:
	// Z0 onto Z1, Z1 onto Z2, Z2 onto Z3: each 64 bytes before the next.
	VBROADCASTI32X4 16(DX), Z8 // 64 bytes
	VPCLMULQDQ $0x00, Z8, Z0, Z4
	VPCLMULQDQ $0x11, Z8, Z0, Z0
	VPTERNLOGD $0x96, Z4, Z0, Z1
	VPCLMULQDQ $0x00, Z8, Z1, Z4
	VPCLMULQDQ $0x11, Z8, Z1, Z1
	VPTERNLOGD $0x96, Z4, Z1, Z2
	VPCLMULQDQ $0x00, Z8, Z2, Z4
	VPCLMULQDQ $0x11, Z8, Z2, Z2
	VPTERNLOGD $0x96, Z4, Z2, Z3

loop64:
	CMPQ      CX, $64
	JB        rest
	VMOVDQU64 (SI), Z10
	TESTQ     R11, R11
	JZ        copied64
	VMOVDQU64 Z10, (DI)
	ADDQ      $64, DI

copied64:
	VPCLMULQDQ $0x00, Z8, Z3, Z4
	VPCLMULQDQ $0x11, Z8, Z3, Z3
	VPTERNLOGD $0x96, Z10, Z4, Z3
	ADDQ       $64, SI
	SUBQ       $64, CX
	JMP        loop64

rest:
	// What is left of ahead, when it is longer than src.
	TESTQ      R10, R10
	JLE        lanes
	PREFETCHT0 (R9)
	ADDQ       $64, R9
	SUBQ       $64, R10
	JMP        rest

lanes:
	// Lanes 0-2 move 48, 32 and 16 bytes; lane 3's pair is zero, so
	// its product is zero and it is added unmoved from Z3.
	VMOVDQU64     32(DX), Z8
	VPCLMULQDQ    $0x00, Z8, Z3, Z4
	VPCLMULQDQ    $0x11, Z8, Z3, Z5
	VPXORQ        Z5, Z4, Z4
	VEXTRACTI64X4 $1, Z4, Y5
	VPXOR         Y5, Y4, Y4
	VEXTRACTI128  $1, Y4, X5
	VEXTRACTI64X2 $3, Z3, X6
	VPTERNLOGD    $0x96, X6, X5, X4

	VMOVQ   X4, AX
	VPEXTRQ $1, X4, BX
	XORL    R8, R8
	CRC32Q  AX, R8
	CRC32Q  BX, R8
	VZEROUPPER
	MOVL R8, ret+88(FP)
	RET
