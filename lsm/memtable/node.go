package memtable

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/bits"
	"sync/atomic"
)

// Node layout in the arena (offsets from the node's start, which is
// 8-aligned; native-endian uint32/uint64 fields):
//
//	+0   prefix   uint64  first 8 bytes of the user key, big-endian, zero-padded
//	+8   trailer  uint64  seq<<8 | kind
//	+16  keyLen   uint32  user key length
//	+20  valueLen uint32
//	+24  prev     uint32  level-0 back link (atomic)
//	+28  height   uint32  number of forward links, 1..maxHeight
//	+32  next[0] .. next[height-1]  uint64 links (atomic)
//	     user key  (keyLen bytes)
//	     value     (valueLen bytes)
//	     padding to 8 bytes
//
// A forward link is one uint64: the target's arena offset in the low 32
// bits and the first 4 bytes of the target's user key (big-endian) in the
// high 32 bits. A search decides "the next node is past the key" from the
// link alone, without touching the next node, whenever those 4 bytes
// differ; only moves onto a node cost a cache miss.
//
// The header fields, key and value are written before the node is
// published and never change afterwards, so readers load them with plain
// reads. Only prev and next[] change after publication; they are always
// accessed with sync/atomic.
const (
	offPrefix   = 0
	offTrailer  = 8
	offKeyLen   = 16
	offValueLen = 20
	offPrev     = 24
	offHeight   = 28
	offTower    = 32

	nodeHeaderSize = offTower
	linkSize       = 8
)

// link is a forward link: offset | summary<<32, where summary is the
// target's 32-bit key summary (see linkSummary).
type link uint64

func makeLink(nd uint32, summary uint32) link { return link(nd) | link(summary)<<32 }

// node returns the target's offset (0: end of list).
func (l link) node() uint32 { return uint32(l) }

// prefix32 returns the target's key summary.
func (l link) prefix32() uint32 { return uint32(l >> 32) }

// linkSummary maps a user key's 8-byte prefix (KeyPrefix) to the 32 bits a
// link keeps of its target, so that a search can pass over a node without
// touching it (a cache miss) when the summaries differ. The map must be
// monotonic (non-decreasing in key order): then a summary below the search
// key's proves the node sorts first, and only equal summaries need the
// node's key. It is
//
//	summary(p) = clamp((p - base) >> shift, 0, 2^32-1)
//
// The default (base 0, shift 32) keeps the key's first 4 bytes, which
// tell nothing apart when keys share them (big-endian integers below 2^32,
// a common prefix); a memtable tuned to the key range its predecessor saw
// (MemTable.TuneLinks) spreads that range over the 32 bits instead. Keys
// outside the range clamp to 0 or 2^32-1 and are compared in full: slower,
// never wrong.
type linkSummary struct {
	base  uint64
	shift uint8
}

var defaultSummary = linkSummary{base: 0, shift: 32}

func (s linkSummary) of(prefix uint64) uint32 {
	if prefix < s.base {
		return 0
	}
	d := (prefix - s.base) >> s.shift
	if d > 1<<32-1 {
		return 1<<32 - 1
	}
	return uint32(d)
}

// summaryFor returns the summary that spreads key prefixes in [lo, hi],
// with a span's margin on either side, over 32 bits.
func summaryFor(lo, hi uint64) linkSummary {
	if hi < lo {
		return defaultSummary
	}
	span := hi - lo
	if bits.Len64(span) > 60 {
		return defaultSummary
	}
	base := lo - min(lo, span)
	top := hi + min(math.MaxUint64-hi, span)
	shift := max(0, bits.Len64(top-base)-32)
	return linkSummary{base: base, shift: uint8(shift)}
}

// nodeSize returns the bytes of a node of the given height, key and value
// lengths, before alignment.
func nodeSize(height uint32, keyLen, valueLen uint64) uint64 {
	return nodeHeaderSize + uint64(height)*linkSize + keyLen + valueLen
}

// KeyPrefix returns the first 8 bytes of k as a big-endian integer,
// zero-padded, so that comparing prefixes as integers agrees with
// bytes.Compare whenever the prefixes differ: the key prefixes that
// KeyRange and TuneLinks speak of.
func KeyPrefix(k []byte) uint64 {
	if len(k) >= 8 {
		return binary.BigEndian.Uint64(k)
	}
	var p uint64
	for i, c := range k {
		p |= uint64(c) << (56 - 8*uint(i))
	}
	return p
}

func (a *arena) prefix(nd uint32) uint64   { return *a.u64(nd + offPrefix) }
func (a *arena) trailer(nd uint32) uint64  { return *a.u64(nd + offTrailer) }
func (a *arena) keyLen(nd uint32) uint32   { return *a.u32(nd + offKeyLen) }
func (a *arena) valueLen(nd uint32) uint32 { return *a.u32(nd + offValueLen) }
func (a *arena) height(nd uint32) uint32   { return *a.u32(nd + offHeight) }
func (a *arena) keyOffset(nd uint32) uint64 {
	return uint64(nd) + offTower + uint64(a.height(nd))*linkSize
}

// link returns node nd's forward link at level.
func (a *arena) link(nd uint32, level int) link {
	return link(atomic.LoadUint64(a.u64(nd + offTower + uint32(level)*linkSize)))
}

// next returns the offset of the node after nd at level (0: none).
func (a *arena) next(nd uint32, level int) uint32 { return a.link(nd, level).node() }

func (a *arena) setLink(nd uint32, level int, l link) {
	atomic.StoreUint64(a.u64(nd+offTower+uint32(level)*linkSize), uint64(l))
}

func (a *arena) prev(nd uint32) uint32        { return atomic.LoadUint32(a.u32(nd + offPrev)) }
func (a *arena) setPrev(nd uint32, to uint32) { atomic.StoreUint32(a.u32(nd+offPrev), to) }

// userKey returns the node's user key, aliasing the arena. Its capacity is
// its length, so an append by the caller cannot write into the arena.
func (a *arena) userKey(nd uint32) []byte {
	return a.bytes(nd, a.keyOffset(nd), uint64(a.keyLen(nd)))
}

// value returns the node's value, aliasing the arena, with capacity equal
// to its length.
func (a *arena) value(nd uint32) []byte {
	return a.bytes(nd, a.keyOffset(nd)+uint64(a.keyLen(nd)), uint64(a.valueLen(nd)))
}

// initNode writes the immutable part of a node (header, key, value) at nd.
// The links are set by the caller before the node is published.
func (a *arena) initNode(nd uint32, height uint32, key []byte, prefix, trailer uint64, value []byte) {
	*a.u64(nd + offPrefix) = prefix
	*a.u64(nd + offTrailer) = trailer
	*a.u32(nd + offKeyLen) = uint32(len(key))
	*a.u32(nd + offValueLen) = uint32(len(value))
	*a.u32(nd + offHeight) = height
	// A recycled arena holds old bytes: the tower starts nil.
	clear(a.bytes(nd, uint64(nd)+offTower, uint64(height)*linkSize))
	ko := uint64(nd) + offTower + uint64(height)*linkSize
	copy(a.bytes(nd, ko, uint64(len(key))), key)
	copy(a.bytes(nd, ko+uint64(len(key)), uint64(len(value))), value)
}

// compare orders node nd against the search key (key, trailer), whose
// prefix is KeyPrefix(key): negative if the node sorts first, zero if they
// are the same internal key. The order is user key ascending, then trailer
// descending.
func (a *arena) compare(nd uint32, key []byte, prefix, trailer uint64) int {
	if np := a.prefix(nd); np != prefix {
		if np < prefix {
			return -1
		}
		return 1
	}
	nk := a.userKey(nd)
	var c int
	if len(nk) > 8 && len(key) > 8 {
		c = bytes.Compare(nk[8:], key[8:])
	} else {
		// Equal zero-padded prefixes and one key of at most 8 bytes: the
		// shorter key is a prefix of the longer one.
		c = compareInts(len(nk), len(key))
	}
	if c != 0 {
		return c
	}
	return compareInts(trailer, a.trailer(nd))
}

func compareInts[T int | uint64](x, y T) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// userKeyEqual reports whether node nd's user key is key (prefix is
// KeyPrefix(key)).
func (a *arena) userKeyEqual(nd uint32, key []byte, prefix uint64) bool {
	return a.prefix(nd) == prefix && int(a.keyLen(nd)) == len(key) && bytes.Equal(a.userKey(nd), key)
}
