package crc32c

import "golang.org/x/sys/cpu"

// useFold: the processor has what foldCopy needs (AVX-512 F, DQ and VL, and
// VPCLMULQDQ, which x/sys/cpu reports only with the operating system's
// support for the 512-bit registers) and the CRC32 instruction.
var useFold = cpu.X86.HasAVX512F && cpu.X86.HasAVX512DQ && cpu.X86.HasAVX512VL &&
	cpu.X86.HasAVX512VPCLMULQDQ && cpu.X86.HasSSE42

// foldCopy returns the CRC register (not inverted) after src, from crc,
// and copies src to dst (when dst is not empty; it must then be at least
// as long) and prefetches the cache lines of ahead as it goes. len(src)
// must be at least foldMin and a multiple of foldBlock.
//
//go:noescape
func foldCopy(crc uint32, dst, src, ahead []byte, k *[12]uint64) uint32
