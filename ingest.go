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
// overlap one another.
//
// The files' contents are verified first (every block and value-log record
// checksum, every pointer against its record), outside the DB's locks.
// Then, with writes held: the memtables are flushed; the tables are
// rewritten into the DB with one new sequence number, and the merge
// operands IngestRange stacks above a value with the next ones (a pass over
// keys and pointers; values stay where they are, since the value logs are
// hard-linked, or copied where the filesystem cannot link); and one
// manifest edit adds them, each at the deepest level where nothing above
// overlaps it. Automatic compactions pause while Ingest runs.
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

	w := writerPool.Get().(*commitWriter)
	*w = commitWriter{op: opIngest, ingest: ext}
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
// it flushes the memtables, rewrites the tables into
// the DB with the next sequence number and installs them.
func (d *DB) ingestLeader(tables []*externalTable) error {
	if err := d.writableNow(); err != nil {
		return err
	}
	c := &d.commit
	// Every memtable is flushed first, not only those holding keys in the
	// tables' ranges: the edit below records seq as the manifest's last
	// sequence number, and recovery replays from the WAL only writes
	// newer than that.
	if err := d.flushAllLeader(); err != nil {
		return err
	}
	// The tables' entries get seq, their merge operands the sequence
	// numbers above it, up to top.
	seq := c.lastSeq + 1
	top := seq
	for _, t := range tables {
		top = max(top, seq+t.layers)
	}

	var metas []*manifest.FileMetadata
	var vlogs []*manifest.VlogMetadata
	var err error
	defer func() {
		if err != nil {
			for _, m := range metas {
				d.removeFile(base.FileTypeTable, m.FileNum)
			}
			for _, vm := range vlogs {
				d.removeFile(base.FileTypeVlog, vm.FileNum)
			}
		}
	}()
	for _, t := range tables {
		var vlogNum base.FileNum
		if t.vlog != nil {
			vlogNum = d.vs.NewFileNum()
			vm := &manifest.VlogMetadata{FileNum: vlogNum, Size: t.vlog.Size, Records: t.vlog.Records, ValueBytes: t.vlog.ValueBytes}
			if err = vfs.LinkOrCopy(d.fs, ValueLogPath(t.path), d.path(base.FileTypeVlog, vlogNum)); err != nil {
				err = fmt.Errorf("strata: ingest: %w", err)
				return err
			}
			vlogs = append(vlogs, vm)
		}
		var ms []*manifest.FileMetadata
		ms, err = d.rewriteExternal(t, seq, vlogNum)
		metas = append(metas, ms...)
		if err != nil {
			return err
		}
	}
	if err = syncDirErr(d); err != nil {
		err = fmt.Errorf("strata: ingest: %w", err)
		return err
	}

	d.mu.Lock()
	v := d.vs.Current()
	ve := &manifest.VersionEdit{NewVlogs: vlogs}
	ve.SetLastSeq(top)
	levels := make([]int, len(metas))
	for i, m := range metas {
		levels[i] = ingestLevel(v, m.Smallest.UserKey, m.Largest.UserKey)
		ve.NewFiles = append(ve.NewFiles, manifest.NewFile{Level: levels[i], Meta: m})
	}
	if err = d.vs.LogAndApply(ve); err != nil {
		// The edit may have reached the disk: the files stay (the next
		// Open removes them if it did not), and the DB stops.
		err = fmt.Errorf("strata: ingest: %w", err)
		metas, vlogs = nil, nil
		first := d.setBackgroundErrorLocked(err)
		d.mu.Unlock()
		if first {
			d.deliverBackgroundError(err)
		}
		return err
	}
	c.lastSeq = top
	d.visibleSeq.Store(uint64(top))
	for i, m := range metas {
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

// rewriteExternal writes table t into new tables of the DB (cut at
// TargetFileSize): every entry with sequence number seq, every pointer
// into the value log vlogNum.
func (d *DB) rewriteExternal(t *externalTable, seq base.SeqNum, vlogNum base.FileNum) ([]*manifest.FileMetadata, error) {
	in := &ingestIter{InternalIterator: t.r.NewIter(), seq: seq, vlogNum: vlogNum}
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

// ingestIter gives an external table's entries the ingest's sequence
// number (a merge operand's above it by its own, 1 and up) and its
// pointers the value log's file number in the DB. The compaction that
// writes the table moves it forward only.
type ingestIter struct {
	base.InternalIterator
	seq     base.SeqNum
	vlogNum base.FileNum
	buf     []byte
	err     error
}

func (it *ingestIter) Key() base.InternalKey {
	k := it.InternalIterator.Key()
	return base.MakeInternalKey(k.UserKey, it.seq+k.SeqNum(), k.Kind())
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
