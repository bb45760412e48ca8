package cache

import "fmt"

// checkInvariants walks every structure of every shard and reports the
// first inconsistency: queue links, sizes, counts, the table, the file
// index and the ghost queue.
func checkInvariants(c *Cache) error {
	for i := range c.shards {
		if err := c.shards[i].check(); err != nil {
			return fmt.Errorf("shard %d: %w", i, err)
		}
	}
	return nil
}

func (s *shard) check() error {
	s.mu.Lock()
	defer s.mu.Unlock()

	seen := make(map[*entry]bool)
	var size, smallSize int64
	walk := func(q *fifo, inMain bool) error {
		var prev *entry
		for e := q.head; e != nil; e = e.next {
			if e.prev != prev {
				return fmt.Errorf("queue link broken at %+v", e.key)
			}
			if e.inMain != inMain {
				return fmt.Errorf("entry %+v: inMain %v in the other queue", e.key, e.inMain)
			}
			if seen[e] {
				return fmt.Errorf("entry %+v queued twice", e.key)
			}
			seen[e] = true
			if s.table.Load().find(e.hash, e.key) != e {
				return fmt.Errorf("queued entry %+v not in table", e.key)
			}
			if e.hash != hashKey(e.key.cacheID, e.key.fileNum, e.key.offset) {
				return fmt.Errorf("entry %+v has the wrong hash", e.key)
			}
			if f := e.freq.Load(); f < 0 || f > maxFreq {
				return fmt.Errorf("entry %+v: freq %d", e.key, f)
			}
			size += e.charge()
			if !inMain {
				smallSize += e.charge()
			}
			prev = e
		}
		if q.tail != prev {
			return fmt.Errorf("queue tail is not its last entry")
		}
		return nil
	}
	if err := walk(&s.small, false); err != nil {
		return err
	}
	if err := walk(&s.main, true); err != nil {
		return err
	}
	t := s.table.Load()
	used, live := 0, 0
	for i := range t.slots {
		sl := &t.slots[i]
		if sl.hash.Load() != 0 {
			used++
		}
		if e := sl.entry.Load(); e != nil {
			live++
			if !seen[e] || sl.hash.Load() != slotHash(e.hash) {
				return fmt.Errorf("table slot %d holds an entry that is not resident, or a wrong hash", i)
			}
		}
	}
	if used != t.used || live != t.live || used*4 > len(t.slots)*3 {
		return fmt.Errorf("table: %d used %d live of %d slots, recorded %d %d", used, live, len(t.slots), t.used, t.live)
	}
	if len(seen) != live || int64(len(seen)) != s.count {
		return fmt.Errorf("%d queued, %d in table, count %d", len(seen), live, s.count)
	}
	if size != s.size || smallSize != s.smallSize {
		return fmt.Errorf("size %d smallSize %d, recorded %d %d", size, smallSize, s.size, s.smallSize)
	}
	if s.size > s.capacity {
		return fmt.Errorf("size %d over capacity %d", s.size, s.capacity)
	}
	inFiles := 0
	for fk, l := range s.files.lists {
		head := l.head
		if l.fk != fk || head == nil || head.fprev != nil {
			return fmt.Errorf("file %+v: bad list head", fk)
		}
		var prev *entry
		for e := head; e != nil; e = e.fnext {
			if e.fprev != prev || (fileKey{e.key.cacheID, e.key.fileNum}) != fk || !seen[e] {
				return fmt.Errorf("file %+v: bad list entry %+v", fk, e.key)
			}
			inFiles++
			prev = e
		}
	}
	if inFiles != len(seen) {
		return fmt.Errorf("%d entries in file lists, %d resident", inFiles, len(seen))
	}
	g := &s.ghost
	var gbytes int64
	for i := 0; i < g.n; i++ {
		gbytes += int64(g.charges[(g.head+i)&(len(g.hashes)-1)])
	}
	if gbytes != g.bytes || g.bytes > g.limit || g.index.n > g.n {
		return fmt.Errorf("ghost: bytes %d recorded %d limit %d, %d indexed of %d", gbytes, g.bytes, g.limit, g.index.n, g.n)
	}
	return g.index.check()
}

// check verifies that every member of the set is found from its home slot
// and that the count is right.
func (s *hashSet) check() error {
	n := 0
	for i, sl := range s.slots {
		if sl.hash == 0 {
			continue
		}
		n++
		if v, ok := s.get(sl.hash); !ok || v != sl.val {
			return fmt.Errorf("hash set: slot %d not found from its home", i)
		}
	}
	if n != s.n {
		return fmt.Errorf("hash set: %d members, recorded %d", n, s.n)
	}
	return nil
}
