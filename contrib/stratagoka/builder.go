package stratagoka

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/lovoo/goka/storage"
	"github.com/strata-db/strata"
	"github.com/strata-db/strata/cache"
)

// Defaults of Options.
const (
	// DefaultMemoryBudget bounds the memtables of all of a builder's DBs.
	DefaultMemoryBudget = 256 << 20
	// DefaultCacheSize is the block cache all of a builder's DBs share.
	DefaultCacheSize = 128 << 20
)

// Options configure NewBuilder. The zero value (or nil) works.
type Options struct {
	// DB is the template of every partition's strata.Options (copied; nil:
	// defaults). Its MemoryBudget and Cache, when set, are used as they
	// are, shared with whatever else points at them; when nil, the
	// builder's own shared budget and cache are.
	DB *strata.Options
	// MemoryBudget is the size in bytes of the memtable budget the
	// builder's DBs share when DB.MemoryBudget is nil. Default:
	// DefaultMemoryBudget (256 MiB).
	MemoryBudget int64
	// CacheSize is the size in bytes of the block cache the builder's DBs
	// share when DB.Cache is nil. Default: DefaultCacheSize (128 MiB);
	// negative: no block cache.
	CacheSize int64
	// NoBulkRecovery writes recovery through the WAL like any write,
	// instead of as a bulk load made durable by MarkRecovered.
	NoBulkRecovery bool
	// OnOpen, when set, is called with each partition's DB once it is
	// open, before the storage is handed to goka: the place to register
	// per-partition metrics (strataprom.Register with the topic and
	// partition as labels). The onClose it returns (nil: nothing) runs when
	// the storage closes, before its DB does: the place to unregister
	// them. An error closes the DB and fails the build of the storage.
	OnOpen func(topic string, partition int32, db *strata.DB) (onClose func(), err error)
}

// NewBuilder returns a goka storage builder that keeps each table
// partition in a Strata DB of its own, in dir/<topic>.<partition>; the
// DBs share a memtable budget and a block cache (see Options). Closing a
// storage closes its DB.
func NewBuilder(dir string, o *Options) storage.Builder {
	var opts Options
	if o != nil {
		opts = *o
	}
	var dbOpts strata.Options
	if opts.DB != nil {
		dbOpts = *opts.DB
	}
	var setupErr error
	if dbOpts.MemoryBudget == nil {
		size := opts.MemoryBudget
		if size == 0 {
			size = DefaultMemoryBudget
		}
		dbOpts.MemoryBudget, setupErr = strata.NewWriteBudget(size)
	}
	if dbOpts.Cache == nil {
		size := opts.CacheSize
		if size == 0 {
			size = DefaultCacheSize
		}
		if size > 0 {
			dbOpts.Cache = cache.New(size)
		} else {
			dbOpts.CacheSize = -1 // no block cache at all
		}
	}
	return func(topic string, partition int32) (storage.Storage, error) {
		if setupErr != nil {
			return nil, fmt.Errorf("strata goka storage: %w", setupErr)
		}
		o := dbOpts // each DB gets its own copy; budget and cache are shared
		path := filepath.Join(dir, fmt.Sprintf("%s.%d", topic, partition))
		db, err := strata.Open(path, &o)
		if err != nil {
			return nil, fmt.Errorf("strata goka storage: open %s: %w", path, err)
		}
		s := New(db, !opts.NoBulkRecovery)
		s.owned = true
		if opts.OnOpen != nil {
			if s.onClose, err = opts.OnOpen(topic, partition, db); err != nil {
				return nil, errors.Join(fmt.Errorf("strata goka storage: %s: %w", path, err), db.Close())
			}
		}
		return s, nil
	}
}
