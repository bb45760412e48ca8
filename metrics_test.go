package strata

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// TestMetricsString pins the layout of Metrics.String.
func TestMetricsString(t *testing.T) {
	m := &Metrics{BaseLevel: 5, CompactionDebt: 12 << 20}
	m.ValueLogs.Files, m.ValueLogs.Bytes, m.ValueLogs.Records, m.ValueLogs.ValueBytes = 2, 64<<20, 16000, 62.5*(1<<20)
	m.Levels[0] = LevelMetrics{Files: 2, Bytes: 3 << 20, Score: 0.5, BytesWritten: 90 << 20}
	m.Levels[5] = LevelMetrics{Files: 3, Bytes: 70 << 20, Target: 64 << 20, Score: 1.09, BytesIn: 20 << 20,
		BytesWritten: 80 << 20, BytesMoved: 4 << 20, Compactions: 7, Duration: 1500 * time.Millisecond}
	m.Levels[6] = LevelMetrics{Files: 10, Bytes: 640 << 20, Target: 600 << 20, BytesIn: 50 << 20,
		BytesWritten: 60 << 20, Compactions: 2, Duration: 2 * time.Second}
	m.MemTable.Size = 1 << 20
	m.MemTable.Immutable = 1
	m.MemTable.ImmSize = 64 << 20
	m.UserBytes = 100 << 20
	m.WAL.BytesWritten = 110 << 20
	m.Flush.Count, m.Flush.BytesWritten = 3, 90<<20
	m.Compact.Count, m.Compact.BytesRead, m.Compact.BytesWritten = 9, 70<<20, 140<<20
	m.WriteAmp = 4.36
	var get, commit latencyRecorder
	for i := range 1000 {
		get.record(time.Duration(2000+i) * time.Nanosecond)
		commit.record(time.Duration(10+i%100) * time.Microsecond)
	}
	get.record(3 * time.Millisecond)
	m.Latency.Get, m.Latency.Commit = get.snapshot(), commit.snapshot()
	m.WriteStalls, m.StallDuration, m.SlowdownDuration = 2, 250*time.Millisecond, 40*time.Millisecond
	m.BlockCache.Size, m.BlockCache.Capacity, m.BlockCache.Hits, m.BlockCache.Misses = 8<<20, 64<<20, 3, 1
	m.TablesOpen, m.Snapshots, m.VisibleSeq = 12, 1, 4242
	m.LearnedIndex = LearnedIndexMetrics{Tables: 9, Without: 3, Segments: 4200, Bytes: 98 << 10, TableBytes: 31 << 20, Hits: 1000, Fallbacks: 20, InPlace: 900}
	m.ValueLogs.Live, m.ValueLogs.Garbage, m.ValueLogs.BytesWritten, m.ValueLogs.Open = 40<<20, 24<<20, 96<<20, 2
	m.ValueLogs.Reads = 77
	m.ValueLogs.List = []ValueLogMetrics{
		{FileNum: 7, Size: 32 << 20, Live: 30 << 20, Garbage: 2 << 20, Pointers: 7500},
		{FileNum: 9, Size: 32 << 20, Live: 10 << 20, Garbage: 22 << 20, Pointers: 2500, State: "collecting"},
	}
	m.GC.Policy, m.GC.Passes, m.GC.DeletedFiles, m.GC.DeletedBytes = "reverse-lookup", 31, 4, 128<<20
	m.GC.Collections, m.GC.InProgress, m.GC.Relocated, m.GC.RelocatedBytes, m.GC.WriteAmp = 5, 1, 3000, 12<<20, 0.09
	m.SpaceAmp = 1.42
	want := `  level  files       size     target  score      read    written    moved  compactions  time
     L0      2    3.0 MiB          -   0.50       0 B   90.0 MiB      0 B            0    0s
     L1      0        0 B          -      -       0 B        0 B      0 B            0    0s
     L2      0        0 B          -      -       0 B        0 B      0 B            0    0s
     L3      0        0 B          -      -       0 B        0 B      0 B            0    0s
     L4      0        0 B          -      -       0 B        0 B      0 B            0    0s
    L5*      3   70.0 MiB   64.0 MiB   1.09  20.0 MiB   80.0 MiB  4.0 MiB            7  1.5s
     L6     10  640.0 MiB  600.0 MiB      -  50.0 MiB   60.0 MiB      0 B            2    2s
  total     15  713.0 MiB                    70.0 MiB  230.0 MiB  4.0 MiB            9  3.5s
base level: L5, compaction debt: 12.0 MiB
value logs: 2 files, 64.0 MiB, 16000 values (62.5 MiB), live 40.0 MiB, garbage 24.0 MiB, written 96.0 MiB, 2 open, 77 reads
    value log      size      live  garbage  pointers       state
  000009.vlog  32.0 MiB  10.0 MiB      69%      2500  collecting
  000007.vlog  32.0 MiB  30.0 MiB       6%      7500           -
gc (reverse-lookup): 31 passes, 4 value logs deleted (128.0 MiB), 5 collections (1 in progress, 0 draining), 0 rewrites, relocated 3000 values (12.0 MiB), gc write-amp 0.09, space-amp 1.42
memtable: 1.0 MiB, 1 immutable (64.0 MiB), memory 0 B
writes: user 100.0 MiB, write-amp 4.36
      written      bytes  per user byte
          WAL  110.0 MiB           1.10
   value logs   96.0 MiB           0.96  of which GC relocated 12.0 MiB
      flushes   90.0 MiB           0.90  3 flushes
  compactions  140.0 MiB           1.40  9 compactions, read 70.0 MiB
        total  436.0 MiB           4.36
stalls: 2 (250ms), slowed 40ms
block cache: 8.0 MiB / 64.0 MiB, hit rate 75.0%
learned index: 9 tables (3 without), 4200 segments, 98.0 KiB (0.31% of 31.0 MiB), 1000 hits (900 in place), 20 fallbacks
tables open: 12, snapshots: 1, visible seq: 4242
      latency  count    mean     p50     p90     p99   p99.9
       commit   1000  59.5µs  59.4µs  99.3µs   112µs   114µs
  commit wait      0       -       -       -       -       -
     WAL sync      0       -       -       -       -       -
          get   1001  5.49µs   2.5µs  2.93µs  3.06µs  3.07µs
          has      0       -       -       -       -       -
    iter seek      0       -       -       -       -       -
`
	require.Equal(t, want, m.String())
}

func TestMetricsTrackWork(t *testing.T) {
	db, err := Open("db", &Options{FS: vfs.NewMem(), MemTableSize: 64 << 10, DisableAutomaticCompactions: true})
	require.NoError(t, err)
	defer db.Close()
	for i := 0; i < 2000; i++ {
		require.NoError(t, db.Set([]byte(strings.Repeat("k", i%50+1)), make([]byte, 100), NoSync))
	}
	require.NoError(t, db.Flush())
	require.NoError(t, db.Compact(nil, nil))
	m := db.Metrics()
	require.Positive(t, m.Flush.Count)
	require.Equal(t, uint64(1), m.Compact.Count)
	require.Equal(t, 1, m.Levels[6].Files)
	require.Zero(t, m.Levels[0].Files)
	require.Positive(t, m.UserBytes)
	require.Greater(t, m.WriteAmp, 1.0)
	require.Equal(t, uint64(2000), m.VisibleSeq)
	parts := m.WAL.BytesWritten + m.ValueLogs.BytesWritten + m.Flush.BytesWritten + m.Compact.BytesWritten
	require.InDelta(t, float64(parts)/float64(m.UserBytes), m.WriteAmp, 1e-9, "write-amp is the sum of its parts")
	require.Equal(t, uint64(2000), m.Latency.Commit.Count)
	require.Zero(t, m.Latency.WALSync.Count, "no write asked for a sync")
	require.Zero(t, m.Latency.CommitWait.Count, "a lone writer never waits for another")

	require.NoError(t, db.Set([]byte("synced"), []byte("v"), Sync))
	_, err = db.Get([]byte("k"))
	require.NoError(t, err)
	it, err := db.NewIter(nil)
	require.NoError(t, err)
	it.SeekGE([]byte("k"))
	it.First()
	require.NoError(t, it.Close())
	// First within a lower bound is a SeekGE: timed once.
	it, err = db.NewIter(&IterOptions{LowerBound: []byte("k")})
	require.NoError(t, err)
	it.First()
	require.NoError(t, it.Close())
	m = db.Metrics()
	require.Equal(t, uint64(1), m.Latency.WALSync.Count)
	require.Equal(t, uint64(1), m.Latency.Get.Count)
	require.Equal(t, uint64(3), m.Latency.IterSeek.Count)
	require.Positive(t, m.Latency.Get.Percentile(0.5))
	require.Contains(t, m.String(), "iter seek      3")
}

// TestIteratorCountsValueLogReads: a scan's values count in
// Metrics.ValueLogs.Reads, every 64 rows while it runs and the rest when
// it closes; rows whose values are not read, and inline values, do not.
func TestIteratorCountsValueLogReads(t *testing.T) {
	db, err := Open("db", &Options{FS: vfs.NewMem(), ValueThreshold: 64})
	require.NoError(t, err)
	defer db.Close()
	big := bytes.Repeat([]byte("v"), 1000)
	for i := 0; i < 300; i++ {
		v := big
		if i%3 == 0 {
			v = []byte("small") // inline
		}
		require.NoError(t, db.Set([]byte(fmt.Sprintf("k%03d", i)), v, NoSync))
	}
	require.NoError(t, db.Flush())
	before := db.Metrics().ValueLogs.Reads
	it, err := db.NewIter(nil)
	require.NoError(t, err)
	read := uint64(0)
	for ok := it.First(); ok; ok = it.Next() {
		if i := len(it.Key()); i > 0 && it.Key()[i-1]%2 == 0 {
			continue // key not read: no value read
		}
		if len(it.Value()) == len(big) {
			read++
		}
		if read == 80 {
			break
		}
	}
	mid := db.Metrics().ValueLogs.Reads - before
	require.LessOrEqual(t, mid, read)
	require.Greater(t, mid+64, read, "counted while the scan runs")
	require.NoError(t, it.Close())
	require.Equal(t, before+read, db.Metrics().ValueLogs.Reads)
}
