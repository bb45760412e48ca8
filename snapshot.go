package strata

import (
	"container/list"
	"sync/atomic"

	"github.com/strata-db/strata/internal/base"
)

// A Snapshot is a consistent, read-only view of the DB as of its creation.
// It keeps every version of a key it can see from being compacted away, so
// close it when done.
type Snapshot struct {
	db     *DB
	seq    base.SeqNum
	elem   *list.Element
	closed atomic.Bool
}

// snapshotList holds the open snapshots in creation (and so sequence)
// order. Protected by d.mu.
type snapshotList struct{ l list.List }

func (s *snapshotList) seqsLocked() []base.SeqNum {
	var out []base.SeqNum
	for e := s.l.Front(); e != nil; e = e.Next() {
		seq := e.Value.(*Snapshot).seq
		if len(out) == 0 || out[len(out)-1] != seq {
			out = append(out, seq)
		}
	}
	return out
}

// NewSnapshot returns a snapshot of the current state. A snapshot taken
// after Close is already closed: its methods return ErrClosed.
func (d *DB) NewSnapshot() *Snapshot {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := &Snapshot{db: d, seq: base.SeqNum(d.visibleSeq.Load())}
	if d.closed.Load() {
		s.closed.Store(true)
		return s
	}
	s.elem = d.snapshots.l.PushBack(s)
	return s
}

// Get reads key as of the snapshot.
func (s *Snapshot) Get(key []byte) ([]byte, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	if err := s.db.checkOpen(); err != nil {
		return nil, err
	}
	defer s.db.stats.latency.get.since(latencyNow())
	return s.db.getAt(key, s.seq, false)
}

// NewIter iterates over the snapshot.
func (s *Snapshot) NewIter(o *IterOptions) (*Iterator, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	if err := s.db.checkOpen(); err != nil {
		return nil, err
	}
	return s.db.newIter(o, s.seq, false)
}

// Close releases the snapshot. Closing twice returns ErrClosed.
func (s *Snapshot) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return ErrClosed
	}
	d := s.db
	d.mu.Lock()
	d.snapshots.l.Remove(s.elem)
	d.mu.Unlock()
	return nil
}
