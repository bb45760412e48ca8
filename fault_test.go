package strata

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/strata-db/strata/gc"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// TestFaultInjection fails each filesystem operation in turn (the i-th
// operation of a run that opens the database, writes, flushes, compacts and
// closes). Every failure must surface as an error, never a panic, and the
// database must reopen afterwards in the state after some prefix of the
// writes that holds every write acknowledged with Sync (or flushed), and
// holds no write beyond the acknowledged ones plus the one that failed.
func TestFaultInjection(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"wal", Options{MemTableSize: 64 << 10, ValueThreshold: 64}},
		{"no-wal", Options{MemTableSize: 64 << 10, DisableWAL: true}},
		// Every filesystem operation of garbage collection fails in turn:
		// relocation during compaction, rewrite, value-log deletion.
		{"gc-recompact", Options{MemTableSize: 16 << 10, TargetFileSize: 4 << 10, LBaseMaxBytes: 16 << 10, ValueThreshold: 32,
			GCPolicy: &gc.ReverseLookupPolicy{Ratio: 0.3, MaxSpaceAmp: 1.1, MaxInFlight: 8}}},
		{"gc-rewrite", Options{MemTableSize: 16 << 10, TargetFileSize: 4 << 10, LBaseMaxBytes: 16 << 10, ValueThreshold: 32,
			GCPolicy: &gc.RewritePolicy{Ratio: 0.2, MaxSpaceAmp: 1.1, MaxInFlight: 8}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			count := runFaultWorkload(t, tc.opts, -1)
			stride := int64(1)
			if testing.Short() {
				stride = max(1, count/150)
			}
			t.Logf("%d filesystem operations per run, failing every %d", count, stride)
			for i := int64(0); i < count; i += stride {
				runFaultWorkload(t, tc.opts, i)
			}
		})
	}
}

// runFaultWorkload runs the workload with the index-th operation failing
// and returns the number of operations the run made.
func runFaultWorkload(t *testing.T, opts Options, index int64) int64 {
	where := fmt.Sprintf("fault at op %d", index)
	mem := vfs.NewMem()
	rng := rand.New(rand.NewPCG(42, 0xfa))
	h := &history{}

	// A first session, without faults, leaves tables and a WAL behind for
	// the faulty session's recovery to read.
	opts.FS = mem
	db, err := Open("db", &opts)
	require.NoError(t, err)
	w := &writer{rng: rng, db: db, h: h, wal: !opts.DisableWAL}
	for i := 0; i < 150; i++ {
		_, err := w.step()
		require.NoError(t, err)
	}
	require.NoError(t, db.Close())
	h.markDurable()

	inj := vfs.OnIndex(index)
	opts.FS = vfs.NewErrorFS(mem, inj)
	var pending *historyOp
	var failed error
	db, err = Open("db", &opts)
	if err != nil {
		failed = err
	} else {
		w.db = db
		for i := 0; i < 150 && failed == nil; i++ {
			pending, failed = w.step()
		}
		if failed == nil {
			failed = db.Flush()
		}
		if cerr := db.Close(); failed == nil {
			failed = cerr
		}
	}
	if failed != nil && !errors.Is(failed, vfs.ErrInjected) {
		t.Fatalf("%s: error does not wrap the injected fault: %v", where, failed)
	}
	if index < 0 {
		require.NoError(t, failed)
	}
	// After a clean close every acknowledged write is durable. After a
	// failure, those acknowledged with Sync (and everything before them, and
	// everything a completed Flush wrote) are; later ones without Sync may
	// have been waiting for the WAL flusher or a flush and can be lost.
	if failed == nil {
		h.markDurable()
	}
	maxLen := len(h.ops)
	if pending != nil {
		h.add("pending "+pending.desc, pending.muts...)
		maxLen++
	}

	// Reopen without faults.
	opts.FS = mem
	db, err = Open("db", &opts)
	require.NoError(t, err, "%s: reopen after %v", where, failed)
	got, err := readAll(t, db)
	require.NoError(t, err, where)
	if p := h.matchPrefix(got, maxLen); p < 0 {
		t.Fatalf("%s (%v): recovered state is wrong: %s", where, failed, h.describeMismatch(got))
	}
	require.NoError(t, db.Close())
	return inj.Count()
}

// TestCloseReportsBackgroundError: when a background rotation fails to
// close the old WAL (its final sync fails), Close must report that failure,
// not the "writer closed" its own second close of the WAL meets. (Found as
// a flake of TestFaultInjection/gc-rewrite, whose rewrite job rotates the
// memtable in the background.)
func TestCloseReportsBackgroundError(t *testing.T) {
	mem := vfs.NewMem()
	var failSync atomic.Bool
	fs := vfs.NewErrorFS(mem, vfs.InjectorFunc(func(op vfs.Op) error {
		if failSync.Load() && op.Kind == vfs.OpSync && strings.HasSuffix(op.Path, ".log") {
			return fmt.Errorf("sync %s: %w", op.Path, vfs.ErrInjected)
		}
		return nil
	}))
	db, err := Open("db", &Options{FS: fs})
	require.NoError(t, err)
	require.NoError(t, db.Set([]byte("a"), []byte("1"), NoSync))
	// The rotation leaves the WAL holding "a" to the sealer, whose sync
	// and close of it fail.
	failSync.Store(true)
	require.NoError(t, db.writeOp(nil, false, opRotate))
	require.ErrorIs(t, db.waitAllSealed(), vfs.ErrInjected)
	failSync.Store(false)
	require.ErrorIs(t, db.Set([]byte("b"), []byte("2"), NoSync), ErrWritesStopped)
	require.ErrorIs(t, db.Close(), vfs.ErrInjected)
}
