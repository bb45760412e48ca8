package strata

import (
	"fmt"
	"testing"

	"github.com/strata-db/strata/checkpoint"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/remote"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// sharedOptions are options with a shared store in the same MemFS; tables
// of L1 and deeper are shared, and the cache is bounded by cacheSize.
func sharedOptions(t *testing.T, fs vfs.FS, cacheSize int64) *Options {
	t.Helper()
	store, err := checkpoint.NewLocalStoreFS(fs, "store")
	require.NoError(t, err)
	return &Options{FS: fs, SharedStore: store, SharedFromLevel: 1, SharedCacheSize: cacheSize,
		MemTableSize: 64 << 10, ValueThreshold: 256, ValueLogFileSize: 128 << 10, TargetFileSize: 32 << 10}
}

func sharedValue(i, round int) []byte {
	return []byte(fmt.Sprintf("%06d-%d-%s", i, round, string(make([]byte, 100+(i%7)*100))))
}

// TestSharedFilesLifecycle: tables compacted to the shared levels and
// finished value logs are uploaded and recorded as shared; with a cache
// far smaller than the data every read still returns the right value
// (fetched from the store); a reopen reads them through the store, and
// a database with shared files refuses to open without its store;
// overwritten and compacted away, shared files are released and their
// objects deleted.
func TestSharedFilesLifecycle(t *testing.T) {
	fs := vfs.NewMem()
	opts := sharedOptions(t, fs, 16<<10)
	db, err := Open("db", opts)
	require.NoError(t, err)
	const n = 2000
	for i := range n {
		require.NoError(t, db.Set([]byte(fmt.Sprintf("k%05d", i)), sharedValue(i, 0), NoSync))
	}
	require.NoError(t, db.Compact(nil, nil))
	db.waitSharedIdle()
	d := db
	d.mu.Lock()
	tables, vlogs := d.vs.Current().NumShared()
	d.mu.Unlock()
	require.Positive(t, tables, "no table was shared")
	require.Positive(t, vlogs, "no value log was shared")
	st := d.shared.files.Stats()
	require.LessOrEqual(t, st.CachedBytes, int64(16<<10))
	check := func(db *DB, round int) {
		t.Helper()
		for i := range n {
			v, err := db.Get([]byte(fmt.Sprintf("k%05d", i)))
			require.NoError(t, err, "key %d", i)
			require.Equal(t, sharedValue(i, round), v, "key %d", i)
		}
	}
	check(db, 0)
	require.Positive(t, d.shared.files.Stats().Gets, "reads never went to the store")
	require.NoError(t, db.Close())

	_, err = Open("db", &Options{FS: fs})
	require.ErrorIs(t, err, ErrSharedStoreRequired)

	db, err = Open("db", opts)
	require.NoError(t, err)
	check(db, 0)
	// Overwrite everything: the old tables and value logs go, and so do
	// their objects.
	store := opts.SharedStore
	before, err := store.List(t.Context(), "shared/")
	require.NoError(t, err)
	for i := range n {
		require.NoError(t, db.Set([]byte(fmt.Sprintf("k%05d", i)), sharedValue(i, 1), NoSync))
	}
	require.NoError(t, db.Compact(nil, nil))
	require.NoError(t, db.Compact(nil, nil))
	db.waitSharedIdle()
	check(db, 1)
	after, err := store.List(t.Context(), "shared/")
	require.NoError(t, err)
	gone := 0
	for _, o := range before {
		found := false
		for _, a := range after {
			found = found || a.Name == o.Name
		}
		if !found {
			gone++
		}
	}
	require.Positive(t, gone, "no object of an obsolete file was deleted")
	// Every object left is one the version names, with this instance's
	// marker.
	db.mu.Lock()
	inUse := map[string]bool{}
	db.vs.Current().SharedFiles(func(sf manifest.SharedFile) { inUse[sf.Ref.Object] = true })
	db.mu.Unlock()
	marked, err := remote.Marked(t.Context(), store)
	require.NoError(t, err)
	for _, o := range after {
		require.True(t, inUse[o.Name], "object %s is not in the version", o.Name)
		require.Len(t, marked[o.Name], 1, "object %s", o.Name)
	}
	require.NoError(t, db.Close())

	// Read-only: reads through the store, writes nothing.
	ro := *opts
	ro.ReadOnly = true
	rdb, err := Open("db", &ro)
	require.NoError(t, err)
	check(rdb, 1)
	require.NoError(t, rdb.Close())
}
