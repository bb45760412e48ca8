package strata

import (
	"errors"
	"fmt"
	"testing"

	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// TestSyncMakesNoSyncWritesDurable: writes without Sync, then DB.Sync (or
// an empty batch applied with Sync): a crash keeps every one of them, in
// the tree and separated at commit alike, and the sync is counted. Without
// the sync, the crash (dropping everything unsynced) keeps none.
func TestSyncMakesNoSyncWritesDurable(t *testing.T) {
	for _, how := range []string{"none", "sync", "empty-batch"} {
		for _, valueSize := range []int{100, 3000} {
			t.Run(fmt.Sprintf("%s/value=%d", how, valueSize), func(t *testing.T) {
				fs := vfs.NewMem()
				db, err := Open("db", &Options{FS: fs})
				require.NoError(t, err)
				for i := range 50 {
					require.NoError(t, db.Set(bulkKey(i), bulkValue(i, valueSize), NoSync))
				}
				before := db.Metrics().Latency.WALSync.Count
				switch how {
				case "sync":
					require.NoError(t, db.Sync())
				case "empty-batch":
					require.NoError(t, db.Apply(db.NewBatch(), Sync))
				}
				if how != "none" {
					require.Greater(t, db.Metrics().Latency.WALSync.Count, before, "no WAL sync")
				}
				db2, err := Open("db", &Options{FS: fs.CrashClone(vfs.CrashOptions{})})
				require.NoError(t, err)
				for i := range 50 {
					got, err := db2.Get(bulkKey(i))
					if how == "none" {
						require.True(t, errors.Is(err, ErrNotFound), "key %d survived without a sync: %v", i, err)
						continue
					}
					require.NoError(t, err, "key %d lost after %s", i, how)
					require.Equal(t, bulkValue(i, valueSize), got)
				}
				require.NoError(t, db2.Close())
				require.NoError(t, db.Close())
			})
		}
	}
}

// TestSyncDuringBulkLoad: DB.Sync during a bulk load fails with
// ErrBulkLoadSync (the load's writes are durable only at EndBulkLoad) and
// succeeds after it; with the WAL off it flushes.
func TestSyncDuringBulkLoad(t *testing.T) {
	fs := vfs.NewMem()
	db, err := Open("db", &Options{FS: fs})
	require.NoError(t, err)
	require.NoError(t, db.BeginBulkLoad())
	require.NoError(t, db.Set([]byte("k"), []byte("v"), NoSync))
	require.ErrorIs(t, db.Sync(), ErrBulkLoadSync)
	require.NoError(t, db.EndBulkLoad())
	require.NoError(t, db.Sync())
	require.NoError(t, db.Close())
	require.ErrorIs(t, db.Sync(), ErrClosed)

	fs = vfs.NewMem()
	db, err = Open("db", &Options{FS: fs, DisableWAL: true})
	require.NoError(t, err)
	require.NoError(t, db.Set([]byte("k"), []byte("v"), NoSync))
	require.NoError(t, db.Sync())
	db2, err := Open("db", &Options{FS: fs.CrashClone(vfs.CrashOptions{})})
	require.NoError(t, err)
	got, err := db2.Get([]byte("k"))
	require.NoError(t, err)
	require.Equal(t, "v", string(got))
	require.NoError(t, db2.Close())
	require.NoError(t, db.Close())
}

// TestApplyResetsBatch: a batch applied successfully is reset, so reusing
// it does not apply its old operations again (before, Set k1, Apply,
// Delete k1, Set k2 in the same batch, Apply: k1 came back).
func TestApplyResetsBatch(t *testing.T) {
	db, err := Open("db", &Options{FS: vfs.NewMem()})
	require.NoError(t, err)
	defer db.Close()
	b := db.NewBatch()
	require.NoError(t, b.Set([]byte("k1"), []byte("v1")))
	require.NoError(t, db.Apply(b, NoSync))
	require.Equal(t, 0, b.Len(), "an applied batch keeps its operations")
	require.NoError(t, db.Delete([]byte("k1"), NoSync))
	require.NoError(t, b.Set([]byte("k2"), []byte("v2")))
	require.NoError(t, db.Apply(b, NoSync))
	_, err = db.Get([]byte("k1"))
	require.ErrorIs(t, err, ErrNotFound, "reusing the batch applied k1 again")
	got, err := db.Get([]byte("k2"))
	require.NoError(t, err)
	require.Equal(t, "v2", string(got))

	// A batch whose Apply fails keeps its operations for a retry.
	require.NoError(t, b.Set([]byte("k3"), []byte("v3")))
	require.NoError(t, db.BeginBulkLoad())
	require.ErrorIs(t, db.Apply(b, Sync), ErrBulkLoadSync)
	require.Equal(t, 1, b.Len())
	require.NoError(t, db.EndBulkLoad())
	require.NoError(t, db.Apply(b, Sync))
	got, err = db.Get([]byte("k3"))
	require.NoError(t, err)
	require.Equal(t, "v3", string(got))
}
