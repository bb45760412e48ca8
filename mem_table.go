package strata

import (
	"sync/atomic"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/memtable"
	"github.com/strata-db/strata/lsm/rangedel"
)

// memTable is a memtable plus what the DB tracks about it.
type memTable struct {
	*memtable.MemTable
	// logNum is the WAL holding this memtable's writes (0 with the WAL off).
	logNum base.FileNum
	// maxSeq is the largest sequence number applied (set by the commit
	// leader before the memtable is frozen).
	maxSeq atomic.Uint64

	// Range tombstones, fragmented on demand and cached until the next one
	// is added. rangeDelCount is incremented after each Add of a tombstone.
	rangeDelCount atomic.Int64
	rangeDelCache atomic.Pointer[memRangeDels]
}

type memRangeDels struct {
	count int64
	set   *rangedel.Set
}

func newMemTable(size int, logNum base.FileNum) *memTable {
	return &memTable{MemTable: memtable.New(size), logNum: logNum}
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
