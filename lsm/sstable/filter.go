package sstable

import (
	"math/rand/v2"
	"sync/atomic"

	"github.com/cespare/xxhash/v2"
)

// The filter block is a cache-line-blocked Bloom filter over the table's
// distinct user keys (and, with WriterOptions.PrefixLen, their distinct
// prefixes, hashed by prefixFilterHash; the property PropPrefixExtractor
// names the extractor):
//
//	+-------------------+-------------------+-----+---------------------+--------+
//	| line 0 (64 bytes) | line 1 (64 bytes) | ... | line n-1 (64 bytes) | k (1B) |
//	+-------------------+-------------------+-----+---------------------+--------+
//
// A key's 64-bit xxhash h is split in two halves. The low half selects one
// line (multiply-shift range reduction: line = uint32(h) * n >> 32); the high
// half a seeds the probes inside that 512-bit line: probe i sets bit a>>23
// (the top 9 bits), then a *= 0x9e3779b9. A lookup touches one cache line.
// (Plain double hashing inside the line, bit (a + i*b) mod 512, measured
// 1.10% false positives at 10 bits per key and 0.15% at 20; this sequence
// measured 0.97% and 0.024%.) Bit j of a line is bit j%8 of its byte j/8; k
// is the number of probes (1..30).
const (
	filterLineBits  = 512
	filterLineBytes = filterLineBits / 8
	maxFilterProbes = 30
	filterProbeMul  = 0x9e3779b9 // 2^32 / golden ratio
)

// DefaultBitsPerKey is the Bloom filter size used when
// WriterOptions.BitsPerKey is 0: about 1% false positives.
const DefaultBitsPerKey = 10

func filterHash(userKey []byte) uint64 { return xxhash.Sum64(userKey) }

// prefixFilterHash is the filter hash of a key prefix (WriterOptions.
// PrefixLen): the prefix's xxhash with a constant mixed in, so that a
// prefix and a whole key of the same bytes set different bits and point
// lookups see no more false positives than the extra entries make.
func prefixFilterHash(prefix []byte) uint64 {
	return xxhash.Sum64(prefix) ^ 0x9e3779b97f4a7c15
}

// filterProbes returns the number of probes for bitsPerKey: bitsPerKey*ln 2,
// rounded, within [1, maxFilterProbes].
func filterProbes(bitsPerKey int) int {
	k := (bitsPerKey*69 + 50) / 100
	return max(1, min(k, maxFilterProbes))
}

// buildFilter returns the filter block for the given key hashes.
func buildFilter(hashes []uint64, bitsPerKey int) []byte {
	bits := uint64(len(hashes)) * uint64(bitsPerKey)
	lines := max(1, (bits+filterLineBits-1)/filterLineBits)
	k := filterProbes(bitsPerKey)
	buf := make([]byte, lines*filterLineBytes+1)
	buf[len(buf)-1] = byte(k)
	for _, h := range hashes {
		line := buf[filterLine(h, lines)*filterLineBytes:][:filterLineBytes]
		a := uint32(h >> 32)
		for range k {
			bit := a >> 23
			line[bit/8] |= 1 << (bit % 8)
			a *= filterProbeMul
		}
	}
	return buf
}

func filterLine(h, lines uint64) uint64 { return (h & 0xffffffff) * lines >> 32 }

// bloomFilter is a decoded filter block.
type bloomFilter struct {
	data  []byte // the lines, without k
	lines uint64
	k     int
}

// decodeFilter validates a filter block; ok is false for a malformed one.
func decodeFilter(b []byte) (f bloomFilter, ok bool) {
	if len(b) < filterLineBytes+1 || (len(b)-1)%filterLineBytes != 0 {
		return f, false
	}
	k := int(b[len(b)-1])
	if k < 1 || k > maxFilterProbes {
		return f, false
	}
	return bloomFilter{data: b[:len(b)-1], lines: uint64((len(b) - 1) / filterLineBytes), k: k}, true
}

// mayContain reports whether the key with hash h may be in the set.
func (f *bloomFilter) mayContain(h uint64) bool {
	line := f.data[filterLine(h, f.lines)*filterLineBytes:][:filterLineBytes]
	a := uint32(h >> 32)
	for range f.k {
		bit := a >> 23
		if line[bit/8]&(1<<(bit%8)) == 0 {
			return false
		}
		a *= filterProbeMul
	}
	return true
}

// filterUse decides whether a Reader's point lookups probe its Bloom
// filter. A probe pays off only when it rejects a key the table does not
// hold; when nearly every key looked up is in the table (reads of keys
// that exist, in the table at the bottom of the tree that holds most of
// them), the probe is a cache miss on a large filter for nothing:
// measured on the project's 2-core VM, readrandom of 4,000,000 x 1 KiB
// spent 0.17 µs of its 1.75 µs per read in mayContain. RocksDB offers
// optimize_filters_for_hits for this, an option its user must choose;
// filterUse learns it from the lookups themselves.
//
// One lookup in filterSampleEvery, picked at random (by the runtime's
// per-thread generator, not by the key: a few hot keys none of which was
// picked would otherwise never be counted), always probes and is counted,
// with whether the filter rejected the key. Every filterWindow counted
// probes the Reader decides: it skips the filter for the other lookups
// while fewer than one counted probe in filterSkipBelow was rejected, and
// probes again as soon as a window shows more rejections. A skipped probe
// changes only the cost of a lookup, never its result: the index and the
// block say whether the key is there.
type filterUse struct {
	counted, rejected atomic.Uint32
	skip              atomic.Bool
}

const (
	filterSampleEvery = 64 // a power of two
	filterWindow      = 256
	filterSkipBelow   = 16
)

// sample reports whether this lookup is one that filterUse counts.
func sample() bool { return rand.Uint32()&(filterSampleEvery-1) == 0 }

// record counts a sampled probe's outcome and decides at the end of each
// window.
func (u *filterUse) record(rejected bool) {
	if rejected {
		u.rejected.Add(1)
	}
	if u.counted.Add(1) != filterWindow {
		return
	}
	r := u.rejected.Swap(0)
	u.counted.Store(0)
	u.skip.Store(skipFilter(filterWindow, int(r)))
}

// skipFilter is the decision: skip when fewer than one probe in
// filterSkipBelow of a window was rejected.
func skipFilter(counted, rejected int) bool {
	return rejected*filterSkipBelow < counted
}
