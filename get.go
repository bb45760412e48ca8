package strata

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/vfs"
	"github.com/strata-db/strata/vlog"
)

// Get returns the value of key, or an error matching ErrNotFound. The
// caller owns the returned slice. A loop of reads of large values is
// faster through GetAppend into one buffer: Get allocates a slice per
// read, and right after a process starts or its heap was returned to the
// OS, the first of those allocations fault the heap's pages in (measured:
// 200,000 reads of 4 KiB values right after a reopen, 10,000 page faults
// in the first 20,000 Gets, a first pass 0.76-0.89x of the second through
// Get, 0.88-0.94x through GetAppend, which served 1.6-2.4x as many reads
// a second in both passes).
func (d *DB) Get(key []byte) ([]byte, error) {
	defer d.stats.latency.get.since(latencyNow())
	if err := d.checkOpen(); err != nil {
		return nil, err
	}
	return d.getAt(key, 0, true)
}

// GetAppend is Get appending the value to dst: it returns dst extended by
// the value, reusing dst's storage when it has room, so a caller that
// reads into one buffer allocates nothing per read. On an error (one
// matching ErrNotFound included) it returns nil.
func (d *DB) GetAppend(key, dst []byte) ([]byte, error) {
	defer d.stats.latency.get.since(latencyNow())
	if err := d.checkOpen(); err != nil {
		return nil, err
	}
	if dst == nil {
		dst = []byte{} // nil asks lookup for a slice of the value's size
	}
	return d.getAtInto(key, 0, true, dst)
}

// getAt reads key as of snapshot snap, or with current as of the newest
// visible write.
func (d *DB) getAt(key []byte, snap base.SeqNum, current bool) ([]byte, error) {
	return d.getAtInto(key, snap, current, nil)
}

// getAtInto is getAt appending the value to dst (nil: a fresh slice).
func (d *DB) getAtInto(key []byte, snap base.SeqNum, current bool, dst []byte) ([]byte, error) {
	rs, snap := d.acquireRead(snap, current)
	if rs.readState == nil {
		return nil, ErrClosed
	}
	defer rs.unref()
	v, err := d.lookupInto(rs.readState, key, snap, nil, dst, false)
	if err == errNeedsMerge {
		if v, err = d.getMerged(key, snap, current); err == nil && dst != nil {
			v = append(dst, v...)
		}
	}
	return v, err
}

// acquireRead returns the read state a read (a point read or an
// iterator) uses, with a
// reference (nil once the DB is closed), and the sequence number it reads
// at: snap, or with current the newest visible write, loaded after the
// read state (see currentSeq).
func (d *DB) acquireRead(snap base.SeqNum, current bool) (readRef, base.SeqNum) {
	if testHookBeforeReadState != nil {
		testHookBeforeReadState()
	}
	rs := d.loadReadState()
	if testHookAfterReadState != nil {
		testHookAfterReadState()
	}
	if rs.readState != nil && current {
		snap = d.currentSeq()
	}
	return rs, snap
}

// currentSeq returns the sequence number a read of the current state uses.
//
// INVARIANT: it is loaded after the read state the read uses, never
// before. Only snapshots (d.snapshots) hold back what compactions drop, so
// a version installed between the two loads may hold, for a key, only
// entries newer than a sequence number loaded first: the compaction that
// wrote it dropped the older ones. A read with that sequence number would
// find nothing for the key. Loaded after, it covers every entry of the
// read state's version (flushes and compactions install only entries
// already visible).
func (d *DB) currentSeq() base.SeqNum { return base.SeqNum(d.visibleSeq.Load()) }

// testHookBeforeReadState, when set by a test, runs in Get and NewIter just
// before they load the read state (TestReadAcrossCompaction).
var testHookBeforeReadState func()

// testHookAfterReadState, when set by a test, runs in Get and NewIter
// between loading the read state and loading the sequence number
// (TestReadAcrossRewrite).
var testHookAfterReadState func()

// newerVlog returns the metadata of value log num in the current version,
// or nil. A read's sequence number is loaded after its read state (see
// currentSeq), so it can see pointers a garbage-collection rewrite
// committed into a memtable after recording their new value log in a
// version newer than the read's: the read finds that log here. The
// memtable holding the pointers pins the value log, so it stays as long as
// the read can reach them.
func (d *DB) newerVlog(num base.FileNum) *manifest.VlogMetadata {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.vs.Current().Vlogs[num]
}

// getMerged reads a key whose newest entry is a merge operand, through an
// iterator bounded to the key, which folds the operands with what lies
// below them.
func (d *DB) getMerged(key []byte, snap base.SeqNum, current bool) ([]byte, error) {
	upper := append(append(make([]byte, 0, len(key)+1), key...), 0)
	it, err := d.newIter(&IterOptions{LowerBound: key, UpperBound: upper}, snap, current)
	if err != nil {
		return nil, err
	}
	defer it.Close()
	if !it.First() {
		if err := it.Error(); err != nil {
			return nil, err
		}
		return nil, ErrNotFound
	}
	return append([]byte(nil), it.Value()...), it.Error()
}

// errNeedsMerge is resolve's answer when the newest entry of a key is a
// merge operand: the older entries are needed too (see getMerged).
var errNeedsMerge = fmt.Errorf("strata: merge operand")

// errPointerMoved is lookup's answer when the newest entry of a key is not
// the pointer it was asked to compare with.
var errPointerMoved = fmt.Errorf("strata: the key's newest entry changed")

// lookup finds the newest entry of key visible at snap: the memtables
// newest first, then L0 newest first, then one file per level. Range
// tombstones seen on the way (in sources at least as new as the entry
// found) decide whether the entry is deleted; older sources cannot hold a
// tombstone newer than the entry.
//
// With expect nil it returns the value (read from its value log if the
// entry is a pointer), as a slice the caller owns, or ErrNotFound; an
// expired entry (see ttl.go) is not found. With expect set it reads no
// value: if the newest entry is an unexpired pointer whose encoding equals
// expect it returns the entry's encoded metadata (nil without any), and
// otherwise errPointerMoved (garbage collection's check that a key still
// points where it did).
func (d *DB) lookup(rs *readState, key []byte, snap base.SeqNum, expect []byte) ([]byte, error) {
	return d.lookupInto(rs, key, snap, expect, nil, false)
}

// lookupInto is lookup appending the value to dst; with dst nil the value
// gets a slice of its own size. With keyOnly it reads no value either: it
// returns nil and no error when key has a visible entry (see hasAt).
func (d *DB) lookupInto(rs *readState, key []byte, snap base.SeqNum, expect, dst []byte, keyOnly bool) ([]byte, error) {
	var tomb base.SeqNum
	for _, m := range rs.memtables {
		if set := m.rangeDels(); set != nil {
			tomb = max(tomb, set.MaxCovering(key, snap))
		}
		if value, kind, seq, found := m.Get(key, snap); found {
			return d.resolve(rs.version, key, value, kind, seq, tomb, nil, expect, dst, keyOnly)
		}
	}
	v := rs.version
	l0 := v.Levels[0]
	for i := len(l0) - 1; i >= 0; i-- {
		if !l0[i].ContainsUserKey(key) {
			continue
		}
		if value, err, done := d.getFromTable(v, l0[i], key, snap, &tomb, expect, dst, keyOnly); done {
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
		if value, err, done := d.getFromTable(v, v.Levels[level][i], key, snap, &tomb, expect, dst, keyOnly); done {
			return value, err
		}
	}
	if expect != nil {
		return nil, errPointerMoved
	}
	return nil, ErrNotFound
}

// getFromTable looks key up in one table. done reports that the search is
// over (a value, a deletion or an error was found).
func (d *DB) getFromTable(v *manifest.Version, f *manifest.FileMetadata, key []byte, snap base.SeqNum, tomb *base.SeqNum, expect, dst []byte, keyOnly bool) (value []byte, err error, done bool) {
	h, err := d.tableCache.get(f)
	if err != nil {
		return nil, err, true
	}
	defer d.tableCache.release(h)
	if !h.visible(key) {
		return nil, nil, false
	}
	if h.rangeDels != nil {
		*tomb = max(*tomb, h.rangeDels.MaxCovering(key, snap))
	}
	// The entry may alias the table's mapping (see sstable.Reader.Get):
	// resolve reads it with faults caught, so that a table truncated
	// behind the DB's back is corruption, not a crash.
	defer func() {
		if err == vfs.ErrMappedFault {
			err, done = base.CorruptionErrorf(sourceName(f, ""), -1, "%v", err), true
		}
	}()
	defer vfs.EndMapped(vfs.BeginMapped(), &err)
	val, kind, seq, found, err := h.get(key, snap)
	if err != nil {
		return nil, err, true
	}
	if !found {
		return nil, nil, false
	}
	value, err = d.resolve(v, key, val, kind, seq, *tomb, f, expect, dst, keyOnly)
	if expect != nil && value != nil {
		value = slices.Clone(value) // metadata, which may alias the mapping
	}
	return value, err, true
}

// sourceName names where an entry was found, for errors: the table f, or
// source when f is nil. It is called only once an error is certain, so
// that a read does not format a file name it will not print.
func sourceName(f *manifest.FileMetadata, source string) string {
	if f == nil {
		return source
	}
	return base.MakeFilename(base.FileTypeTable, f.FileNum)
}

// resolve turns the newest visible entry of key, found in the table f (nil:
// a memtable), into lookup's result, appending a value to dst (nil: a
// fresh slice). With keyOnly it decides presence from the entry alone:
// nil and no error for a live entry, ErrNotFound otherwise.
func (d *DB) resolve(v *manifest.Version, key, value []byte, kind base.Kind, seq, tomb base.SeqNum, f *manifest.FileMetadata, expect, dst []byte, keyOnly bool) ([]byte, error) {
	var metaBytes []byte
	if kind.HasMeta() {
		meta, rest, err := base.DecodeEntryMeta(value)
		if err != nil {
			return nil, base.CorruptionErrorf(sourceName(f, "a memtable"), -1, "key %q: %v", key, err)
		}
		if meta.Expired(d.nowMillis()) {
			if expect != nil {
				return nil, errPointerMoved
			}
			return nil, ErrNotFound
		}
		metaBytes = value[:len(value)-len(rest)]
		value, kind = rest, kind.WithoutMeta()
	}
	if expect != nil {
		if seq >= tomb && kind == base.KindValuePointer && bytes.Equal(value, expect) {
			return metaBytes, nil
		}
		return nil, errPointerMoved
	}
	if seq < tomb {
		return nil, ErrNotFound
	}
	if keyOnly {
		switch kind {
		case base.KindSet, base.KindValuePointer, base.KindMerge:
			// A merge operand makes the key present whatever lies below
			// it: Merger.Merge is given the operands even with no value
			// (existing nil), so a read of the key yields a value.
			return nil, nil
		case base.KindDelete:
			return nil, ErrNotFound
		}
		return nil, fmt.Errorf("strata: key %q has an entry of kind %s, which this version cannot read", key, kind)
	}
	switch kind {
	case base.KindSet:
		if d.observer != nil {
			d.observer.ObserveRead(len(value), false)
		}
		if dst == nil {
			dst = make([]byte, 0, len(value))
		}
		return append(dst, value...), nil
	case base.KindValuePointer:
		return d.readValue(v, key, value, f, "a memtable", dst)
	case base.KindDelete:
		return nil, ErrNotFound
	case base.KindMerge:
		return nil, errNeedsMerge
	}
	return nil, fmt.Errorf("strata: key %q has an entry of kind %s, which this version cannot read", key, kind)
}

// readSeparated fetches the value a pointer found in source points to,
// as a slice the caller owns: from a value log of version v, or one
// written at commit that v does not hold yet.
func (d *DB) readSeparated(v *manifest.Version, key, ptr []byte, source string) ([]byte, error) {
	return d.readValue(v, key, ptr, nil, source, nil)
}

// readValue is readSeparated for a pointer stored in the table f, or in
// source when f is nil, appending the value to dst. The value is copied
// once: into dst, or with dst nil into a slice of its own length.
func (d *DB) readValue(v *manifest.Version, key, ptr []byte, f *manifest.FileMetadata, source string, dst []byte) ([]byte, error) {
	p, m, value, found, err := d.valueSource(v, ptr, key, dst, f, source, vlog.Ahead{})
	if err != nil {
		return nil, err
	}
	if !found {
		if value, err = d.vlogs.Value(m, p, key, dst); err != nil {
			return nil, err
		}
	}
	d.stats.vlogReads.Add(1)
	if d.observer != nil {
		d.observer.ObserveRead(len(value), true)
	}
	return value, nil
}
