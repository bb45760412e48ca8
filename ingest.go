package strata

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"

	"github.com/cespare/xxhash/v2"
	"github.com/strata-db/strata/compaction"
	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/lsm/sstable"
	"github.com/strata-db/strata/vfs"
	"github.com/strata-db/strata/vlog"
)

// Ingest adds the external tables at paths, written by TableWriter (each
// with its value log, if it has one), to the DB atomically: a reader sees
// all of their keys or none, and once Ingest returns they are durable and
// newer than every write acknowledged before the call. The tables must not
// overlap one another. Like Sync, Ingest makes every write acknowledged
// before it durable: a crash that keeps the ingest keeps them.
//
// Writes go on while Ingest works; they wait only while the WAL is
// synced and one manifest edit written. The files' contents are verified
// first (every block and value-log record checksum, every pointer against
// its record), and the tables are written into the DB (a pass over keys
// and pointers, cut at TargetFileSize; values stay where they are, since
// the value logs are hard-linked, or copied where the filesystem cannot
// link), all outside the DB's locks. The memtables are flushed only if
// one of them holds a key in the tables' ranges (all of them with the WAL
// off or during a bulk load, whose writes only a flush makes durable).
// Then, in commit order, the WAL is synced, the tables get the next
// sequence number (their merge operands, which IngestRange stacks above a
// value, the next ones) as an offset recorded in the manifest
// (FileMetadata.SeqOffset), not written into them, and one manifest edit
// adds them, each at the deepest level where nothing above overlaps it.
// Automatic compactions pause while the tables are placed.
//
// The DB takes the data over: on success the files at paths and their
// value logs are removed. On an error the DB is as it was and the files
// are left in place. ErrReadOnly on a read-only DB, ErrClosed after Close.
func (d *DB) Ingest(paths []string) error {
	if err := d.checkWritable(); err != nil {
		return err
	}
	if testHookEntry != nil {
		testHookEntry("ingest")
	}
	if len(paths) == 0 {
		return nil
	}
	ext, err := openExternalTables(d.fs, paths)
	if err != nil {
		return err
	}
	defer closeExternalTables(ext)
	prep, err := d.prepareIngest(ext)
	if err != nil {
		return err
	}
	defer func() {
		if !prep.installed {
			prep.remove(d)
		}
	}()
	// Memtables that hold keys in the tables' ranges are flushed now,
	// while writes go on; the leader checks again and flushes only what
	// writes put there in between.
	if d.memtablesOverlap(prep.spans) {
		if err := d.flush(); err != nil {
			return err
		}
	}

	d.compactMu.Lock()
	defer d.compactMu.Unlock()
	// Close may have run while this call waited for compactMu.
	if err := d.checkOpen(); err != nil {
		return err
	}
	d.mu.Lock()
	d.compactions.manual++
	defer func() {
		d.mu.Lock()
		d.compactions.manual--
		d.maybeScheduleCompactionLocked()
		d.mu.Unlock()
	}()
	// No compaction may write into the levels while the tables are placed.
	for d.compactions.running > 0 {
		d.cond.Wait()
	}
	err = d.backgroundErrorLocked()
	d.mu.Unlock()
	if err != nil {
		return err
	}

	// The leader syncs the WAL; most of what that sync would write (a
	// memtable's worth of writes made without Sync, older WALs still
	// being sealed) is made durable here, while writes go on.
	d.presyncWAL()
	w := writerPool.Get().(*commitWriter)
	*w = commitWriter{op: opIngest, ingest: prep}
	w.cond.L = &d.commit.mu
	if err := d.runWriter(w); err != nil {
		return err
	}
	d.stats.ingests.Add(1)
	for _, t := range ext {
		_ = d.fs.Remove(t.path)
		if t.vlog != nil {
			_ = d.fs.Remove(ValueLogPath(t.path))
		}
	}
	return nil
}

// ingestPrep is an Ingest's tables written into the DB, not yet in its
// manifest: their entries carry the sequence numbers of the external
// tables (0, and the layers of merge operands above it), their pointers
// the value logs' numbers in the DB.
type ingestPrep struct {
	metas []*manifest.FileMetadata
	vlogs []*manifest.VlogMetadata
	// spans are the external tables' key ranges, [lo, hi] inclusive.
	spans []keySpan
	// layers is the largest sequence number of the tables' entries.
	layers base.SeqNum
	// installed: the manifest edit that adds the files was written, or
	// may have been (the files stay then).
	installed bool
}

type keySpan struct{ lo, hi []byte }

// remove deletes the files of an ingest that did not install them.
func (p *ingestPrep) remove(d *DB) {
	for _, m := range p.metas {
		d.removeFile(base.FileTypeTable, m.FileNum)
	}
	for _, vm := range p.vlogs {
		d.removeFile(base.FileTypeVlog, vm.FileNum)
	}
}

// prepareIngest links the external tables' value logs into the DB and
// writes the tables into it, outside every lock of the DB.
func (d *DB) prepareIngest(tables []*externalTable) (_ *ingestPrep, err error) {
	p := &ingestPrep{}
	defer func() {
		if err != nil {
			p.remove(d)
		}
	}()
	for _, t := range tables {
		p.spans = append(p.spans, keySpan{t.smallest, t.largest})
		p.layers = max(p.layers, t.layers)
		var vlogNum base.FileNum
		if t.vlog != nil {
			vlogNum = d.vs.NewFileNum()
			vm := &manifest.VlogMetadata{FileNum: vlogNum, Size: t.vlog.Size, Records: t.vlog.Records, ValueBytes: t.vlog.ValueBytes}
			if err := vfs.LinkOrCopy(d.fs, ValueLogPath(t.path), d.path(base.FileTypeVlog, vlogNum)); err != nil {
				return nil, fmt.Errorf("strata: ingest: %w", err)
			}
			p.vlogs = append(p.vlogs, vm)
		}
		ms, err := d.rewriteExternal(t, vlogNum)
		if err != nil {
			return nil, err
		}
		p.metas = append(p.metas, ms...)
	}
	if err := syncDirErr(d); err != nil {
		return nil, fmt.Errorf("strata: ingest: %w", err)
	}
	return p, nil
}

// presyncWAL syncs the older WALs (waiting for the sealer), what the
// value log written at commit and the current WAL hold, outside the
// commit leader. It is only an optimization, and it races the leader's
// rotations (the WAL it syncs may be retired and closed meanwhile), so it
// reports nothing: a sync that failed on a file still in use left that
// file's error, which the leader's own sync returns.
func (d *DB) presyncWAL() {
	if d.opts.DisableWAL {
		return
	}
	if d.waitAllSealed() != nil {
		return
	}
	d.live.presync()
	if wf := d.walFile.Load(); wf != nil {
		if testHookPresync != nil {
			testHookPresync(wf)
		}
		_ = wf.Sync()
	}
}

// testHookPresync, when set (by TestIngestPresyncOfRetiredWAL), runs in
// presyncWAL between loading the current WAL and syncing it.
var testHookPresync func(*walFile)

// memtablesOverlap reports whether a memtable not yet flushed holds an
// entry or a range deletion in one of spans.
func (d *DB) memtablesOverlap(spans []keySpan) bool {
	d.mu.Lock()
	mems := append([]*memTable{d.mem}, d.imm...)
	for _, m := range mems {
		m.ref()
	}
	d.mu.Unlock()
	overlap := false
	for _, m := range mems {
		overlap = overlap || m.overlaps(spans)
		m.unref()
	}
	return overlap
}

// overlaps reports whether m holds an entry or a range deletion in one of
// spans. Safe beside writes to m.
func (m *memTable) overlaps(spans []keySpan) bool {
	if m.Empty() {
		return false
	}
	it := m.NewIter()
	defer it.Close()
	for _, s := range spans {
		if it.SeekGE(s.lo) && base.Compare(it.Key().UserKey, s.hi) <= 0 {
			return true
		}
	}
	if m.HasRangeDels() {
		for _, t := range m.RangeTombstones(base.SeqNumMax) {
			for _, s := range spans {
				if base.Compare(t.Start, s.hi) <= 0 && base.Compare(t.End, s.lo) > 0 {
					return true
				}
			}
		}
	}
	return false
}

// externalTable is one verified TableWriter table.
type externalTable struct {
	path              string
	f                 vfs.File
	r                 *sstable.Reader
	smallest, largest []byte
	// layers is the highest sequence number of its entries: of the
	// newest merge operand above a value, 0 without operands.
	layers base.SeqNum
	// vlog describes its value log (nil without one); FileNum is set when
	// the file is linked into the DB.
	vlog *manifest.VlogMetadata
}

// openExternalTables opens and verifies the tables at paths and returns
// them sorted by key; on an error nothing stays open.
func openExternalTables(fs vfs.FS, paths []string) (tables []*externalTable, err error) {
	defer func() {
		if err != nil {
			closeExternalTables(tables)
			tables = nil
		}
	}()
	for _, p := range paths {
		t, err := openExternalTable(fs, p)
		if err != nil {
			return tables, err
		}
		tables = append(tables, t)
	}
	slices.SortFunc(tables, func(a, b *externalTable) int { return base.Compare(a.smallest, b.smallest) })
	for i := 1; i < len(tables); i++ {
		if base.Compare(tables[i-1].largest, tables[i].smallest) >= 0 {
			return tables, fmt.Errorf("strata: ingest: %s and %s overlap (keys %q to %q and %q to %q)",
				tables[i-1].path, tables[i].path, tables[i-1].smallest, tables[i-1].largest, tables[i].smallest, tables[i].largest)
		}
	}
	return tables, nil
}

func closeExternalTables(tables []*externalTable) {
	for _, t := range tables {
		_ = t.r.Close()
		_ = t.f.Close()
	}
}

// openExternalTable opens the table at path and checks all of it: the
// marker of a TableWriter table, every block, every entry's kind, sequence
// number and order, and every pointer against a record of its value log.
func openExternalTable(fs vfs.FS, path string) (_ *externalTable, err error) {
	f, size, err := openSized(fs, path)
	if err != nil {
		return nil, err
	}
	r, err := sstable.NewReader(f, size, sstable.ReaderOptions{FileName: path})
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("strata: ingest: %w", err)
	}
	t := &externalTable{path: path, f: f, r: r}
	defer func() {
		if err != nil {
			_ = r.Close()
			_ = f.Close()
		}
	}()
	if v := r.Properties().User[externalProp]; v != externalVersion {
		if v == "" {
			return nil, fmt.Errorf("strata: ingest: %s was not written by a TableWriter", path)
		}
		if n, err := strconv.ParseUint(v, 10, 32); err == nil && n > externalVersionNum {
			return nil, fmt.Errorf("strata: ingest: %w", &base.NewerFormatError{File: path, What: "external table", Version: n, Newest: externalVersionNum})
		}
		return nil, fmt.Errorf("strata: ingest: %s has external table version %q, this reader knows %q", path, v, externalVersion)
	}
	if len(r.RangeTombstones()) > 0 {
		return nil, base.CorruptionErrorf(path, 0, "external table holds range tombstones")
	}
	records, err := scanExternalVlog(fs, path)
	if err != nil {
		return nil, err
	}
	if records != nil {
		t.vlog = records.meta
	}

	it := r.NewIter()
	defer it.Close()
	n := 0
	var (
		prevKind base.Kind // of the previous entry, of key t.largest
		prevSeq  base.SeqNum
	)
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		seq, kind := k.SeqNum(), k.Kind()
		// below: the entry is the layer below a merge operand of its key,
		// whose sequence number it must follow.
		below := n > 0 && base.Equal(k.UserKey, t.largest)
		switch {
		case below && (prevKind != base.KindMerge || seq != prevSeq-1):
			return nil, base.CorruptionErrorf(path, 0, "key %q has entries of sequence numbers %d and %d, not a merge operand and the layer below it", k.UserKey, prevSeq, seq)
		case below:
		case n > 0 && prevKind == base.KindMerge:
			return nil, base.CorruptionErrorf(path, 0, "merge operand of key %q has no value below it", t.largest)
		case n > 0 && base.Compare(k.UserKey, t.largest) < 0:
			return nil, base.CorruptionErrorf(path, 0, "key %q does not sort after %q", k.UserKey, t.largest)
		}
		if !below {
			if n == 0 {
				t.smallest = slices.Clone(k.UserKey)
			}
			t.largest = append(t.largest[:0], k.UserKey...)
			n++
		}
		prevKind, prevSeq = kind, seq
		if kind == base.KindMerge {
			if seq == 0 {
				return nil, base.CorruptionErrorf(path, 0, "merge operand of key %q has sequence number 0, not above a value", k.UserKey)
			}
			t.layers = max(t.layers, seq)
			continue
		}
		if seq != 0 {
			return nil, base.CorruptionErrorf(path, 0, "key %q has sequence number %d, not 0", k.UserKey, seq)
		}
		if kind.HasMeta() {
			if _, _, err := base.DecodeEntryMeta(it.Value()); err != nil {
				return nil, base.CorruptionErrorf(path, 0, "key %q: %v", k.UserKey, err)
			}
		}
		switch kind.WithoutMeta() {
		case base.KindSet:
		case base.KindDelete:
			if below {
				return nil, base.CorruptionErrorf(path, 0, "merge operand of key %q has a tombstone below it", k.UserKey)
			}
		case base.KindValuePointer:
			if records == nil {
				return nil, base.CorruptionErrorf(path, 0, "key %q points into a value log, and %s is missing", k.UserKey, ValueLogPath(path))
			}
			_, ptr, _ := base.SplitEntry(kind, it.Value())
			if err := records.claim(k.UserKey, ptr); err != nil {
				return nil, err
			}
		default:
			return nil, base.CorruptionErrorf(path, 0, "key %q has kind %s, which external tables do not hold", k.UserKey, kind)
		}
	}
	if prevKind == base.KindMerge {
		return nil, base.CorruptionErrorf(path, 0, "merge operand of key %q has no value below it", t.largest)
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("strata: ingest: %w", err)
	}
	if n == 0 {
		return nil, fmt.Errorf("strata: ingest: %s holds no keys", path)
	}
	if records != nil && records.claimed != len(records.recs) {
		return nil, base.CorruptionErrorf(ValueLogPath(path), 0, "%d of its %d records are referenced by no key of %s",
			len(records.recs)-records.claimed, len(records.recs), path)
	}
	return t, nil
}

// openSized opens path and returns its size.
func openSized(fs vfs.FS, path string) (vfs.File, int64, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("strata: ingest: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, 0, fmt.Errorf("strata: ingest: %w", err)
	}
	return f, fi.Size(), nil
}

// externalRecords lists the records of an external value log, to check
// that every pointer of the table locates one, for its key, and that each
// is referenced exactly once (so the garbage ledger starts exact).
type externalRecords struct {
	name    string
	meta    *manifest.VlogMetadata
	recs    []externalRecord // by offset
	claimed int
}

type externalRecord struct {
	off     uint64
	length  uint32
	keyHash uint64
	claimed bool
}

// scanExternalVlog reads and verifies the value log of the table at path;
// it returns nil, nil when there is none.
func scanExternalVlog(fs vfs.FS, path string) (*externalRecords, error) {
	name := ValueLogPath(path)
	f, size, err := openSized(fs, name)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	r, err := vlog.NewReader(f, vlog.Unnumbered, size, vlog.ReaderOptions{FileName: name})
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("strata: ingest: %w", err)
	}
	defer r.Close()
	if !r.Finished() {
		return nil, base.CorruptionErrorf(name, 0, "value log is unfinished (no valid footer)")
	}
	recs := &externalRecords{name: name, meta: &manifest.VlogMetadata{Size: uint64(size)}}
	s := r.NewScanner()
	for s.Next() {
		p := s.Pointer()
		recs.recs = append(recs.recs, externalRecord{off: p.Offset, length: p.Length, keyHash: xxhash.Sum64(s.Key())})
		recs.meta.Records++
		recs.meta.ValueBytes += uint64(p.ValueLen)
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("strata: ingest: %w", err)
	}
	return recs, nil
}

// claim checks that ptr, the value of key, locates an unclaimed record of
// key, and claims it.
func (e *externalRecords) claim(key, ptr []byte) error {
	p, err := vlog.DecodePointer(ptr)
	if err != nil {
		return base.CorruptionErrorf(e.name, 0, "pointer of key %q: %v", key, err)
	}
	if p.FileNum != vlog.Unnumbered {
		return base.CorruptionErrorf(e.name, 0, "pointer of key %q names value log %s, not the table's own", key, p.FileNum)
	}
	i, found := slices.BinarySearchFunc(e.recs, p.Offset, func(r externalRecord, off uint64) int {
		switch {
		case r.off < off:
			return -1
		case r.off > off:
			return 1
		}
		return 0
	})
	if !found || e.recs[i].length != p.Length || e.recs[i].keyHash != xxhash.Sum64(key) {
		return base.CorruptionErrorf(e.name, int64(p.Offset), "pointer of key %q locates no record of that key", key)
	}
	if e.recs[i].claimed {
		return base.CorruptionErrorf(e.name, int64(p.Offset), "record at %d is referenced twice (key %q)", p.Offset, key)
	}
	e.recs[i].claimed = true
	e.claimed++
	return nil
}

// ingestLeader runs on the commit leader, so no write comes in between:
// it gives the prepared tables the next sequence number and installs
// them. With the WAL on, a mark in the WAL takes the numbers, so that
// they run on there (recovery reads a gap as writes lost) and the
// memtable that is unflushed now carries them to the manifest's last
// sequence number when it is flushed; the edit leaves that number alone,
// since recovery replays only writes newer than it and the memtables
// that do not overlap the tables stay unflushed. The WAL is synced before
// the edit, so that a crash keeps every write before the ingest if it
// keeps the ingest. With the WAL off, or during a bulk load (whose writes
// skip the WAL), every memtable is flushed first instead.
func (d *DB) ingestLeader(p *ingestPrep) error {
	if err := d.writableNow(); err != nil {
		return err
	}
	c := &d.commit
	marked := c.wal != nil && !c.bulk
	// A checkpoint in progress flushes, then pins the version: an ingest
	// that skipped the flush in between would be in the checkpoint while
	// writes acknowledged before it, still in a memtable, are not. So
	// while one runs, every memtable is flushed first.
	d.mu.Lock()
	checkpointing := d.checkpoints > 0
	d.mu.Unlock()
	if !marked || checkpointing || d.mem.overlaps(p.spans) {
		if err := d.flushAllLeader(); err != nil {
			return err
		}
	} else if err := d.flushOverlappingFrozen(p.spans); err != nil {
		return err
	}
	// The tables' entries get seq, their merge operands the sequence
	// numbers above it, up to top.
	seq := c.lastSeq + 1
	top := seq + p.layers
	if marked {
		rec := ingestMark(seq, top)
		_, err := c.wal.WriteRecord(rec)
		if err == nil {
			d.stats.walBytes.Add(uint64(len(rec)))
			err = d.syncLeader()
		}
		if err != nil {
			err = fmt.Errorf("strata: write WAL: %w", err)
			d.reportBackgroundError(err)
			return err
		}
	}

	d.mu.Lock()
	v := d.vs.Current()
	ve := &manifest.VersionEdit{NewVlogs: p.vlogs}
	if !marked {
		ve.SetLastSeq(top)
	}
	levels := make([]int, len(p.metas))
	for i, m := range p.metas {
		m.SeqOffset = seq
		m.Smallest = m.Smallest.WithSeqOffset(seq)
		if !m.Largest.IsRangeDelSentinel() { // external tables hold no range deletions
			m.Largest = m.Largest.WithSeqOffset(seq)
		}
		m.SmallestSeq += seq
		m.LargestSeq += seq
		levels[i] = ingestLevel(v, m.Smallest.UserKey, m.Largest.UserKey)
		ve.NewFiles = append(ve.NewFiles, manifest.NewFile{Level: levels[i], Meta: m})
	}
	p.installed = true
	if err := d.vs.LogAndApply(ve); err != nil {
		// The edit may have reached the disk: the files stay (the next
		// Open removes them if it did not), and the DB stops.
		err = fmt.Errorf("strata: ingest: %w", err)
		first := d.setBackgroundErrorLocked(err)
		d.mu.Unlock()
		if first {
			d.deliverBackgroundError(err)
		}
		return err
	}
	c.lastSeq = top
	d.mem.maxSeq.Store(uint64(top))
	d.visibleSeq.Store(uint64(top))
	for i, m := range p.metas {
		d.stats.levels[levels[i]].bytesWritten += m.Size
		d.stats.ingestBytes.Add(m.Size)
	}
	d.updateReadStateLocked()
	d.updateL0CountLocked()
	d.scheduleGCLocked()
	d.cond.Broadcast()
	d.mu.Unlock()
	return nil
}

// ingestMark is the WAL record of an ingest's sequence numbers seq..top:
// a batch of that many KindIngestMark entries, each with an empty key.
func ingestMark(seq, top base.SeqNum) []byte {
	var b Batch
	for range top - seq + 1 {
		// An empty key and no value: never too large.
		_ = b.add(base.KindIngestMark, nil, nil, false)
	}
	b.setSeq(seq)
	return b.repr
}

// rewriteExternal writes table t into new tables of the DB (cut at
// TargetFileSize): every entry with the sequence number it has in t, every
// pointer into the value log vlogNum.
func (d *DB) rewriteExternal(t *externalTable, vlogNum base.FileNum) ([]*manifest.FileMetadata, error) {
	in := &ingestIter{InternalIterator: t.r.NewIter(), vlogNum: vlogNum}
	defer in.Close()
	outputs, _, err := compaction.Run(compaction.Config{
		Input:          in,
		NewFile:        d.newTableFile,
		Writer:         d.opts.writerOptions(),
		TargetFileSize: uint64(d.opts.TargetFileSize),
	})
	if err == nil && in.err != nil {
		err = in.err
	}
	if err == nil && len(outputs) == 0 {
		err = errors.New("no table written")
	}
	if err != nil {
		for _, o := range outputs {
			d.removeFile(base.FileTypeTable, o.FileNum)
		}
		return nil, fmt.Errorf("strata: ingest %s: %w", t.path, err)
	}
	metas := make([]*manifest.FileMetadata, len(outputs))
	for i, o := range outputs {
		metas[i] = fileMetadata(o)
	}
	return metas, nil
}

// ingestIter gives an external table's pointers the value log's file
// number in the DB. The compaction that writes the table moves it forward
// only.
type ingestIter struct {
	base.InternalIterator
	vlogNum base.FileNum
	buf     []byte
	err     error
}

func (it *ingestIter) Value() []byte {
	v := it.InternalIterator.Value()
	kind := it.InternalIterator.Key().Kind()
	if !kind.IsPointer() {
		return v
	}
	_, enc, err := base.SplitEntry(kind, v)
	var p vlog.Pointer
	if err == nil {
		p, err = vlog.DecodePointer(enc)
	}
	if err != nil {
		// Verified when the table was opened: the file changed since.
		it.err = base.CorruptionErrorf("", 0, "external table changed during ingest: %v", err)
		return v
	}
	p.FileNum = it.vlogNum
	// The metadata, if any, as it was; then the pointer.
	it.buf = p.Encode(append(it.buf[:0], v[:len(v)-len(enc)]...))
	return it.buf
}

// flushOverlappingFrozen waits for the flush of the frozen memtables if
// one of them holds a key in spans (flushes run oldest first). Leader
// only.
func (d *DB) flushOverlappingFrozen(spans []keySpan) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, m := range d.imm {
		if m.overlaps(spans) {
			return d.waitFlushedLocked()
		}
	}
	return nil
}

// flushAllLeader freezes the memtable and waits until every frozen
// memtable is flushed. Leader only, so no write comes in meanwhile.
func (d *DB) flushAllLeader() error {
	if !d.mem.Empty() {
		if err := d.rotateMemTable(0); err != nil {
			return err
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.waitFlushedLocked()
}

// ingestLevel is the level for a table of keys [smallest, largest] that is
// newer than everything in v: the deepest level such that no file of it or
// of any level above overlaps the table (L0 when L0 does).
func ingestLevel(v *manifest.Version, smallest, largest []byte) int {
	level := 0
	for l := 0; l < manifest.NumLevels; l++ {
		if len(v.Overlaps(l, smallest, largest)) > 0 {
			break
		}
		level = l
	}
	return level
}
