package strata

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/strata-db/strata/checkpoint"
	"github.com/strata-db/strata/checkpoint/storetest"
	"github.com/strata-db/strata/gc"
	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/remote"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// sharedOptions are options with a shared store in the same MemFS; tables
// of L1 and deeper are shared, and the cache is bounded by cacheSize.
// The share loop of a database opened from a checkpoint converts its
// hold at once: tests wait for it (waitSharedIdle) and need no first
// reads to go before it.
func init() { holdConvertDelay = 0 }

func sharedOptions(t *testing.T, fs vfs.FS, cacheSize int64) *Options {
	t.Helper()
	store, err := checkpoint.NewLocalStoreFS(fs, "store")
	require.NoError(t, err)
	return &Options{FS: fs, SharedStore: store, SharedFromLevel: 1, SharedCacheSize: cacheSize,
		MemTableSize: 64 << 10, ValueThreshold: 256, ValueLogFileSize: 128 << 10, TargetFileSize: 32 << 10}
}

// requireRestores restores checkpoint id of store into the directory
// "restored" of fs and requires that it holds want.
func requireRestores(t *testing.T, fs vfs.FS, store checkpoint.Store, id uint64, want model) {
	t.Helper()
	require.NoError(t, checkpoint.Restore(t.Context(), store, id, fs, "restored", nil))
	r, err := Open("restored", &Options{FS: fs})
	require.NoError(t, err)
	got, err := readAll(t, r)
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.NoError(t, r.Close())
}

// fillShared sets keys k00000 up to n (excluded) to their sharedValue
// of round 0 and returns the model of what db then holds.
func fillShared(t *testing.T, db *DB, n int) model {
	t.Helper()
	want := model{}
	for i := range n {
		k := fmt.Sprintf("k%05d", i)
		require.NoError(t, db.Set([]byte(k), sharedValue(i, 0), NoSync))
		want[k] = string(sharedValue(i, 0))
	}
	return want
}

// checkpointLocal fills a database "a" in fs without shared files with n
// keys (fillShared), compacts it if asked, checkpoints it into store with
// a default Uploader and closes it: a checkpoint whose objects are data
// objects the registry alone marks. It returns a's model and the
// checkpoint.
func checkpointLocal(t *testing.T, fs vfs.FS, store checkpoint.Store, n int, compact bool) (model, checkpoint.Stats) {
	t.Helper()
	a, err := Open("a", &Options{FS: fs, MemTableSize: 64 << 10, ValueThreshold: 256, ValueLogFileSize: 128 << 10, TargetFileSize: 32 << 10})
	require.NoError(t, err)
	want := fillShared(t, a, n)
	if compact {
		require.NoError(t, a.Compact(nil, nil))
	}
	st := uploadCheckpoint(t, a, store)
	require.NoError(t, a.Close())
	return want, st
}

// uploadCheckpoint checkpoints db into store through an Uploader of the
// default options (KeepLast 3, one registry).
func uploadCheckpoint(t *testing.T, db *DB, store checkpoint.Store) checkpoint.Stats {
	t.Helper()
	u, err := checkpoint.NewUploader(store, nil)
	require.NoError(t, err)
	st, err := db.CheckpointToStore(t.Context(), u)
	require.NoError(t, err)
	return st
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

// TestCheckpointByReferenceOfUploadedFiles: files an Uploader uploaded
// (and so knows the checksums of) before they were shared are referenced
// by its next checkpoint as shared files, whose checksums the registry
// does not record: the checkpoint's manifest must not record them either,
// or the two disagree and the checkpoint cannot be read.
func TestCheckpointByReferenceOfUploadedFiles(t *testing.T) {
	ctx := t.Context()
	fs := vfs.NewMem()
	opts := sharedOptions(t, fs, 1<<20)
	store := opts.SharedStore
	local := *opts
	local.SharedStore = nil
	db, err := Open("db", &local)
	require.NoError(t, err)
	want := map[string]string{}
	for i := range 1000 {
		k := fmt.Sprintf("k%05d", i)
		require.NoError(t, db.Set([]byte(k), sharedValue(i, 0), NoSync))
		want[k] = string(sharedValue(i, 0))
	}
	require.NoError(t, db.Compact(nil, nil))
	u, err := checkpoint.NewUploader(store, nil)
	require.NoError(t, err)
	_, err = db.CheckpointToStore(ctx, u)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	// Reopened with the store, it shares its files; the same Uploader
	// references them.
	db, err = Open("db", opts)
	require.NoError(t, err)
	db.waitSharedIdle()
	st, err := db.CheckpointToStore(ctx, u)
	require.NoError(t, err)
	require.Less(t, st.UploadedBytes, st.Bytes/3, "the shared files were uploaded again")
	require.NoError(t, db.Close())
	m, err := checkpoint.ReadManifest(ctx, store, st.ID)
	require.NoError(t, err)
	external := 0
	for _, f := range m.Files {
		if f.External {
			external++
			require.Zero(t, f.Checksum, "%s: a checksum the registry does not have", f.Name)
		}
	}
	require.Positive(t, external)
	requireRestores(t, fs, store, st.ID, model(want))
}

// plainStore hides the Composer of the store it wraps: an upload into it
// sends every byte it writes.
type plainStore struct{ checkpoint.Store }

// TestCheckpointMovesPiecesOfSharedFiles: an upload that empties a sparse
// segment moves every live piece of it, and a database opened from a
// checkpoint reads some of its files from that segment, with no local
// copy: into a store that cannot compose, the upload copies those pieces
// from the store instead of reading the files from the directory, where
// they are not.
func TestCheckpointMovesPiecesOfSharedFiles(t *testing.T) {
	ctx := t.Context()
	fs := vfs.NewMem()
	inner, err := checkpoint.NewLocalStoreFS(fs, "store")
	require.NoError(t, err)
	store := plainStore{inner}
	want, st := checkpointLocal(t, fs, store, 1000, true)

	// b rewrites its tables; its value logs stay in the checkpoint's
	// segment, which its own checkpoint (the first one retired) leaves
	// sparse, and so empties.
	b, err := OpenFromStore(ctx, store, st.ID, "b", &Options{FS: fs, DisableGC: true, DisableAutomaticCompactions: true})
	require.NoError(t, err)
	require.NoError(t, b.Compact(nil, nil))
	ub, err := checkpoint.NewUploader(store, &checkpoint.UploadOptions{KeepLast: 1, MinLiveRatio: 0.99})
	require.NoError(t, err)
	st2, err := b.CheckpointToStore(ctx, ub)
	require.NoError(t, err)
	require.Positive(t, st2.CopiedBytes, "no piece was moved: %v", st2)
	require.NoError(t, b.Close())
	requireRestores(t, fs, inner, st2.ID, want)
}

// TestOpenFromStoreOfObjectsWithoutMarkers: a store written before
// reference markers existed holds data objects the registry has no
// marker on. A database opened from one of its checkpoints holds them by
// its markers; when it lets them go, the checkpoint must keep them: the
// object goes with its last marker, so the registry's must be there.
func TestOpenFromStoreOfObjectsWithoutMarkers(t *testing.T) {
	ctx := t.Context()
	fs := vfs.NewMem()
	store, err := checkpoint.NewLocalStoreFS(fs, "store")
	require.NoError(t, err)
	want, st := checkpointLocal(t, fs, store, 1000, false)
	// As an older build left it: no marker, and a registry that does
	// not say its objects have one.
	marked, err := remote.Marked(ctx, store)
	require.NoError(t, err)
	for object := range marked {
		require.NoError(t, store.Delete(ctx, remote.MarkerName(object, remote.RegistryHolder)))
	}
	unmarkRegistry(t, store)

	bo := sharedOptions(t, fs, 1<<20)
	bo.SharedStore = nil
	b, err := OpenFromStore(ctx, store, st.ID, "b", bo)
	require.NoError(t, err)
	for i := range 1000 {
		require.NoError(t, b.Set([]byte(fmt.Sprintf("k%05d", i)), sharedValue(i, 1), NoSync))
	}
	require.NoError(t, b.Compact(nil, nil))
	b.waitSharedIdle()
	require.NoError(t, b.Close())
	requireRestores(t, fs, store, st.ID, want)
}

// putLog records the names of the Puts a store made.
type putLog struct {
	checkpoint.Store
	mu   sync.Mutex
	puts []string
}

func (p *putLog) Put(ctx context.Context, name string, r io.Reader, size int64) error {
	if err := p.Store.Put(ctx, name, r, size); err != nil {
		return err
	}
	p.mu.Lock()
	p.puts = append(p.puts, name)
	p.mu.Unlock()
	return nil
}

// TestOpenFromStoreRegistryMarkers: opening a checkpoint whose upload
// wrote the registry's markers writes the instance's markers alone, one
// round trip fewer; a checkpoint of a registry from before markers gets
// the registry's as well, before the instance's.
func TestOpenFromStoreRegistryMarkers(t *testing.T) {
	ctx := t.Context()
	fs := vfs.NewMem()
	opts := sharedOptions(t, fs, 1<<30)
	// The flushed tables stay in level 0, which is not shared: the
	// checkpoint copies them into data objects of its own. (Its value
	// logs are shared, the one its flush finished too.)
	opts.DisableAutomaticCompactions = true
	a, err := Open("a", opts)
	require.NoError(t, err)
	for i := range 1000 {
		require.NoError(t, a.Set([]byte(fmt.Sprintf("k%05d", i)), sharedValue(i, 0), NoSync))
	}
	u, err := checkpoint.NewUploader(opts.SharedStore, nil)
	require.NoError(t, err)
	st, err := a.CheckpointToStore(ctx, u)
	require.NoError(t, err)
	require.NoError(t, a.Close())
	m, err := checkpoint.ReadManifest(ctx, opts.SharedStore, st.ID)
	require.NoError(t, err)
	data := map[string]bool{}
	for _, f := range m.Files {
		if !f.External {
			data[f.Object] = true
		}
	}
	require.NotEmpty(t, data, "the checkpoint has no data object of its own")

	open := func(dir string) []string {
		log := &putLog{Store: opts.SharedStore}
		db, err := OpenFromStore(ctx, log, st.ID, dir, &Options{FS: fs, SharedCacheSize: 1 << 30})
		require.NoError(t, err)
		log.mu.Lock()
		puts := slices.Clone(log.puts)
		log.mu.Unlock()
		require.NoError(t, db.Close())
		var registry []string
		for _, name := range puts {
			if object, holder, ok := remote.ParseMarker(name); ok && holder == remote.RegistryHolder {
				registry = append(registry, object)
			}
		}
		return registry
	}
	require.Empty(t, open("b"), "markers the upload wrote were written again")

	unmarkRegistry(t, opts.SharedStore)
	got := open("c")
	slices.Sort(got)
	require.Equal(t, slices.Sorted(maps.Keys(data)), got)
}

// failRefs is a Store whose Puts of markers fail while failing is set.
type failRefs struct {
	checkpoint.Store
	failing atomic.Bool
}

func (f *failRefs) Put(ctx context.Context, name string, r io.Reader, size int64) error {
	if _, _, ok := remote.ParseMarker(name); ok && f.failing.Load() {
		return errors.New("injected: marker put fails")
	}
	return f.Store.Put(ctx, name, r, size)
}

// TestOpenFromStoreOneHold: OpenFromStore holds the checkpoint's objects
// by one request, a hold, and no marker; the database turns the hold into
// its markers after Open. While it cannot (its marker Puts fail), the
// hold stays and keeps the objects; a reopen finishes the conversion,
// and the store is clean once the database has dropped the markers of
// what it no longer uses.
func TestOpenFromStoreOneHold(t *testing.T) {
	ctx := t.Context()
	fs := vfs.NewMem()
	opts := sharedOptions(t, fs, 1<<30)
	st := sharedCheckpoint(t, opts, 1500)
	checkpointed, want := model{}, model{}
	for i := range 1500 {
		checkpointed[string(checkpointedKey(i))] = string(sharedValue(i, 0))
		want[string(checkpointedKey(i))] = string(sharedValue(i, 0))
	}
	m, err := checkpoint.ReadManifest(ctx, opts.SharedStore, st.ID)
	require.NoError(t, err)
	objects := map[string]bool{}
	for _, f := range m.Files {
		objects[f.Object] = true
	}

	fr := &failRefs{Store: opts.SharedStore}
	fr.failing.Store(true)
	log := &putLog{Store: fr}
	b, err := OpenFromStore(ctx, log, st.ID, "b", &Options{FS: fs, SharedCacheSize: 1 << 30, SharedFromLevel: 1})
	require.NoError(t, err)
	log.mu.Lock()
	puts := slices.Clone(log.puts)
	log.mu.Unlock()
	holder := remote.InstanceHolder(b.shared.files.Instance())
	// The markers' Puts the share loop tries fail, and are not logged.
	require.Equal(t, []string{remote.HoldName(holder)}, puts, "the Puts OpenFromStore made")
	held, err := remote.Held(ctx, opts.SharedStore)
	require.NoError(t, err)
	require.ElementsMatch(t, slices.Collect(maps.Keys(objects)), held[holder])

	// The conversion fails: b overwrites everything and compacts; the
	// checkpoint's objects, which b no longer uses, stay held.
	for k := range want {
		v := sharedValue(len(k), 1)
		require.NoError(t, b.Set([]byte(k), v, NoSync))
		want[k] = string(v)
	}
	require.NoError(t, b.Compact(nil, nil))
	require.Eventually(t, func() bool { return b.Metrics().Shared.Failures > 0 }, 10*time.Second, time.Millisecond)
	got, err := readAll(t, b)
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.NoError(t, b.Close())
	for object := range objects {
		h, err := remote.Holders(ctx, opts.SharedStore, object)
		require.NoError(t, err)
		require.NotContains(t, h, holder, "%s: marked though every marker Put failed", object)
		_, err = opts.SharedStore.Get(ctx, object, 0, 1)
		require.NoError(t, err, "%s: gone while the hold names it", object)
	}

	// Reopened with a store that takes markers: the hold goes.
	fr.failing.Store(false)
	b, err = Open("b", &Options{FS: fs, SharedStore: fr, SharedCacheSize: 1 << 30, SharedFromLevel: 1})
	require.NoError(t, err)
	b.waitSharedIdle()
	held, err = remote.Held(ctx, opts.SharedStore)
	require.NoError(t, err)
	require.Empty(t, held)
	got, err = readAll(t, b)
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.NoError(t, b.Close())
	requireStoreClean(t, opts.SharedStore, []string{"a", "b"}, fs)
	requireRestores(t, fs, opts.SharedStore, st.ID, checkpointed)
}

// unmarkRegistry rewrites the store's registry as a build from before
// reference markers wrote it: without the flag that says an object's
// upload wrote the registry's marker.
func unmarkRegistry(t *testing.T, store checkpoint.Store) {
	t.Helper()
	ctx := t.Context()
	rc, err := store.Get(ctx, "registry", 0, -1)
	require.NoError(t, err)
	b, err := io.ReadAll(rc)
	require.NoError(t, err)
	require.NoError(t, rc.Close())
	const trailer = len("xxhash64:") + 16 + 1
	body := b[:len(b)-trailer-1]
	require.Contains(t, string(body), `,"marked":true`)
	body = bytes.ReplaceAll(body, []byte(`,"marked":true`), nil)
	body = fmt.Appendf(append(body, '\n'), "xxhash64:%016x\n", xxhash.Sum64(body))
	require.NoError(t, store.Put(ctx, "registry", bytes.NewReader(body), int64(len(body))))
}

// gatedStore holds the Puts of shared files' objects until open is
// closed.
type gatedStore struct {
	checkpoint.Store
	open chan struct{}
}

func (s gatedStore) Put(ctx context.Context, name string, r io.Reader, size int64) error {
	if remote.IsShared(name) {
		select {
		case <-s.open:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return s.Store.Put(ctx, name, r, size)
}

// TestCheckpointOfFilesSharedAfterThePin: a checkpoint reads the files of
// the version it pinned; one the database shares meanwhile may lose its
// local copy to the cache's bound, and is read through the store instead
// (before, the upload and the local checkpoint failed: the file was not
// in the directory, and the pinned version did not say it was shared).
func TestCheckpointOfFilesSharedAfterThePin(t *testing.T) {
	ctx := t.Context()
	fs := vfs.NewMem()
	opts := sharedOptions(t, fs, 1) // every whole copy evicted at once
	inner := opts.SharedStore
	gate := gatedStore{Store: inner, open: make(chan struct{})}
	opts.SharedStore = gate
	db, err := Open("db", opts)
	require.NoError(t, err)
	defer db.Close()
	want := fillShared(t, db, 1000)
	require.NoError(t, db.Compact(nil, nil))
	u, err := checkpoint.NewUploader(inner, nil)
	require.NoError(t, err)
	var stats checkpoint.Stats
	require.NoError(t, db.withPinnedVersion("test", nil, func(src checkpoint.Source) error {
		tables, vlogs := src.Version.NumShared()
		require.Zero(t, tables+vlogs, "shared before the pin")
		close(gate.open)
		db.waitSharedIdle()
		db.mu.Lock()
		tables, vlogs = db.vs.Current().NumShared()
		db.mu.Unlock()
		require.Positive(t, tables+vlogs, "nothing shared")
		require.NoError(t, checkpoint.WriteLocal(src, "local"))
		stats, err = u.Upload(ctx, src)
		return err
	}))
	for _, dir := range []string{"local", "restored"} {
		if dir == "restored" {
			require.NoError(t, checkpoint.Restore(ctx, inner, stats.ID, fs, dir, nil))
		}
		r, err := Open(dir, &Options{FS: fs})
		require.NoError(t, err, dir)
		got, err := readAll(t, r)
		require.NoError(t, err, dir)
		require.Equal(t, want, got, dir)
		require.NoError(t, r.Close())
	}
}

// TestCheckpointWaitsForSharing: a checkpoint to the store while the
// share loop is behind (its uploads held) waits for it, and then
// references the files it shared instead of uploading copies of them;
// the restored checkpoint holds every write. A failing share ends the
// wait: the checkpoint copies what is not shared.
func TestCheckpointWaitsForSharing(t *testing.T) {
	ctx := t.Context()
	for _, fail := range []bool{false, true} {
		fs := vfs.NewMem()
		opts := sharedOptions(t, fs, 1<<30)
		inner := opts.SharedStore
		gate := gatedStore{Store: inner, open: make(chan struct{})}
		opts.SharedStore = gate
		if fail {
			opts.SharedStore = failSharedPuts{inner}
		}
		db, err := Open("db", opts)
		require.NoError(t, err)
		want := fillShared(t, db, 1000)
		require.NoError(t, db.Compact(nil, nil))
		// Writes after the compaction: the checkpoint's flush finishes
		// the value log they went to.
		for i := 0; i < 1000; i += 10 {
			k := fmt.Sprintf("k%05d", i)
			require.NoError(t, db.Set([]byte(k), sharedValue(i, 1), NoSync))
			want[k] = string(sharedValue(i, 1))
		}
		u, err := checkpoint.NewUploader(inner, nil)
		require.NoError(t, err)
		type result struct {
			st  checkpoint.Stats
			err error
		}
		done := make(chan result, 1)
		go func() {
			st, err := db.CheckpointToStore(ctx, u)
			done <- result{st, err}
		}()
		if !fail {
			select {
			case r := <-done:
				t.Fatalf("the checkpoint did not wait for the files to be shared: %+v %v", r.st, r.err)
			case <-time.After(200 * time.Millisecond):
			}
			close(gate.open)
		}
		r := <-done
		require.NoError(t, r.err)
		m, err := checkpoint.ReadManifest(ctx, inner, r.st.ID)
		require.NoError(t, err)
		var external, copied int
		for _, f := range m.Files {
			if strings.HasSuffix(f.Name, ".vlog") {
				if f.External {
					external++
				} else {
					copied++
				}
			}
		}
		if fail {
			require.Zero(t, external, "shared although every share failed")
		} else {
			require.Positive(t, external)
			// The value log the checkpoint's flush finished is shared
			// too: a copy in the checkpoint's data would put its bytes in
			// the store twice.
			require.Zero(t, copied, "value logs copied into the checkpoint")
		}
		require.NoError(t, db.Close())
		requireRestores(t, fs, inner, r.st.ID, want)
	}
}

// TestSharedReleasesInParallel: the shared files a compaction makes
// obsolete, many at once, are released side by side (each release
// waits for the store's round trips), and every one of their objects is
// deleted.
func TestSharedReleasesInParallel(t *testing.T) {
	fs := vfs.NewMem()
	opts := sharedOptions(t, fs, 1<<30)
	counter := &storetest.SlowDeletes{Store: opts.SharedStore, Delay: 20 * time.Millisecond}
	opts.SharedStore = counter
	db, err := Open("db", opts)
	require.NoError(t, err)
	defer db.Close()
	fillShared(t, db, 1500)
	require.NoError(t, db.Compact(nil, nil))
	db.waitSharedIdle()
	before, err := counter.List(t.Context(), "shared/")
	require.NoError(t, err)
	require.Greater(t, len(before), 4)
	for i := range 1500 {
		require.NoError(t, db.Delete([]byte(fmt.Sprintf("k%05d", i)), NoSync))
	}
	require.NoError(t, db.Compact(nil, nil))
	require.NoError(t, db.Compact(nil, nil))
	db.waitSharedIdle()
	require.Greater(t, counter.MaxInFlight(), 1, "releases one at a time")
	after, err := counter.List(t.Context(), "shared/")
	require.NoError(t, err)
	for _, o := range before {
		require.False(t, slices.ContainsFunc(after, func(a checkpoint.ObjectInfo) bool { return a.Name == o.Name }), "%s not deleted", o.Name)
	}
}

// failSharedPuts fails every Put of a shared file's object.
type failSharedPuts struct{ checkpoint.Store }

func (s failSharedPuts) Put(ctx context.Context, name string, r io.Reader, size int64) error {
	if remote.IsShared(name) {
		return errors.New("injected: shared Put fails")
	}
	return s.Store.Put(ctx, name, r, size)
}

// TestReadWhileSharing: a read finds a file not shared, and then its
// local copy gone: the database shared it meanwhile, and its cache, too
// small for it, evicted the copy at once. The read goes to the store
// (before, it failed as if the file were missing from the directory).
func TestReadWhileSharing(t *testing.T) {
	fs := vfs.NewMem()
	opts := sharedOptions(t, fs, 1) // every whole copy evicted at once
	opts.DisableGC = true
	gate := gatedStore{Store: opts.SharedStore, open: make(chan struct{})}
	opts.SharedStore = gate
	db, err := Open("db", opts)
	require.NoError(t, err)
	defer db.Close()
	const n = 1000
	for i := range n {
		require.NoError(t, db.Set([]byte(fmt.Sprintf("k%05d", i)), sharedValue(i, 0), NoSync))
	}
	require.NoError(t, db.Compact(nil, nil))
	// The share loop waits at the gate; the first open of a local value
	// log lets it share everything before the open goes on.
	fired := false
	testHookOpenLocal = func(t base.FileType, num base.FileNum) {
		if t == base.FileTypeVlog && !fired {
			fired = true
			close(gate.open)
			db.waitSharedIdle()
		}
	}
	defer func() { testHookOpenLocal = nil }()
	for i := range n {
		v, err := db.Get([]byte(fmt.Sprintf("k%05d", i)))
		require.NoError(t, err, "key %d", i)
		require.Equal(t, sharedValue(i, 0), v, "key %d", i)
	}
	require.True(t, fired, "no value log was opened locally")
}

// faultStore fails requests of a store on a schedule: Gets fail with an
// error, a deadline, or a body cut short; everything else passes.
type faultStore struct {
	checkpoint.Store
	mu    sync.Mutex
	rng   *rand.Rand
	on    bool
	fails int
}

func (s *faultStore) Get(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	s.mu.Lock()
	kind := -1
	if s.on && strings.HasPrefix(name, "shared/") && s.rng.IntN(3) > 0 {
		kind = s.rng.IntN(3)
		s.fails++
	}
	s.mu.Unlock()
	switch kind {
	case 0:
		return nil, errors.New("injected: connection reset")
	case 1:
		return nil, fmt.Errorf("injected: %w", context.DeadlineExceeded)
	}
	rc, err := s.Store.Get(ctx, name, off, length)
	if err != nil || kind != 2 {
		return rc, err
	}
	b, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		return nil, err
	}
	return io.NopCloser(bytes.NewReader(b[:len(b)/2])), nil // the body ends early
}

func (s *faultStore) set(on bool) {
	s.mu.Lock()
	s.on = on
	s.mu.Unlock()
}

// TestSharedStoreFaults: reads of shared files through a store whose
// GETs fail, time out or return short bodies give the right value or an
// error, never a wrong value, and once the store answers again every
// read is right (a failed fetch leaves nothing in the cache). A shared
// object damaged in the store gives ErrCorruption for what it holds,
// never a wrong value.
func TestSharedStoreFaults(t *testing.T) {
	fs := vfs.NewMem()
	opts := sharedOptions(t, fs, 1) // every read of a shared file goes to the store
	db, err := Open("db", opts)
	require.NoError(t, err)
	const n = 1500
	key := func(i int) []byte { return []byte(fmt.Sprintf("k%05d", i)) }
	for i := range n {
		require.NoError(t, db.Set(key(i), sharedValue(i, 0), NoSync))
	}
	require.NoError(t, db.Compact(nil, nil))
	db.waitSharedIdle()
	require.NoError(t, db.Close())

	fstore := &faultStore{Store: opts.SharedStore, rng: rand.New(rand.NewPCG(1, 2))}
	o := *opts
	o.SharedStore = fstore
	db, err = Open("db", &o)
	require.NoError(t, err)
	defer db.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	readAllKeys := func(what string) (errs int) {
		t.Helper()
		for range 600 {
			i := rng.IntN(n)
			v, err := db.Get(key(i))
			if err != nil {
				errs++
				continue
			}
			require.Equal(t, sharedValue(i, 0), v, "%s: key %d", what, i)
		}
		it, err := db.NewIter(nil)
		require.NoError(t, err)
		for ok := it.First(); ok; ok = it.Next() {
			var i int
			_, err := fmt.Sscanf(string(it.Key()), "k%05d", &i)
			require.NoError(t, err)
			v := it.Value()
			if v == nil && it.Error() != nil {
				break // the value's read failed: an error, which Close returns
			}
			require.Equal(t, sharedValue(i, 0), v, "%s: scan at %s", what, it.Key())
		}
		if it.Close() != nil {
			errs++
		}
		return errs
	}
	fstore.set(true)
	errs := readAllKeys("faults")
	require.Positive(t, errs, "no read failed")
	require.Positive(t, fstore.fails)
	fstore.set(false)
	require.Zero(t, readAllKeys("after the faults"), "reads failed once the store answered again")

	// Damage one shared object in the store: what it holds reads as
	// corruption, the rest as before.
	require.NoError(t, db.Close())
	objs, err := opts.SharedStore.List(t.Context(), "shared/")
	require.NoError(t, err)
	var target string
	for _, ob := range objs {
		if strings.HasSuffix(ob.Name, ".sst") {
			target = ob.Name
			break
		}
	}
	require.NotEmpty(t, target)
	path := "store/" + target
	data := []byte(readFile(t, fs, path))
	data[len(data)/3] ^= 0x40
	f, err := fs.Create(path)
	require.NoError(t, err)
	_, err = f.Write(data)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	db, err = Open("db", opts)
	require.NoError(t, err)
	corrupt := 0
	for i := range n {
		v, err := db.Get(key(i))
		if err != nil {
			require.ErrorIs(t, err, ErrCorruption, "key %d", i)
			corrupt++
			continue
		}
		require.Equal(t, sharedValue(i, 0), v, "key %d", i)
	}
	require.Positive(t, corrupt, "the damage went unnoticed")
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
	require.Contains(t, m.String(), "shared: ")
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
	// and written into the cache in the background
	require.Eventually(t, func() bool { return b.Metrics().Shared.CachedBytes > 0 }, 10*time.Second, time.Millisecond)
	m = b.Metrics()
	gets, parts := m.Shared.Gets, m.Shared.PartMisses+m.Shared.PartHits
	_, err = b.Get([]byte("k00006")) // a value of 700 bytes, in a value log
	require.NoError(t, err)
	_, err = b.Get([]byte("k00001"))
	require.NoError(t, err)
	m = b.Metrics()
	require.Greater(t, m.Shared.Gets, gets, "the value log was read from the store")
	// A miss if the read waited for the part's fetch, a hit if the
	// fetch the value log's opening started was already in the cache.
	require.Greater(t, m.Shared.PartMisses+m.Shared.PartHits, parts)
	require.Positive(t, m.Shared.Prefetches, "the value's part was not asked for while its value log opened")
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

// checkpointedKey is key i of the state sharedCheckpoint writes.
func checkpointedKey(i int) []byte { return []byte(fmt.Sprintf("k%05d", i)) }

// sharedCheckpoint writes n keys (checkpointedKey(i), sharedValue(i, 0)) into a
// database "a" opened with opts, compacts them into shared files, waits
// for their uploads, checkpoints the database into opts.SharedStore by
// reference and closes it.
func sharedCheckpoint(t *testing.T, opts *Options, n int) checkpoint.Stats {
	t.Helper()
	a, err := Open("a", opts)
	require.NoError(t, err)
	for i := range n {
		require.NoError(t, a.Set(checkpointedKey(i), sharedValue(i, 0), NoSync))
	}
	require.NoError(t, a.Compact(nil, nil))
	a.waitSharedIdle()
	u, err := checkpoint.NewUploader(opts.SharedStore, nil)
	require.NoError(t, err)
	st, err := a.CheckpointToStore(t.Context(), u)
	require.NoError(t, err)
	require.NoError(t, a.Close())
	return st
}

// TestSharedWarmupReopens: readers opened before the warm-up downloaded
// their files read the local copies afterwards, not the store (whose
// parts of the files the warm-up dropped): a second pass over every key,
// after the warm-up, makes no GET.
func TestSharedWarmupReopens(t *testing.T) {
	ctx := t.Context()
	fs := vfs.NewMem()
	opts := sharedOptions(t, fs, 1<<30)
	const n = 1500
	key := checkpointedKey
	st := sharedCheckpoint(t, opts, n)

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
	const n = 1500
	key := checkpointedKey
	st := sharedCheckpoint(t, opts, n)

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

// TestRelocationCopiesSharedValueLog: garbage collection moving the
// values out of shared value logs that the cache does not hold reads
// each through a private copy (remote.Files.OpenCopy), fetched a part at
// a time, once: not a GET for nearly every value, as reading them in the
// order of their keys through a cache that soon lets their parts go did
// (the same run through the cache, testRelocNoCopy, takes 4-5x the GETs).
// Every value reads right after, and the copies are gone.
func TestRelocationCopiesSharedValueLog(t *testing.T) {
	run := func(copies bool) (relocated, gets int64) {
		testRelocNoCopy = !copies
		defer func() { testRelocNoCopy = false }()
		fs := vfs.NewMem()
		opts := sharedOptions(t, fs, 16<<10)
		opts.SharedPartSize = 4 << 10
		opts.GCPolicy = gc.ReverseLookup(0.5)
		db, err := Open("db", opts)
		require.NoError(t, err)
		defer func() { require.NoError(t, db.Close()) }()
		const n = 2000
		rng := rand.New(rand.NewPCG(3, 4))
		want := model{}
		for _, i := range rng.Perm(n) {
			k := fmt.Sprintf("k%05d", i)
			require.NoError(t, db.Set([]byte(k), sharedValue(i, 0), NoSync))
			want[k] = string(sharedValue(i, 0))
		}
		require.NoError(t, db.Compact(nil, nil))
		db.waitSharedIdle()
		_, vlogs := currentVersion(db).NumShared()
		require.Positive(t, vlogs)
		before := db.Metrics()
		// Three keys in five overwritten: the first value logs pass the
		// policy's ratio, and their survivors move.
		for _, i := range rng.Perm(n)[:3*n/5] {
			k := fmt.Sprintf("k%05d", i)
			require.NoError(t, db.Set([]byte(k), sharedValue(i, 1), NoSync))
			want[k] = string(sharedValue(i, 1))
		}
		waitGCIdle(t, db)
		db.waitSharedIdle()
		after := db.Metrics()
		relocated = int64(after.GC.Relocated - before.GC.Relocated)
		gets = after.Shared.Gets - before.Shared.Gets
		made := after.Shared.Copies - before.Shared.Copies
		t.Logf("copies %v: relocated %d values through %d copies; %d GETs", copies, relocated, made, gets)
		require.Positive(t, relocated)
		if copies {
			require.Positive(t, made)
		} else {
			require.Zero(t, made)
		}
		got, err := readAll(t, db)
		require.NoError(t, err)
		require.Equal(t, want, got)
		names, err := fs.List(fs.PathJoin("db", remote.CacheDirName))
		require.NoError(t, err)
		for _, name := range names {
			require.False(t, strings.HasPrefix(name, "copy-"), "%s left behind", name)
		}
		return relocated, gets
	}
	_, through := run(false)
	_, copied := run(true)
	require.Less(t, 2*copied, through, "the copies saved less than half the GETs")
}

// TestRelocationCopyLatency measures what TestRelocationCopiesSharedValueLog
// tests, against a store that answers in 20 ms: 4,000 values of 4 KiB
// in 4 MiB value logs, shared, a cache of 2 MiB, three keys in five
// overwritten, then the time garbage collection takes to settle, with the
// private copies and through the cache. It only measures (logged), when
// STRATA_RELOC_LATENCY is set. Measured twice: 183 and 215 ms with 16-17
// GETs (15 MiB) against 27.9 and 28.2 s with 1,309-1,311 GETs (1.28 GB).
func TestRelocationCopyLatency(t *testing.T) {
	if os.Getenv("STRATA_RELOC_LATENCY") == "" {
		t.Skip("a measurement: set STRATA_RELOC_LATENCY")
	}
	for _, copies := range []bool{true, false} {
		testRelocNoCopy = !copies
		dir := t.TempDir()
		local, err := checkpoint.NewLocalStore(filepath.Join(dir, "store"))
		require.NoError(t, err)
		store, err := checkpoint.NewSlowStore(local, checkpoint.SlowOptions{Latency: 20 * time.Millisecond})
		require.NoError(t, err)
		n := 4000
		opts := &Options{FS: vfs.Default, SharedStore: store, SharedFromLevel: 1, SharedCacheSize: 2 << 20,
			MemTableSize: 4 << 20, ValueLogFileSize: 4 << 20, GCPolicy: gc.ReverseLookup(0.5)}
		db, err := Open(filepath.Join(dir, "db"), opts)
		require.NoError(t, err)
		rng := rand.New(rand.NewPCG(1, 2))
		val := make([]byte, 4096)
		for _, i := range rng.Perm(n) {
			for j := range val {
				val[j] = byte(rng.Uint32())
			}
			require.NoError(t, db.Set([]byte(fmt.Sprintf("k%06d", i)), val, NoSync))
		}
		require.NoError(t, db.Compact(nil, nil))
		db.waitSharedIdle()
		before := db.Metrics()
		for _, i := range rng.Perm(n)[:3*n/5] {
			require.NoError(t, db.Set([]byte(fmt.Sprintf("k%06d", i)), val, NoSync))
		}
		start := time.Now()
		waitGCIdle(t, db)
		el := time.Since(start)
		after := db.Metrics()
		t.Logf("copies %v: GC settle %v; relocated %d; GETs %d (%d MiB); copies %d", copies, el.Round(time.Millisecond),
			after.GC.Relocated-before.GC.Relocated, after.Shared.Gets-before.Shared.Gets, (after.Shared.GetBytes-before.Shared.GetBytes)>>20, after.Shared.Copies-before.Shared.Copies)
		require.NoError(t, db.Close())
	}
	testRelocNoCopy = false
}
