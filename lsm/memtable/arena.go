package memtable

import (
	"math"
	"sync/atomic"
	"unsafe"
)

// maxArenaSize is the largest arena: node offsets are uint32, and offset 0
// means "no node", so every byte must be addressable by a uint32.
const maxArenaSize = math.MaxUint32

// arenaAlign is the alignment of every allocation. Node headers hold uint64
// fields that are read in place, so 8 bytes.
const arenaAlign = 8

// arena is a bump allocator over one preallocated buffer. The buffer is a
// []uint64, so it is 8-byte aligned and holds no pointers: the garbage
// collector never scans it.
//
// INVARIANT: only the single writer allocates. used only grows, and bytes
// below used are never moved or freed while the arena is referenced.
type arena struct {
	words []uint64       // backing store; keeps the memory alive
	base  unsafe.Pointer // &words[0]
	data  []byte         // the same memory as bytes, len == capacity
	used  atomic.Uint64  // bytes allocated; written by the writer only
}

// clampArenaSize maps a requested size to the arena capacity New uses:
// at least minSize (room for the fixed head nodes), at most maxArenaSize.
func clampArenaSize(size int, minSize uint64) uint64 {
	var n uint64
	if size > 0 {
		n = uint64(size)
	}
	if n < minSize {
		n = minSize
	}
	if n > maxArenaSize {
		n = maxArenaSize
	}
	return n
}

func newArena(capacity uint64) *arena {
	words := make([]uint64, (capacity+7)/8)
	base := unsafe.Pointer(unsafe.SliceData(words))
	a := &arena{
		words: words,
		base:  base,
		data:  unsafe.Slice((*byte)(base), capacity),
	}
	// Offset 0 is reserved so that it can mean "no node".
	a.used.Store(arenaAlign)
	return a
}

// reset empties the arena for reuse, keeping its memory (and so its
// resident pages). Only when nothing can still read the old contents.
func (a *arena) reset() { a.used.Store(arenaAlign) }

// capacity returns the arena size in bytes.
func (a *arena) capacity() uint64 { return uint64(len(a.data)) }

// size returns the bytes allocated so far. Safe for concurrent use.
func (a *arena) size() uint64 { return a.used.Load() }

// alloc returns the offset of n bytes, aligned to arenaAlign, or ok ==
// false if they do not fit. The bytes are zero in a new arena but hold old
// data in a reset one: callers initialise everything they read. Writer
// only.
func (a *arena) alloc(n uint64) (off uint32, ok bool) {
	used := a.used.Load()
	padded := alignUp(n)
	if padded < n || padded > a.capacity()-used {
		return 0, false
	}
	a.used.Store(used + padded)
	return uint32(used), true
}

// alignUp rounds n up to a multiple of arenaAlign (n < 2^63).
func alignUp(n uint64) uint64 { return (n + arenaAlign - 1) &^ (arenaAlign - 1) }

// u32 returns a pointer to the uint32 at off, which must be 4-aligned and
// inside the arena.
func (a *arena) u32(off uint32) *uint32 {
	return (*uint32)(unsafe.Add(a.base, uintptr(off)))
}

// u64 returns a pointer to the uint64 at off, which must be 8-aligned and
// inside the arena.
func (a *arena) u64(off uint32) *uint64 {
	return (*uint64)(unsafe.Add(a.base, uintptr(off)))
}
