package strata

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

func bulkKey(i int) []byte { return []byte(fmt.Sprintf("key%06d", i)) }

func bulkValue(i, size int) []byte {
	return bytes.Repeat([]byte{byte(i), byte(i >> 8)}, size/2)
}

// TestBulkLoadDurableAtEnd: writes before a load are durable as usual; the
// load's writes skip the WAL and are durable once EndBulkLoad returns;
// writes after it are logged again. A crash after each phase (and a clean
// reopen) keeps exactly what the semantics promise.
func TestBulkLoadDurableAtEnd(t *testing.T) {
	for _, valueSize := range []int{100, 3000} { // in the tree; separated at commit
		t.Run(fmt.Sprintf("value=%d", valueSize), func(t *testing.T) {
			fs := vfs.NewMem()
			opts := &Options{FS: fs, MemTableSize: 256 << 10}
			db, err := Open("db", opts)
			require.NoError(t, err)
			for i := 0; i < 100; i++ {
				require.NoError(t, db.Set(bulkKey(i), bulkValue(i, valueSize), Sync))
			}
			walBefore := db.Metrics().WAL.BytesWritten
			require.NoError(t, db.BeginBulkLoad())
			require.True(t, db.BulkLoading())
			require.True(t, errors.Is(db.Set([]byte("synced"), nil, Sync), ErrBulkLoadSync))
			for i := 100; i < 2000; i++ {
				require.NoError(t, db.Set(bulkKey(i), bulkValue(i, valueSize), NoSync))
			}
			require.Equal(t, walBefore, db.Metrics().WAL.BytesWritten, "bulk writes reached the WAL")
			got, err := db.Get(bulkKey(1500))
			require.NoError(t, err)
			require.Equal(t, bulkValue(1500, valueSize), got, "bulk writes are readable at once")

			require.NoError(t, db.EndBulkLoad())
			require.False(t, db.BulkLoading())
			for i := 2000; i < 2100; i++ {
				require.NoError(t, db.Set(bulkKey(i), bulkValue(i, valueSize), Sync))
			}
			require.Greater(t, db.Metrics().WAL.BytesWritten, walBefore, "writes after the load skip the WAL")

			// A crash now keeps everything: the load by its flush, the rest
			// by the WAL.
			crashed := fs.CrashClone(vfs.CrashOptions{})
			db2, err := Open("db", &Options{FS: crashed, MemTableSize: 256 << 10})
			require.NoError(t, err)
			for i := 0; i < 2100; i++ {
				got, err := db2.Get(bulkKey(i))
				require.NoError(t, err, "key %d after a crash", i)
				require.Equal(t, bulkValue(i, valueSize), got)
			}
			require.NoError(t, db2.Close())
			require.NoError(t, db.Close())
		})
	}
}

// TestBulkLoadCrashKeepsPrefix: a crash in the middle of a load keeps the
// writes made before it and a prefix of the load's writes, never a later
// write without an earlier one; reopened, the DB takes a new load and
// normal writes alike. Close during a load makes it durable.
func TestBulkLoadCrashKeepsPrefix(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		r := rand.New(rand.NewPCG(seed, 3))
		fs := vfs.NewMem()
		opts := &Options{FS: fs, MemTableSize: 64 << 10}
		db, err := Open("db", opts)
		require.NoError(t, err)
		const pre = 50
		for i := 0; i < pre; i++ {
			require.NoError(t, db.Set(bulkKey(i), bulkValue(i, 200), Sync))
		}
		require.NoError(t, db.BeginBulkLoad())
		n := pre + 500 + r.IntN(3000)
		for i := pre; i < n; i++ {
			// Overwrites of earlier keys too: a prefix must show the newest
			// value of its own writes.
			k := i
			if r.IntN(5) == 0 {
				k = r.IntN(i)
			}
			require.NoError(t, db.Set(bulkKey(k), bulkValue(i, 200), NoSync))
		}
		crashed := fs.CrashClone(vfs.CrashOptions{})
		db2, err := Open("db", &Options{FS: crashed, MemTableSize: 64 << 10})
		require.NoError(t, err)
		// Replay the load's writes to find the longest prefix the
		// recovered state matches.
		r2 := rand.New(rand.NewPCG(seed, 3))
		r2.IntN(3000)
		model := map[int]int{}
		for i := 0; i < pre; i++ {
			model[i] = i
		}
		matches := func() bool {
			for k := 0; k < n; k++ {
				got, err := db2.Get(bulkKey(k))
				w, ok := model[k]
				if !ok {
					if !errors.Is(err, ErrNotFound) {
						return false
					}
					continue
				}
				if err != nil || !bytes.Equal(got, bulkValue(w, 200)) {
					return false
				}
			}
			return true
		}
		found := matches()
		kept := pre
		for i := pre; i < n && !found; i++ {
			k := i
			if r2.IntN(5) == 0 {
				k = r2.IntN(i)
			}
			model[k] = i
			kept = i + 1
			found = matches()
		}
		require.True(t, found, "seed %d: the recovered state is no prefix of the writes", seed)
		t.Logf("seed %d: %d of %d bulk writes survived the crash", seed, kept-pre, n-pre)

		// The other direction: the recovered DB loads again and logs again.
		require.NoError(t, db2.BeginBulkLoad())
		require.NoError(t, db2.Set([]byte("second-load"), []byte("x"), NoSync))
		require.NoError(t, db2.Close()) // Close during a load flushes
		fs3 := crashed.CrashClone(vfs.CrashOptions{})
		db3, err := Open("db", &Options{FS: fs3})
		require.NoError(t, err)
		require.False(t, db3.BulkLoading(), "a reopened DB is not loading")
		got, err := db3.Get([]byte("second-load"))
		require.NoError(t, err)
		require.Equal(t, []byte("x"), got)
		require.NoError(t, db3.Set([]byte("after"), []byte("y"), Sync))
		db4, err := Open("db", &Options{FS: fs3.CrashClone(vfs.CrashOptions{})})
		require.NoError(t, err)
		_, err = db4.Get([]byte("after"))
		require.NoError(t, err)
		require.NoError(t, db4.Close())
		require.NoError(t, db3.Close())
		require.NoError(t, db.Close())
	}
}
