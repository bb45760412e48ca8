package strata

import (
	"fmt"
	"strings"
	"testing"

	"github.com/strata-db/strata/checkpoint"
	"github.com/strata-db/strata/internal/base"
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

// TestSharedCheckpointsByReference: a database with shared files
// checkpoints by reference (its shared files are named, not uploaded);
// another instance opens that checkpoint from the store without
// downloading it and reads exactly its state; the objects stay while
// either holds them (the first instance overwrites everything and its
// checkpoints are dropped), and go once neither does. A local checkpoint
// and a full restore of a checkpoint by reference hold every file.
func TestSharedCheckpointsByReference(t *testing.T) {
	ctx := t.Context()
	fs := vfs.NewMem()
	opts := sharedOptions(t, fs, 1<<20)
	store := opts.SharedStore
	a, err := Open("a", opts)
	require.NoError(t, err)
	const n = 1500
	key := func(i int) []byte { return []byte(fmt.Sprintf("k%05d", i)) }
	for i := range n {
		require.NoError(t, a.Set(key(i), sharedValue(i, 0), NoSync))
	}
	require.NoError(t, a.Compact(nil, nil))
	a.waitSharedIdle()
	// Some writes stay in the upper levels (local files).
	for i := 0; i < n; i += 10 {
		require.NoError(t, a.Set(key(i), sharedValue(i, 1), NoSync))
	}
	u, err := checkpoint.NewUploader(store, &checkpoint.UploadOptions{KeepLast: 2})
	require.NoError(t, err)
	st, err := a.CheckpointToStore(ctx, u)
	require.NoError(t, err)
	t.Logf("checkpoint by reference: %d files, %d bytes; uploaded %d bytes", st.Files, st.Bytes, st.UploadedBytes)
	require.Less(t, st.UploadedBytes, st.Bytes/3, "the shared files were uploaded again")
	want := map[string]string{}
	for i := range n {
		v := sharedValue(i, 0)
		if i%10 == 0 {
			v = sharedValue(i, 1)
		}
		want[string(key(i))] = string(v)
	}
	checkAll := func(db *DB, want map[string]string, what string) {
		t.Helper()
		got, err := readAll(t, db)
		require.NoError(t, err, what)
		require.Equal(t, len(want), len(got), what)
		for k, v := range want {
			require.Equal(t, v, got[k], "%s: key %s", what, k)
		}
	}

	// Another instance opens it from the store.
	b, err := OpenFromStore(ctx, store, st.ID, "b", &Options{FS: fs, SharedCacheSize: 64 << 10, SharedFromLevel: 1,
		MemTableSize: 64 << 10, ValueThreshold: 256, TargetFileSize: 32 << 10})
	require.NoError(t, err)
	names, err := fs.List("b")
	require.NoError(t, err)
	for _, name := range names {
		typ, _, _ := base.ParseFilename(name)
		require.NotEqual(t, base.FileTypeTable, typ, "a table was downloaded: %v", names)
		require.NotEqual(t, base.FileTypeVlog, typ, "a value log was downloaded: %v", names)
	}
	checkAll(b, want, "opened from the store")
	require.Positive(t, b.shared.files.Stats().Gets)
	require.NotEqual(t, a.shared.files.Instance(), b.shared.files.Instance())

	// The first instance moves on: everything overwritten, its old
	// checkpoints dropped.
	for i := range n {
		require.NoError(t, a.Set(key(i), sharedValue(i, 2), NoSync))
	}
	require.NoError(t, a.Compact(nil, nil))
	for range 3 {
		_, err := a.CheckpointToStore(ctx, u)
		require.NoError(t, err)
	}
	a.waitSharedIdle()
	ids, err := checkpoint.Checkpoints(ctx, store)
	require.NoError(t, err)
	require.NotContains(t, ids, st.ID)
	checkAll(b, want, "after the checkpoint was dropped")
	require.NoError(t, b.Close())
	b, err = Open("b", &Options{FS: fs, SharedStore: store, SharedCacheSize: 64 << 10})
	require.NoError(t, err)
	checkAll(b, want, "reopened")

	// A local checkpoint of b holds every file, and needs no store.
	require.NoError(t, b.Checkpoint("b-local"))
	c, err := Open("b-local", &Options{FS: fs})
	require.NoError(t, err)
	checkAll(c, want, "local checkpoint")
	require.NoError(t, c.Close())

	// A full restore of a's latest checkpoint (by reference) holds every
	// file too.
	ids, err = checkpoint.Checkpoints(ctx, store)
	require.NoError(t, err)
	require.NoError(t, checkpoint.Restore(ctx, store, ids[len(ids)-1], fs, "a-restored", nil))
	r, err := Open("a-restored", &Options{FS: fs})
	require.NoError(t, err)
	want2 := map[string]string{}
	for i := range n {
		want2[string(key(i))] = string(sharedValue(i, 2))
	}
	checkAll(r, want2, "restored")
	require.NoError(t, r.Close())

	// b lets go of the old state: what only it held goes.
	for i := range n {
		require.NoError(t, b.Set(key(i), sharedValue(i, 3), NoSync))
	}
	require.NoError(t, b.Compact(nil, nil))
	b.waitSharedIdle()
	require.NoError(t, b.Close())
	require.NoError(t, a.Close())
	swept, err := remote.Sweep(ctx, store)
	require.NoError(t, err)
	require.Empty(t, swept, "objects left without a holder")
	marked, err := remote.Marked(ctx, store)
	require.NoError(t, err)
	objects, err := store.List(ctx, "")
	require.NoError(t, err)
	for _, o := range objects {
		if strings.HasPrefix(o.Name, "shared/") || strings.HasPrefix(o.Name, "data/") {
			require.NotEmpty(t, marked[o.Name], "object %s has no holder", o.Name)
		}
	}
	for object := range marked {
		found := false
		for _, o := range objects {
			found = found || o.Name == object
		}
		require.True(t, found, "a marker holds %s, which is gone", object)
	}
}

// TestSharedMetrics: Metrics.Shared counts the shared files, the GETs of
// reads through the store and the cache; it says the warm-up is running
// until it has downloaded every file, and String prints it. Without a
// store it is zero and not printed.
func TestSharedMetrics(t *testing.T) {
	ctx := t.Context()
	fs := vfs.NewMem()
	opts := sharedOptions(t, fs, 1<<30)
	a, err := Open("a", opts)
	require.NoError(t, err)
	for i := range 1500 {
		require.NoError(t, a.Set([]byte(fmt.Sprintf("k%05d", i)), sharedValue(i, 0), NoSync))
	}
	require.NoError(t, a.Compact(nil, nil))
	a.waitSharedIdle()
	m := a.Metrics()
	require.Positive(t, m.Shared.Files)
	require.False(t, m.Shared.Warming)
	require.Contains(t, m.String(), "shared files: ")
	u, err := checkpoint.NewUploader(opts.SharedStore, nil)
	require.NoError(t, err)
	st, err := a.CheckpointToStore(ctx, u)
	require.NoError(t, err)
	require.NoError(t, a.Close())

	open := func(dir string, warmup int64) *DB {
		db, err := OpenFromStore(ctx, opts.SharedStore, st.ID, dir, &Options{FS: fs, SharedCacheSize: 1 << 30, SharedWarmup: warmup})
		require.NoError(t, err)
		return db
	}
	b := open("b", 0)
	<-b.shared.prefetchDone // the tables' parts are fetched after Open
	m = b.Metrics()
	require.Equal(t, st.Files, m.Shared.Files)
	require.Positive(t, m.Shared.Gets)
	require.Positive(t, m.Shared.CachedBytes)
	gets, misses := m.Shared.Gets, m.Shared.PartMisses
	_, err = b.Get([]byte("k00006")) // a value of 700 bytes, in a value log
	require.NoError(t, err)
	_, err = b.Get([]byte("k00001"))
	require.NoError(t, err)
	m = b.Metrics()
	require.Greater(t, m.Shared.Gets, gets, "the value log was read from the store")
	require.Greater(t, m.Shared.PartMisses, misses)
	require.False(t, m.Shared.Warming)
	require.NoError(t, b.Close())

	// At a byte a second the warm-up is still at its first file.
	e := open("e", 1)
	require.True(t, e.Metrics().Shared.Warming)
	require.Contains(t, e.Metrics().String(), "warming up")
	require.NoError(t, e.Close())

	c := open("c", 1<<40)
	<-c.shared.warmDone
	m = c.Metrics()
	require.False(t, m.Shared.Warming)
	require.Equal(t, st.Bytes, m.Shared.CachedBytes, "the warm-up left files to download")
	require.NoError(t, c.Close())

	d, err := Open("local", &Options{FS: fs})
	require.NoError(t, err)
	require.Zero(t, d.Metrics().Shared)
	require.NotContains(t, d.Metrics().String(), "shared files")
	require.NoError(t, d.Close())
}

// TestSharedWarmupReopens: readers opened before the warm-up downloaded
// their files read the local copies afterwards, not the store (whose
// parts of the files the warm-up dropped): a second pass over every key,
// after the warm-up, makes no GET.
func TestSharedWarmupReopens(t *testing.T) {
	ctx := t.Context()
	fs := vfs.NewMem()
	opts := sharedOptions(t, fs, 1<<30)
	a, err := Open("a", opts)
	require.NoError(t, err)
	const n = 1500
	key := func(i int) []byte { return []byte(fmt.Sprintf("k%05d", i)) }
	for i := range n {
		require.NoError(t, a.Set(key(i), sharedValue(i, 0), NoSync))
	}
	require.NoError(t, a.Compact(nil, nil))
	a.waitSharedIdle()
	u, err := checkpoint.NewUploader(opts.SharedStore, nil)
	require.NoError(t, err)
	st, err := a.CheckpointToStore(ctx, u)
	require.NoError(t, err)
	require.NoError(t, a.Close())

	// No block cache: every read reaches the files.
	b, err := OpenFromStore(ctx, opts.SharedStore, st.ID, "b", &Options{FS: fs, SharedCacheSize: 1 << 30, CacheSize: -1})
	require.NoError(t, err)
	readAllKeys := func() {
		t.Helper()
		for i := range n {
			v, err := b.Get(key(i))
			require.NoError(t, err, "key %d", i)
			require.Equal(t, sharedValue(i, 0), v, "key %d", i)
		}
	}
	readAllKeys() // opens every file through the store
	require.Positive(t, b.Metrics().TablesOpen)
	require.Positive(t, b.Metrics().ValueLogs.Open)
	b.opts.SharedWarmup = 1 << 40
	b.warmLoop()
	m := b.Metrics()
	require.Equal(t, st.Bytes, m.Shared.CachedBytes, "the warm-up left files to download")
	readAllKeys()
	require.Equal(t, m.Shared.Gets, b.Metrics().Shared.Gets, "reads after the warm-up went to the store")
	require.NoError(t, b.Close())
}

// TestSharedPrefetchTables: a database opened from a checkpoint opens its
// tables in the background, before any read asks for them, reading their
// footers, indexes and filters from the store; reads return the state.
func TestSharedPrefetchTables(t *testing.T) {
	ctx := t.Context()
	fs := vfs.NewMem()
	opts := sharedOptions(t, fs, 1<<30)
	a, err := Open("a", opts)
	require.NoError(t, err)
	const n = 1500
	key := func(i int) []byte { return []byte(fmt.Sprintf("k%05d", i)) }
	for i := range n {
		require.NoError(t, a.Set(key(i), sharedValue(i, 0), NoSync))
	}
	require.NoError(t, a.Compact(nil, nil))
	a.waitSharedIdle()
	u, err := checkpoint.NewUploader(opts.SharedStore, nil)
	require.NoError(t, err)
	st, err := a.CheckpointToStore(ctx, u)
	require.NoError(t, err)
	require.NoError(t, a.Close())

	b, err := OpenFromStore(ctx, opts.SharedStore, st.ID, "b", &Options{FS: fs, SharedCacheSize: 1 << 30})
	require.NoError(t, err)
	<-b.shared.prefetchDone
	b.mu.Lock()
	tables := 0
	b.vs.Current().Files(func(int, *manifest.FileMetadata) { tables++ })
	b.mu.Unlock()
	m := b.Metrics()
	require.Positive(t, tables)
	require.Equal(t, tables, m.TablesOpen, "tables left unopened")
	require.Positive(t, m.Shared.Gets)
	require.Zero(t, m.ValueLogs.Open, "value logs are not prefetched")
	for i := range n {
		v, err := b.Get(key(i))
		require.NoError(t, err, "key %d", i)
		require.Equal(t, sharedValue(i, 0), v, "key %d", i)
	}
	require.NoError(t, b.Close())
}
