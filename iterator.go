package strata

import (
	"bytes"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/lsm/merging"
	"github.com/strata-db/strata/lsm/rangedel"
	"github.com/strata-db/strata/vlog"
)

// Iterator walks the keys of the DB (or a Snapshot) in order, within
// optional bounds. It sees the state as of its creation. Key and Value are
// valid until the next positioning call. An Iterator is not safe for
// concurrent use; Close it to release the files it pins.
//
// A positioning call (First, Last, SeekGE, SeekLT, Next, Prev) that
// returns false has either run out of keys (Error is nil) or failed
// (Error says why); a loop over an iterator checks which, or lets Close
// tell: Close returns the error Error holds. Once the iterator is invalid,
// Key and Value return nil, and Next and Prev return false and keep the
// error. After Close every call reports ErrClosed: the positioning calls
// return false, Error returns ErrClosed, Key and Value return nil, and a
// second Close returns ErrClosed. After DB.Close the same holds with an
// error that matches ErrClosed and says the DB was closed.
type Iterator struct {
	db     *DB
	rs     readRef
	snap   base.SeqNum
	iter   base.InternalIterator
	dels   *rangedel.Set
	lower  []byte
	upper  []byte
	dir    int // +1 forward, -1 reverse
	valid  bool
	key    []byte
	value  []byte
	valBuf []byte
	err    error
	closed bool

	// isPtr: value holds a value pointer not yet resolved (Value fetches
	// it). held are the value logs the iterator has read, held open until
	// Close.
	isPtr bool
	held  heldVlogs
	// pastKey: after a forward merge (see iterator_merge.go) or a look
	// ahead (see lookAhead), the internal iterator is already past the
	// current key's newest entry.
	pastKey  bool
	mergeOps [][]byte
	rev      revMerge
	liveBuf  []byte // values copied from the active or a mapped value log
	// The current key's layers (see layers): the expiry of its value, or
	// of the value below its operands when merged is set.
	expiresAt int64
	merged    bool
	below     []byte
	operands  [][]byte
	// now is the clock's time (ms) for expiry during one positioning call;
	// 0 until an entry with an expiry needs it.
	now     int64
	rows    int // rows returned, and of them separated, for the policy
	sepRows int
	// vlogReads counts the values Value fetched from value logs and not
	// yet added to the DB's count (flushVlogReads): one atomic add per
	// row on a counter every scan shares cost 5% of a scan's CPU with two
	// processors scanning, the counter's cache line moving between them.
	vlogReads uint64
	// lastYield is when the iterator last let other goroutines run
	// (latencyNow; see yieldInterval).
	lastYield int64
	// mappedValues: Value may return slices of value-log mappings (see
	// IterOptions.MappedValues).
	mappedValues bool
	// ptrBuf holds the current row's value pointer once lookAhead has
	// stepped past its entry; ahead is the next row's record, if known.
	// fetched: Value has read a separated value (lookAhead locates
	// records only for a scan that reads them).
	ptrBuf  []byte
	ahead   vlog.Ahead
	fetched bool
	// The look ahead decodes the next row's pointer and finds its value
	// log; fetch reuses that for the row, instead of decoding and looking
	// up again, when the row's pointer has the same bytes (same record):
	// aheads[nextAhead] is what the last look ahead found, the other one
	// what the one before it found (for the current row).
	aheads    [2]aheadPtr
	nextAhead int
}

// aheadPtr is a pointer a look ahead decoded, its bytes, and the value
// log it points into, held by the iterator (ok false: none).
type aheadPtr struct {
	raw []byte
	p   vlog.Pointer
	rv  iterVlog
	ok  bool
}

// NewIter returns an iterator over the current state of the DB.
func (d *DB) NewIter(o *IterOptions) (*Iterator, error) {
	if err := d.checkOpen(); err != nil {
		return nil, err
	}
	return d.newIter(o, 0, true)
}

// newIter returns an iterator as of snapshot snap, or with current as of
// the newest visible write (see currentSeq).
func (d *DB) newIter(o *IterOptions, snap base.SeqNum, current bool) (*Iterator, error) {
	it := &Iterator{db: d, dir: 1}
	// extractor, when not "", names the prefix extractor whose filters
	// rule tables out for o.Prefix.
	var extractor string
	if o != nil {
		// Inverted bounds are a caller's mistake (often swapped arguments):
		// say so rather than iterate nothing. Equal bounds are an empty range.
		if o.LowerBound != nil && o.UpperBound != nil && base.Compare(o.LowerBound, o.UpperBound) > 0 {
			return nil, fmt.Errorf("strata: iterator bounds are inverted: LowerBound %q is above UpperBound %q", o.LowerBound, o.UpperBound)
		}
		if o.LowerBound != nil {
			it.lower = append([]byte{}, o.LowerBound...)
		}
		if o.UpperBound != nil {
			it.upper = append([]byte{}, o.UpperBound...)
		}
		if o.Prefix != nil {
			it.lower, it.upper = prefixBounds(append([]byte{}, o.Prefix...), it.lower, it.upper)
			extractor = d.opts.prefixFilter(o.Prefix)
		}
		it.mappedValues = o.MappedValues
	}
	rs, snap := d.acquireRead(snap, current)
	if rs.readState == nil {
		return nil, ErrClosed
	}
	it.snap = snap
	var (
		iters []base.InternalIterator
		tombs []base.RangeTombstone
	)
	fail := func(err error) (*Iterator, error) {
		for _, i := range iters {
			i.Close()
		}
		rs.unref()
		return nil, err
	}
	for _, m := range rs.memtables {
		iters = append(iters, m.NewIter())
		if m.rangeDelCount.Load() > 0 {
			tombs = append(tombs, m.RangeTombstones(snap)...)
		}
	}
	// The overlap tests below treat the upper bound as inclusive: they only
	// decide which files to consider, so erring wide is harmless.
	v := rs.version
	for i := len(v.Levels[0]) - 1; i >= 0; i-- {
		f := v.Levels[0][i]
		if !f.OverlapsRange(it.lower, it.upper) {
			continue
		}
		if extractor != "" {
			// A table ruled out still contributes its range deletions.
			ok, err := d.tableMayHoldPrefix(f, extractor, o.Prefix, &tombs)
			if err != nil {
				return fail(err)
			}
			if !ok {
				continue
			}
		}
		it, err := d.newFileIter(f)
		if err != nil {
			return fail(err)
		}
		iters = append(iters, it)
		if f.HasRangeDels && extractor == "" {
			h := it.(*tableIter).h
			tombs = append(tombs, h.tombstones()...)
		}
	}
	for level := 1; level < manifest.NumLevels; level++ {
		files := v.Levels[level]
		if len(files) == 0 {
			continue
		}
		if extractor != "" {
			// The few tables that overlap the prefix's range, less those
			// whose filters rule the prefix out.
			var kept []*manifest.FileMetadata
			for _, f := range v.Overlaps(level, it.lower, it.upper) {
				ok, err := d.tableMayHoldPrefix(f, extractor, o.Prefix, &tombs)
				if err != nil {
					return fail(err)
				}
				if ok {
					kept = append(kept, f)
				}
			}
			if len(kept) > 0 {
				iters = append(iters, merging.NewLevelIter(kept, d.newFileIter, it.lower, it.upper))
			}
			continue
		}
		for _, f := range v.Overlaps(level, it.lower, it.upper) {
			if !f.HasRangeDels {
				continue
			}
			h, err := d.tableCache.get(f)
			if err != nil {
				return fail(err)
			}
			tombs = append(tombs, h.tombstones()...)
			d.tableCache.release(h)
		}
		iters = append(iters, merging.NewLevelIter(files, d.newFileIter, it.lower, it.upper))
	}
	it.rs = rs
	it.iter = merging.New(iters...)
	it.dels = rangedel.Build(tombs)
	d.iters.Add(1)
	return it, nil
}

// tableMayHoldPrefix asks table f's Bloom filter whether it may hold a key
// of prefix by the named extractor, and appends its range deletions to
// tombs either way (a table ruled out for its points may still delete
// keys of the prefix in older tables).
func (d *DB) tableMayHoldPrefix(f *manifest.FileMetadata, extractor string, prefix []byte, tombs *[]base.RangeTombstone) (bool, error) {
	h, err := d.tableCache.get(f)
	if err != nil {
		return false, err
	}
	defer d.tableCache.release(h)
	if f.HasRangeDels {
		*tombs = append(*tombs, h.tombstones()...)
	}
	d.stats.prefixChecked.Add(1)
	if h.reader.MayContainPrefix(extractor, prefix) {
		return true, nil
	}
	d.stats.prefixSkipped.Add(1)
	return false, nil
}

// newFileIter opens an iterator over one table; closing it releases the
// table.
func (d *DB) newFileIter(f *manifest.FileMetadata) (base.InternalIterator, error) {
	h, err := d.tableCache.get(f)
	if err != nil {
		return nil, err
	}
	return &tableIter{InternalIterator: h.newIter(), tc: d.tableCache, h: h}, nil
}

// deleted reports whether the visible entry k, with value v, is deleted
// (or has expired) for this iterator.
func (i *Iterator) deleted(k base.InternalKey, v []byte) bool {
	if k.Kind() == base.KindDelete {
		return true
	}
	if k.Kind().HasMeta() {
		meta, _, err := base.DecodeEntryMeta(v)
		if err != nil {
			i.err = base.CorruptionErrorf("an SSTable", -1, "key %q: %v", k.UserKey, err)
			return true
		}
		if meta.ExpiresAt != 0 {
			if i.now == 0 {
				i.now = i.db.nowMillis()
			}
			if meta.Expired(i.now) {
				return true
			}
		}
	}
	return i.dels != nil && i.dels.Covers(k.UserKey, k.SeqNum(), i.snap)
}

// expiryOf returns the expiry of entry k with value v (0: none); deleted
// has checked its metadata.
func expiryOf(k base.InternalKey, v []byte) int64 {
	if !k.Kind().HasMeta() {
		return 0
	}
	m, _, _ := base.DecodeEntryMeta(v)
	return m.ExpiresAt
}

// payload returns the value of entry k without its metadata.
func payload(k base.InternalKey, v []byte) []byte {
	if k.Kind().HasMeta() {
		if _, rest, err := base.DecodeEntryMeta(v); err == nil {
			return rest
		}
	}
	return v
}

// checkKind rejects kinds the iterator cannot return.
func (i *Iterator) checkKind(k base.InternalKey) bool {
	switch k.Kind() {
	case base.KindSet, base.KindDelete, base.KindValuePointer, base.KindSetMeta, base.KindValuePointerMeta, base.KindMerge:
		return true
	}
	i.err = fmt.Errorf("strata: key %q has an entry of kind %s, which this version cannot read", k.UserKey, k.Kind())
	i.valid = false
	return false
}

// findNext moves forward from the internal iterator's position to the next
// visible, live user key. With skip, entries of i.key are passed over first.
func (i *Iterator) findNext(skip bool) bool {
	i.dir = 1
	i.pastKey = false
	i.ahead = vlog.Ahead{}
	scanning := skip // called by Next: a scan is under way
	for ok := i.iter.Valid(); ok; ok = i.iter.Next() {
		k := i.iter.Key()
		if i.upper != nil && base.Compare(k.UserKey, i.upper) >= 0 {
			break
		}
		if k.SeqNum() > i.snap {
			continue
		}
		if skip && base.Equal(k.UserKey, i.key) {
			continue
		}
		if !i.checkKind(k) {
			return false
		}
		// k is the newest visible entry of its user key.
		i.key = append(i.key[:0], k.UserKey...)
		if i.deleted(k, i.iter.Value()) {
			if i.err != nil {
				i.valid = false
				return false
			}
			skip = true
			continue
		}
		if k.Kind() == base.KindMerge {
			return i.mergeForward(k, i.iter.Value())
		}
		v := i.iter.Value()
		i.value = payload(k, v)
		i.isPtr = k.Kind().IsPointer()
		i.expiresAt, i.merged = expiryOf(k, v), false
		i.valid = true
		i.countRow()
		if scanning && i.isPtr {
			i.lookAhead()
		}
		return true
	}
	i.valid = false
	i.err = i.iter.Error()
	return false
}

// lookAhead steps a forward scan's internal iterator past the current
// row, whose value is a pointer, onto the next entry, and when that entry
// is the newest visible one of the next key and a pointer into a mapped
// value log (a finished one, or the one being written at commit, for
// records its flusher has written), notes where its record is (ahead):
// Value then prefetches it
// while it verifies this row's value, so the next row does not wait for
// memory (see vlog.Reader.AppendValueAhead). Next goes on from there as
// after a merge (pastKey); the step is one Next would take anyway, and a
// failed step shows when Next is called. The pointer is copied first: the
// step may leave the block it lies in.
func (i *Iterator) lookAhead() {
	i.ptrBuf = append(i.ptrBuf[:0], i.value...)
	i.value = i.ptrBuf
	i.pastKey = true
	i.nextAhead ^= 1 // the next row's becomes the current row's
	next := &i.aheads[i.nextAhead]
	next.ok = false
	if !i.iter.Next() {
		return
	}
	k := i.iter.Key()
	if !k.Kind().IsPointer() || k.SeqNum() > i.snap || base.Equal(k.UserKey, i.key) ||
		(i.upper != nil && base.Compare(k.UserKey, i.upper) >= 0) {
		return
	}
	raw := payload(k, i.iter.Value())
	p, err := vlog.DecodePointer(raw)
	if err != nil {
		return // Next reports it, if the entry is the next row
	}
	rv, ok := i.held.get(p.FileNum)
	if !ok {
		// A value log the scan has not read from yet: hold it now if the
		// scan reads values and the log is open; a look ahead opens no
		// file (a value log in an object store takes a round trip), and a
		// scan of keys alone holds none.
		if !i.fetched {
			return
		}
		m := i.rs.version.Vlogs[p.FileNum]
		if m == nil {
			// Written at commit and not in the read state's version: the
			// value log being written (read through its LiveWriter, which
			// the look ahead need not hold: a prefetch cannot fault) or
			// one finished since (read as the version's are).
			lw := i.db.live.get(p.FileNum)
			if lw == nil {
				return
			}
			if m = lw.Finished(); m == nil {
				i.ahead = lw.Ahead(p)
				return
			}
		}
		h, open := i.db.vlogs.AcquireOpen(m)
		if !open {
			return
		}
		rv = i.keepVlog(p.FileNum, h)
	}
	if rv.ra == nil {
		i.ahead = rv.h.Reader.Ahead(p)
	}
	next.raw = append(next.raw[:0], raw...)
	next.p, next.rv, next.ok = p, rv, true
}

func (i *Iterator) countRow() {
	i.rows++
	if i.isPtr {
		i.sepRows++
	}
	if i.rows%yieldCheckRows == 0 {
		i.flushVlogReads()
		if now := latencyNow(); now-i.lastYield >= yieldInterval {
			i.lastYield = now
			if int(i.db.iters.Load()) > runtime.GOMAXPROCS(0) {
				runtime.Gosched()
			}
		}
	}
}

// A scan lets other goroutines run (runtime.Gosched) once it has run for
// yieldInterval since it last did, looking at the clock every
// yieldCheckRows rows, when the database has more iterators open than the
// process has processors. Go preempts a running goroutine only after 10
// ms, so with more busy goroutines than processors an operation that
// became runnable behind scans waited a time slice or two: kvbench ycsb-e
// (95% scans of up to 100 rows), 4 threads on 2 cores, 200,000 x 4 KiB,
// had scans' p99.9 at 24-28 ms and writes' at 11-18 ms; yielding every 10
// us took them to 1.5-1.6 ms and 0.15-0.45 ms (three runs each) at the
// same throughput (21-27k ops/s before, 29-32k after). Without the
// condition a lone scan paid: a yield wakes the idle processor, which
// takes the goroutine over with cold caches (seekrandom of 4 KiB values,
// one thread, fell from 0.79-0.89M to 0.49-0.60M rows/s). Yielding that
// often cost the scans themselves: a scan of 50 rows (4 KiB values) went
// to the back of the run queue three times, behind other scans that then
// refilled the caches. Checking every 64 rows, yielding after 50 us, the
// same workload after a fill of its keys (kvbench fillrandom,ycsb-e) ran
// 1.24-1.40M rows/s instead of 1.16-1.18M, its scans' p50 at 61-71 us
// instead of 150-162 us, p99 at 0.66-0.78 ms instead of 0.45-0.50 ms
// (Badger's: 2.1-2.3 ms), p99.9 about the same (1.6-1.9 ms); not yielding
// within such scans at all put p99.9 back at 22-24 ms.
const (
	yieldCheckRows = 64
	yieldInterval  = int64(50 * time.Microsecond)
)

// findPrev moves backward from the internal iterator's position to the
// previous visible, live user key. In reverse, the versions of a user key
// arrive oldest first, so the last visible one seen is the newest; the
// search stops once it has a live candidate and reaches a smaller key,
// leaving the internal iterator on that smaller key's last entry.
func (i *Iterator) findPrev() bool {
	i.dir = -1
	i.pastKey = false
	i.ahead = vlog.Ahead{}
	found, started := false, false
	r := &i.rev
	for ok := i.iter.Valid(); ok; ok = i.iter.Prev() {
		k := i.iter.Key()
		if i.lower != nil && base.Compare(k.UserKey, i.lower) < 0 {
			break
		}
		if k.SeqNum() > i.snap {
			continue
		}
		if found && base.Compare(k.UserKey, i.key) < 0 {
			break
		}
		if !i.checkKind(k) {
			return false
		}
		if !started || !base.Equal(k.UserKey, r.key) {
			r.reset(k.UserKey)
			started = true
		}
		v := i.iter.Value()
		if i.deleted(k, v) {
			if i.err != nil {
				i.valid = false
				return false
			}
			found, r.has, r.ops = false, false, r.ops[:0]
			continue
		}
		found = true
		i.key = append(i.key[:0], k.UserKey...)
		if k.Kind() == base.KindMerge {
			// A newer operand on what came before (oldest first).
			r.ops = append(r.ops, slices.Clone(v))
			continue
		}
		r.base = append(r.base[:0], payload(k, v)...)
		r.ptr, r.has, r.ops = k.Kind().IsPointer(), true, r.ops[:0]
		r.expiresAt = expiryOf(k, v)
	}
	if err := i.iter.Error(); err != nil {
		i.err = err
		i.valid = false
		return false
	}
	if !found {
		i.valid = false
		return false
	}
	if len(r.ops) > 0 {
		return i.resolveRevMerge(r)
	}
	i.valBuf = append(i.valBuf[:0], r.base...)
	i.value, i.isPtr, i.valid = i.valBuf, r.ptr, true
	i.expiresAt, i.merged = r.expiresAt, false
	i.countRow()
	return true
}

// usable reports whether the iterator may move; an iterator closed, or of
// a DB closed, becomes invalid with an error matching ErrClosed.
func (i *Iterator) usable() bool {
	if i.closed || i.db.closed.Load() {
		i.setClosedErr()
		return false
	}
	i.err = nil
	i.now = 0 // read the clock again, once, if an entry has an expiry
	return true
}

// setClosedErr makes the iterator, closed or of a DB closed, invalid with
// an error matching ErrClosed.
func (i *Iterator) setClosedErr() {
	i.err = ErrClosed
	if !i.closed {
		i.err = errIterDBClosed
	}
	i.valid = false
}

var errIterDBClosed = fmt.Errorf("strata: iterator used after DB.Close: %w", ErrClosed)

// stay is Next or Prev of an invalid iterator: it does not move, and
// keeps the error that made it invalid (nil at the end of the keys),
// unless it or its DB was closed since.
func (i *Iterator) stay() bool {
	if i.closed || i.db.closed.Load() {
		i.setClosedErr()
	}
	return false
}

// SeekGE moves to the first key >= key (and >= the lower bound).
func (i *Iterator) SeekGE(key []byte) bool {
	if !i.usable() {
		return false
	}
	defer i.db.stats.latency.iterSeek.since(latencyNow())
	if i.lower != nil && base.Compare(key, i.lower) < 0 {
		key = i.lower
	}
	if i.upper != nil && base.Compare(key, i.upper) >= 0 {
		i.valid = false
		return false
	}
	i.iter.SeekGE(key)
	return i.findNext(false)
}

// SeekLT moves to the last key < key (and < the upper bound).
func (i *Iterator) SeekLT(key []byte) bool {
	if !i.usable() {
		return false
	}
	defer i.db.stats.latency.iterSeek.since(latencyNow())
	if i.upper != nil && base.Compare(key, i.upper) > 0 {
		key = i.upper
	}
	if i.lower != nil && base.Compare(key, i.lower) <= 0 {
		i.valid = false
		return false
	}
	i.iter.SeekLT(key)
	return i.findPrev()
}

// SeekLE moves to the last key <= key (and within the bounds): the key
// itself when it is there, else the one before it. It is SeekLT of key's
// immediate successor (key followed by a zero byte), in reverse as SeekLT
// is, so Next and Prev go on from it as after SeekLT.
func (i *Iterator) SeekLE(key []byte) bool {
	succ := make([]byte, len(key)+1) // the iterator may keep the seek key
	copy(succ, key)
	return i.SeekLT(succ)
}

// First moves to the first key (>= the lower bound).
func (i *Iterator) First() bool {
	if !i.usable() {
		return false
	}
	if i.lower != nil {
		return i.SeekGE(i.lower) // timed there
	}
	defer i.db.stats.latency.iterSeek.since(latencyNow())
	i.iter.First()
	return i.findNext(false)
}

// Last moves to the last key (< the upper bound).
func (i *Iterator) Last() bool {
	if !i.usable() {
		return false
	}
	if i.upper != nil {
		return i.SeekLT(i.upper) // timed there
	}
	defer i.db.stats.latency.iterSeek.since(latencyNow())
	i.iter.Last()
	return i.findPrev()
}

// Next moves to the next key. On an invalid iterator it returns false.
func (i *Iterator) Next() bool {
	if !i.valid {
		return i.stay()
	}
	if !i.usable() {
		return false
	}
	switch {
	case i.dir < 0:
		// The internal iterator sits before the current key's entries.
		i.iter.SeekGE(i.key)
	case i.pastKey:
		// A merge read the key's entries, or lookAhead stepped past the
		// current one: it sits after the current key's newest entry.
	default:
		i.iter.Next()
	}
	return i.findNext(true)
}

// Prev moves to the previous key. On an invalid iterator it returns false.
func (i *Iterator) Prev() bool {
	if !i.valid {
		return i.stay()
	}
	if !i.usable() {
		return false
	}
	if i.dir > 0 {
		i.iter.SeekLT(i.key)
	}
	return i.findPrev()
}

// Valid reports whether the iterator is positioned at a key.
func (i *Iterator) Valid() bool { return i.valid && !i.dbClosed() }

// dbClosed reports whether the DB was closed under a valid iterator, and
// if so makes it invalid with an error matching ErrClosed, as its next
// positioning call would: Valid, Key, Value and Error then agree.
func (i *Iterator) dbClosed() bool {
	if i.db.closed.Load() && !i.closed {
		i.setClosedErr()
		return true
	}
	return false
}

// Key returns the current key, valid until the next positioning call, or
// nil when the iterator is invalid.
func (i *Iterator) Key() []byte {
	if !i.valid || i.dbClosed() {
		return nil
	}
	return i.key
}

// Value returns the current value, valid until the next positioning call,
// or nil when the iterator is invalid.
// The slice may share memory with the block or value cache, or with a
// value log's mapping under IterOptions.MappedValues (then it must not be
// read after Close either): treat it as read-only, and copy it to keep it.
//
// A separated value is read from its value log on the first call (forward
// scans read ahead, so adjacent values come from one read); if that read
// fails, Value returns nil, the iterator becomes invalid and Error says
// why. After DB.Close, Value of a separated value not yet read fails with
// ErrClosed the same way.
func (i *Iterator) Value() []byte {
	if !i.valid {
		return nil
	}
	if i.dbClosed() {
		i.value = nil
		return nil
	}
	if !i.isPtr {
		return i.value
	}
	v, err := i.fetch(i.value)
	if err != nil {
		i.err, i.valid, i.value = err, false, nil
		return nil
	}
	i.vlogReads++
	i.value, i.isPtr = v, false
	return v
}

// flushVlogReads adds the value-log reads counted since the last flush to
// the DB's Metrics.ValueLogs.Reads. Done every yieldCheckRows rows and at
// Close, so the metric trails a scan by fewer than that many reads.
func (i *Iterator) flushVlogReads() {
	if i.vlogReads > 0 {
		i.db.stats.vlogReads.Add(i.vlogReads)
		i.vlogReads = 0
	}
}

// fetch reads the value a pointer points to.
func (i *Iterator) fetch(ptr []byte) ([]byte, error) {
	i.fetched = true
	var (
		p  vlog.Pointer
		rv iterVlog
	)
	if c := &i.aheads[i.nextAhead^1]; c.ok && bytes.Equal(ptr, c.raw) {
		p, rv = c.p, c.rv // decoded and found by the look ahead (see lookAhead)
	} else {
		var (
			m     *manifest.VlogMetadata
			v     []byte
			found bool
			err   error
		)
		p, m, v, found, err = i.db.valueSource(i.rs.version, ptr, i.key, i.liveBuf[:0], nil, "an SSTable", i.ahead)
		if err != nil {
			return nil, err
		}
		if found {
			i.liveBuf = v
			return v, nil
		}
		if rv, err = i.vlog(m); err != nil {
			return nil, err
		}
	}
	if rv.ra != nil {
		return rv.ra.Get(p, i.key)
	}
	// A mapped value log needs no read-ahead: the value is verified in the
	// mapping and copied to the one buffer the iterator reuses, or, with
	// mappedValues, returned in the mapping, which the handle keeps until
	// Close.
	if i.mappedValues {
		if v, ok, err := rv.h.Reader.MappedValueAhead(p, i.key, i.ahead); ok {
			return v, err
		}
	}
	v, err := rv.h.Reader.AppendValueAhead(i.liveBuf[:0], p, i.key, i.ahead)
	if err != nil {
		return nil, err
	}
	i.liveBuf = v
	return v, nil
}

// vlog returns the value log m describes, opened for the iterator's reads
// the first time and held until Close.
func (i *Iterator) vlog(m *manifest.VlogMetadata) (iterVlog, error) {
	if rv, ok := i.held.get(m.FileNum); ok {
		return rv, nil
	}
	h, err := i.db.vlogs.Acquire(m)
	if err != nil {
		return iterVlog{}, err
	}
	return i.keepVlog(m.FileNum, h), nil
}

// keepVlog holds h, value log num, for the iterator's reads until Close.
func (i *Iterator) keepVlog(num base.FileNum, h vlog.Handle) iterVlog {
	rv := iterVlog{h: h}
	if !h.Reader.Mapped() {
		rv.ra = h.Reader.NewReadAhead(i.db.opts.ValueLogReadAhead)
	}
	i.held.add(num, rv)
	return rv
}

// heldVlogs are the value logs an iterator holds, by number. A scan's rows
// point into value logs at random (they hold values in write order), so
// every row looks its log up: through a short list while the iterator
// holds at most heldVlogsList logs (a scan of a few hundred MiB holds a
// dozen), which costs less than hashing into a map (kvbench ycsb-e, 4
// threads: the map's lookups and growth took 3% of the time; an
// open-addressing table measured no better than the list there), and
// through a map beyond, so that a long scan of a large database does not
// look through hundreds.
type heldVlogs struct {
	list  []heldVlog
	byNum map[base.FileNum]iterVlog // instead of list, once it would outgrow heldVlogsList
}

type heldVlog struct {
	num base.FileNum
	rv  iterVlog
}

const heldVlogsList = 64

// get returns value log num if it is held.
func (hs *heldVlogs) get(num base.FileNum) (iterVlog, bool) {
	if hs.byNum != nil {
		rv, ok := hs.byNum[num]
		return rv, ok
	}
	for j := range hs.list {
		if hs.list[j].num == num {
			return hs.list[j].rv, true
		}
	}
	return iterVlog{}, false
}

// add holds value log num, which is not held yet.
func (hs *heldVlogs) add(num base.FileNum, rv iterVlog) {
	switch {
	case hs.byNum != nil:
	case len(hs.list) < heldVlogsList:
		if hs.list == nil {
			hs.list = make([]heldVlog, 0, 16)
		}
		hs.list = append(hs.list, heldVlog{num, rv})
		return
	default:
		hs.byNum = make(map[base.FileNum]iterVlog, 2*heldVlogsList)
		for _, e := range hs.list {
			hs.byNum[e.num] = e.rv
		}
		hs.list = nil
	}
	hs.byNum[num] = rv
}

// len returns how many value logs are held.
func (hs *heldVlogs) len() int { return len(hs.list) + len(hs.byNum) }

// each calls f with every held value log.
func (hs *heldVlogs) each(f func(iterVlog)) {
	for _, e := range hs.list {
		f(e.rv)
	}
	for _, rv := range hs.byNum {
		f(rv)
	}
}

// iterVlog is a value log an iterator reads, held open until it closes;
// ra reads ahead in a value log that is not mapped.
type iterVlog struct {
	h  vlog.Handle
	ra *vlog.ReadAhead
}

// Error returns the error that made the last positioning call (or Value)
// fail, if any; ErrClosed after Close.
func (i *Iterator) Error() error {
	i.dbClosed()
	return i.err
}

// Close releases the iterator and returns the error Error holds, if any,
// or else an error closing what it read: a scan that stopped early because
// a read failed does not close as if it had reached the end. Closing
// twice returns ErrClosed.
func (i *Iterator) Close() error {
	if i.closed {
		return ErrClosed
	}
	i.dbClosed()
	iterErr := i.err
	i.closed = true
	i.valid = false
	i.err = ErrClosed
	i.db.iters.Add(-1)
	i.flushVlogReads()
	if o := i.db.observer; o != nil && i.rows > 0 {
		o.ObserveScan(i.rows, i.sepRows)
	}
	err := i.iter.Close()
	i.held.each(func(rv iterVlog) { i.db.vlogs.Release(rv.h) })
	i.held = heldVlogs{}
	i.rs.unref()
	i.rs = readRef{}
	if iterErr != nil {
		return iterErr
	}
	return err
}
