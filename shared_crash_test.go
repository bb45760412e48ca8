package strata

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/strata-db/strata/checkpoint"
	"github.com/strata-db/strata/remote"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// Crash tests of shared files: the databases and their store on one
// MemFS, a crash clone of it taken before every store request that
// writes (a marker, an object, the registry, a deletion), while databases
// share files, compact (releasing them), checkpoint by reference, open a
// checkpoint as a new instance and drop checkpoints. Each clone is the
// state a power loss of the machine before that request leaves: the store
// as its requests so far made it, each database as far as it synced.

// crashExpect is what a crash state must hold: each database's keys (by
// directory) and each checkpoint's (by id). A round of writes in progress
// (pending, in order) may be in a database's state up to any point: its
// value logs, written at commit, are finished and shared during the
// round. Never changed once taken: the test makes a new one for each
// change.
type crashExpect struct {
	dbs     map[string]model
	pending map[string][][2]string
	ckpts   map[uint64]model
	// destroying are the databases a Destroy is removing: in a crash
	// state their directory may be left with objects gone, and Destroy
	// run again must finish the work.
	destroying map[string]bool
}

// requireDB checks that got is database dir's state: its keys, and a
// prefix of the round of writes in progress.
func (e *crashExpect) requireDB(t *testing.T, dir string, got model, what string) {
	t.Helper()
	want := maps.Clone(e.dbs[dir])
	for _, kv := range e.pending[dir] {
		if got[kv[0]] != kv[1] {
			break
		}
		want[kv[0]] = kv[1]
	}
	require.Equal(t, want, got, "%s: %s", what, dir)
}

// crashState is a crash clone and what it must hold.
type crashState struct {
	fs   *vfs.MemFS
	req  string // the request the crash came before
	mode string
	exp  *crashExpect
}

// crashRecorder is a Store that takes crash states before each request
// that writes: one in a mode of crashModes (torn writes, zeroed pages,
// directory changes leaked without a sync) in turn, and with soak also
// one that keeps only what was synced. composeRecorder adds Compose.
type crashRecorder struct {
	checkpoint.Store
	fs *vfs.MemFS

	mu       sync.Mutex
	exp      *crashExpect
	states   []crashState
	requests int
	kinds    map[string]int // requests by verb and the name's first part
}

func (r *crashRecorder) record(req string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	verb, name, _ := strings.Cut(req, " ")
	part, _, _ := strings.Cut(name, "/")
	r.kinds[verb+" "+part]++
	o := crashAt(11, r.requests)
	r.states = append(r.states, crashState{fs: r.fs.CrashClone(o), req: req, mode: fmt.Sprintf("torn writes %v, zeroed pages %v, leaked metadata %v", o.TornWrites, o.ZeroedPages, o.LeakMetadata), exp: r.exp})
	if soak {
		r.states = append(r.states, crashState{fs: r.fs.CrashClone(vfs.CrashOptions{}), req: req, mode: "synced only", exp: r.exp})
	}
	r.requests++
}

func (r *crashRecorder) Put(ctx context.Context, name string, rd io.Reader, size int64) error {
	r.record("put " + name)
	err := r.Store.Put(ctx, name, rd, size)
	if err == nil && strings.HasPrefix(name, "holds/") {
		// Also the state a crash right after a hold leaves: an
		// OpenFromStore then writes its directory with no store request
		// between, and the hold would be left to no one.
		r.record("the next request after put " + name)
	}
	return err
}

func (r *crashRecorder) Delete(ctx context.Context, name string) error {
	r.record("delete " + name)
	return r.Store.Delete(ctx, name)
}

// expect changes what the states recorded from now on must hold.
func (r *crashRecorder) expect(f func(e *crashExpect)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := &crashExpect{dbs: maps.Clone(r.exp.dbs), pending: maps.Clone(r.exp.pending), ckpts: maps.Clone(r.exp.ckpts), destroying: maps.Clone(r.exp.destroying)}
	f(e)
	r.exp = e
}

// composeRecorder is a crashRecorder that composes objects as its store
// does.
type composeRecorder struct{ *crashRecorder }

func (r composeRecorder) Compose(ctx context.Context, name string, parts []checkpoint.Part) (int64, error) {
	r.record("compose " + name)
	return r.Store.(checkpoint.Composer).Compose(ctx, name, parts)
}

// crashSharedOptions: tables of L1 and deeper shared, small value logs
// (finished, and shared, during a round of writes), no flush during a
// round, compactions only when the test asks, and a cache smaller than
// the data, so that reads go to the store.
func crashSharedOptions(fs vfs.FS, store checkpoint.Store) *Options {
	return &Options{FS: fs, SharedStore: store, SharedFromLevel: 1, SharedCacheSize: 32 << 10,
		MemTableSize: 4 << 20, ValueThreshold: 256, ValueLogFileSize: 64 << 10, TargetFileSize: 16 << 10,
		DisableAutomaticCompactions: true}
}

// quietOptions open a database that does nothing in the background but
// share files: once its share loop is idle, what the store holds of it
// stays as it is (garbage collection, which runs after a flush, would
// release files while an audit reads the store).
func quietOptions(fs vfs.FS, store checkpoint.Store) *Options {
	o := crashSharedOptions(fs, store)
	o.DisableGC = true
	return o
}

func crashKey(i int) string { return fmt.Sprintf("k%05d", i) }

func crashValue(i, round int) string {
	return fmt.Sprintf("%05d-%d-%s", i, round, strings.Repeat("v", 50+(i*37+round*11)%600))
}

// TestSharedCrash: before every store request of shares, releases,
// uploads by reference, an OpenFromStore and the drops of checkpoints
// (and right after each hold an OpenFromStore writes), the machine may
// lose power. In every such state: the audit finds no
// object in use missing or damaged (stray markers and unreferenced
// objects are allowed: the rules leave them after a crash); every
// database directory opens with the store and holds its keys; every
// retained checkpoint restores and opens by reference to its state. Once
// the databases are reopened (an instance drops its strays) and one more
// upload ran (the registry drops its own), the directories of opens the
// crash stopped were destroyed (dropping their holds), and remote.Sweep
// deleted the objects a crash left without markers, the audit finds the
// store clean: no stray, nothing unreferenced. The uploads run into a store that
// composes objects (as the local and S3 stores do) and into one that
// cannot. With -short or -race a third of the states are checked; with
// soak, the workload runs three times (its requests interleave
// differently) and each request has a second state, of the synced data
// only.
func TestSharedCrash(t *testing.T) {
	runs := 1
	if soak {
		runs = 3
	}
	for _, compose := range []bool{true, false} {
		name := "Compose"
		if !compose {
			name = "PutOnly"
		}
		t.Run(name, func(t *testing.T) {
			for range runs {
				testSharedCrash(t, compose)
			}
		})
	}
}

func testSharedCrash(t *testing.T, compose bool) {
	ctx := t.Context()
	mem := vfs.NewMem()
	inner, err := checkpoint.NewLocalStoreFS(mem, "store")
	require.NoError(t, err)
	rec := &crashRecorder{Store: inner, fs: mem, exp: &crashExpect{dbs: map[string]model{}, pending: map[string][][2]string{}, ckpts: map[uint64]model{}},
		kinds: map[string]int{}}
	var store checkpoint.Store = rec
	if compose {
		store = composeRecorder{rec}
	}
	opts := crashSharedOptions(mem, store)
	models := map[string]model{"a": {}}
	write := func(db *DB, dir string, keys []int, round int) {
		t.Helper()
		m := models[dir]
		var writes [][2]string
		for _, i := range keys {
			writes = append(writes, [2]string{crashKey(i), crashValue(i, round)})
		}
		rec.expect(func(e *crashExpect) { e.pending[dir] = writes })
		for _, kv := range writes {
			require.NoError(t, db.Set([]byte(kv[0]), []byte(kv[1]), NoSync))
			m[kv[0]] = kv[1]
		}
		require.NoError(t, db.Sync())
		rec.expect(func(e *crashExpect) { e.dbs[dir], e.pending[dir] = maps.Clone(m), nil })
	}
	every := func(step, n int) []int {
		var keys []int
		for i := 0; i < n; i += step {
			keys = append(keys, i)
		}
		return keys
	}
	nextID := uint64(1)
	toStore := func(db *DB, dir string, u *checkpoint.Uploader) {
		t.Helper()
		id := nextID
		rec.expect(func(e *crashExpect) { e.ckpts[id] = maps.Clone(models[dir]) })
		st, err := db.CheckpointToStore(ctx, u)
		require.NoError(t, err)
		require.Equal(t, id, st.ID)
		nextID++
	}
	requireModel := func(db *DB, dir, what string) {
		t.Helper()
		got, err := readAll(t, db)
		require.NoError(t, err, "%s: %s", dir, what)
		require.Equal(t, models[dir], got, "%s: %s", dir, what)
	}
	const n = 600
	a, err := Open("a", opts)
	require.NoError(t, err)
	rec.expect(func(e *crashExpect) { e.dbs["a"] = model{} })
	// Value logs get objects of their own, tables share segments, and a
	// segment a retained checkpoint uses less than 90% of is emptied: its
	// pieces move, some of them a database opened from it reads.
	uo := &checkpoint.UploadOptions{KeepLast: 2, SmallFileSize: 32 << 10, MinLiveRatio: 0.9}
	ua, err := checkpoint.NewUploader(store, uo)
	require.NoError(t, err)
	ub, err := checkpoint.NewUploader(store, uo)
	require.NoError(t, err)

	// a shares its tables and value logs.
	write(a, "a", every(1, n), 0)
	require.NoError(t, a.Compact(nil, nil))
	a.waitSharedIdle()
	// A checkpoint of a by reference: its shared files named, the rest
	// (the level-0 tables and value logs of the last writes) uploaded.
	write(a, "a", every(3, n), 1)
	toStore(a, "a", ua)
	ckpt1 := maps.Clone(models["a"])
	// b opens it from the store, writes and compacts: it shares new files
	// and releases some of the checkpoint's.
	models["b"] = maps.Clone(models["a"])
	rec.expect(func(e *crashExpect) { e.dbs["b"] = maps.Clone(models["b"]) })
	b, err := OpenFromStore(ctx, store, 1, "b", crashSharedOptions(mem, nil))
	require.NoError(t, err)
	write(b, "b", every(5, n), 2)
	require.NoError(t, b.Compact(nil, nil))
	b.waitSharedIdle()
	requireModel(b, "b", "after its compaction")
	// c opens the first half of the key range of checkpoint 1 by
	// reference (tables straddling the bound are virtual), writes and
	// compacts.
	models["c"] = restrict(ckpt1, "", crashKey(n/2))
	rec.expect(func(e *crashExpect) { e.dbs["c"] = maps.Clone(models["c"]) })
	c, err := OpenRangeFromStore(ctx, store, []uint64{1}, nil, []byte(crashKey(n/2)), "c", crashSharedOptions(mem, nil))
	require.NoError(t, err)
	requireModel(c, "c", "opened from the store")
	write(c, "c", every(4, n/2), 5)
	require.NoError(t, c.Compact(nil, nil))
	c.waitSharedIdle()
	requireModel(c, "c", "after its compaction")
	cInstance := c.shared.files.Instance()
	// d opens the other half the same way; c and d checkpoint, and e
	// opens the union of their checkpoints by reference (3 -> 2's kind
	// of rescale: value logs of both, and of checkpoint 1 that both
	// reference, under one number each).
	models["d"] = restrict(ckpt1, crashKey(n/2), "")
	rec.expect(func(e *crashExpect) { e.dbs["d"] = maps.Clone(models["d"]) })
	d, err := OpenRangeFromStore(ctx, store, []uint64{1}, []byte(crashKey(n/2)), nil, "d", crashSharedOptions(mem, nil))
	require.NoError(t, err)
	requireModel(d, "d", "opened from the store")
	write(d, "d", every(4, n)[len(every(4, n/2)):], 6)
	require.NoError(t, d.Compact(nil, nil))
	d.waitSharedIdle()
	dInstance := d.shared.files.Instance()
	uc, err := checkpoint.NewUploader(store, uo)
	require.NoError(t, err)
	ud, err := checkpoint.NewUploader(store, uo)
	require.NoError(t, err)
	idC := nextID
	toStore(c, "c", uc)
	toStore(d, "d", ud)
	models["e"] = maps.Clone(models["c"])
	maps.Copy(models["e"], models["d"])
	rec.expect(func(e *crashExpect) { e.dbs["e"] = maps.Clone(models["e"]) })
	e, err := OpenRangeFromStore(ctx, store, []uint64{idC, idC + 1}, nil, nil, "e", crashSharedOptions(mem, nil))
	require.NoError(t, err)
	requireModel(e, "e", "opened from the store")
	write(e, "e", every(7, n), 7)
	require.NoError(t, e.Compact(nil, nil))
	e.waitSharedIdle()
	requireModel(e, "e", "after its compaction")
	eInstance := e.shared.files.Instance()
	// a compacts (releasing files the checkpoint holds) and checkpoints;
	// b checkpoints by reference, which drops the first checkpoint.
	require.NoError(t, a.Compact(nil, nil))
	a.waitSharedIdle()
	toStore(a, "a", ua)
	toStore(b, "b", ub)
	// a moves on: two more checkpoints drop those that b's files are in.
	write(a, "a", every(2, n), 3)
	toStore(a, "a", ua)
	toStore(a, "a", ua)
	requireModel(b, "b", "once the checkpoints of its files are dropped")
	// b checkpoints again (its files in the segments of dropped
	// checkpoints now), then overwrites everything: it releases the last
	// of what it held.
	toStore(b, "b", ub)
	write(b, "b", every(1, n), 4)
	require.NoError(t, b.Compact(nil, nil))
	b.waitSharedIdle()
	requireModel(b, "b", "after overwriting everything")
	toStore(a, "a", ua)
	bInstance := b.shared.files.Instance()
	require.NoError(t, a.Compact(nil, nil))
	a.waitSharedIdle()
	requireModel(a, "a", "at the end")
	for _, db := range []*DB{c, d, e} {
		require.NoError(t, db.Close())
	}
	require.NoError(t, b.Close())
	require.NoError(t, a.Close())
	// c, which e replaced with d, is destroyed: its instance's references
	// go, and what e and the retained checkpoints use stays. Then the
	// registry retires all but its newest checkpoint (those e was opened
	// from among them).
	rec.expect(func(e *crashExpect) { e.destroying = map[string]bool{"c": true} })
	before := rec.requests
	require.NoError(t, Destroy(ctx, "c", crashSharedOptions(mem, store)))
	_, err = mem.Stat("c")
	require.ErrorIs(t, err, os.ErrNotExist)
	require.Greater(t, rec.requests, before, "Destroy made no request to the store")
	before = rec.requests
	st, err := ua.Retire(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, nextID, st.ID)
	nextID++
	ids, err := checkpoint.Checkpoints(ctx, store)
	require.NoError(t, err)
	require.Len(t, ids, 1)
	require.Greater(t, rec.requests, before, "Retire made no request to the store")

	// Without a crash, the store is clean once the databases have
	// dropped what their Close left (an upload or a release it
	// abandoned).
	for _, dir := range []string{"a", "b", "d", "e"} {
		db, err := Open(dir, quietOptions(mem, inner))
		require.NoError(t, err)
		db.waitSharedIdle()
		defer db.Close()
		requireModel(db, dir, "reopened after c was destroyed and the checkpoints retired")
	}
	requireStoreClean(t, inner, []string{"a", "b", "d", "e"}, mem)
	// The workload makes every kind of request the rules order: markers
	// put and deleted, shared files' objects put and deleted, data
	// objects put and deleted, the registry replaced.
	for _, kind := range []string{"put refs", "delete refs", "put holds", "delete holds", "put shared", "delete shared", "put data", "delete data", "put registry"} {
		n := rec.kinds[kind]
		if compose && kind == "put data" {
			n += rec.kinds["compose data"]
		}
		require.Positive(t, n, "no %q request: %v", kind, rec.kinds)
	}
	states := rec.states
	stride := 1
	if (testing.Short() || raceEnabled) && !soak {
		stride = 3
	}
	t.Logf("%d store requests that write (%v), %d crash states, checking every %d", rec.requests, rec.kinds, len(states), stride)
	for i := 0; i < len(states); i += stride {
		checkCrashState(t, states[i], i, map[string]string{"b": bInstance, "c": cInstance, "d": dInstance, "e": eInstance})
	}
}

// requireStoreClean checks that an audit of the store with the databases
// in dirs finds nothing: no problem, no stray, nothing unreferenced.
func requireStoreClean(t *testing.T, s checkpoint.Store, dirs []string, fs vfs.FS) {
	t.Helper()
	var instances []*remote.Instance
	for _, dir := range dirs {
		in, err := remote.ReadInstance(fs, dir)
		require.NoError(t, err)
		instances = append(instances, in)
	}
	r, err := checkpoint.Audit(context.Background(), s, &checkpoint.AuditOptions{Instances: instances})
	require.NoError(t, err)
	require.True(t, r.OK(), "problems: %v\nstrays: %v\nunreferenced: %v", r.Problems, r.Strays, r.Unreferenced)
}

// checkCrashState checks crash state n (see TestSharedCrash); opened
// are the instances that OpenFromStore and OpenRangeFromStore made, by
// directory.
func checkCrashState(t *testing.T, st crashState, n int, opened map[string]string) {
	t.Helper()
	ctx := context.Background()
	fs := st.fs
	what := fmt.Sprintf("crash %d (%s), before %s", n, st.mode, st.req)
	store, err := checkpoint.NewLocalStoreFS(fs, "store")
	require.NoError(t, err, what)
	var dirs []string
	for _, dir := range []string{"a", "b", "c", "d", "e"} {
		if _, err := fs.Stat(fs.PathJoin(dir, "CURRENT")); err == nil && !st.exp.destroying[dir] {
			dirs = append(dirs, dir)
		}
	}
	var instances []*remote.Instance
	for _, dir := range dirs {
		in, err := remote.ReadInstance(fs, dir)
		require.NoError(t, err, "%s: %s", what, dir)
		instances = append(instances, in)
	}
	r, err := checkpoint.Audit(ctx, store, &checkpoint.AuditOptions{Instances: instances})
	require.NoError(t, err, what)
	require.Empty(t, r.Problems, "%s: an object in use is missing or damaged", what)
	// A Destroy the crash interrupted finishes when it runs again.
	for dir := range st.exp.destroying {
		require.NoError(t, Destroy(ctx, dir, quietOptions(fs, store)), "%s: destroy %s again", what, dir)
		_, err := fs.Stat(dir)
		require.ErrorIs(t, err, os.ErrNotExist, "%s: %s after Destroy", what, dir)
	}

	// Every retained checkpoint restores, and opens by reference.
	ids, err := checkpoint.Checkpoints(ctx, store)
	require.NoError(t, err, what)
	var dbs []*DB
	defer func() {
		for _, db := range dbs {
			db.Close()
		}
	}()
	for _, id := range ids {
		want, ok := st.exp.ckpts[id]
		require.True(t, ok, "%s: checkpoint %d is retained before its upload began", what, id)
		dst := fmt.Sprintf("restore-%d", id)
		require.NoError(t, checkpoint.Restore(ctx, store, id, fs, dst, nil), "%s: restore %d", what, id)
		rdb, err := Open(dst, &Options{FS: fs, ErrorIfNotExists: true})
		require.NoError(t, err, "%s: open restored %d", what, id)
		got, err := readAll(t, rdb)
		require.NoError(t, err, "%s: read restored %d", what, id)
		require.Equal(t, want, got, "%s: restored %d", what, id)
		require.NoError(t, rdb.Close())

		ref := fmt.Sprintf("ref-%d", id)
		rdb, err = OpenFromStore(ctx, store, id, ref, quietOptions(fs, nil))
		require.NoError(t, err, "%s: open %d from the store", what, id)
		dbs = append(dbs, rdb)
		got, err = readAll(t, rdb)
		require.NoError(t, err, "%s: read %d from the store", what, id)
		require.Equal(t, want, got, "%s: %d from the store", what, id)
		rdb.waitSharedIdle()
		dirs = append(dirs, ref)
	}
	// Every database opens with the store and holds its keys; its share
	// loop drops its strays and finishes what the crash interrupted.
	var a *DB
	for _, dir := range []string{"a", "b", "c", "d", "e"} {
		if _, err := fs.Stat(fs.PathJoin(dir, "CURRENT")); err != nil {
			continue
		}
		require.False(t, st.exp.destroying[dir], "%s: %s is still there after Destroy", what, dir)
		db, err := Open(dir, quietOptions(fs, store))
		require.NoError(t, err, "%s: open %s", what, dir)
		dbs = append(dbs, db)
		got, err := readAll(t, db)
		require.NoError(t, err, "%s: read %s", what, dir)
		st.exp.requireDB(t, dir, got, what)
		db.waitSharedIdle()
		if dir == "a" {
			a = db
		}
	}
	// One more upload: the registry drops its strays and what it no
	// longer names.
	u, err := checkpoint.NewUploader(store, &checkpoint.UploadOptions{KeepLast: 2})
	require.NoError(t, err)
	_, err = a.CheckpointToStore(ctx, u)
	require.NoError(t, err, "%s: upload after the crash", what)
	for _, db := range dbs {
		db.waitSharedIdle()
	}
	// An OpenFromStore or OpenRangeFromStore the crash stopped before
	// its directory was in place left its hold, and a record of it
	// beside the directory: Destroy of the directory drops the hold
	// (checkpoint.RecoverReference), as opening into it again would.
	for dir := range opened {
		if _, err := fs.Stat(fs.PathJoin(dir, "CURRENT")); errors.Is(err, os.ErrNotExist) {
			require.NoError(t, Destroy(ctx, dir, quietOptions(fs, store)), "%s: destroy the unfinished %s", what, dir)
		}
	}
	_, err = remote.Sweep(ctx, store)
	require.NoError(t, err, what)
	var final []*remote.Instance
	for _, dir := range dirs {
		in, err := remote.ReadInstance(fs, dir)
		require.NoError(t, err, "%s: %s", what, dir)
		final = append(final, in)
	}
	r, err = checkpoint.Audit(ctx, store, &checkpoint.AuditOptions{Instances: final})
	require.NoError(t, err, what)
	require.True(t, r.OK(), "%s: after recovery\nproblems: %v\nstrays: %v\nunreferenced: %v\nnotes: %v", what, r.Problems, r.Strays, r.Unreferenced, r.Notes)
	// The one note allowed: a Put of the local store the crash stopped
	// left its temporary file, a partial upload that an audit's Fix
	// removes once an hour old. (Before the record of a reference, the
	// hold of b's or c's instance when the crash came right after it,
	// in its OpenFromStore, was one too: nothing dropped it.)
	for _, note := range r.Notes {
		require.True(t, strings.HasPrefix(note.Object, ".tmp/") && strings.Contains(note.What, "partial upload"), "%s: note %s", what, note)
	}
}
