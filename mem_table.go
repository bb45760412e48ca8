package strata

import (
	"sync"
	"sync/atomic"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/memtable"
	"github.com/strata-db/strata/lsm/rangedel"
)

// memTable is a memtable plus what the DB tracks about it.
//
// refs counts the DB's own reference (while the memtable is mutable or
// waits for flush) and one per read state holding it. When it drops to
// zero nothing can read the memtable any longer, and its arena goes back to
// the pool for the next memtable: reusing it skips allocating, zeroing and
// faulting in tens of megabytes at every rotation.
type memTable struct {
	*memtable.MemTable
	refs atomic.Int32
	pool *memPool
	// logNum is the WAL holding this memtable's writes (0 with the WAL off).
	logNum base.FileNum
	// valueBytes counts the bytes of the values its pointer entries locate
	// in value logs written at commit (see makeRoomForWrite).
	valueBytes atomic.Int64
	// maxSeq is the largest sequence number applied (set by the commit
	// leader before the memtable is frozen).
	maxSeq atomic.Uint64
	// sealTicket is the sealer's last ticket when the memtable was frozen:
	// its flush waits for those jobs (see sealer).
	sealTicket uint64

	// vlogs are the value logs that pointer entries of this memtable point
	// into (values separated at commit, garbage collection's repointed keys,
	// replayed ones): each holds one pin on the value log until the
	// memtable is released (release runs when the last reference goes).
	// Guarded by the DB's pin lock.
	vlogs   map[base.FileNum]bool
	release func(*memTable)

	// Range tombstones, fragmented on demand and cached until the next one
	// is added. rangeDelCount is incremented after each Add of a tombstone.
	rangeDelCount atomic.Int64
	rangeDelCache atomic.Pointer[memRangeDels]

	// budget is the WriteBudget charged for the memtable's memory (nil:
	// none); charged is how much. From freezing to the end of its flush,
	// frozen is the DB's side of the budget that counts frozenCharge (the
	// charge then, constant) as memory on its way back; whoever swaps
	// frozen to nil takes it off. See budget.go.
	budget       *WriteBudget
	charged      atomic.Int64
	frozen       atomic.Pointer[dbBudget]
	frozenCharge int64
}

type memRangeDels struct {
	count int64
	set   *rangedel.Set
}

func newMemTable(size int, logNum base.FileNum) *memTable {
	m := &memTable{MemTable: memtable.New(size), logNum: logNum}
	m.refs.Store(1)
	return m
}

func (m *memTable) ref() { m.refs.Add(1) }

func (m *memTable) unref() {
	if m.refs.Add(-1) == 0 {
		if m.release != nil {
			m.release(m)
		}
		m.uncharge()
		if m.pool != nil {
			m.pool.put(m)
		}
	}
}

// memPool keeps one spare memtable of the standard size.
type memPool struct {
	size int
	// release is given to every memtable it hands out (see memTable).
	release func(*memTable)
	mu      sync.Mutex
	spare   *memtable.MemTable
}

// get returns an empty memtable of at least size bytes, reusing the spare
// arena when it is big enough.
func (p *memPool) get(size int, logNum base.FileNum) *memTable {
	if size <= p.size {
		p.mu.Lock()
		spare := p.spare
		p.spare = nil
		p.mu.Unlock()
		if spare != nil {
			m := &memTable{MemTable: spare, logNum: logNum, pool: p, release: p.release}
			m.refs.Store(1)
			return m
		}
		size = p.size
	}
	m := newMemTable(size, logNum)
	m.release = p.release
	if size == p.size {
		m.pool = p
	}
	return m
}

func (p *memPool) put(m *memTable) {
	m.Reset()
	p.mu.Lock()
	if p.spare == nil {
		p.spare = m.MemTable
	}
	p.mu.Unlock()
}

// holdsRecords reports whether m's WAL holds records that the manifest
// does not cover yet: m's entries, or, in an empty memtable, the mark of
// an ingest (which raised maxSeq, and which no entry carries). Such a
// memtable is frozen and flushed, even empty, so that its flush records
// the ingest's sequence numbers before the WAL goes; deleting the WAL
// instead left the next WAL's writes after a gap that replay refuses.
func (m *memTable) holdsRecords() bool {
	return !m.Empty() || m.maxSeq.Load() != 0
}

// raiseMaxSeq raises maxSeq to seq (a replay, single-threaded).
func (m *memTable) raiseMaxSeq(seq base.SeqNum) {
	if uint64(seq) > m.maxSeq.Load() {
		m.maxSeq.Store(uint64(seq))
	}
}

// rangeDels returns the fragmented tombstones of the memtable (nil when it
// has none). Tombstones newer than a reader's snapshot are filtered by the
// reader's sequence number at lookup time.
func (m *memTable) rangeDels() *rangedel.Set {
	n := m.rangeDelCount.Load()
	if n == 0 {
		return nil
	}
	if c := m.rangeDelCache.Load(); c != nil && c.count == n {
		return c.set
	}
	set := rangedel.Build(m.RangeTombstones(base.SeqNumMax))
	m.rangeDelCache.Store(&memRangeDels{count: n, set: set})
	return set
}
