// Package crc32c computes CRC-32C (the Castagnoli polynomial) checksums:
// the same values as hash/crc32 with crc32.MakeTable(crc32.Castagnoli),
// which every checksum of the value log and the WAL uses.
//
// On amd64 processors with AVX-512 and VPCLMULQDQ it folds 256 bytes at a
// time with carry-less multiplications over four independent 512-bit
// accumulators, then reduces the last 16 bytes with the CRC32 instruction.
// hash/crc32 runs three streams of the CRC32 instruction instead, at most
// 8 bytes a cycle. On the project's machine (AMD EPYC, Zen 5) a 4 KiB
// value took 80-82 ns against hash/crc32's 146-153 ns, 1 KiB 25-26 ns
// against 40-43 ns (BenchmarkUpdate). CopyUpdate also copies the bytes as
// it reads them: a scan of 4 KiB values, which copies and checksums every
// value it returns, ran 1.34-1.45M rows/s against 1.18-1.26M with the
// fold alone and 1.03-1.07M with hash/crc32 (the root package's
// BenchmarkScan4K, alternated rounds). Elsewhere, and for inputs shorter
// than 256 bytes, the functions use hash/crc32.
package crc32c

import (
	"hash/crc32"

	"github.com/strata-db/strata/internal/prefetch"
)

var table = crc32.MakeTable(crc32.Castagnoli)

// Size is the size of a checksum in bytes.
const Size = 4

// Checksum returns the CRC-32C checksum of p.
func Checksum(p []byte) uint32 { return Update(0, p) }

// Update returns the result of adding the bytes in p to crc, as
// crc32.Update with the Castagnoli table does.
func Update(crc uint32, p []byte) uint32 { return UpdateAhead(crc, p, nil) }

// CopyUpdate copies src to dst, which must be at least as long, and
// returns Update(crc, src). ahead is memory the caller reads next (a
// scan's next value, say), or nil: CopyUpdate starts loading its cache
// lines as it goes, a share after each part of the copy, so that they
// arrive while this copy and checksum run instead of stalling the next
// read (issued at once, the prefetches would fill the processor's miss
// buffers and stall this one).
//
// With the fold, the copy's loads feed the checksum directly: its
// multiplications run while later loads wait for memory, and the bytes
// are read once. Otherwise src is copied a chunk at a time with
// prefetches between the chunks, then checksummed in one call over the
// copy in the cache.
func CopyUpdate(dst, src []byte, crc uint32, ahead []byte) uint32 {
	dst = dst[:len(src)]
	if useFold && len(src) >= foldMin {
		n := len(src) &^ (foldBlock - 1)
		crc = ^foldCopy(^crc, dst[:n], src[:n], ahead, &foldKeys)
		copy(dst[n:], src[n:])
		return crc32.Update(crc, table, src[n:])
	}
	if len(ahead) == 0 {
		copy(dst, src)
	} else {
		spread(len(src), ahead, func(lo, hi int) { copy(dst[lo:hi], src[lo:hi]) })
	}
	return crc32.Update(crc, table, dst)
}

// UpdateAhead is Update that prefetches the cache lines of ahead, a share
// after each part of p (see CopyUpdate).
func UpdateAhead(crc uint32, p, ahead []byte) uint32 {
	if useFold && len(p) >= foldMin {
		n := len(p) &^ (foldBlock - 1)
		// foldCopy takes and returns the register's value, not inverted.
		crc = ^foldCopy(^crc, nil, p[:n], ahead, &foldKeys)
		return crc32.Update(crc, table, p[n:])
	}
	if len(ahead) == 0 {
		return crc32.Update(crc, table, p)
	}
	spread(len(p), ahead, func(lo, hi int) { crc = crc32.Update(crc, table, p[lo:hi]) })
	return crc
}

// spread calls do for each chunk [lo, hi) of [0, n), spreadChunk bytes
// long, and after each prefetches an equal share of ahead (the last chunk
// what is left).
func spread(n int, ahead []byte, do func(lo, hi int)) {
	chunks := max(1, (n+spreadChunk-1)/spreadChunk)
	share := (len(ahead) + chunks - 1) / chunks
	for lo := 0; lo < n; lo += spreadChunk {
		hi := min(lo+spreadChunk, n)
		do(lo, hi)
		if hi == n {
			share = len(ahead)
		}
		m := min(share, len(ahead))
		prefetch.Lines(ahead[:m])
		ahead = ahead[m:]
	}
}

// spreadChunk is how many bytes the paths without the fold copy or
// checksum between two prefetches: small enough to spread a record's
// prefetches, large enough that hash/crc32 runs at full speed (it pays a
// fixed cost per call). Measured with hash/crc32 alone, random 4 KiB
// records from a mapping held in huge pages, one thread: copying in such
// chunks and checksumming the copy in one call read 1.46-1.48M records a
// second, prefetching between four checksum calls instead 1.32-1.35M.
const spreadChunk = 1024

// foldMin is the shortest input foldCopy takes: its loop folds four
// 64-byte blocks at a time, and below this length the setup costs more
// than hash/crc32 does.
const (
	foldMin   = 256
	foldBlock = 64
)

// foldKeys are the multipliers foldCopy uses, computed from the polynomial
// (see keys).
var foldKeys = keys()

// keys returns the fold's constants, six pairs of 64-bit words (lo, hi),
// each the pair that moves a 128-bit lane forward by a distance of d
// bytes: lo multiplies the lane's low word, which holds its first
// bytes, hi its high word. In the bit-reflected form the CRC uses, the
// pair for d bytes is x^(8d+31) and x^(8d-33) modulo the polynomial
// (TestFoldKeys checks the pairs against hash/crc32).
//
//	[0:2]  256 bytes: the main loop, each accumulator past the next four blocks
//	[2:4]   64 bytes: one accumulator onto the next, and single blocks
//	[4:12]  48, 32, 16 and 0 bytes: a 512-bit accumulator's four lanes onto its last
func keys() [12]uint64 {
	pair := func(d int) (uint64, uint64) { return xnmodp(8*d + 31), xnmodp(8*d - 33) }
	var k [12]uint64
	k[0], k[1] = pair(256)
	k[2], k[3] = pair(64)
	k[4], k[5] = pair(48)
	k[6], k[7] = pair(32)
	k[8], k[9] = pair(16)
	// k[10], k[11] stay 0: the last lane is not moved (added as it is).
	return k
}

// xnmodp returns x^n modulo the Castagnoli polynomial, bit-reflected (x^0
// is the top bit), one multiplication by x at a time: n is at most a few
// thousand and this runs once.
func xnmodp(n int) uint64 {
	const reflected = 0x82F63B78 // the polynomial without x^32, reflected
	v := uint32(1 << 31)
	for ; n > 0; n-- {
		if v&1 != 0 {
			v = v>>1 ^ reflected
		} else {
			v >>= 1
		}
	}
	return uint64(v)
}
