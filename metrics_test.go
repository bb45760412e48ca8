package strata

import (
	"strings"
	"testing"

	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// TestMetricsString pins the layout of Metrics.String.
func TestMetricsString(t *testing.T) {
	m := &Metrics{}
	m.Levels[0] = LevelMetrics{Files: 2, Bytes: 3 << 20}
	m.Levels[6] = LevelMetrics{Files: 10, Bytes: 640 << 20}
	m.MemTable.Size = 1 << 20
	m.MemTable.Immutable = 1
	m.MemTable.ImmSize = 64 << 20
	m.UserBytes = 100 << 20
	m.WAL.BytesWritten = 110 << 20
	m.Flush.Count, m.Flush.BytesWritten = 3, 90<<20
	m.Compact.Count, m.Compact.BytesRead, m.Compact.BytesWritten = 1, 90<<20, 80<<20
	m.WriteAmp = 2.8
	m.BlockCache.Size, m.BlockCache.Capacity, m.BlockCache.Hits, m.BlockCache.Misses = 8<<20, 64<<20, 3, 1
	m.TablesOpen, m.Snapshots, m.VisibleSeq = 12, 1, 4242
	want := `  level  files       size
     L0      2    3.0 MiB
     L1      0        0 B
     L2      0        0 B
     L3      0        0 B
     L4      0        0 B
     L5      0        0 B
     L6     10  640.0 MiB
  total     12  643.0 MiB
memtable: 1.0 MiB, 1 immutable (64.0 MiB)
writes: user 100.0 MiB, WAL 110.0 MiB, flushed 90.0 MiB in 3 flushes, compacted 90.0 MiB -> 80.0 MiB in 1 compactions, write-amp 2.80
stalls: 0 (0s)
block cache: 8.0 MiB / 64.0 MiB, hit rate 75.0%
tables open: 12, snapshots: 1, visible seq: 4242
`
	require.Equal(t, want, m.String())
}

func TestMetricsTrackWork(t *testing.T) {
	db, err := Open("db", &Options{FS: vfs.NewMem(), MemTableSize: 64 << 10})
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
}
