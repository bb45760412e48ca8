package cache

import (
	"math/bits"

	"github.com/strata-db/strata/internal/base"
)

// key names a cached block.
type key struct {
	cacheID uint64
	fileNum base.FileNum
	offset  uint64
}

// fileKey names a file within a cache namespace (for EvictFile).
type fileKey struct {
	cacheID uint64
	fileNum base.FileNum
}

const (
	prime1 uint64 = 11400714785074694791
	prime2 uint64 = 14029467366897019727
	prime3 uint64 = 1609587929392839161
	prime4 uint64 = 9650029242287828579
	prime5 uint64 = 2870177450012600261
)

// hashKey returns the 64-bit xxHash (XXH64, seed 0) of the 24-byte
// little-endian encoding of (cacheID, fileNum, offset), unrolled for the
// fixed input length so that it needs no buffer and does not allocate.
func hashKey(cacheID uint64, fileNum base.FileNum, offset uint64) uint64 {
	h := prime5 + 24
	h = mixWord(h, cacheID)
	h = mixWord(h, uint64(fileNum))
	h = mixWord(h, offset)
	h ^= h >> 33
	h *= prime2
	h ^= h >> 29
	h *= prime3
	h ^= h >> 32
	return h
}

// mixWord folds one 8-byte lane into h (the XXH64 tail step).
func mixWord(h, w uint64) uint64 {
	k := w * prime2
	k = bits.RotateLeft64(k, 31)
	k *= prime1
	h ^= k
	return bits.RotateLeft64(h, 27)*prime1 + prime4
}
