package memtable

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/strata-db/strata/internal/base"
)

// ErrArenaFull is returned by Add when the entry does not fit in the arena.
// Nothing is inserted then; the DB rotates to a new memtable.
var ErrArenaFull = errors.New("memtable: arena full")

// errDuplicate is wrapped by the error Add returns for an internal key that
// is already present (same user key, sequence number and kind).
var errDuplicate = errors.New("memtable: duplicate internal key")

// fixedOverhead is the arena space taken before any entry: the reserved
// zero offset and the head nodes of the two skiplists.
const fixedOverhead = arenaAlign + 2*headSize

// MaxAvailable is Available of a new memtable of the largest size: the
// most EntrySize, summed over entries, that any memtable can take.
const MaxAvailable = maxArenaSize - fixedOverhead

// MemTable is the in-memory write buffer: point entries and range deletions
// in two skiplists sharing one arena.
//
// Add must be called by one goroutine at a time. Every other method may be
// called concurrently with Add and with each other, without locks. The zero
// value is not usable: create memtables with New.
type MemTable struct {
	arena     *arena
	points    skiplist
	rangeDels skiplist

	// Writer-only state.
	rnd rng
	sp  splice
}

// New returns a memtable whose arena holds about size bytes (nodes + keys +
// values). Node links are 32-bit arena offsets, so the capacity is at most
// 4 GiB - 1: larger sizes are clamped to that. Sizes too small to hold the
// two fixed head nodes (392 bytes) are raised to that minimum; such a
// memtable accepts no entry. Memory is allocated as the memtable fills, in
// chunks of 256 KiB (a larger entry gets a buffer of its own): a new
// memtable holds one chunk, or size bytes if that is less.
func New(size int) *MemTable {
	a := newArena(clampArenaSize(size, fixedOverhead))
	m := &MemTable{arena: a}
	m.points.init(a)
	m.rangeDels.init(a)
	m.rnd.state = rand.Uint64() | 1
	return m
}

// Reset empties the memtable so that it can be reused, keeping the
// arena's first chunk and releasing the others. The caller guarantees that nothing
// can still read it: no iterator, no Get in flight, no value slice taken
// from it still in use.
func (m *MemTable) Reset() {
	m.arena.reset()
	m.points.init(m.arena)
	m.rangeDels.init(m.arena)
}

// KeyRange returns the smallest and largest 8-byte key prefixes (the
// first 8 bytes of a user key, big-endian, zero-padded) of the point
// entries added, for TuneLinks of the memtable that follows; ok is false
// when there are none. Writer only, or once the memtable is frozen.
func (m *MemTable) KeyRange() (lo, hi uint64, ok bool) {
	if m.points.count.Load() == 0 {
		return 0, 0, false
	}
	return m.points.lo, m.points.hi, true
}

// TuneLinks fits the key summaries that the skiplist's links keep (which
// let a search pass over a node without touching it) to point keys whose
// prefixes lie in [lo, hi], as reported by the previous memtable's
// KeyRange. Any key stays correct; keys in the range are found with fewer
// cache misses. Call it only on an empty memtable that nothing reads, like
// Reset.
func (m *MemTable) TuneLinks(lo, hi uint64) {
	if m.points.count.Load() == 0 {
		m.points.sum = summaryFor(lo, hi)
	}
}

// EntrySize returns an upper bound on the arena bytes Add needs for one
// entry with a user key of keyLen bytes and a value of valueLen bytes, so
// the DB can check that a whole batch fits before applying it: if the sum
// of EntrySize over the batch is at most Available, every Add succeeds.
// The bound assumes the tallest tower (20 links), and twice the node: an
// entry that does not fit in the rest of the current chunk skips it, and
// what it skips is smaller than the entry. An average entry of a chunk
// takes the node with 2 links. Negative lengths count as zero.
func EntrySize(keyLen, valueLen int) int {
	return 2 * int(alignUp(nodeSize(maxHeight, uint64(max(keyLen, 0)), uint64(max(valueLen, 0)))))
}

// Add inserts an entry. Entries of kind KindRangeDelete (value = exclusive
// end key) go to the range-deletion skiplist; every other valid kind is a
// point entry. Add copies key and value into the arena.
//
// It returns ErrArenaFull if the entry does not fit, an error for an
// invalid kind or for an internal key that is already present; in every
// error case nothing is inserted. Add must not be called concurrently with
// itself.
func (m *MemTable) Add(key base.InternalKey, value []byte) error {
	kind := key.Kind()
	if !kind.Valid() {
		return fmt.Errorf("memtable: invalid kind %s in key %s", kind, key)
	}
	list := &m.points
	if kind == base.KindRangeDelete {
		list = &m.rangeDels
	}
	err := list.insert(&m.sp, m.rnd.randomHeight(), key.UserKey, uint64(key.Trailer), value)
	if errors.Is(err, errDuplicate) {
		return fmt.Errorf("%w: %s", err, key)
	}
	return err
}

// Available returns the arena bytes left.
func (m *MemTable) Available() int { return int(m.arena.capacity() - m.arena.size()) }

// Size returns the arena bytes used, including the fixed head nodes and
// the chunk tails entries skipped.
func (m *MemTable) Size() int { return int(m.arena.size()) }

// Memory returns the bytes of memory the arena holds: the chunks allocated
// so far, at least Size and at most Capacity rounded up to 8. Safe for
// concurrent use.
func (m *MemTable) Memory() int64 { return m.arena.memory() }

// Capacity returns the arena size in bytes (after clamping, see New).
func (m *MemTable) Capacity() int { return int(m.arena.capacity()) }

// Empty reports whether the memtable holds no point entry and no range
// deletion.
func (m *MemTable) Empty() bool { return m.points.count.Load() == 0 && m.rangeDels.count.Load() == 0 }

// Len returns the number of point entries.
func (m *MemTable) Len() int { return int(m.points.count.Load()) }

// HasRangeDels reports whether the memtable holds a range deletion.
func (m *MemTable) HasRangeDels() bool { return m.rangeDels.count.Load() > 0 }

// Get returns the newest point entry of key whose sequence number is at
// most snap. value aliases the arena: it is read-only and stays valid as
// long as the memtable is referenced. Range deletions are not applied.
func (m *MemTable) Get(key []byte, snap base.SeqNum) (value []byte, kind base.Kind, seq base.SeqNum, found bool) {
	if snap > base.SeqNumMax {
		snap = base.SeqNumMax
	}
	prefix := KeyPrefix(key)
	_, nd := m.points.seekGE(key, prefix, uint64(base.MakeTrailer(snap, base.KindMax)))
	if nd == 0 || !m.arena.userKeyEqual(nd, key, prefix) {
		return nil, 0, 0, false
	}
	t := base.Trailer(m.arena.trailer(nd))
	return m.arena.value(nd), t.Kind(), t.SeqNum(), true
}

// RangeTombstones returns the range deletions with sequence number at most
// snap, ordered by start key ascending, then sequence number descending.
// Start and End alias the arena (read-only).
func (m *MemTable) RangeTombstones(snap base.SeqNum) []base.RangeTombstone {
	n := m.rangeDels.count.Load()
	if n == 0 {
		return nil
	}
	a := m.arena
	out := make([]base.RangeTombstone, 0, n)
	for nd := a.next(m.rangeDels.head, 0); nd != 0; nd = a.next(nd, 0) {
		seq := base.Trailer(a.trailer(nd)).SeqNum()
		if seq > snap {
			continue
		}
		out = append(out, base.RangeTombstone{Start: a.userKey(nd), End: a.value(nd), Seq: seq})
	}
	return out
}
