package strata

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/strata-db/strata/checkpoint"
	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/remote"
	"github.com/strata-db/strata/vfs"
)

// OpenFromStore opens checkpoint id of store s as a new database instance
// in dir (which must not exist or be empty), without downloading its
// files: dir gets a manifest that refers to the checkpoint's objects, and
// the database opens at once, reading what it needs from the store
// through its cache (Options.SharedCacheSize) and, with
// Options.SharedWarmup, downloading the rest in the background. New
// writes go to local files; tables and value logs it shares go to s
// under its own instance id. s becomes Options.SharedStore (a different
// one in opts is an error); the database must be opened with it from
// then on. The instance holds every object it uses by a reference marker
// (see package remote), so the checkpoint can be dropped afterwards
// without taking its files from the instance. s may be a view of a store
// with a registry of its own (checkpoint.Named); Options.SharedStore may
// then be the store itself.
func OpenFromStore(ctx context.Context, s checkpoint.Store, id uint64, dir string, opts *Options) (*DB, error) {
	o, fs, err := storeOptions(s, opts)
	if err != nil {
		return nil, fmt.Errorf("strata: OpenFromStore: %w", err)
	}
	if err := checkpoint.Reference(ctx, s, id, fs, dir, remote.NewInstanceID()); err != nil {
		return nil, fmt.Errorf("strata: open checkpoint %d from the store: %w", id, err)
	}
	return Open(dir, o)
}

// OpenRangeFromStore opens as a new database instance in dir (which must
// not exist or be empty) the union of checkpoints ids of store s
// restricted to the user keys in [start, end) (nil: no bound), without
// downloading or copying a file: the rescale of a stream processor, where
// a new instance takes its key range from one old instance's checkpoint
// (a split) or several (a union). Tables and value logs are referenced
// (checkpoint.ReferenceRange says how, and what it refuses: checkpoints
// that overlap in the range, value logs of two checkpoints under one
// number); a table that straddles a bound is read through its visible
// range only, and compactions rewrite it into tables of the range alone.
// Everything else is as OpenFromStore: reads fetch what they need, the
// instance holds what it references, and s becomes its SharedStore.
//
// Keys outside [start, end) are not in the new database, but nothing
// stops a later write of one: a stream processor writes only the key
// groups it owns.
func OpenRangeFromStore(ctx context.Context, s checkpoint.Store, ids []uint64, start, end []byte, dir string, opts *Options) (*DB, error) {
	srcs := make([]checkpoint.StoreCheckpoint, len(ids))
	for i, id := range ids {
		srcs[i] = checkpoint.StoreCheckpoint{Store: s, ID: id}
	}
	return OpenRangeFromCheckpoints(ctx, srcs, start, end, dir, opts)
}

// OpenRangeFromCheckpoints is OpenRangeFromStore of checkpoints of several
// registries of one store (each instance's own, checkpoint.Named).
func OpenRangeFromCheckpoints(ctx context.Context, srcs []checkpoint.StoreCheckpoint, start, end []byte, dir string, opts *Options) (*DB, error) {
	if len(srcs) == 0 {
		return nil, errors.New("strata: OpenRangeFromStore: no checkpoint")
	}
	o, fs, err := storeOptions(srcs[0].Store, opts)
	if err != nil {
		return nil, fmt.Errorf("strata: OpenRangeFromStore: %w", err)
	}
	if err := checkpoint.ReferenceRange(ctx, srcs, start, end, fs, dir, remote.NewInstanceID()); err != nil {
		return nil, fmt.Errorf("strata: open checkpoints %v in [%q, %q) from the store: %w", srcs, start, end, err)
	}
	return Open(dir, o)
}

// storeOptions checks and completes the options of a database opened from
// store s.
func storeOptions(s checkpoint.Store, opts *Options) (*Options, vfs.FS, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	switch {
	case s == nil:
		return nil, nil, errors.New("no store")
	case o.SharedStore != nil && !checkpoint.SameStore(o.SharedStore, s):
		return nil, nil, errors.New("Options.SharedStore is another store than the checkpoint's")
	case o.ReadOnly:
		return nil, nil, fmt.Errorf("%w: opening from the store writes a new instance (open a restored copy read-only instead)", ErrReadOnly)
	}
	if o.SharedStore == nil {
		o.SharedStore = s
	}
	if err := o.Validate(); err != nil {
		return nil, nil, err
	}
	fs := o.FS
	if fs == nil {
		fs = vfs.Default
	}
	return &o, fs, nil
}

// warmLoop downloads whole copies of the shared files not cached, at
// Options.SharedWarmup bytes per second, until the cache is full or
// every file is local, or the DB closes.
func (d *DB) warmLoop() {
	s := d.shared
	rate := d.opts.SharedWarmup
	start, done := time.Now(), int64(0)
	for s.ctx.Err() == nil {
		w, err := s.files.Warm(s.ctx)
		if err != nil {
			if s.ctx.Err() == nil {
				d.opts.Logger.Warn("strata: warming the shared-file cache failed", "err", err)
			}
			return
		}
		if w.Size == 0 {
			return
		}
		// A reader opened before still reads through the cache, whose
		// parts of the file Warm dropped: every read would fetch them
		// again. The next reader opens the local copy.
		d.reopenFile(w.Type, w.Num)
		done += w.Size
		// Pace to the rate: the next download starts once the bytes so
		// far have had their time.
		if wait := time.Duration(float64(done)/float64(rate)*float64(time.Second)) - time.Since(start); wait > 0 {
			select {
			case <-s.ctx.Done():
				return
			case <-time.After(wait):
			}
		}
	}
}

// reopenFile drops the open reader of a table or value log (readers in use
// finish first), so that the next read opens the file anew: its whole
// local copy once the warm-up downloaded it. Its cached blocks and values
// stay: the bytes are the same.
func (d *DB) reopenFile(t base.FileType, num base.FileNum) {
	if t == base.FileTypeVlog {
		d.vlogs.Reopen(num)
	} else {
		d.tableCache.reopen(num)
	}
}
