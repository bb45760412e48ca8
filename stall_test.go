package strata

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// TestWritesStallAtL0Limit holds every compaction at its start, so L0 can
// only grow: writers must stop (a write-stall event) once L0 reaches
// L0StopWritesThreshold, L0 must never pass it, and writes must resume
// when compactions are let go.
func TestWritesStallAtL0Limit(t *testing.T) {
	release := make(chan struct{})
	var stalls atomic.Int32
	var maxL0 atomic.Int32
	var releaseOnce sync.Once
	var db *DB
	listener := &EventListener{
		CompactionBegin: func(CompactionInfo) { <-release },
		WriteStallBegin: func(i WriteStallInfo) {
			if i.Reason != "L0 files" {
				return
			}
			stalls.Add(1)
			// Let compactions go only once writers have had to wait for them.
			releaseOnce.Do(func() { close(release) })
		},
		FlushEnd: func(FlushInfo) {
			if n := db.l0Files.Load(); n > maxL0.Load() {
				maxL0.Store(n)
			}
		},
	}
	opts := &Options{FS: vfs.NewMem(), MemTableSize: 16 << 10, L0CompactionThreshold: 2,
		L0SlowdownWritesThreshold: 4, L0StopWritesThreshold: 6, SlowdownWriteRate: 64 << 20,
		EventListener: listener}
	var err error
	db, err = Open("db", opts)
	require.NoError(t, err)
	value := make([]byte, 200)
	done := make(chan error, 1)
	go func() {
		for i := 0; i < 3000; i++ {
			if err := db.Set([]byte{byte(i >> 8), byte(i)}, value, NoSync); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(time.Minute):
		t.Fatal("writes did not resume after compactions were released")
	}
	require.Positive(t, stalls.Load(), "writers never stalled on L0")
	// The DB works on a copy of opts with defaults filled in: read the bound
	// it actually uses.
	require.LessOrEqual(t, maxL0.Load(), int32(db.opts.L0StopWritesThreshold+db.opts.MaxImmutableMemTables),
		"L0 grew past the stop threshold (plus the memtables already frozen)")
	m := db.Metrics()
	require.Positive(t, m.WriteStalls)
	require.Positive(t, m.StallDuration)
	require.NoError(t, db.Close())
}

// TestWriteStallReasonChanges: a stall that begins because the frozen
// memtables wait for a flush, and goes on, once they are flushed, because
// L0 is full, ends and begins again with the new reason, so that a
// listener sees why writers wait. (Reporting only the first reason once
// hung TestWritesStallAtL0Limit on a loaded machine: its listener waits
// for an L0 stall to let compactions go.)
func TestWriteStallReasonChanges(t *testing.T) {
	var holdFlushes atomic.Bool
	flushGate, compactGate := make(chan struct{}), make(chan struct{})
	var compactOnce sync.Once
	releaseCompactions := func() { compactOnce.Do(func() { close(compactGate) }) }
	defer releaseCompactions()
	reasons := make(chan string, 100)
	var begins, ends atomic.Int32
	listener := &EventListener{
		FlushBegin: func(FlushInfo) {
			if holdFlushes.Load() {
				<-flushGate
			}
		},
		CompactionBegin: func(CompactionInfo) { <-compactGate },
		WriteStallBegin: func(i WriteStallInfo) {
			begins.Add(1)
			reasons <- i.Reason
		},
		WriteStallEnd: func() { ends.Add(1) },
	}
	opts := &Options{FS: vfs.NewMem(), MemTableSize: 16 << 10, L0CompactionThreshold: 2,
		L0SlowdownWritesThreshold: 6, L0StopWritesThreshold: 6, EventListener: listener}
	db, err := Open("db", opts)
	require.NoError(t, err)
	value := make([]byte, 200)
	key := 0
	put := func() error {
		key++
		return db.Set([]byte{byte(key >> 16), byte(key >> 8), byte(key)}, value, NoSync)
	}
	// Five tables in L0; compactions are held.
	for range 5 {
		require.NoError(t, put())
		require.NoError(t, db.Flush())
	}
	require.EqualValues(t, 5, db.l0Files.Load())
	// Flushes are held too: the memtables fill and writers stall on them.
	holdFlushes.Store(true)
	done := make(chan error, 1)
	go func() {
		for range 2000 {
			if err := put(); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	next := func(want string) {
		t.Helper()
		select {
		case got := <-reasons:
			require.Equal(t, want, got)
		case err := <-done:
			t.Fatalf("writes finished (%v) before a stall on %s", err, want)
		case <-time.After(30 * time.Second):
			t.Fatalf("no stall on %s", want)
		}
	}
	next("memtables")
	// The flushes bring L0 to the stop threshold: the same wait goes on,
	// for L0.
	close(flushGate)
	next("L0 files")
	releaseCompactions()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(time.Minute):
		t.Fatal("writes did not resume after compactions were released")
	}
	require.NoError(t, db.Close())
	require.Equal(t, begins.Load(), ends.Load(), "stall begins and ends unpaired")
	require.GreaterOrEqual(t, db.Metrics().WriteStalls, uint64(2))
}
