// Package learnedtest holds the key distributions the learned index is
// tested and benchmarked on, for the tests of package learned and of the
// tables that use it.
package learnedtest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/strata-db/strata/index/learned"
)

// KeySet is a named generator of about n distinct sorted keys.
type KeySet struct {
	Name string
	Gen  func(rng *rand.Rand, n int) [][]byte
	// Refused is the reason a model is expected to be refused for this set
	// with the default options (learned.ReasonNone: a model is expected).
	Refused learned.Reason
}

// sortedDistinct sorts keys and drops duplicates.
func sortedDistinct(keys [][]byte) [][]byte {
	slices.SortFunc(keys, bytes.Compare)
	return slices.CompactFunc(keys, bytes.Equal)
}

func be64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// KeySets are the key distributions the model is tested and benchmarked
// on.
var KeySets = []KeySet{
	{Name: "uniform", Gen: func(rng *rand.Rand, n int) [][]byte {
		keys := make([][]byte, n)
		for i := range keys {
			keys[i] = be64(rng.Uint64())
		}
		return sortedDistinct(keys)
	}},
	{Name: "sequential", Gen: func(rng *rand.Rand, n int) [][]byte {
		// db_bench's keys: an 8-byte big-endian index padded with '0'.
		base := rng.Uint64N(1 << 40)
		keys := make([][]byte, n)
		for i := range keys {
			keys[i] = append(be64(base+uint64(i)), "00000000"...)
		}
		return keys
	}},
	{Name: "zipfian", Gen: func(rng *rand.Rand, n int) [][]byte {
		z := rand.NewZipf(rng, 1.1, 1, 1<<40)
		keys := make([][]byte, 0, n)
		seen := make(map[uint64]bool, n)
		for len(keys) < n {
			v := z.Uint64()
			if !seen[v] {
				seen[v] = true
				keys = append(keys, be64(v))
			}
		}
		return sortedDistinct(keys)
	}},
	{Name: "clustered", Gen: func(rng *rand.Rand, n int) [][]byte {
		// Dense runs of consecutive keys far apart, of varied lengths.
		keys := make([][]byte, 0, n)
		for len(keys) < n {
			start, run := rng.Uint64()>>1, 1+rng.IntN(500)
			step := 1 + rng.Uint64N(4)
			for j := 0; j < run && len(keys) < n; j++ {
				keys = append(keys, be64(start+uint64(j)*step))
			}
		}
		return sortedDistinct(keys)
	}},
	{Name: "long-prefix", Gen: func(rng *rand.Rand, n int) [][]byte {
		// A long shared prefix, then random suffixes.
		keys := make([][]byte, n)
		for i := range keys {
			keys[i] = binary.BigEndian.AppendUint64([]byte("tenant-000042/user-profiles/"), rng.Uint64())
		}
		return sortedDistinct(keys)
	}},
	{Name: "varying-length", Gen: func(rng *rand.Rand, n int) [][]byte {
		keys := make([][]byte, n)
		for i := range keys {
			k := make([]byte, 1+rng.IntN(24))
			for j := range k {
				k[j] = byte(rng.Uint32())
			}
			keys[i] = k
		}
		return sortedDistinct(keys)
	}},
	{Name: "decimal", Refused: learned.ReasonTooManySegments, Gen: func(rng *rand.Rand, n int) [][]byte {
		// YCSB-style "user" + decimal number keys: read as base-256
		// integers, decimal digits make a staircase at every scale, which
		// the default segment budget does not cover.
		keys := make([][]byte, n)
		for i := range keys {
			keys[i] = fmt.Appendf(nil, "user%019d", rng.Uint64()>>1)
		}
		return sortedDistinct(keys)
	}},
	{Name: "shared-middle", Refused: learned.ReasonSharedBytes, Gen: func(rng *rand.Rand, n int) [][]byte {
		// A few groups whose keys share 12 bytes after the prefix and differ
		// only after them: the integers collide.
		keys := make([][]byte, n)
		for i := range keys {
			k := fmt.Appendf(nil, "g%02d/constant-part/", rng.IntN(4))
			keys[i] = binary.BigEndian.AppendUint64(k, rng.Uint64())
		}
		return sortedDistinct(keys)
	}},
}
