package strata

import (
	"bytes"
	"testing"

	"github.com/strata-db/strata/lsm/memtable"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// TestBatchTooLargeForMemtable: a batch whose entries need more than the
// largest memtable holds is refused with ErrBatchTooLarge before anything
// is written, and writes go on; separated at commit, its large values need
// no memtable room and the same batch is taken. (The largest memtable
// holds about 4 GiB; the test lowers the bound to 1 MiB.)
func TestBatchTooLargeForMemtable(t *testing.T) {
	defer func(n int) { maxMemtableNeed = n }(maxMemtableNeed)
	maxMemtableNeed = 1 << 20
	big := bytes.Repeat([]byte("v"), 300<<10)
	fill := func(b *Batch) {
		for _, k := range []string{"a", "b"} {
			require.NoError(t, b.Set([]byte(k), big))
		}
	}
	require.Greater(t, 2*memtable.EntrySize(1, len(big)), maxMemtableNeed)

	fs := vfs.NewMem()
	db, err := Open("db", &Options{FS: fs, ValueThreshold: -1})
	require.NoError(t, err)
	seq := db.visibleSeq.Load()
	b := db.NewBatch()
	fill(b)
	require.ErrorIs(t, db.Apply(b, Sync), ErrBatchTooLarge)
	require.Equal(t, seq, db.visibleSeq.Load(), "a refused batch was applied")
	require.NoError(t, db.Set([]byte("c"), big, Sync), "writes go on")
	require.NoError(t, db.Close())
	db, err = Open("db", &Options{FS: fs, ValueThreshold: -1})
	require.NoError(t, err)
	_, err = db.Get([]byte("a"))
	require.ErrorIs(t, err, ErrNotFound, "a refused batch reached the WAL")
	requireGet(t, db, "c", string(big))
	require.NoError(t, db.Close())

	db, err = Open("db2", &Options{FS: fs, ValueThreshold: 1024, SeparationTime: SeparateAtCommit})
	require.NoError(t, err)
	b = db.NewBatch()
	fill(b)
	require.NoError(t, db.Apply(b, Sync))
	requireGet(t, db, "b", string(big))
	require.NoError(t, db.Close())
}
