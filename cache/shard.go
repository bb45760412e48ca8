package cache

import (
	"bytes"
	"sync"
	"sync/atomic"
)

// moveThreshold is the access count an entry needs when it reaches the head
// of the small queue to move to the main queue instead of being evicted.
// Two rather than one, so that a block read twice in quick succession by a
// scan does not displace the working set (see the zipf+scan2x trace of the
// policy simulator).
const moveThreshold = 2

// smallPercent is the share of a shard's capacity that the small queue aims
// for.
const smallPercent = 10

// shard is one independently locked part of the cache running S3-FIFO.
//
// Lock rules: Get takes no lock. It loads table, finds the entry, reads its
// immutable key and block, and bumps its atomic freq. Everything else holds
// mu; methods that need it end in Locked.
type shard struct {
	// table is read by every Get; it is written only when a rehash
	// replaces it, so the line it sits on stays shared between cores.
	table atomic.Pointer[entryTable]
	_     [56]byte

	mu        sync.Mutex
	capacity  int64 // bytes; INVARIANT: size <= capacity when mu is free
	smallCap  int64 // target for smallSize
	size      int64 // sum of charges of resident entries
	smallSize int64 // sum of charges of the entries in small
	count     int64 // resident entries
	evictions uint64

	small fifo // new entries; FIFO
	main  fifo // entries that proved themselves; FIFO with reinsertion
	ghost ghostQueue
	files fileIndex
	_     [64]byte
}

func (s *shard) init(capacity int64) {
	s.capacity = capacity
	s.smallCap = capacity/100*smallPercent + capacity%100*smallPercent/100 // no overflow
	s.table.Store(newEntryTable(0))
	s.files.init()
	s.ghost.init(capacity - s.smallCap)
}

// get returns the entry for k, or nil. It takes no lock.
func (s *shard) get(h uint64, k key) *entry {
	return s.table.Load().find(h, k)
}

func (s *shard) set(h uint64, k key, block []byte) {
	charge := int64(len(block)) + EntryOverhead
	s.mu.Lock()
	defer s.mu.Unlock()

	t := s.table.Load()
	inMain, freq := false, int32(0)
	if old := t.find(h, k); old != nil {
		if bytes.Equal(old.block, block) {
			// The usual case: two readers loaded the same block of an
			// immutable file. Keep the cached copy; count an access.
			old.touch()
			return
		}
		// Get reads blocks without a lock, so an entry's block never
		// changes: a new entry replaces the old one, keeps its queue, and
		// the re-insert counts as an access.
		inMain, freq = old.inMain, min(old.freq.Load()+1, maxFreq)
		s.removeLocked(old)
	} else if s.ghost.remove(h) {
		inMain = true
	}
	if charge > s.capacity {
		return
	}
	s.evictLocked(charge)

	e := &entry{hash: h, key: k, block: block, inMain: inMain}
	e.freq.Store(freq)
	if inMain {
		s.main.pushBack(e)
	} else {
		s.small.pushBack(e)
		s.smallSize += charge
	}
	s.size += charge
	s.count++
	s.files.add(e)
	if t.insertLocked(e) {
		s.table.Store(t.rehashed())
	}
}

// evictLocked evicts until an entry of the given charge fits.
//
// The caller ensures charge <= s.capacity, so while the loop runs some entry
// is resident. The loop ends: a small-queue step moves an entry to main
// (bounded by the small queue's length) or evicts it, and a main-queue step
// always evicts one entry.
func (s *shard) evictLocked(charge int64) {
	for charge > s.capacity-s.size {
		if !s.small.empty() && (s.smallSize >= s.smallCap || s.main.empty()) {
			s.evictSmallLocked()
		} else {
			s.evictMainLocked()
		}
	}
}

// evictSmallLocked examines the head of the small queue: an entry hit at
// least moveThreshold times moves to the main queue, any other is evicted
// and its hash is remembered in the ghost queue.
func (s *shard) evictSmallLocked() {
	e := s.small.head
	if e.freq.Load() >= moveThreshold {
		s.small.remove(e)
		s.smallSize -= e.charge()
		e.freq.Store(0)
		e.inMain = true
		s.main.pushBack(e)
		return
	}
	s.ghost.add(e.hash, e.charge())
	s.removeLocked(e)
	s.evictions++
}

// evictMainLocked examines the head of the main queue: an entry hit since it
// was last examined goes back to the tail with its counter decremented; the
// first one that was not is evicted. Gets may bump counters during the
// scan, so after maxFreq rotations per resident entry it evicts the head
// regardless.
func (s *shard) evictMainLocked() {
	for rotations := int64(0); ; rotations++ {
		e := s.main.head
		if f := e.freq.Load(); f > 0 && rotations < maxFreq*s.count {
			e.freq.Store(f - 1)
			s.main.remove(e)
			s.main.pushBack(e)
			continue
		}
		s.removeLocked(e)
		s.evictions++
		return
	}
}

// removeLocked removes a resident entry from its queue, the table and its
// file's list.
func (s *shard) removeLocked(e *entry) {
	if e.inMain {
		s.main.remove(e)
	} else {
		s.small.remove(e)
		s.smallSize -= e.charge()
	}
	s.size -= e.charge()
	s.count--
	s.table.Load().deleteLocked(e)
	s.files.remove(e)
}

// evictFile removes every entry of the file.
func (s *shard) evictFile(fk fileKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for e := s.files.head(fk); e != nil; e = s.files.head(fk) {
		s.removeLocked(e)
	}
}

// metrics adds the shard's figures to m.
func (s *shard) metrics(m *Metrics) {
	s.mu.Lock()
	m.Size += s.size
	m.Count += s.count
	m.Evictions += s.evictions
	s.mu.Unlock()
}

// fileIndex lists the entries of each file in a shard, for EvictFile. Each
// file has a list record, so adding an entry only writes pointers (no map
// write), and the record of the file last added to is remembered, because
// consecutive Sets usually come from one file.
type fileIndex struct {
	lists map[fileKey]*fileList
	last  *fileList
}

type fileList struct {
	fk   fileKey
	head *entry
}

func (x *fileIndex) init() { x.lists = make(map[fileKey]*fileList) }

func (x *fileIndex) list(fk fileKey) *fileList {
	if x.last != nil && x.last.fk == fk {
		return x.last
	}
	l := x.lists[fk]
	if l != nil {
		x.last = l
	}
	return l
}

func (x *fileIndex) head(fk fileKey) *entry {
	if l := x.list(fk); l != nil {
		return l.head
	}
	return nil
}

func (x *fileIndex) add(e *entry) {
	fk := fileKey{e.key.cacheID, e.key.fileNum}
	l := x.list(fk)
	if l == nil {
		l = &fileList{fk: fk}
		x.lists[fk] = l
		x.last = l
	}
	e.fprev, e.fnext = nil, l.head
	if l.head != nil {
		l.head.fprev = e
	}
	l.head = e
}

func (x *fileIndex) remove(e *entry) {
	if e.fnext != nil {
		e.fnext.fprev = e.fprev
	}
	if e.fprev != nil {
		e.fprev.fnext = e.fnext
	} else {
		fk := fileKey{e.key.cacheID, e.key.fileNum}
		l := x.list(fk)
		l.head = e.fnext
		if l.head == nil {
			delete(x.lists, fk)
			x.last = nil
		}
	}
	e.fprev, e.fnext = nil, nil
}
