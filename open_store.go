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
	var o Options
	if opts != nil {
		o = *opts
	}
	switch {
	case s == nil:
		return nil, errors.New("strata: OpenFromStore: no store")
	case o.SharedStore != nil && !checkpoint.SameStore(o.SharedStore, s):
		return nil, errors.New("strata: OpenFromStore: Options.SharedStore is another store than the checkpoint's")
	case o.ReadOnly:
		return nil, fmt.Errorf("%w: OpenFromStore writes a new instance (open a restored copy read-only instead)", ErrReadOnly)
	}
	if o.SharedStore == nil {
		o.SharedStore = s
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	fs := o.FS
	if fs == nil {
		fs = vfs.Default
	}
	if err := checkpoint.Reference(ctx, s, id, fs, dir, remote.NewInstanceID()); err != nil {
		return nil, fmt.Errorf("strata: open checkpoint %d from the store: %w", id, err)
	}
	return Open(dir, &o)
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
