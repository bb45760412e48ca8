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

// The arena's offset space is cut into slots of chunkSize bytes. Memory is
// allocated a chunk at a time, when the writer first needs it, so an idle
// memtable holds one chunk rather than its whole capacity.
const (
	chunkShift = 18 // 256 KiB
	chunkSize  = 1 << chunkShift
	chunkMask  = chunkSize - 1
)

// arena is a bump allocator over an offset space of capacity bytes, backed
// by buffers allocated on demand. A buffer is one chunk, or for a node
// larger than a chunk a run of whole chunks in one contiguous buffer;
// either way a node never straddles two buffers, so its bytes are
// contiguous and its key and value can alias the arena. Each buffer is a
// []uint64, so it is 8-byte aligned and holds no pointers: the garbage
// collector never scans it.
//
// slots[i] is the address of offset i*chunkSize (nil until allocated; a
// multi-chunk buffer fills several slots, chunkSize apart), so an offset
// resolves with one load from a table that stays in cache. The table's
// length is fixed at creation.
//
// INVARIANT: only the single writer allocates. used only grows, and bytes
// below used are never moved or freed while the arena is referenced. A
// slot is written before any node in it is published (by an atomic link
// store), so a reader that reaches a node sees its slot.
type arena struct {
	// tab is &slots[0], for addr.
	tab   unsafe.Pointer
	slots []unsafe.Pointer
	cap   uint64        // size of the offset space
	used  atomic.Uint64 // bytes allocated; written by the writer only
	// top is the end of the allocated buffers' offsets (a multiple of
	// chunkSize, or cap). Writer only.
	top uint64
	// first is the size of the first buffer, which Reset keeps.
	first uint64
	// mem is the bytes of buffers allocated; read by anyone.
	mem atomic.Int64
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
	a := &arena{
		slots: make([]unsafe.Pointer, (capacity+chunkMask)>>chunkShift),
		cap:   capacity,
	}
	a.tab = unsafe.Pointer(unsafe.SliceData(a.slots))
	a.first = min(capacity, chunkSize)
	a.grow(a.first)
	// Offset 0 is reserved so that it can mean "no node".
	a.used.Store(arenaAlign)
	return a
}

// grow allocates a buffer of n bytes (n <= cap-top) at top. Writer only.
func (a *arena) grow(n uint64) {
	words := make([]uint64, (n+7)/8)
	base := unsafe.Pointer(unsafe.SliceData(words))
	for off := uint64(0); off < n; off += chunkSize {
		a.slots[(a.top+off)>>chunkShift] = unsafe.Add(base, off)
	}
	a.top += n
	a.mem.Add(int64(len(words) * 8))
}

// reset empties the arena for reuse, keeping its first buffer and letting
// the others go. Only when nothing can still read the old contents.
func (a *arena) reset() {
	clear(a.slots[(a.first+chunkMask)>>chunkShift:])
	a.top = a.first
	a.mem.Store(int64((a.first + 7) &^ 7))
	a.used.Store(arenaAlign)
}

// capacity returns the arena size in bytes.
func (a *arena) capacity() uint64 { return a.cap }

// size returns the bytes allocated so far, including the tails of chunks
// skipped because a node did not fit. Safe for concurrent use.
func (a *arena) size() uint64 { return a.used.Load() }

// memory returns the bytes of buffers allocated. Safe for concurrent use.
func (a *arena) memory() int64 { return a.mem.Load() }

// alloc returns the offset of n bytes, aligned to arenaAlign, or ok ==
// false if they do not fit. A node that does not fit in the rest of the
// current buffer starts a new one, and the rest is skipped: that waste is
// smaller than the node, which is why EntrySize bounds an Add by twice
// the node. The bytes are zero in a new buffer but hold old data in a
// reset one: callers initialise everything they read. Writer only.
func (a *arena) alloc(n uint64) (off uint32, ok bool) {
	used := a.used.Load()
	padded := alignUp(n)
	if padded < n || padded > a.cap-used {
		return 0, false
	}
	if padded > a.top-used {
		if padded > a.cap-a.top {
			return 0, false
		}
		used = a.top
		a.grow(min(max(chunkSize, (padded+chunkMask)&^chunkMask), a.cap-a.top))
	}
	a.used.Store(used + padded)
	return uint32(used), true
}

// alignUp rounds n up to a multiple of arenaAlign (n < 2^63).
func alignUp(n uint64) uint64 { return (n + arenaAlign - 1) &^ (arenaAlign - 1) }

// addr returns the address of offset off, which must be inside an
// allocated buffer.
func (a *arena) addr(off uint32) unsafe.Pointer {
	// slots[off>>chunkShift] without the bounds check: the offsets the
	// skiplist follows were allocated, so they are below cap.
	slot := *(*unsafe.Pointer)(unsafe.Add(a.tab, uintptr(off>>chunkShift)*unsafe.Sizeof(a.tab)))
	return unsafe.Add(slot, off&chunkMask)
}

// u32 returns a pointer to the uint32 at off, which must be 4-aligned and
// inside the arena.
func (a *arena) u32(off uint32) *uint32 { return (*uint32)(a.addr(off)) }

// u64 returns a pointer to the uint64 at off, which must be 8-aligned and
// inside the arena.
func (a *arena) u64(off uint32) *uint64 { return (*uint64)(a.addr(off)) }

// bytes returns the n bytes at off of node nd, where [off, off+n) lies
// inside the node, with capacity n. An empty range is an empty slice
// that does not point into the arena (its offset may be the buffer's end).
func (a *arena) bytes(nd uint32, off, n uint64) []byte {
	if n == 0 {
		return noBytes[:0:0]
	}
	return unsafe.Slice((*byte)(unsafe.Add(a.addr(nd), off-uint64(nd))), n)
}

var noBytes [0]byte
