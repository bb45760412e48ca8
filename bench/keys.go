package bench

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
)

// MakeKey writes the key of index i into dst (len(dst) == key size) the way
// db_bench does: the 8-byte big-endian index, then '0' padding. Keys of
// consecutive indexes sort in index order.
func MakeKey(dst []byte, i uint64) []byte {
	if len(dst) >= 8 {
		binary.BigEndian.PutUint64(dst[:8], i)
		for j := 8; j < len(dst); j++ {
			dst[j] = '0'
		}
		return dst
	}
	var full [8]byte
	binary.BigEndian.PutUint64(full[:], i)
	copy(dst, full[8-len(dst):])
	return dst
}

// KeyIndex is the inverse of MakeKey for keys of at least 8 bytes.
func KeyIndex(key []byte) uint64 { return binary.BigEndian.Uint64(key[:8]) }

// valueSource hands out values of the spec's sizes, as slices of one large
// random (incompressible) buffer, so making a value costs no allocation.
type valueSource struct {
	dist ValueDist
	buf  []byte
	rng  *rand.Rand
}

func newValueSource(dist ValueDist, seed uint64) *valueSource {
	maxSize := dist.Size
	if dist.Kind != "fixed" {
		maxSize = dist.Max
	}
	rng := rand.New(rand.NewPCG(seed, 0x7a1))
	buf := make([]byte, max(1<<20, 2*maxSize))
	for i := 0; i+8 <= len(buf); i += 8 {
		binary.LittleEndian.PutUint64(buf[i:], rng.Uint64())
	}
	return &valueSource{dist: dist, buf: buf, rng: rng}
}

// size draws a value size.
func (v *valueSource) size() int {
	d := v.dist
	switch d.Kind {
	case "uniform":
		return d.Min + v.rng.IntN(d.Max-d.Min+1)
	case "normal":
		mean := float64(d.Min+d.Max) / 2
		sd := float64(d.Max-d.Min) / 6
		n := int(math.Round(mean + sd*v.rng.NormFloat64()))
		return min(max(n, d.Min), d.Max)
	}
	return d.Size
}

// next returns a value of a drawn size. The slice aliases a shared buffer:
// callers must not modify it.
func (v *valueSource) next() []byte {
	n := v.size()
	off := v.rng.IntN(len(v.buf) - n + 1)
	return v.buf[off : off+n : off+n]
}
