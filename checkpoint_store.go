package strata

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"

	"github.com/strata-db/strata/checkpoint"
	"github.com/strata-db/strata/vfs"
)

// CheckpointToStore writes an incremental checkpoint into u's store: it
// uploads the tables and value logs the store does not hold yet, a
// manifest, and the registry that commits it (see package checkpoint).
// checkpoint.Restore rebuilds a database from it.
//
// As Checkpoint, it holds every write acknowledged before it was called
// and is the state after some prefix of the writes. The version it
// uploads stays pinned until it returns, so neither compaction nor
// value-log garbage collection deletes a file it is reading; writes go on
// meanwhile. On error the store holds what it held before.
//
// Calls on one Uploader run one after the other, each flushing and
// pinning its version in its turn, so that checkpoint ids follow the
// states they hold: the later checkpoint is never the older state (which
// KeepLast would then keep, dropping the newer).
func (d *DB) CheckpointToStore(ctx context.Context, u *checkpoint.Uploader) (checkpoint.Stats, error) {
	if testHookToStore != nil {
		testHookToStore()
	}
	// With a store of shared files, the files that qualify go to the
	// store as shared objects first (the share loop may be behind): the
	// checkpoint then references them, and the store gets them once. It
	// waits after the flush, which finishes the value log being written:
	// shared before, that value log would go into the checkpoint's data
	// as a copy and reach the store a second time when the loop shared
	// it, both kept until the checkpoint was retired.
	share := func() { d.shareForCheckpoint(ctx) }
	stats, err := u.UploadPinned(ctx, func(upload func(checkpoint.Source) error) error {
		return d.withPinnedVersion("checkpoint", share, upload)
	})
	if err != nil {
		return checkpoint.Stats{}, fmt.Errorf("strata: checkpoint to store: %w", err)
	}
	return stats, nil
}

// withPinnedVersion flushes the memtable (so that the tables hold every
// write acknowledged so far), calls afterFlush if it is not nil, pins the
// current version and calls fn with it; Close waits for fn to return.
func (d *DB) withPinnedVersion(hook string, afterFlush func(), fn func(src checkpoint.Source) error) error {
	if d.opts.ReadOnly {
		// The memtable a checkpoint needs flushed cannot be.
		return ErrReadOnly
	}
	// Close waits for checkpoints in progress, so the directory and its
	// files stay while this one reads them; one that starts after Close
	// began is refused.
	d.mu.Lock()
	if d.closed.Load() {
		d.mu.Unlock()
		return ErrClosed
	}
	d.checkpoints++
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		d.checkpoints--
		d.cond.Broadcast()
		d.mu.Unlock()
	}()
	if testHookEntry != nil {
		testHookEntry(hook)
	}
	if err := d.flush(); err != nil {
		return err
	}
	if afterFlush != nil {
		afterFlush()
	}
	d.mu.Lock()
	v := d.vs.Current()
	v.Ref()
	src := checkpoint.Source{
		FS:          d.fs,
		Dir:         d.dirname,
		Version:     v,
		LastSeq:     max(d.vs.LastSeq(), v.LargestSeq()),
		NextFileNum: d.vs.NewFileNum(),
		Open:        d.openFile,
	}
	d.mu.Unlock()
	defer v.Unref()
	if testHookPinned != nil {
		testHookPinned()
	}
	return fn(src)
}

// Test hooks of TestCheckpointToStoreIDsFollowPins: testHookToStore runs
// when CheckpointToStore is called, before it waits for the uploads ahead
// of it on its Uploader; testHookPinned in withPinnedVersion once the
// version is pinned.
var testHookToStore, testHookPinned func()

// The functions of this package that take a store put their arguments in
// one order: context, store, checkpoint id (or ids), the key range where
// there is one, the local directory, options. checkpoint.Restore, a level
// below, follows it too, with the filesystem ahead of the directory it is
// the filesystem of.

// RestoreFromStore restores checkpoint id of store s into dir, which must
// not exist or be empty: it downloads the checkpoint's tables and value
// logs, verifying each file's checksum, and leaves dir complete or
// untouched (checkpoint.Restore does the work). opts.FS is where dir is
// (nil opts: the disk); afterwards Open dir as any database.
func RestoreFromStore(ctx context.Context, s checkpoint.Store, id uint64, dir string, opts *Options) error {
	var fs vfs.FS
	if opts != nil {
		fs = opts.FS
	}
	if err := checkpoint.Restore(ctx, s, id, fs, dir, nil); err != nil {
		return fmt.Errorf("strata: restore: %w", err)
	}
	return nil
}

// RestoreRange is RestoreRangeFromStore with the directory ahead of the
// key range.
//
// Deprecated: use RestoreRangeFromStore, whose arguments come in the order
// of the package's other functions of a store (ctx, store, id, start, end,
// dir, opts).
func RestoreRange(ctx context.Context, s checkpoint.Store, id uint64, dir string, start, end []byte, opts *Options) error {
	return RestoreRangeFromStore(ctx, s, id, start, end, dir, opts)
}

// RestoreRangeFromStore restores the keys in [start, end) (nil: no bound)
// of checkpoint id of store s into dir, which must not exist or be empty:
// it fetches only the tables whose keys overlap the range, and the value
// logs they reference, then deletes the keys outside the range with range
// deletions (whose value-log space garbage collection reclaims as the
// tables are compacted). opts are the options to open the result with
// (nil: defaults; opts.FS is where dir is). dir is complete or untouched
// when it returns; afterwards Open it as any database.
func RestoreRangeFromStore(ctx context.Context, s checkpoint.Store, id uint64, start, end []byte, dir string, opts *Options) error {
	var o Options
	if opts != nil {
		o = *opts
	}
	o.ReadOnly = false
	ro := &checkpoint.RestoreOptions{Start: start, End: end}
	ro.Prepare = func(fs vfs.FS, tmp string) (err error) {
		o.FS = fs
		db, err := Open(tmp, &o)
		if err != nil {
			return err
		}
		defer func() {
			if cerr := db.Close(); err == nil {
				err = cerr
			}
		}()
		return clipToRange(db, start, end)
	}
	fs := o.FS
	if fs == nil {
		fs = vfs.Default
	}
	if err := checkpoint.Restore(ctx, s, id, fs, dir, ro); err != nil {
		return fmt.Errorf("strata: restore range: %w", err)
	}
	return nil
}

// clipToRange deletes every key of db outside [start, end), durably.
func clipToRange(db *DB, start, end []byte) error {
	b := db.NewBatch()
	if len(start) > 0 {
		b.DeleteRange([]byte{}, start)
	}
	if end != nil {
		// The range deletion's end comes from the tables' bounds, not
		// from an iterator: an iterator resolves merge operands, and keys
		// outside the range may hold operands the caller has no Merger
		// for. Flush first so that every key is in a table.
		if err := db.Flush(); err != nil {
			return err
		}
		rs := db.loadReadState()
		if rs.readState == nil {
			return ErrClosed
		}
		_, last, ok := rs.version.KeyRange()
		if ok && bytes.Compare(last, end) >= 0 {
			b.DeleteRange(end, append(append([]byte(nil), last...), 0))
		}
		rs.unref()
	}
	if b.Len() == 0 {
		return nil
	}
	if err := db.Apply(b, Sync); err != nil {
		return err
	}
	return db.Flush()
}

// IngestRange adds to d the keys in [start, end) (nil: no bound) of
// checkpoint id of store s, newer than every write acknowledged before the
// call: the way a rescaled instance takes over a key range from another
// instance's checkpoint while it holds state of its own (Flink's rescale,
// where one new instance draws on several old ones). It fetches only the
// tables that overlap the range and the value logs they reference, next
// to d's directory; writes the range's live entries into one external
// table (values at d's separation threshold go to its value log), and
// ingests it (Ingest). Each key reads in d as it reads in the checkpoint
// by d's Options.Clock and Merger, now and later: a value keeps its
// expiry, merge operands are merged (kept as operands above a value that
// expires, which they outlive), and range deletions hide what they cover
// inside the range and nothing outside it. Nothing of the range's past
// versions or tombstones comes along: a key the checkpoint does not hold
// (deleted or expired) keeps in d what d held. The temporary files are
// removed in every case. It returns the number of keys ingested.
func (d *DB) IngestRange(ctx context.Context, s checkpoint.Store, id uint64, start, end []byte) (int, error) {
	if err := d.checkWritable(); err != nil {
		return 0, err
	}
	tmp := fmt.Sprintf("%s.ingest-%d-%d", d.dirname, id, ingestSeq.Add(1))
	defer d.fs.RemoveAll(tmp)
	if err := checkpoint.Restore(ctx, s, id, d.fs, tmp, &checkpoint.RestoreOptions{Start: start, End: end}); err != nil {
		return 0, fmt.Errorf("strata: ingest range: %w", err)
	}
	ext := tmp + ".sst"
	defer func() {
		_ = d.fs.Remove(ext)
		_ = d.fs.Remove(ValueLogPath(ext))
	}()
	n, err := exportRange(d.fs, tmp, ext, start, end, d.opts)
	if err != nil || n == 0 {
		return 0, err
	}
	if err := d.Ingest([]string{ext}); err != nil {
		return 0, err
	}
	return n, nil
}

var ingestSeq atomic.Uint64

// exportRange writes the live entries in [start, end) of the database in
// dir into the external table path, separating values as opts decides; it
// writes nothing when the range is empty. The database is opened
// read-only with opts' Clock and Merger, those of the DB that ingests the
// table, so that each key is written as that DB reads it: a value with its
// expiry, and a merged value as the merge, except over a value that
// expires, which is written with the key's operands above it (see
// Iterator.layers). Range deletions in the database hide what they cover
// and are not written.
func exportRange(fs vfs.FS, dir, path string, start, end []byte, opts *Options) (n int, err error) {
	src, err := Open(dir, &Options{FS: fs, ReadOnly: true, Clock: opts.Clock, Merger: opts.Merger})
	if err != nil {
		return 0, fmt.Errorf("strata: ingest range: %w", err)
	}
	defer func() {
		if cerr := src.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("strata: ingest range: %w", cerr)
		}
	}()
	it, err := src.NewIter(&IterOptions{LowerBound: start, UpperBound: end})
	if err != nil {
		return 0, err
	}
	defer it.Close()
	var w *TableWriter
	for ok := it.First(); ok; ok = it.Next() {
		if w == nil {
			if w, err = NewTableWriter(path, &TableWriterOptions{FS: fs, ValueThreshold: opts.ValueThreshold}); err != nil {
				return 0, err
			}
		}
		expiresAt, below, operands := it.layers()
		if operands == nil {
			below = it.Value()
		} else if op, ok := opts.Merger.PartialMerge(it.Key(), operands); ok {
			operands = [][]byte{op}
		}
		if err = it.Error(); err == nil {
			err = w.setEntry(it.Key(), below, expiresAt, operands)
		}
		if err != nil {
			w.Abort()
			return 0, err
		}
		n++
	}
	if err = it.Error(); err != nil {
		if w != nil {
			w.Abort()
		}
		return 0, err
	}
	if w == nil {
		return 0, nil
	}
	return n, w.Close()
}
