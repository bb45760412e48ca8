package strata_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/checkpoint"
	"github.com/strata-db/strata/gc"
	"github.com/strata-db/strata/vfs"
)

// The public API that programs and tests outside this repository use,
// pinned by type: a rename or a changed signature fails to compile here
// before it breaks them. New capabilities add to this list; they do not
// change what is in it.
var (
	_ func(string, *strata.Options) (*strata.DB, error) = strata.Open
	_ func(*strata.DB) error                            = (*strata.DB).Close

	_ *strata.WriteOptions = strata.Sync
	_ *strata.WriteOptions = strata.NoSync
	_                      = strata.WriteOptions{Sync: true}

	_ func(*strata.DB, []byte, []byte, *strata.WriteOptions) error = (*strata.DB).Set
	_ func(*strata.DB, []byte, *strata.WriteOptions) error         = (*strata.DB).Delete
	_ func(*strata.DB, []byte, []byte, *strata.WriteOptions) error = (*strata.DB).DeleteRange
	_ func(*strata.DB) *strata.Batch                               = (*strata.DB).NewBatch
	_ func(*strata.DB, *strata.Batch, *strata.WriteOptions) error  = (*strata.DB).Apply
	_ func(*strata.Batch, []byte, []byte) error                    = (*strata.Batch).Set
	_ func(*strata.Batch, []byte) error                            = (*strata.Batch).Delete
	_ func(*strata.Batch, []byte, []byte) error                    = (*strata.Batch).DeleteRange
	_ func(*strata.Batch) int                                      = (*strata.Batch).Len
	_ func(*strata.Batch)                                          = (*strata.Batch).Reset

	_ func(*strata.DB, []byte) ([]byte, error) = (*strata.DB).Get

	_                                                                 = strata.IterOptions{LowerBound: nil, UpperBound: nil}
	_ func(*strata.DB, *strata.IterOptions) (*strata.Iterator, error) = (*strata.DB).NewIter
	_ func(*strata.Iterator) bool                                     = (*strata.Iterator).First
	_ func(*strata.Iterator) bool                                     = (*strata.Iterator).Last
	_ func(*strata.Iterator, []byte) bool                             = (*strata.Iterator).SeekGE
	_ func(*strata.Iterator, []byte) bool                             = (*strata.Iterator).SeekLT
	_ func(*strata.Iterator) bool                                     = (*strata.Iterator).Next
	_ func(*strata.Iterator) bool                                     = (*strata.Iterator).Prev
	_ func(*strata.Iterator) bool                                     = (*strata.Iterator).Valid
	_ func(*strata.Iterator) []byte                                   = (*strata.Iterator).Key
	_ func(*strata.Iterator) []byte                                   = (*strata.Iterator).Value
	_ func(*strata.Iterator) error                                    = (*strata.Iterator).Error
	_ func(*strata.Iterator) error                                    = (*strata.Iterator).Close

	_ func(*strata.DB) *strata.Snapshot                                     = (*strata.DB).NewSnapshot
	_ func(*strata.Snapshot, []byte) ([]byte, error)                        = (*strata.Snapshot).Get
	_ func(*strata.Snapshot, *strata.IterOptions) (*strata.Iterator, error) = (*strata.Snapshot).NewIter
	_ func(*strata.Snapshot) error                                          = (*strata.Snapshot).Close

	_ func(*strata.DB) error                 = (*strata.DB).Flush
	_ func(*strata.DB, []byte, []byte) error = (*strata.DB).Compact
	_ func(*strata.DB) *strata.Metrics       = (*strata.DB).Metrics
	_ func(*strata.Metrics) string           = (*strata.Metrics).String
	_ func(*strata.DB, string) error         = (*strata.DB).Checkpoint

	// The second wave's names.
	_ func(*strata.DB, []byte, []byte, *strata.WriteOptions) error                = (*strata.DB).Merge
	_ func(*strata.Batch, []byte, []byte) error                                   = (*strata.Batch).Merge
	_ func(*strata.DB, []byte, []byte, time.Duration, *strata.WriteOptions) error = (*strata.DB).SetWithTTL
	_ func(*strata.Batch, []byte, []byte, time.Duration) error                    = (*strata.Batch).SetWithTTL
	_ strata.Merger                                                               = strata.ListAppend
	_ strata.Merger                                                               = strata.Counter

	_ func(*strata.DB, []byte) (bool, error) = (*strata.DB).Has
	_ func(*strata.DB, []string) error       = (*strata.DB).Ingest

	// The third wave's names (OpenRangeFromStore is not built yet).
	_ func(context.Context, checkpoint.Store, uint64, string, *strata.Options) (*strata.DB, error) = strata.OpenFromStore
	_ func(*strata.DB) error                                                                       = (*strata.DB).Sync
	_ func(*strata.Iterator, []byte) bool                                                          = (*strata.Iterator).SeekLE
	_                                                                                              = strata.IterOptions{Prefix: nil}

	// One argument order for the functions of a store: ctx, store, id,
	// [start, end,] dir, opts. RestoreRange, of the other order, forwards.
	_ func(context.Context, checkpoint.Store, uint64, string, *strata.Options) error                    = strata.RestoreFromStore
	_ func(context.Context, checkpoint.Store, uint64, []byte, []byte, string, *strata.Options) error    = strata.RestoreRangeFromStore
	_ func(context.Context, checkpoint.Store, uint64, string, []byte, []byte, *strata.Options) error    = strata.RestoreRange
	_ func(context.Context, checkpoint.Store, uint64, vfs.FS, string, *checkpoint.RestoreOptions) error = checkpoint.Restore

	_ checkpoint.Store                                        = (*checkpoint.LocalStore)(nil)
	_ checkpoint.Store                                        = (*checkpoint.S3Store)(nil)
	_ func(string) (*checkpoint.LocalStore, error)            = checkpoint.NewLocalStore
	_ func(checkpoint.S3Options) (*checkpoint.S3Store, error) = checkpoint.NewS3Store
)

// TestAPIOptionsAndErrors pins the Options fields and error values of the
// public API, which a var block cannot.
func TestAPIOptionsAndErrors(t *testing.T) {
	o := strata.Options{
		MemTableSize:   64 << 20,
		ValueThreshold: 1024,
		ReadOnly:       false,
		GCPolicy:       gc.ReverseLookup(0.9),
		Merger:         strata.ListAppend,
		Clock:          time.Now,
	}
	var _ int64 = o.MemTableSize
	var _ int = o.ValueThreshold
	var _ bool = o.ReadOnly
	var _ gc.Policy = o.GCPolicy
	var _ func() time.Time = o.Clock
	for _, p := range []gc.Policy{gc.Passive(), gc.ReverseLookup(0.9), gc.Rewrite(), gc.Cost(1.5)} {
		if p == nil {
			t.Fatal("a GC policy constructor returned nil")
		}
	}
	for _, err := range []error{strata.ErrNotFound, strata.ErrCorruption, strata.ErrClosed} {
		if err == nil || !errors.Is(err, err) {
			t.Fatalf("error value %v", err)
		}
	}
}
