package strata

import (
	"fmt"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/vlog"
)

// Get returns the value of key, or an error matching ErrNotFound. The
// caller owns the returned slice.
func (d *DB) Get(key []byte) ([]byte, error) {
	if err := d.checkOpen(); err != nil {
		return nil, err
	}
	return d.getAt(key, base.SeqNum(d.visibleSeq.Load()))
}

// getAt reads key as of snapshot snap: the memtables newest first, then L0
// newest first, then one file per level. Range tombstones seen on the way
// (in sources at least as new as the entry found) decide whether the entry
// is deleted; older sources cannot hold a tombstone newer than the entry.
func (d *DB) getAt(key []byte, snap base.SeqNum) ([]byte, error) {
	rs := d.loadReadState()
	if rs == nil {
		return nil, ErrClosed
	}
	defer rs.unref()

	var tomb base.SeqNum
	for _, m := range rs.memtables {
		if set := m.rangeDels(); set != nil {
			tomb = max(tomb, set.MaxCovering(key, snap))
		}
		if value, kind, seq, found := m.Get(key, snap); found {
			return d.observeInline(resolve(key, value, kind, seq, tomb))
		}
	}
	v := rs.version
	l0 := v.Levels[0]
	for i := len(l0) - 1; i >= 0; i-- {
		if !l0[i].ContainsUserKey(key) {
			continue
		}
		if value, err, done := d.getFromTable(v, l0[i], key, snap, &tomb); done {
			return value, err
		}
	}
	for level := 1; level < manifest.NumLevels; level++ {
		if len(v.Levels[level]) == 0 {
			continue
		}
		i := v.FindFile(level, key)
		if i < 0 {
			continue
		}
		if value, err, done := d.getFromTable(v, v.Levels[level][i], key, snap, &tomb); done {
			return value, err
		}
	}
	return nil, ErrNotFound
}

// getFromTable looks key up in one table. done reports that the search is
// over (a value, a deletion or an error was found).
func (d *DB) getFromTable(v *manifest.Version, f *manifest.FileMetadata, key []byte, snap base.SeqNum, tomb *base.SeqNum) (value []byte, err error, done bool) {
	h, err := d.tableCache.get(f)
	if err != nil {
		return nil, err, true
	}
	defer d.tableCache.release(h)
	if h.rangeDels != nil {
		*tomb = max(*tomb, h.rangeDels.MaxCovering(key, snap))
	}
	val, kind, seq, found, err := h.reader.Get(key, snap)
	if err != nil {
		return nil, err, true
	}
	if !found {
		return nil, nil, false
	}
	if kind == base.KindValuePointer && seq >= *tomb {
		value, err = d.readSeparated(v, key, val, base.MakeFilename(base.FileTypeTable, f.FileNum))
		return value, err, true
	}
	value, err = d.observeInline(resolve(key, val, kind, seq, *tomb))
	return value, err, true
}

// observeInline tells an adaptive separation policy about a point read
// served from the tree.
func (d *DB) observeInline(value []byte, err error) ([]byte, error) {
	if d.observer != nil && err == nil {
		d.observer.ObserveRead(len(value), false)
	}
	return value, err
}

// readSeparated fetches the value a pointer (stored in table source) points
// to, as a slice the caller owns.
func (d *DB) readSeparated(v *manifest.Version, key, ptr []byte, source string) ([]byte, error) {
	p, m, err := vlog.Resolve(v.Vlogs, ptr, source)
	if err != nil {
		return nil, err
	}
	value, err := d.vlogs.Value(m, p, key, make([]byte, 0, p.ValueLen))
	if err != nil {
		return nil, err
	}
	if d.observer != nil {
		d.observer.ObserveRead(len(value), true)
	}
	return value, nil
}

// resolve turns the newest visible entry of key into Get's result.
func resolve(key, value []byte, kind base.Kind, seq, tomb base.SeqNum) ([]byte, error) {
	if seq < tomb {
		return nil, ErrNotFound
	}
	switch kind {
	case base.KindSet:
		out := make([]byte, len(value))
		copy(out, value)
		return out, nil
	case base.KindDelete:
		return nil, ErrNotFound
	}
	return nil, fmt.Errorf("strata: key %q has an entry of kind %s, which this version cannot read", key, kind)
}
