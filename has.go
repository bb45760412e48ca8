package strata

import (
	"errors"

	"github.com/strata-db/strata/internal/base"
)

// Has reports whether key has a visible value, deciding from the tree
// alone: it never reads a value log, so on a separated value it costs what
// finding the key costs (Metrics.ValueLogs.Reads does not move).
//
// A value pointer means present unless its TTL has passed (the expiry is in
// the tree entry). A key whose newest entry is a merge operand is present:
// Options.Merger is given the operands even when nothing lies below them,
// so Get yields a value for it, and Has reads neither operands nor values.
// (A Merger that fails on such a key makes Get return its error where Has
// says true.)
func (d *DB) Has(key []byte) (bool, error) {
	defer d.stats.latency.has.since(latencyNow())
	if err := d.checkOpen(); err != nil {
		return false, err
	}
	return d.hasAt(key, 0, true)
}

// Has reports whether key has a visible value as of the snapshot, as
// DB.Has does.
func (s *Snapshot) Has(key []byte) (bool, error) {
	if s.closed.Load() {
		return false, ErrClosed
	}
	if err := s.db.checkOpen(); err != nil {
		return false, err
	}
	defer s.db.stats.latency.has.since(latencyNow())
	return s.db.hasAt(key, s.seq, false)
}

// hasAt is getAtInto reading no value: the same read state and sequence
// number (acquireRead), the same lookup, in its key-only mode.
func (d *DB) hasAt(key []byte, snap base.SeqNum, current bool) (bool, error) {
	rs, snap := d.acquireRead(snap, current)
	if rs.readState == nil {
		return false, ErrClosed
	}
	defer rs.unref()
	_, err := d.lookupInto(rs.readState, key, snap, nil, nil, true)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ErrNotFound):
		return false, nil
	}
	return false, err
}
