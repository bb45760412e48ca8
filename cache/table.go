package cache

import "sync/atomic"

// entryTable is a shard's index from key to entry: open addressing with
// linear probing over slots of (hash, entry pointer). Get reads it without
// any lock; the shard's mutex serialises writers.
//
// Why a reader never sees a wrong block: an entry's key and block never
// change after the entry is published, and the reader compares the key of
// the entry it loaded with the one it looks for. The slot's hash is only a
// filter that saves loading entries that cannot match.
//
// Why a reader terminates and never misses a resident entry: writers never
// move an entry between slots of a table and never make a used slot empty
// again. Deletion stores a nil entry and leaves the slot's hash (a
// tombstone, which probes walk past). At most 3/4 of the slots are used, and
// used slots stay used, so every probe sequence reaches an empty slot within
// one pass. When tombstones and entries fill 3/4 of the slots, the writer
// copies the live entries into a new table and publishes it with one atomic
// store; the old table is never written again, so a reader still walking it
// sees the state of the moment of the switch.
type entryTable struct {
	slots []slot
	mask  uint64
	shift uint8 // the home slot of hash h is h >> shift
	used  int   // slots that are not empty (entries and tombstones)
	live  int   // slots that hold an entry
}

type slot struct {
	hash  atomic.Uint64 // slotHash of the entry's hash; 0: empty
	entry atomic.Pointer[entry]
}

const minTableSlots = 16

// slotHash maps a key's hash to the value stored in a slot: never 0, which
// marks an empty slot.
func slotHash(h uint64) uint64 { return h | 1 }

func newEntryTable(slots int) *entryTable {
	n, shift := minTableSlots, uint8(64-4)
	for n < slots {
		n *= 2
		shift--
	}
	return &entryTable{slots: make([]slot, n), mask: uint64(n - 1), shift: shift}
}

// find returns the entry for k, or nil. It takes no lock.
func (t *entryTable) find(h uint64, k key) *entry {
	sh := slotHash(h)
	for i := h >> t.shift; ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		switch s.hash.Load() {
		case 0:
			return nil
		case sh:
			if e := s.entry.Load(); e != nil && e.key == k {
				return e
			}
		}
	}
}

// insertLocked adds e, whose key is not in the table, and reports whether
// the table is now due for a rehash. The caller holds the shard's mutex.
func (t *entryTable) insertLocked(e *entry) (full bool) {
	for i := e.hash >> t.shift; ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		if s.hash.Load() == 0 {
			// Publish the entry before the hash: a reader that sees the
			// hash finds the entry (the key check makes it safe anyway).
			s.entry.Store(e)
			s.hash.Store(slotHash(e.hash))
			t.used++
			break
		}
		if s.entry.Load() == nil { // tombstone: reuse it
			s.entry.Store(e)
			s.hash.Store(slotHash(e.hash))
			break
		}
	}
	t.live++
	return t.used*4 > len(t.slots)*3
}

// deleteLocked removes e from the table. The caller holds the shard's mutex.
func (t *entryTable) deleteLocked(e *entry) {
	for i := e.hash >> t.shift; ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		if s.hash.Load() == 0 {
			return // not in the table
		}
		if s.entry.Load() == e {
			s.entry.Store(nil)
			t.live--
			return
		}
	}
}

// rehashed returns a new table holding the live entries of t, at most half
// full. The next rehash comes after at least half as many inserts as there
// are entries, so rehashing costs at most two entry moves per insert; a
// table under steady churn has 2 to 4 slots per entry.
func (t *entryTable) rehashed() *entryTable {
	nt := newEntryTable(2 * (t.live + 1))
	for i := range t.slots {
		if e := t.slots[i].entry.Load(); e != nil {
			nt.insertLocked(e)
		}
	}
	return nt
}
