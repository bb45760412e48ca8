package cache

import "sync/atomic"

// entry is one cached block. hash, key and block never change once the
// entry is in the shard's table, because Get reads them without a lock.
// freq is atomic because Get bumps it; the other fields belong to the
// shard's mutex.
type entry struct {
	hash  uint64
	key   key
	block []byte
	// freq counts hits since the entry was inserted or last examined by
	// the eviction scan, saturating at maxFreq.
	freq   atomic.Int32
	inMain bool // in the main queue (else in the small queue)

	prev, next   *entry // position in the small or main queue
	fprev, fnext *entry // position in the list of its file's entries
}

// charge is what the entry costs against the shard's capacity.
func (e *entry) charge() int64 { return int64(len(e.block)) + EntryOverhead }

// maxFreq is where an entry's access counter saturates (a 2-bit counter).
const maxFreq = 3

// touch records a hit. It runs concurrently with other touches and with the
// eviction scan, so it uses a compare-and-swap; once the counter
// saturates, a hit only reads it, so hot entries do not bounce a cache line
// between cores.
func (e *entry) touch() {
	if f := e.freq.Load(); f < maxFreq {
		e.freq.CompareAndSwap(f, f+1)
	}
}

// fifo is an intrusive doubly linked queue of entries: push at the tail,
// pop from the head, and O(1) removal from anywhere (for EvictFile).
type fifo struct {
	head, tail *entry
}

func (q *fifo) empty() bool { return q.head == nil }

func (q *fifo) pushBack(e *entry) {
	e.next = nil
	e.prev = q.tail
	if q.tail != nil {
		q.tail.next = e
	} else {
		q.head = e
	}
	q.tail = e
}

func (q *fifo) remove(e *entry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		q.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		q.tail = e.prev
	}
	e.prev, e.next = nil, nil
}
