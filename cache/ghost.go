package cache

import "math"

// ghostQueue remembers the hashes of entries recently evicted from the small
// queue, without their blocks. A miss whose hash is still remembered was
// evicted too early: Set then inserts it straight into the main queue.
//
// The queue is bounded by the charges of the entries it remembers (limit is
// the shard's main-queue capacity), so it remembers about as many keys as
// the main queue holds. TestEntryOverhead measures what a remembered key
// costs; EntryOverhead accounts for it. A hash stands for its key: a
// collision only makes one miss go to the main queue.
type ghostQueue struct {
	// A ring of slots: slot i (0 <= i < n) is at (head+i) & (len-1) and has
	// sequence number headSeq+i (mod 2^32).
	hashes  []uint64
	charges []uint32 // saturating at math.MaxUint32
	head    int
	n       int
	headSeq uint32
	bytes   int64 // sum of charges in the ring
	limit   int64
	// index maps a remembered hash to the sequence number of its newest
	// slot. A slot whose sequence number differs is stale (its hash was
	// removed, or remembered again later). Sequence numbers wrap, but a
	// slot leaves the ring long before 2^32 newer slots are added.
	index hashSet
}

func (g *ghostQueue) init(limit int64) {
	g.limit = limit
	g.index.init()
}

// add remembers hash, which was evicted with the given charge, and forgets
// the oldest hashes beyond the limit.
func (g *ghostQueue) add(hash uint64, charge int64) {
	if charge > g.limit {
		return
	}
	if g.n == len(g.hashes) {
		g.grow()
	}
	i := (g.head + g.n) & (len(g.hashes) - 1)
	c := uint32(min(charge, math.MaxUint32))
	g.hashes[i], g.charges[i] = hash, c
	g.index.put(hash, g.headSeq+uint32(g.n))
	g.n++
	g.bytes += int64(c)
	for g.bytes > g.limit {
		g.popOldest()
	}
}

// remove reports whether hash is remembered, and forgets it.
func (g *ghostQueue) remove(hash uint64) bool {
	return g.index.delete(hash)
}

func (g *ghostQueue) popOldest() {
	h := g.hashes[g.head]
	g.bytes -= int64(g.charges[g.head])
	if seq, ok := g.index.get(h); ok && seq == g.headSeq {
		g.index.delete(h)
	}
	g.head = (g.head + 1) & (len(g.hashes) - 1)
	g.headSeq++
	g.n--
}

// grow doubles the ring (its length stays a power of two).
func (g *ghostQueue) grow() {
	size := max(2*len(g.hashes), 64)
	hashes, charges := make([]uint64, size), make([]uint32, size)
	for i := 0; i < g.n; i++ {
		j := (g.head + i) & (len(g.hashes) - 1)
		hashes[i], charges[i] = g.hashes[j], g.charges[j]
	}
	g.hashes, g.charges, g.head = hashes, charges, 0
}

// hashSet maps 64-bit hashes to uint32 values: open addressing, linear
// probing, and backward-shift deletion (so no tombstones build up under
// the ghost queue's constant churn). It is not safe for concurrent use.
type hashSet struct {
	slots []hashSlot
	mask  uint64
	shift uint8 // the home slot of stored hash h is h >> shift
	n     int
}

type hashSlot struct {
	hash uint64 // slotHash of the key's hash; 0: empty
	val  uint32
}

func (s *hashSet) init() {
	s.slots = make([]hashSlot, minTableSlots)
	s.mask = minTableSlots - 1
	s.shift = 64 - 4
	s.n = 0
}

func (s *hashSet) get(h uint64) (uint32, bool) {
	h = slotHash(h)
	for i := h >> s.shift; ; i = (i + 1) & s.mask {
		switch s.slots[i].hash {
		case 0:
			return 0, false
		case h:
			return s.slots[i].val, true
		}
	}
}

func (s *hashSet) put(h uint64, v uint32) {
	h = slotHash(h)
	for i := h >> s.shift; ; i = (i + 1) & s.mask {
		switch s.slots[i].hash {
		case 0:
			s.slots[i] = hashSlot{hash: h, val: v}
			s.n++
			if s.n*4 > len(s.slots)*3 {
				s.grow()
			}
			return
		case h:
			s.slots[i].val = v
			return
		}
	}
}

// delete removes h and reports whether it was present.
func (s *hashSet) delete(h uint64) bool {
	h = slotHash(h)
	i := h >> s.shift
	for ; ; i = (i + 1) & s.mask {
		if s.slots[i].hash == 0 {
			return false
		}
		if s.slots[i].hash == h {
			break
		}
	}
	// Shift later members of the probe run back into the hole, unless that
	// would move one before its home slot.
	for j := i; ; {
		j = (j + 1) & s.mask
		hj := s.slots[j].hash
		if hj == 0 {
			break
		}
		home := hj >> s.shift
		// Slot j may fill hole i when its home is not cyclically in (i, j].
		if (j-home)&s.mask >= (j-i)&s.mask {
			s.slots[i] = s.slots[j]
			i = j
		}
	}
	s.slots[i] = hashSlot{}
	s.n--
	return true
}

func (s *hashSet) grow() {
	old := s.slots
	s.slots = make([]hashSlot, 2*len(old))
	s.mask = uint64(len(s.slots) - 1)
	s.shift--
	s.n = 0
	for _, sl := range old {
		if sl.hash != 0 {
			s.put(sl.hash, sl.val)
		}
	}
}
