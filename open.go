package strata

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/strata-db/strata/cache"
	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/internal/filecache"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/lsm/memtable"
	"github.com/strata-db/strata/lsm/record"
	"github.com/strata-db/strata/lsm/sstable"
	"github.com/strata-db/strata/remote"
	"github.com/strata-db/strata/vfs"
	"github.com/strata-db/strata/vlog"
)

// Open opens the database in dirname, creating it unless
// Options.ErrorIfNotExists is set. nil opts means defaults.
//
// Recovery replays the WALs that hold writes not yet in SSTables, stopping
// cleanly at a torn tail (a write that was not synced when the machine
// stopped), and fails with an error matching ErrCorruption when a WAL or the
// manifest is damaged where a later record says it had been synced (see
// lsm/record). A directory that holds a database's files but no CURRENT is
// refused, not re-created; a dirname that is not a directory is refused
// with an error matching syscall.ENOTDIR.
func Open(dirname string, opts *Options) (db *DB, err error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	o := opts.EnsureDefaults()
	o.EventListener = o.EventListener.withLogger(o.Logger)
	o.Merger = guardMerger(o.Merger)
	if remote.Destroying(o.FS, dirname) {
		return nil, fmt.Errorf("%w: %s", ErrDestroying, dirname)
	}
	if o.ReadOnly {
		return openReadOnly(dirname, o)
	}
	fs := o.FS
	if err := createDir(fs, dirname); err != nil {
		return nil, err
	}
	lock, err := lockDir(fs, dirname)
	if err != nil {
		return nil, err
	}
	return open(dirname, o, lock)
}

// open opens the database in dirname, whose directory exists and is locked
// (lock; a no-op closer for a read-only DB).
func open(dirname string, o *Options, lock io.Closer) (db *DB, err error) {
	fs := o.FS
	d := &DB{dirname: dirname, opts: o, fs: fs, lock: lock, flushCh: make(chan struct{}, 1), walFlushCh: make(chan struct{}, 1)}
	d.cond.L = &d.mu
	d.sealer.cond.L = &d.sealer.mu
	d.gc.init()
	defer func() {
		if err != nil {
			// Memtables charged to a write budget leave it with the DB.
			if d.mem != nil {
				d.mem.uncharge()
			}
			for _, m := range d.imm {
				m.uncharge()
			}
			if d.files != nil {
				d.files.Close()
			}
			if d.shared != nil {
				d.shared.cancel()
				d.shared.files.Close()
			}
			if d.vs != nil {
				d.vs.Close()
			}
			if d.commit.wal != nil {
				d.commit.wal.Close()
			}
			lock.Close()
		}
	}()

	d.cache = o.Cache
	if d.cache == nil && o.CacheSize > 0 {
		d.cache = cache.New(o.CacheSize)
	}
	d.files = filecache.New(o.MaxOpenFiles)
	d.tableCache = newTableCache(fs, dirname, d.cache, d.files, o)
	d.vlogs = vlog.NewReaderCache(fs, dirname, d.cache, d.files, !d.opts.DisablePrefault)
	d.memPool.size = int(o.MemTableSize)
	d.memPool.release = d.releaseMemtable
	d.observer, _ = o.SeparationPolicy.(vlog.Observer)
	d.sepAtCommit = o.SeparationTime == SeparateAtCommit || (o.SeparationTime == SeparateDefault && !o.DisableWAL)

	names, err := fs.List(dirname)
	if err != nil {
		return nil, fmt.Errorf("strata: list directory: %w", err)
	}
	if err := d.loadManifest(names); err != nil {
		return nil, err
	}
	if err := d.checkMerger(); err != nil {
		return nil, err
	}
	if err := d.openShared(names); err != nil {
		return nil, err
	}
	if err := d.checkTables(); err != nil {
		return nil, err
	}
	if err := d.readMissingVlogRefs(); err != nil {
		return nil, err
	}
	rp, err := d.replayWALs(names)
	if err != nil {
		return nil, err
	}
	if err := d.installRecovered(rp); err != nil {
		return nil, err
	}
	d.start(names)
	if b := d.writeBudget(); b != nil {
		b.register(d)
	}
	return d, nil
}

// createDir creates the database directory if needed, and makes the entry
// of every directory it creates durable in its parent: without that, a
// power loss after the first synced write could take the whole directory.
func createDir(fs vfs.FS, dirname string) error {
	// Find the directories that do not exist yet, deepest first.
	var missing []string
	for dir := dirname; ; {
		if st, err := fs.Stat(dir); err == nil {
			if dir == dirname && !st.IsDir() {
				return errNotDir(dirname)
			}
			break
		} else if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("strata: stat %q: %w", dir, err)
		}
		missing = append(missing, dir)
		parent := fs.PathDir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	if len(missing) == 0 {
		return nil
	}
	if err := fs.MkdirAll(dirname, 0o755); err != nil {
		return fmt.Errorf("strata: create directory: %w", err)
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := manifest.SyncDir(fs, fs.PathDir(missing[i])); err != nil {
			return fmt.Errorf("strata: sync the parent of %q: %w", missing[i], err)
		}
	}
	return nil
}

// errNotDir is Open's error for a path that exists and is not a
// directory; it matches syscall.ENOTDIR.
func errNotDir(dirname string) error {
	return fmt.Errorf("strata: %w", &os.PathError{Op: "open", Path: dirname, Err: syscall.ENOTDIR})
}

// loadManifest loads the version set named by CURRENT, or creates a new
// database when the directory holds none. names is the directory listing.
func (d *DB) loadManifest(names []string) error {
	o, fs, dirname := d.opts, d.fs, d.dirname
	vsOpts := manifest.Options{FS: fs, Dirname: dirname, Mu: &d.mu, Obsolete: d.onObsolete, MaxManifestSize: o.MaxManifestFileSize}
	_, statErr := fs.Stat(fs.PathJoin(dirname, base.MakeFilename(base.FileTypeCurrent, 0)))
	exists := statErr == nil
	if statErr != nil && !errors.Is(statErr, os.ErrNotExist) {
		return fmt.Errorf("strata: stat CURRENT: %w", statErr)
	}
	var err error
	switch {
	case exists && o.ErrorIfExists:
		return fmt.Errorf("strata: database %q already exists", dirname)
	case exists:
		d.vs, err = manifest.Load(vsOpts)
		return err
	case o.ReadOnly:
		return fmt.Errorf("strata: database %q does not exist (no CURRENT; a read-only Open creates nothing): %w", dirname, os.ErrNotExist)
	}
	if err := d.checkNoOrphanedData(names); err != nil {
		return err
	}
	if o.ErrorIfNotExists {
		return fmt.Errorf("strata: database %q does not exist", dirname)
	}
	// Number the new manifest past every file already there (the remains
	// of an interrupted creation), so none is overwritten.
	for _, name := range names {
		if _, num, ok := base.ParseFilename(name); ok && num >= vsOpts.MinFileNum {
			vsOpts.MinFileNum = num + 1
		}
	}
	d.vs, err = manifest.Create(vsOpts)
	return err
}

// ErrMergerMismatch is returned (wrapped) by Open when Options.Merger's
// Name differs from the name of the merger the database recorded: its
// merge operands were written for another merger, which a compaction or
// a read would hand them to. A database records the merger it is first
// opened with (read-only opens record nothing); opening it without one is
// allowed, and reads of keys with merge operands then fail with
// ErrNoMerger.
var ErrMergerMismatch = errors.New("strata: Options.Merger is not the merger the database records")

// checkMerger refuses an Options.Merger other than the one the database
// records.
func (d *DB) checkMerger() error {
	m := d.opts.Merger
	if m == nil {
		return nil
	}
	d.mu.Lock()
	recorded := d.vs.Current().MergerName
	d.mu.Unlock()
	if recorded != "" && recorded != m.Name() {
		return fmt.Errorf("%w: the database records %q, Options.Merger is %q", ErrMergerMismatch, recorded, m.Name())
	}
	return nil
}

// ErrNoCurrent is returned (wrapped) by Open for a directory that holds a
// database's files but no CURRENT file naming its manifest: a copy or
// restore that left CURRENT out, or a damaged disk. Open refuses it rather
// than create a new, empty database over the files. Restore CURRENT (one
// line: the name of the newest MANIFEST-NNNNNN, then a newline) to open it.
var ErrNoCurrent = errors.New("strata: the directory holds database files but no CURRENT")

// checkNoOrphanedData refuses a directory without CURRENT that holds
// tables, value logs, WALs, or a manifest that describes files. What
// remains of a creation that stopped before writing CURRENT (a manifest of
// an empty tree, or one too short to read) holds no data and is allowed.
func (d *DB) checkNoOrphanedData(names []string) error {
	var found []string
	for _, name := range names {
		t, _, ok := base.ParseFilename(name)
		if !ok {
			continue
		}
		switch t {
		case base.FileTypeTable, base.FileTypeVlog, base.FileTypeLog:
			found = append(found, name)
		case base.FileTypeManifest:
			v, err := manifest.ReadVersion(d.fs, d.dirname, name)
			if err == nil && (len(v.Vlogs) > 0 || func() bool {
				n := 0
				v.Files(func(int, *manifest.FileMetadata) { n++ })
				return n > 0
			}()) {
				found = append(found, name)
			}
		}
	}
	if len(found) == 0 {
		return nil
	}
	slices.Sort(found)
	if len(found) > 5 {
		found = append(found[:5], fmt.Sprintf("and %d more", len(found)-5))
	}
	return fmt.Errorf("%w: %q holds %s; nothing was changed", ErrNoCurrent, d.dirname, strings.Join(found, ", "))
}

// checkTables reads the footer of every table of the current version, so
// that a table this build cannot read (a newer format, a missing or
// truncated file) fails Open instead of a background compaction later. It
// costs one small read per table.
func (d *DB) checkTables() error {
	d.mu.Lock()
	v := d.vs.Current()
	v.Ref()
	d.mu.Unlock()
	defer v.Unref()
	var err error
	v.Files(func(_ int, f *manifest.FileMetadata) {
		if err != nil {
			return
		}
		if d.isRemoteOnly(base.FileTypeTable, f.FileNum) {
			// Read at its first use: a footer a request away, per table,
			// would make Open wait on the store.
			return
		}
		name := base.MakeFilename(base.FileTypeTable, f.FileNum)
		var file vfs.File
		if file, err = d.openFile(base.FileTypeTable, f.FileNum); err != nil {
			return
		}
		err = sstable.CheckFooter(file, int64(f.Size), name)
		file.Close()
	})
	return err
}

// readMissingVlogRefs reads the value-log references of tables that a
// manifest written before they were recorded there lists without them, so
// that the garbage ledger is exact from the start.
func (d *DB) readMissingVlogRefs() error {
	d.mu.Lock()
	v := d.vs.Current()
	complete := v.VlogRefsComplete()
	d.mu.Unlock()
	if complete {
		return nil
	}
	refs := make(map[base.FileNum][]manifest.VlogRef)
	var err error
	v.Files(func(_ int, f *manifest.FileMetadata) {
		if err != nil || f.VlogRefsKnown {
			return
		}
		var h tableHandle
		if h, err = d.tableCache.get(f); err != nil {
			return
		}
		defer d.tableCache.release(h)
		name := base.MakeFilename(base.FileTypeTable, f.FileNum)
		block, ok, berr := h.reader.MetaBlock(vlog.RefsBlock)
		switch {
		case berr != nil:
			err = berr
		case ok:
			var r []manifest.VlogRef
			if r, err = vlog.DecodeRefs(block); err != nil {
				err = base.CorruptionErrorf(name, -1, "%v", err)
				return
			}
			refs[f.FileNum] = r
		default:
			refs[f.FileNum] = nil
		}
	})
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.vs.FillVlogRefs(refs)
	d.mu.Unlock()
	return nil
}

// replayWALs replays the WALs recovery needs into memtables, writing full
// ones to L0 as it goes. names is the directory listing.
func (d *DB) replayWALs(names []string) (*walReplay, error) {
	d.mu.Lock()
	logNum, lastSeq := d.vs.LogNum(), d.vs.LastSeq()
	// Sequence numbers are allocated above every table's, too (see
	// Version.LargestSeq).
	maxSeq := max(lastSeq, d.vs.Current().LargestSeq())
	d.mu.Unlock()
	var logs []base.FileNum
	for _, name := range names {
		if t, num, ok := base.ParseFilename(name); ok {
			d.vs.MarkFileNumUsed(num)
			if t == base.FileTypeLog && num >= logNum {
				logs = append(logs, num)
			}
		}
	}
	slices.Sort(logs)
	rp := &walReplay{d: d, ve: &manifest.VersionEdit{}, flushedSeq: lastSeq, nextSeq: lastSeq + 1, maxSeq: maxSeq, logs: logs}
	for _, num := range logs {
		if err := rp.replay(num); err != nil {
			return nil, err
		}
		if rp.torn {
			break
		}
	}
	rp.ve.NewVlogs = append(rp.ve.NewVlogs, rp.adoptedMetadata()...)
	return rp, nil
}

// installRecovered creates the WAL and memtable new writes go to, and
// records in the manifest what recovery wrote and which WALs are still
// needed.
func (d *DB) installRecovered(rp *walReplay) error {
	o, ve := d.opts, rp.ve
	if o.ReadOnly {
		return d.installReadOnly(rp)
	}
	if o.DisableWAL || rp.torn || rp.tailTorn {
		// Writes replayed from the WALs of an earlier run with the WAL on
		// must reach a table before the log number moves past those WALs
		// (and they are deleted): no new WAL will protect them. After a
		// torn value the WALs must go too: replayed again, they would stop
		// at the same place and hide every write made after this Open.
		if err := rp.flush(); err != nil {
			return err
		}
	}
	// The manifest's last sequence number says what is in tables; writes
	// kept in the recovered memtable are replayed again after a crash.
	ve.SetLastSeq(rp.flushedSeq)
	if !o.DisableWAL {
		newLog := d.vs.NewFileNum()
		wal, wf, err := d.createWAL(newLog)
		if err != nil {
			return err
		}
		d.commit.wal = wal
		d.walFile.Store(wf)
		d.walNums = append(d.walNums, newLog)
		d.mem = d.memPool.get(int(o.MemTableSize), newLog)
		if rp.mem != nil && !rp.torn {
			// The recovered writes become a frozen memtable that the
			// background flush writes out after Open returns, so Open does
			// not wait for it; their WALs stay until it is flushed. (Keeping
			// it as the mutable memtable would save that flush, but every
			// read would then search a large memtable first.)
			d.imm = append(d.imm, rp.mem)
			ve.SetLogNum(rp.firstLog)
			for _, num := range rp.logs {
				if num >= rp.firstLog {
					d.walNums = append(d.walNums, num)
				}
			}
			slices.Sort(d.walNums)
		} else {
			ve.SetLogNum(newLog)
		}
	} else {
		// Every replayed write is in a table now.
		ve.SetLogNum(d.vs.NewFileNum())
		d.mem = d.memPool.get(int(o.MemTableSize), 0)
	}
	d.tuneFirstMemtable(rp.mem)
	d.mu.Lock()
	if rp.mem != nil && !o.DisableWAL && !rp.torn {
		// The recovered memtable's pointer entries pin their value logs
		// until it is released.
		d.gc.pins.mu.Lock()
		for num := range rp.mem.vlogs {
			d.gc.pins.addLocked(num, 1)
		}
		d.gc.pins.mu.Unlock()
		rp.mem.release = d.releaseMemtable
	}
	d.chargeMem(d.mem)
	for _, m := range d.imm {
		d.chargeFrozen(m)
	}
	if m := o.Merger; m != nil && d.vs.Current().MergerName == "" {
		// The first open with a merger records it (see checkMerger).
		ve.MergerName = m.Name()
	}
	err := d.vs.LogAndApply(ve)
	if err == nil {
		d.updateReadStateLocked()
		d.updateL0CountLocked()
	}
	d.mu.Unlock()
	if err != nil {
		return err
	}
	d.commit.lastSeq = rp.maxSeq
	d.visibleSeq.Store(uint64(rp.maxSeq))
	return nil
}

// start deletes what recovery left behind and starts the background work.
func (d *DB) start(names []string) {
	if d.opts.ReadOnly {
		return // nothing to delete, flush, compact or collect
	}
	d.deleteUnreferencedFiles(names)
	d.startShared()
	d.bgWG.Add(3)
	go d.backgroundLoop()
	go d.walFlushLoop()
	d.expiryStop = make(chan struct{})
	go d.expiryLoop(d.expiryStop)
	if !d.opts.DisablePrefault {
		d.bgWG.Add(1)
		go d.openMappings(d.expiryStop)
	}
	d.mu.Lock()
	d.maybeScheduleCompactionLocked()
	d.scheduleGCLocked()
	d.mu.Unlock()
	// Flush a recovered memtable, and run the first GC pass.
	d.scheduleBackground()
}

// walReplay accumulates recovered writes in a memtable, writing it to L0
// when it fills. What is left at the end is flushed in the background once
// the DB is open, so Open does not wait for it.
type walReplay struct {
	d          *DB
	ve         *manifest.VersionEdit
	flushedSeq base.SeqNum // entries at or below it are already in tables
	// nextSeq is the sequence number the next batch must not pass: one
	// past the last batch replayed or skipped (the manifest's last one,
	// before the first).
	nextSeq base.SeqNum
	maxSeq  base.SeqNum // the largest sequence number replayed
	mem     *memTable
	// firstLog is the oldest WAL with writes in mem: it and every later WAL
	// must stay until mem is flushed.
	firstLog base.FileNum
	// logs are the WALs replayed, ascending.
	logs []base.FileNum
	// torn is set when a batch pointed to a value that did not survive: the
	// replay stopped there (see pointersValid).
	torn bool
	// tailTorn is set when the last WAL ends in a torn tail. Its writes
	// are flushed at Open rather than kept in a memtable with that WAL:
	// the torn WAL must not outlive this Open, or after a later crash it
	// would be an older WAL that ends torn, where replay stops.
	tailTorn bool
	// adopted are the value logs written at commit that WAL records point
	// into and the manifest does not list (see recover_vlog.go).
	adopted map[base.FileNum]*adoptedVlog
	// frozen are, for a read-only DB, the full memtables that a writer
	// would have flushed, oldest first: they stay in memory.
	frozen []*memTable
}

func (r *walReplay) flush() error {
	if r.mem == nil || r.mem.Empty() {
		return nil
	}
	if r.d.opts.ReadOnly {
		r.frozen = append(r.frozen, r.mem)
		r.mem = nil
		return nil
	}
	meta, vm, err := r.d.writeL0(r.mem, nil, r.readValue)
	if err != nil {
		return err
	}
	if meta != nil {
		r.ve.NewFiles = append(r.ve.NewFiles, manifest.NewFile{Level: 0, Meta: meta})
	}
	r.ve.NewVlogs = append(r.ve.NewVlogs, vm...)
	r.flushedSeq = max(r.flushedSeq, base.SeqNum(r.mem.maxSeq.Load()))
	r.mem = nil
	return nil
}

// replay applies the batches of WAL num.
func (r *walReplay) replay(num base.FileNum) error {
	d := r.d
	name := base.MakeFilename(base.FileTypeLog, num)
	f, err := d.fs.Open(d.path(base.FileTypeLog, num))
	if err != nil {
		return fmt.Errorf("strata: open WAL %s: %w", name, err)
	}
	defer f.Close()
	rd := record.NewReader(f, name)
	batches := 0 // replayed
	for {
		offset := rd.Offset()
		rec, err := rd.Next()
		if err == io.EOF {
			// Bytes past the valid prefix: a write the crash interrupted.
			// The size must be known: a torn last WAL must not be taken
			// for a whole one (see tailTorn).
			st, err := f.Stat()
			if err != nil {
				return fmt.Errorf("strata: stat WAL %s: %w", name, err)
			}
			end, size := rd.Offset(), st.Size()
			torn := size > end
			d.logReplayed(name, batches, end, size)
			if num == r.logs[len(r.logs)-1] {
				r.tailTorn = torn
			} else if torn {
				// A memtable rotation leaves the old WAL to be synced off
				// the commit path, and every WAL sync waits for that (see
				// sealer): an older WAL that ends torn means the later ones
				// hold no synced write. Replaying them would apply later
				// writes without earlier ones; the log ends here.
				if err := r.checkNothingSyncedLater(num, rd, end, "it ends torn"); err != nil {
					return err
				}
				r.torn = true
				d.opts.Logger.Warn("strata: WAL replay stopped at a torn WAL that later WALs follow; they hold no synced write",
					"wal", name, "batches", batches)
			}
			return nil
		}
		if err != nil {
			if errors.Is(err, base.ErrCorruption) {
				return err
			}
			return fmt.Errorf("strata: read WAL %s at offset %d: %w", name, offset, err)
		}
		br, err := newBatchReader(rec)
		if err != nil {
			return base.CorruptionErrorf(name, offset, "%v", err)
		}
		seq := br.seq
		if seq == 0 {
			return base.CorruptionErrorf(name, offset, "batch has sequence number 0")
		}
		if seq > r.nextSeq {
			// Sequence numbers run on from batch to batch and from one WAL
			// into the next; a gap means writes before this batch were
			// lost (an older WAL's unsynced tail, which a power loss can
			// drop cleanly on a record boundary while later bytes, of
			// this WAL, reached the disk). Nothing from here on was
			// synced: a WAL sync waits for every older WAL's (see
			// sealer). Replaying it would recover writes without earlier
			// ones, a state that never existed; the log ends here.
			if err := r.checkNothingSyncedLater(num, rd, offset, fmt.Sprintf("batch of sequence number %d follows %d", seq, r.nextSeq-1)); err != nil {
				return err
			}
			r.torn = true
			d.opts.Logger.Warn("strata: WAL replay stopped at a gap in sequence numbers: earlier writes did not reach the disk",
				"wal", name, "offset", offset, "want", r.nextSeq, "found", seq, "batches", batches)
			return nil
		}
		r.nextSeq = max(r.nextSeq, seq+base.SeqNum(br.count))
		if seq+base.SeqNum(br.count)-1 <= r.flushedSeq {
			continue
		}
		// A batch whose values were written at commit is applied only if
		// every value it points to survived; otherwise the log ends here.
		if ok, err := r.pointersValid(rec, name, offset); err != nil {
			return err
		} else if !ok {
			r.torn = true
			d.opts.Logger.Warn("strata: WAL replay stopped at a batch whose value did not reach the disk (a torn tail)",
				"wal", name, "offset", offset, "batches", batches)
			return nil
		}
		batches++
		for {
			kind, key, value, ok, err := br.next()
			if err != nil {
				return base.CorruptionErrorf(name, offset, "%v", err)
			}
			if !ok {
				break
			}
			if seq <= r.flushedSeq {
				// A replay before this one flushed the batch's first
				// entries (a memtable filled in the middle of it) and
				// crashed before the rest reached a table: they are in a
				// table already. Applied again, merge operands would fold
				// twice.
				seq++
				continue
			}
			if kind == base.KindIngestMark {
				// An Ingest's sequence number: its tables are in the
				// manifest (or, if the crash came before its edit, in no
				// version). The numbers stay taken: the memtable being
				// replayed carries them to the manifest when it is
				// flushed; without one, nothing before them needs replay.
				r.maxSeq = max(r.maxSeq, seq)
				if r.mem != nil {
					r.mem.raiseMaxSeq(seq)
				} else {
					r.flushedSeq = max(r.flushedSeq, seq)
				}
				seq++
				continue
			}
			ikey := base.MakeInternalKey(key, seq, kind)
			if r.mem == nil {
				r.mem, r.firstLog = newMemTable(int(d.opts.MemTableSize), num), num
			}
			err = r.mem.Add(ikey, value)
			if errors.Is(err, memtable.ErrArenaFull) {
				if err := r.flush(); err != nil {
					return err
				}
				size := max(int(d.opts.MemTableSize), 2*memtable.EntrySize(len(key), len(value)))
				r.mem, r.firstLog = newMemTable(size, num), num
				err = r.mem.Add(ikey, value)
			}
			if err != nil {
				return fmt.Errorf("strata: replay WAL %s: %w", name, err)
			}
			if kind == base.KindRangeDelete {
				r.mem.rangeDelCount.Add(1)
			}
			if kind.IsPointer() {
				_, enc, err := base.SplitEntry(kind, value)
				if err != nil {
					return base.CorruptionErrorf(name, offset, "batch entry: %v", err)
				}
				p, err := vlog.DecodePointer(enc)
				if err != nil {
					return base.CorruptionErrorf(name, offset, "batch entry: %v", err)
				}
				if r.mem.vlogs == nil {
					r.mem.vlogs = make(map[base.FileNum]bool)
				}
				r.mem.vlogs[p.FileNum] = true
			}
			// The memtable's largest sequence number is what its flush
			// records as in tables, so it is that of what the replay put
			// in it, in WAL order, never r.maxSeq: that starts at the
			// version's largest, which an ingest's table (its mark still
			// ahead in the WAL) may hold, and a flush claiming it would
			// have the replay skip every write up to the mark.
			r.maxSeq = max(r.maxSeq, seq)
			r.mem.raiseMaxSeq(seq)
			seq++
		}
	}
}

// checkNothingSyncedLater is called where replay would stop early, at
// offset of WAL num (read by rd) because of what: a torn end, or a gap in
// sequence numbers. Stopping is right only if nothing after that point was
// synced. A chunk of WAL num past offset that says the file was synced
// past offset, or a chunk of a later WAL that says it was synced at all,
// proves otherwise (a WAL sync waits for every older WAL's, see sealer):
// the WAL is damaged, and dropping what follows would lose synced writes,
// so it is corruption.
func (r *walReplay) checkNothingSyncedLater(num base.FileNum, rd *record.Reader, offset int64, what string) error {
	d := r.d
	name := base.MakeFilename(base.FileTypeLog, num)
	if err := readToEnd(rd); err != nil {
		return fmt.Errorf("strata: read WAL %s past offset %d: %w", name, offset, err)
	}
	if s := rd.SyncedOffset(); s > offset {
		return base.CorruptionErrorf(name, offset, "WAL replay would stop here (%s), but a later chunk says the WAL was synced to offset %d", what, s)
	}
	for _, later := range r.logs {
		if later <= num {
			continue
		}
		lname := base.MakeFilename(base.FileTypeLog, later)
		f, err := d.fs.Open(d.path(base.FileTypeLog, later))
		if err != nil {
			return fmt.Errorf("strata: open WAL %s: %w", lname, err)
		}
		lr := record.NewReader(f, lname)
		err = readToEnd(lr)
		f.Close()
		if err != nil {
			return fmt.Errorf("strata: read WAL %s: %w", lname, err)
		}
		if lr.SyncedOffset() > 0 {
			return base.CorruptionErrorf(name, offset, "WAL replay would stop here (%s), but the later WAL %s holds writes synced after it", what, lname)
		}
	}
	return nil
}

// readToEnd reads rd's records to the end of the log's valid prefix, so
// that its SyncedOffset covers every valid chunk. An error other than the
// end (a read that failed, or corruption: a damaged chunk that a later
// one says was synced) is returned: a check that could not read the log
// cannot say that nothing in it was synced.
func readToEnd(rd *record.Reader) error {
	for {
		if _, err := rd.Next(); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}

// deleteUnreferencedFiles removes what a crash or an old run left behind:
// tables not in the current version, WALs already flushed, old manifests and
// temp files. names is the directory listing taken before recovery.
func (d *DB) deleteUnreferencedFiles(names []string) {
	d.mu.Lock()
	live := make(map[base.FileNum]bool)
	v := d.vs.Current()
	v.Files(func(_ int, f *manifest.FileMetadata) { live[f.FileNum] = true })
	for num := range v.Vlogs {
		live[num] = true
	}
	logNum := d.vs.LogNum()
	manifestNum := d.vs.ManifestNum()
	d.mu.Unlock()
	for _, name := range names {
		t, num, ok := base.ParseFilename(name)
		if !ok {
			continue
		}
		remove := false
		switch t {
		case base.FileTypeTable, base.FileTypeVlog:
			remove = !live[num]
		case base.FileTypeLog:
			remove = num < logNum
		case base.FileTypeManifest:
			remove = num != manifestNum
		case base.FileTypeTemp:
			remove = true
		}
		if remove {
			d.removeFile(t, num)
		}
	}
}

// Closed reports whether Close has been called: from then on reads and
// writes fail with ErrClosed. It is for observers that may outlive the DB:
// a metrics collector reports nothing once it is true.
func (d *DB) Closed() bool { return d.closed.Load() }

// Close waits for background work, flushes nothing to the WAL that is not
// already there, and releases the directory. With the WAL disabled it first
// flushes the memtable, so a clean Close loses nothing.
//
// Iterators and snapshots should be closed first. Any still open are
// reported in Close's error (the DB is closed all the same): from then on
// their methods fail with an error matching ErrClosed (Iterator.Error says
// so), and closing them releases nothing more than memory. Calls that race
// with Close either finish before it releases the directory or fail with
// ErrClosed.
func (d *DB) Close() error {
	if !d.closed.CompareAndSwap(false, true) {
		return ErrClosed
	}
	// Wake writers stalled on compactions, which no longer start.
	d.mu.Lock()
	d.cond.Broadcast()
	d.mu.Unlock()
	// A manual compaction in progress finishes first.
	d.compactMu.Lock()
	defer d.compactMu.Unlock()
	var err error
	if (d.opts.DisableWAL || d.bulkLoad.Load()) && !d.opts.ReadOnly {
		err = d.flush()
	}
	// Wait for in-flight writes (opClose queues behind them), finish the
	// active value log, and refuse every operation queued after it.
	if cerr := d.writeOp(nil, false, opClose); err == nil {
		err = cerr
	}
	// Running compactions and checkpoints finish (no new ones start once
	// closed is set).
	d.mu.Lock()
	for d.compactions.running > 0 || d.checkpoints > 0 {
		d.cond.Wait()
	}
	d.mu.Unlock()
	if d.expiryStop != nil { // nil for a read-only DB, which starts no goroutine
		close(d.expiryStop)
	}
	d.stopShared()
	d.stopBackground()
	if b := d.writeBudget(); b != nil {
		b.unregister(d)
	}
	close(d.walFlushCh)
	d.bgWG.Wait()
	d.closeSharedFiles()
	d.mu.Lock()
	d.bgDone = true
	d.cond.Broadcast()
	snapshots := d.snapshots.l.Len()
	d.mu.Unlock()

	d.commit.mu.Lock()
	if d.commit.wal != nil {
		// A WAL whose close failed during a memtable rotation is closed
		// already; that failure is the background error, returned below,
		// and must not be hidden behind "writer closed".
		if cerr := d.commit.wal.Close(); err == nil && !errors.Is(cerr, ErrClosed) {
			err = cerr
		}
		d.commit.wal = nil
	}
	d.commit.mu.Unlock()

	d.mu.Lock()
	if cerr := d.vs.Close(); err == nil {
		err = cerr
	}
	d.mu.Unlock()
	d.swapReadState(nil)
	// The memtables' memory leaves the shared budget with the DB (a
	// lingering iterator's reference gives back nothing twice).
	d.mu.Lock()
	d.mem.uncharge()
	for _, m := range d.imm {
		m.uncharge()
	}
	d.budget.mutable.Store(0)
	d.mu.Unlock()
	d.deleteObsoleteFiles()
	d.files.Close()
	if cerr := d.lock.Close(); err == nil {
		err = cerr
	}
	// A background error is the first failure and the cause of what
	// followed (a WAL whose close failed in a rotation fails to close
	// again here): it is the one reported.
	d.mu.Lock()
	if d.bgErr != nil {
		err = d.bgErr
	}
	d.mu.Unlock()
	if n := d.iters.Load(); n > 0 || snapshots > 0 {
		leak := fmt.Errorf("strata: Close with %d iterators and %d snapshots still open (closed anyway; they now fail with ErrClosed)", n, snapshots)
		err = errors.Join(err, leak)
	}
	return err
}

// tuneFirstMemtable fits the first memtable's links (memtable.TuneLinks)
// to the keys the recovered memtable holds, or else to the key range of
// the tables: a fresh DB keeps the default.
func (d *DB) tuneFirstMemtable(recovered *memTable) {
	if recovered != nil {
		if lo, hi, ok := recovered.KeyRange(); ok {
			d.mem.TuneLinks(lo, hi)
			return
		}
	}
	if lo, hi, ok := d.vs.Current().KeyRange(); ok {
		d.mem.TuneLinks(memtable.KeyPrefix(lo), memtable.KeyPrefix(hi))
	}
}
