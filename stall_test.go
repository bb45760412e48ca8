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
