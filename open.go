package strata

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/strata-db/strata/cache"
	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/lsm/memtable"
	"github.com/strata-db/strata/lsm/record"
	"github.com/strata-db/strata/vlog"
)

// Open opens the database in dirname, creating it unless
// Options.ErrorIfNotExists is set. nil opts means defaults.
//
// Recovery replays the WALs that hold writes not yet in SSTables, stopping
// cleanly at a torn tail (a write that was not synced when the machine
// stopped), and fails with an error matching ErrCorruption when a WAL or the
// manifest is damaged in the middle.
func Open(dirname string, opts *Options) (db *DB, err error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	o := opts.EnsureDefaults()
	fs := o.FS
	if err := fs.MkdirAll(dirname, 0o755); err != nil {
		return nil, fmt.Errorf("strata: create directory: %w", err)
	}
	lock, err := lockDir(fs, dirname)
	if err != nil {
		return nil, err
	}
	d := &DB{dirname: dirname, opts: o, fs: fs, lock: lock, flushCh: make(chan struct{}, 1), walFlushCh: make(chan struct{}, 1)}
	d.cond.L = &d.mu
	defer func() {
		if err != nil {
			if d.tableCache != nil {
				d.tableCache.close()
			}
			if d.vlogs != nil {
				d.vlogs.close()
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
	d.tableCache = newTableCache(fs, dirname, d.cache, o.MaxOpenFiles)
	d.vlogs = newVlogCache(fs, dirname, d.cache)
	d.memPool.size = int(o.MemTableSize)
	d.observer, _ = o.SeparationPolicy.(vlog.Observer)

	vsOpts := manifest.Options{FS: fs, Dirname: dirname, Mu: &d.mu, Obsolete: d.onObsolete, MaxManifestSize: o.MaxManifestFileSize}
	_, statErr := fs.Stat(fs.PathJoin(dirname, base.MakeFilename(base.FileTypeCurrent, 0)))
	exists := statErr == nil
	if statErr != nil && !errors.Is(statErr, os.ErrNotExist) {
		return nil, fmt.Errorf("strata: stat CURRENT: %w", statErr)
	}
	switch {
	case exists && o.ErrorIfExists:
		return nil, fmt.Errorf("strata: database %q already exists", dirname)
	case !exists && o.ErrorIfNotExists:
		return nil, fmt.Errorf("strata: database %q does not exist", dirname)
	case exists:
		d.vs, err = manifest.Load(vsOpts)
	default:
		d.vs, err = manifest.Create(vsOpts)
	}
	if err != nil {
		return nil, err
	}

	d.mu.Lock()
	logNum, lastSeq := d.vs.LogNum(), d.vs.LastSeq()
	d.mu.Unlock()

	names, err := fs.List(dirname)
	if err != nil {
		return nil, fmt.Errorf("strata: list directory: %w", err)
	}
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

	// Replay the WALs into memtables, writing full ones to L0 as we go.
	ve := &manifest.VersionEdit{}
	rp := &walReplay{d: d, ve: ve, flushedSeq: lastSeq, maxSeq: lastSeq}
	for _, num := range logs {
		if err := rp.replay(num); err != nil {
			return nil, err
		}
	}
	maxSeq := rp.maxSeq
	// The manifest's last sequence number says what is in tables; writes
	// kept in the recovered memtable are replayed again after a crash.
	ve.SetLastSeq(rp.flushedSeq)

	if !o.DisableWAL {
		newLog := d.vs.NewFileNum()
		var wf *walFile
		if d.commit.wal, wf, err = d.createWAL(newLog); err != nil {
			return nil, err
		}
		d.walFile.Store(wf)
		d.walNums = append(d.walNums, newLog)
		d.mem = d.memPool.get(int(o.MemTableSize), newLog)
		if rp.mem != nil {
			// The recovered writes become a frozen memtable that the
			// background flush writes out after Open returns, so Open does
			// not wait for it; their WALs stay until it is flushed. (Keeping
			// it as the mutable memtable would save that flush, but every
			// read would then search a large memtable first.)
			d.imm = append(d.imm, rp.mem)
			ve.SetLogNum(rp.firstLog)
			for _, num := range logs {
				if num >= rp.firstLog {
					d.walNums = append(d.walNums, num)
				}
			}
			slices.Sort(d.walNums)
		} else {
			ve.SetLogNum(newLog)
		}
	} else {
		// Nothing to replay without a WAL.
		ve.SetLogNum(d.vs.NewFileNum())
		d.mem = d.memPool.get(int(o.MemTableSize), 0)
	}
	d.mu.Lock()
	err = d.vs.LogAndApply(ve)
	if err == nil {
		d.updateReadStateLocked()
		d.updateL0CountLocked()
	}
	d.mu.Unlock()
	if err != nil {
		return nil, err
	}
	d.commit.lastSeq = maxSeq
	d.visibleSeq.Store(uint64(maxSeq))

	d.deleteUnreferencedFiles(names)
	d.bgWG.Add(2)
	go d.backgroundLoop()
	go d.walFlushLoop()
	d.mu.Lock()
	d.maybeScheduleCompactionLocked()
	recovered := len(d.imm) > 0
	d.mu.Unlock()
	if recovered {
		d.scheduleBackground()
	}
	return d, nil
}

// walReplay accumulates recovered writes in a memtable, writing it to L0
// when it fills. What is left at the end is flushed in the background once
// the DB is open, so Open does not wait for it.
type walReplay struct {
	d          *DB
	ve         *manifest.VersionEdit
	flushedSeq base.SeqNum // batches at or below it are already in tables
	maxSeq     base.SeqNum // the largest sequence number replayed
	mem        *memTable
	// firstLog is the oldest WAL with writes in mem: it and every later WAL
	// must stay until mem is flushed.
	firstLog base.FileNum
}

func (r *walReplay) flush() error {
	if r.mem == nil || r.mem.Empty() {
		return nil
	}
	meta, vm, err := r.d.writeL0(r.mem, nil)
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
	for {
		offset := rd.Offset()
		rec, err := rd.Next()
		if err == io.EOF {
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
		if seq+base.SeqNum(br.count)-1 <= r.flushedSeq {
			continue
		}
		for {
			kind, key, value, ok, err := br.next()
			if err != nil {
				return base.CorruptionErrorf(name, offset, "%v", err)
			}
			if !ok {
				break
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
			r.maxSeq = max(r.maxSeq, seq)
			r.mem.maxSeq.Store(uint64(r.maxSeq))
			seq++
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

// Close flushes nothing to the WAL that is not already there, waits for
// background work, and releases the directory. With the WAL disabled it
// first flushes the memtable, so a clean Close loses nothing. Iterators and
// snapshots must be closed first; using them afterwards returns errors.
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
	if d.opts.DisableWAL {
		err = d.flush()
	}
	// Wait for in-flight writes: a barrier queues behind them.
	_ = d.writeOp(nil, false, opBarrier)
	// Running compactions finish (no new ones start once closed is set).
	d.mu.Lock()
	for d.compactions.running > 0 {
		d.cond.Wait()
	}
	d.mu.Unlock()
	d.stopBackground()
	close(d.walFlushCh)
	d.bgWG.Wait()

	d.commit.mu.Lock()
	if d.commit.wal != nil {
		if cerr := d.commit.wal.Close(); err == nil {
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
	d.deleteObsoleteFiles()
	d.tableCache.close()
	d.vlogs.close()
	if cerr := d.lock.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		d.mu.Lock()
		err = d.bgErr
		d.mu.Unlock()
	}
	return err
}
