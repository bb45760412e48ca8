package checkpoint_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/checkpoint"
	"github.com/strata-db/strata/gc"
	"github.com/strata-db/strata/remote"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// smallOptions make a database of many small tables and value logs, with
// garbage collection kept busy, so that checkpoints see files come and go.
func smallOptions(fs vfs.FS) *strata.Options {
	return &strata.Options{
		FS:               fs,
		MemTableSize:     64 << 10,
		ValueLogFileSize: 64 << 10,
		TargetFileSize:   32 << 10,
		LBaseMaxBytes:    128 << 10,
		GCPolicy:         gc.ReverseLookup(0.5),
	}
}

func newStore(t *testing.T, fs vfs.FS, dir string) *checkpoint.LocalStore {
	t.Helper()
	s, err := checkpoint.NewLocalStoreFS(fs, dir)
	require.NoError(t, err)
	return s
}

// openWithUploader opens the database root/db with smallOptions, closed
// when the test ends, and an Uploader with options uo into a new store
// root/store.
func openWithUploader(t *testing.T, fs vfs.FS, root string, uo *checkpoint.UploadOptions) (*strata.DB, *checkpoint.LocalStore, *checkpoint.Uploader) {
	t.Helper()
	db, err := strata.Open(fs.PathJoin(root, "db"), smallOptions(fs))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	store := newStore(t, fs, fs.PathJoin(root, "store"))
	u, err := checkpoint.NewUploader(store, uo)
	require.NoError(t, err)
	return db, store, u
}

// dbState reads every key and value of the database in dir.
func dbState(t *testing.T, fs vfs.FS, dir string) map[string]string {
	t.Helper()
	db, err := strata.Open(dir, &strata.Options{FS: fs, ErrorIfNotExists: true})
	require.NoError(t, err, "open %s", dir)
	defer func() { require.NoError(t, db.Close()) }()
	return scanAll(t, db)
}

func scanAll(t *testing.T, db *strata.DB) map[string]string {
	t.Helper()
	it, err := db.NewIter(nil)
	require.NoError(t, err)
	out := map[string]string{}
	for ok := it.First(); ok; ok = it.Next() {
		out[string(it.Key())] = string(it.Value())
	}
	require.NoError(t, it.Error())
	require.NoError(t, it.Close())
	return out
}

// storeContents maps every object of s to its bytes.
func storeContents(t *testing.T, s checkpoint.Store) map[string]string {
	t.Helper()
	ctx := context.Background()
	list, err := s.List(ctx, "")
	require.NoError(t, err)
	out := map[string]string{}
	for _, o := range list {
		rc, err := s.Get(ctx, o.Name, 0, -1)
		require.NoError(t, err)
		b, err := io.ReadAll(rc)
		require.NoError(t, err)
		rc.Close()
		out[o.Name] = string(b)
	}
	return out
}

func bigValue(i, gen int) string {
	return strings.Repeat(fmt.Sprintf("%06d.%04d|", i, gen), 150) // 1800 bytes: separated
}

// TestUploadIncremental: a checkpoint uploads only what the store lacks,
// each retained checkpoint restores to the state it was taken at, and
// retention deletes what only dropped checkpoints used.
func TestUploadIncremental(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, root string) {
		ctx := context.Background()
		db, store, u := openWithUploader(t, fs, root, &checkpoint.UploadOptions{KeepLast: 3, SmallFileSize: 16 << 10})

		model := map[string]string{}
		states := map[uint64]map[string]string{}
		var prevID uint64
		prevFiles := map[[2]any]bool{}
		rng := rand.New(rand.NewPCG(1, 2))
		for round := range 8 {
			for range 150 {
				i := rng.IntN(300)
				k := fmt.Sprintf("key%05d", i)
				if rng.IntN(10) == 0 {
					require.NoError(t, db.Delete([]byte(k), strata.NoSync))
					delete(model, k)
					continue
				}
				v := bigValue(i, round)
				if rng.IntN(3) == 0 {
					v = v[:20] // small: stays in the tree
				}
				require.NoError(t, db.Set([]byte(k), []byte(v), strata.NoSync))
				model[k] = v
			}
			st, err := db.CheckpointToStore(ctx, u)
			require.NoError(t, err)
			t.Log(st)
			require.Equal(t, prevID+1, st.ID)
			prevID = st.ID
			// It uploaded exactly the files the previous one lacked.
			m, err := checkpoint.ReadManifest(ctx, store, st.ID)
			require.NoError(t, err)
			var fresh int64
			for _, f := range m.Files {
				if !prevFiles[[2]any{f.Name, f.Checksum}] {
					fresh += f.Size
				}
			}
			require.Equal(t, fresh, st.NewBytes, "checkpoint %d", st.ID)
			prevFiles = map[[2]any]bool{}
			for _, f := range m.Files {
				prevFiles[[2]any{f.Name, f.Checksum}] = true
			}
			states[st.ID] = maps.Clone(model)
		}
		ids, err := checkpoint.Checkpoints(ctx, store)
		require.NoError(t, err)
		require.Len(t, ids, 3)
		for _, id := range ids {
			dst := fs.PathJoin(root, fmt.Sprintf("restore-%d", id))
			require.NoError(t, checkpoint.Restore(ctx, store, id, fs, dst, nil))
			require.Equal(t, states[id], dbState(t, fs, dst), "checkpoint %d", id)
		}
		// Only what the retained checkpoints need is stored.
		requireStoreTidy(t, store)

		// A database that does not change uploads no data.
		quiet := openLoaded(t, fs, fs.PathJoin(root, "quiet"))
		defer quiet.Close()
		u2, err := checkpoint.NewUploader(newStore(t, fs, fs.PathJoin(root, "store2")), nil)
		require.NoError(t, err)
		st1, err := quiet.CheckpointToStore(ctx, u2)
		require.NoError(t, err)
		require.Equal(t, st1.Bytes, st1.NewBytes)
		st2, err := quiet.CheckpointToStore(ctx, u2)
		require.NoError(t, err)
		require.Zero(t, st2.NewBytes, "a checkpoint of an unchanged database uploaded data: %v", st2)
		require.Equal(t, 1, st2.UploadedFiles, "only the registry: %v", st2)
		// A dropped checkpoint is gone.
		err = checkpoint.Restore(ctx, store, ids[0]-1, fs, fs.PathJoin(root, "gone"), nil)
		require.ErrorIs(t, err, checkpoint.ErrNotExist)
	})
}

// requireStoreTidy checks that the store holds the registry (with the
// retained checkpoints' manifests) and exactly the data objects they name.
func requireStoreTidy(t *testing.T, s checkpoint.Store) {
	t.Helper()
	ctx := context.Background()
	ids, err := checkpoint.Checkpoints(ctx, s)
	require.NoError(t, err)
	want := map[string]bool{"registry": true}
	for _, id := range ids {
		m, err := checkpoint.ReadManifest(ctx, s, id)
		require.NoError(t, err)
		for _, f := range m.Files {
			want[f.Object] = true
		}
	}
	list, err := s.List(ctx, "")
	require.NoError(t, err)
	var got []string
	for _, o := range list {
		if !strings.HasPrefix(o.Name, "refs/") {
			got = append(got, o.Name)
		}
	}
	require.ElementsMatch(t, sortedKeys(want), got)
	// Reference markers: the registry's, on objects it names (objects
	// written before markers existed have none).
	marked, err := remote.Marked(ctx, s)
	require.NoError(t, err)
	for object, holders := range marked {
		require.True(t, want[object], "a marker holds %s, which no checkpoint uses", object)
		require.Equal(t, []string{remote.RegistryHolder}, holders, "holders of %s", object)
	}
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestCheckpointUnderWrites is the model check: checkpoints taken while a
// writer commits restore to exactly the state after some prefix of its
// writes, one that holds every write acknowledged before the checkpoint
// began and none that began after it returned (the single writer has at
// most one write in flight then, acknowledged later).
func TestCheckpointUnderWrites(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, root string) {
		ctx := context.Background()
		db, store, u := openWithUploader(t, fs, root, &checkpoint.UploadOptions{KeepLast: 100, SmallFileSize: 16 << 10})

		type op struct {
			key, value string // value "" deletes
		}
		var (
			mu    sync.Mutex
			ops   []op // acknowledged, in order
			stop  atomic.Bool
			wg    sync.WaitGroup
			wrErr error
		)
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(3, 4))
			for n := 0; !stop.Load(); n++ {
				i := rng.IntN(200)
				o := op{key: fmt.Sprintf("key%05d", i), value: fmt.Sprintf("%s#%d", bigValue(i, 0)[:rng.IntN(2)*1500+10], n)}
				var err error
				if rng.IntN(8) == 0 {
					o.value = ""
					err = db.Delete([]byte(o.key), strata.NoSync)
				} else {
					err = db.Set([]byte(o.key), []byte(o.value), strata.NoSync)
				}
				if err != nil {
					wrErr = err
					return
				}
				mu.Lock()
				ops = append(ops, o)
				mu.Unlock()
			}
		}()
		type taken struct {
			id            uint64
			before, after int
		}
		var cks []taken
		for range 6 {
			for { // let some writes happen
				mu.Lock()
				n := len(ops)
				mu.Unlock()
				if n > (len(cks)+1)*400 {
					break
				}
			}
			mu.Lock()
			before := len(ops)
			mu.Unlock()
			st, err := db.CheckpointToStore(ctx, u)
			require.NoError(t, err)
			mu.Lock()
			after := len(ops)
			mu.Unlock()
			cks = append(cks, taken{st.ID, before, after})
		}
		stop.Store(true)
		wg.Wait()
		require.NoError(t, wrErr)

		for _, c := range cks {
			dst := fs.PathJoin(root, fmt.Sprintf("restore-%d", c.id))
			require.NoError(t, checkpoint.Restore(ctx, store, c.id, fs, dst, &checkpoint.RestoreOptions{Parallelism: 3}))
			got := dbState(t, fs, dst)
			model := map[string]string{}
			apply := func(o op) {
				if o.value == "" {
					delete(model, o.key)
				} else {
					model[o.key] = o.value
				}
			}
			for _, o := range ops[:c.before] {
				apply(o)
			}
			found := maps.Equal(model, got)
			// The writer's one write in flight when the checkpoint
			// returned (acknowledged later) may be in it too.
			for j := c.before; !found && j < min(c.after+1, len(ops)); j++ {
				apply(ops[j])
				found = maps.Equal(model, got)
			}
			require.True(t, found, "checkpoint %d is no prefix of the writes in [%d, %d]", c.id, c.before, c.after)
		}
	})
}

// TestRestoreRange restores key ranges: each holds exactly the keys of
// its range, and fetches fewer files than the whole checkpoint.
func TestRestoreRange(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, root string) {
		ctx := context.Background()
		opts := smallOptions(fs)
		opts.ValueThreshold = 64
		opts.TargetFileSize = 4 << 10
		db, err := strata.Open(fs.PathJoin(root, "db"), opts)
		require.NoError(t, err)
		defer db.Close()
		model := map[string]string{}
		for i := range 3000 {
			k, v := fmt.Sprintf("key%05d", i), bigValue(i, 1)[:100+i%200]
			require.NoError(t, db.Set([]byte(k), []byte(v), strata.NoSync))
			model[k] = v
		}
		require.NoError(t, db.Compact(nil, nil))
		store := newStore(t, fs, fs.PathJoin(root, "store"))
		u, err := checkpoint.NewUploader(store, nil)
		require.NoError(t, err)
		st, err := db.CheckpointToStore(ctx, u)
		require.NoError(t, err)
		full := fs.PathJoin(root, "full")
		require.NoError(t, checkpoint.Restore(ctx, store, st.ID, fs, full, nil))
		fullNames, _ := fs.List(full)

		for _, r := range []struct{ start, end string }{
			{"key00100", "key00200"}, {"", "key00050"}, {"key02550", ""}, {"key00300", "key00300"}, {"key00123", "key00124"}, {"a", "b"},
		} {
			var start, end []byte
			if r.start != "" {
				start = []byte(r.start)
			}
			if r.end != "" {
				end = []byte(r.end)
			}
			dst := fs.PathJoin(root, "range-"+r.start+"-"+r.end)
			ro := *opts
			require.NoError(t, strata.RestoreRangeFromStore(ctx, store, st.ID, start, end, dst, &ro))
			want := map[string]string{}
			for k, v := range model {
				if (start == nil || k >= string(start)) && (end == nil || k < string(end)) {
					want[k] = v
				}
			}
			require.Equal(t, want, dbState(t, fs, dst), "range [%q, %q)", r.start, r.end)
			names, _ := fs.List(dst)
			if r.start == "key00123" {
				require.Less(t, countData(names), countData(fullNames)/2, "a narrow range fetched most files: %v", names)
			}
		}
		// A range restore refuses a non-empty destination too (here
		// through the deprecated argument order, which forwards).
		require.Error(t, strata.RestoreRange(ctx, store, st.ID, full, nil, nil, opts))
	})
}

func countData(names []string) int {
	n := 0
	for _, name := range names {
		if strings.HasSuffix(name, ".sst") || strings.HasSuffix(name, ".vlog") {
			n++
		}
	}
	return n
}

// TestRestoreRefuses: a non-empty destination, a damaged object and a
// damaged manifest fail the restore and leave the destination as it was.
func TestRestoreRefuses(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, root string) {
		ctx := context.Background()
		db := openLoaded(t, fs, fs.PathJoin(root, "db"))
		defer db.Close()
		store := newStore(t, fs, fs.PathJoin(root, "store"))
		u, err := checkpoint.NewUploader(store, nil)
		require.NoError(t, err)
		st, err := db.CheckpointToStore(ctx, u)
		require.NoError(t, err)

		busy := fs.PathJoin(root, "busy")
		require.NoError(t, fs.MkdirAll(busy, 0o755))
		writeFile(t, fs, fs.PathJoin(busy, "x"), "keep")
		err = checkpoint.Restore(ctx, store, st.ID, fs, busy, nil)
		require.ErrorContains(t, err, "not empty")
		names, _ := fs.List(busy)
		require.Equal(t, []string{"x"}, names)

		// Flip a byte of a data object: the restore fails with
		// ErrCorruption and leaves nothing.
		m, err := checkpoint.ReadManifest(ctx, store, st.ID)
		require.NoError(t, err)
		obj := m.Files[0].Object
		contents := storeContents(t, store)
		b := []byte(contents[obj])
		b[len(b)/2] ^= 1
		require.NoError(t, store.Put(ctx, obj, bytes.NewReader(b), int64(len(b))))
		dst := fs.PathJoin(root, "damaged")
		err = checkpoint.Restore(ctx, store, st.ID, fs, dst, nil)
		require.ErrorIs(t, err, strata.ErrCorruption)
		_, serr := fs.Stat(dst)
		require.Error(t, serr, "a failed restore left its destination")
		requireNoTemp(t, fs, root)

		// A damaged registry (which holds the manifests) is ErrCorruption
		// too: flipped, or truncated.
		rb := []byte(contents["registry"])
		rb[10] ^= 1
		require.NoError(t, store.Put(ctx, "registry", bytes.NewReader(rb), int64(len(rb))))
		_, err = checkpoint.ReadManifest(ctx, store, st.ID)
		require.ErrorIs(t, err, strata.ErrCorruption)
		rb = []byte(contents["registry"])
		rb = rb[:len(rb)-3]
		require.NoError(t, store.Put(ctx, "registry", bytes.NewReader(rb), int64(len(rb))))
		_, err = db.CheckpointToStore(ctx, u)
		require.ErrorIs(t, err, strata.ErrCorruption)
	})
}

// faultyStore fails its i-th operation (counting from 0; Put, Get, List
// and Delete alike).
type faultyStore struct {
	checkpoint.Store
	fail     int64
	n        atomic.Int64
	injected atomic.Int64
}

var errStoreFault = errors.New("injected store fault")

func (s *faultyStore) maybe(op, name string) error {
	if i := s.n.Add(1) - 1; i == s.fail {
		s.injected.Add(1)
		return fmt.Errorf("%w: %s %s (operation %d)", errStoreFault, op, name, i)
	}
	return nil
}

func (s *faultyStore) Put(ctx context.Context, name string, r io.Reader, size int64) error {
	if err := s.maybe("put", name); err != nil {
		return err
	}
	return s.Store.Put(ctx, name, r, size)
}

func (s *faultyStore) Get(ctx context.Context, name string, off, n int64) (io.ReadCloser, error) {
	if err := s.maybe("get", name); err != nil {
		return nil, err
	}
	return s.Store.Get(ctx, name, off, n)
}

func (s *faultyStore) List(ctx context.Context, prefix string) ([]checkpoint.ObjectInfo, error) {
	if err := s.maybe("list", prefix); err != nil {
		return nil, err
	}
	return s.Store.List(ctx, prefix)
}

func (s *faultyStore) Delete(ctx context.Context, name string) error {
	if err := s.maybe("delete", name); err != nil {
		return err
	}
	return s.Store.Delete(ctx, name)
}

// TestUploadFaults fails each store operation of a checkpoint in turn, and
// then each filesystem operation under the local store: a failed
// checkpoint leaves the store exactly as it was (and the database
// working); one that fails only in its clean-up after the commit is a
// checkpoint, whose leftovers the next one deletes.
func TestUploadFaults(t *testing.T) {
	for _, oc := range uploadFaultOptions {
		t.Run(oc.name, func(t *testing.T) { testUploadFaults(t, oc.opts) })
	}
}

// uploadFaultOptions are the upload options the fault tests run with:
// small files packed into segments; and segments emptied by every upload
// (a live share of 99% required), their pieces moved, those only older
// checkpoints use copied from the store.
var uploadFaultOptions = []struct {
	name string
	opts checkpoint.UploadOptions
}{
	{"pack", checkpoint.UploadOptions{KeepLast: 2, SmallFileSize: 16 << 10}},
	{"move", checkpoint.UploadOptions{KeepLast: 2, SmallFileSize: 1 << 30, SegmentSize: 64 << 10, MinLiveRatio: 0.99, MergeSmallSegments: -1}},
}

func testUploadFaults(t *testing.T, opts checkpoint.UploadOptions) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, root string) {
		ctx := context.Background()
		db, err := strata.Open(fs.PathJoin(root, "db"), smallOptions(fs))
		require.NoError(t, err)
		defer db.Close()
		write := func(gen int) {
			for i := range 120 {
				require.NoError(t, db.Set([]byte(fmt.Sprintf("key%05d", (i*7+gen*13)%200)), []byte(bigValue(i, gen)), strata.NoSync))
			}
		}
		for _, layer := range []string{"store", "fs"} {
			// A store with a few checkpoints, and writes since: the upload
			// under test has files to upload, objects to drop, a registry
			// to replace. A failed upload leaves it as it was, so the next
			// fault index reuses it; one that committed needs a new one.
			var (
				dir        string
				plain      *checkpoint.LocalStore
				before     map[string]string
				want       map[string]string
				states     map[uint64]map[string]string // of the checkpoints before the one under test
				u          *checkpoint.Uploader
				generation int
			)
			setup := func() {
				generation++
				dir = fs.PathJoin(root, fmt.Sprintf("store-%s-%d", layer, generation))
				plain = newStore(t, fs, dir)
				var err error
				o := opts
				u, err = checkpoint.NewUploader(plain, &o)
				require.NoError(t, err)
				states = map[uint64]map[string]string{}
				for gen := range 3 {
					write(gen + generation*3)
					st, err := db.CheckpointToStore(ctx, u)
					require.NoError(t, err)
					states[st.ID] = scanAll(t, db)
				}
				write(100 + generation)
				before = storeContents(t, plain)
				want = scanAll(t, db)
			}
			setup()
			for i := int64(0); ; i++ {
				var s checkpoint.Store = plain
				var injected func() int64
				if layer == "store" {
					fsStore := &faultyStore{Store: plain, fail: i}
					s, injected = fsStore, fsStore.injected.Load
				} else {
					inj := vfs.OnIndex(i)
					efs2 := vfs.NewErrorFS(fs, inj)
					efs2.SetEnabled(false)
					ls := newStore(t, efs2, dir)
					efs2.SetEnabled(true)
					s, injected = ls, inj.Injected
				}
				o := opts
				u2, err := checkpoint.NewUploader(s, &o)
				require.NoError(t, err)
				st, err := db.CheckpointToStore(ctx, u2)
				if injected() == 0 {
					require.NoError(t, err)
					require.Greater(t, i, int64(5))
					break
				}
				// The database is untouched either way.
				require.Equal(t, want, scanAll(t, db), "%s fault %d", layer, i)
				if err != nil {
					require.Equal(t, before, storeContents(t, plain), "%s fault %d: %v", layer, i, err)
					continue
				}
				// The fault hit the clean-up after the commit (or a harmless
				// read): the new checkpoint restores, and the next
				// checkpoint tidies the store.
				dst := fs.PathJoin(root, fmt.Sprintf("restore-%s-%d", layer, i))
				require.NoError(t, checkpoint.Restore(ctx, plain, st.ID, fs, dst, nil))
				require.Equal(t, want, dbState(t, fs, dst))
				// So does every older checkpoint retained, whose pieces the
				// upload may have moved.
				states[st.ID] = want
				ids, err := checkpoint.Checkpoints(ctx, plain)
				require.NoError(t, err)
				for _, id := range ids {
					dst := fs.PathJoin(root, fmt.Sprintf("restore-%s-%d-%d", layer, i, id))
					require.NoError(t, checkpoint.Restore(ctx, plain, id, fs, dst, nil), "checkpoint %d", id)
					require.Equal(t, states[id], dbState(t, fs, dst), "checkpoint %d", id)
				}
				_, err = db.CheckpointToStore(ctx, u)
				require.NoError(t, err)
				requireStoreTidy(t, plain)
				setup()
			}
		}
	})
}

// TestRestoreFaults fails each store operation of a restore in turn: the
// restore fails and leaves no destination and no temporary directory.
func TestRestoreFaults(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, root string) {
		ctx := context.Background()
		db := openLoaded(t, fs, fs.PathJoin(root, "db"))
		defer db.Close()
		plain := newStore(t, fs, fs.PathJoin(root, "store"))
		u, err := checkpoint.NewUploader(plain, &checkpoint.UploadOptions{SmallFileSize: 1})
		require.NoError(t, err)
		st, err := db.CheckpointToStore(ctx, u)
		require.NoError(t, err)
		for i := int64(0); ; i++ {
			s := &faultyStore{Store: plain, fail: i}
			dst := fs.PathJoin(root, fmt.Sprintf("restore-%d", i))
			err := checkpoint.Restore(ctx, s, st.ID, fs, dst, &checkpoint.RestoreOptions{Parallelism: 2})
			if s.injected.Load() == 0 {
				require.NoError(t, err)
				requireCheckpoint(t, fs, dst)
				return
			}
			require.ErrorIs(t, err, errStoreFault)
			_, serr := fs.Stat(dst)
			require.Error(t, serr)
			requireNoTemp(t, fs, root)
		}
	})
}

// blockingStore holds its first Put of a data object until release is
// closed, telling entered when it gets there.
type blockingStore struct {
	checkpoint.Store
	once             sync.Once
	entered, release chan struct{}
}

func (s *blockingStore) Put(ctx context.Context, name string, r io.Reader, size int64) error {
	if strings.HasPrefix(name, "data/") {
		s.once.Do(func() {
			close(s.entered)
			<-s.release
		})
	}
	return s.Store.Put(ctx, name, r, size)
}

// TestUploadPinsFiles holds an upload while every key is overwritten, the
// tree compacted and value-log GC runs: the files of the version being
// uploaded must stay readable, and the checkpoint restores to the state
// before the overwrites.
func TestUploadPinsFiles(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, root string) {
		ctx := context.Background()
		db, err := strata.Open(fs.PathJoin(root, "db"), smallOptions(fs))
		require.NoError(t, err)
		defer db.Close()
		for i := range 300 {
			require.NoError(t, db.Set([]byte(fmt.Sprintf("key%05d", i)), []byte(bigValue(i, 0)), strata.NoSync))
		}
		want := scanAll(t, db)
		bs := &blockingStore{Store: newStore(t, fs, fs.PathJoin(root, "store")), entered: make(chan struct{}), release: make(chan struct{})}
		u, err := checkpoint.NewUploader(bs, &checkpoint.UploadOptions{Parallelism: 1})
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
		<-bs.entered
		before := db.Metrics().String()
		for round := 1; round <= 3; round++ {
			for i := range 300 {
				require.NoError(t, db.Set([]byte(fmt.Sprintf("key%05d", i)), []byte(bigValue(i, round)), strata.NoSync))
			}
			require.NoError(t, db.Compact(nil, nil))
		}
		require.NotEqual(t, before, db.Metrics().String())
		close(bs.release)
		res := <-done
		require.NoError(t, res.err)
		dst := fs.PathJoin(root, "restored")
		require.NoError(t, checkpoint.Restore(ctx, bs.Store, res.st.ID, fs, dst, nil))
		require.Equal(t, want, dbState(t, fs, dst))
	})
}

// readFaults fails the i-th open or read of a table or value log while
// armed.
type readFaults struct {
	armed    atomic.Bool
	fail     atomic.Int64
	n        atomic.Int64
	injected atomic.Int64
}

func (r *readFaults) MaybeError(op vfs.Op) error {
	if !r.armed.Load() || (op.Kind != vfs.OpOpen && op.Kind != vfs.OpRead) ||
		!(strings.HasSuffix(op.Path, ".sst") || strings.HasSuffix(op.Path, ".vlog")) {
		return nil
	}
	if i := r.n.Add(1) - 1; i == r.fail.Load() {
		r.injected.Add(1)
		return fmt.Errorf("%w: %s (read %d)", vfs.ErrInjected, op, i)
	}
	return nil
}

// TestUploadDBReadFaults fails each open and read of the database's files
// that an upload makes, in turn: the upload fails, the store holds what it
// held, and the database reads and writes as before.
func TestUploadDBReadFaults(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, root string) {
		ctx := context.Background()
		inj := &readFaults{}
		inj.fail.Store(-1)
		opts := smallOptions(fs)
		opts.FS = vfs.NewErrorFS(fs, inj)
		opts.DisableAutomaticCompactions, opts.DisableGC = true, true
		db, err := strata.Open(fs.PathJoin(root, "db"), opts)
		require.NoError(t, err)
		defer db.Close()
		store := newStore(t, fs, fs.PathJoin(root, "store"))
		u, err := checkpoint.NewUploader(store, &checkpoint.UploadOptions{KeepLast: 2, SmallFileSize: 16 << 10})
		require.NoError(t, err)
		for gen := range 2 {
			for i := range 150 {
				require.NoError(t, db.Set([]byte(fmt.Sprintf("key%05d", (i*7+gen)%200)), []byte(bigValue(i, gen)), strata.NoSync))
			}
			_, err := db.CheckpointToStore(ctx, u)
			require.NoError(t, err)
		}
		for i := range 100 {
			require.NoError(t, db.Set([]byte(fmt.Sprintf("key%05d", i)), []byte(bigValue(i, 9)), strata.NoSync))
		}
		require.NoError(t, db.Flush())
		before := storeContents(t, store)
		want := scanAll(t, db)
		for i := int64(0); ; i++ {
			inj.fail.Store(i)
			inj.n.Store(0)
			inj.injected.Store(0)
			// A new Uploader each time: one that has checksummed a file
			// would not read it again.
			u, err := checkpoint.NewUploader(store, &checkpoint.UploadOptions{KeepLast: 2, SmallFileSize: 16 << 10})
			require.NoError(t, err)
			inj.armed.Store(true)
			st, err := db.CheckpointToStore(ctx, u)
			inj.armed.Store(false)
			if inj.injected.Load() == 0 {
				require.NoError(t, err)
				require.Greater(t, i, int64(3))
				require.Positive(t, st.NewBytes)
				break
			}
			require.ErrorIs(t, err, vfs.ErrInjected, "read %d", i)
			require.Equal(t, before, storeContents(t, store), "read %d: %v", i, err)
			require.Equal(t, want, scanAll(t, db), "read %d", i)
		}
		// The database still takes writes.
		require.NoError(t, db.Set([]byte("after"), []byte("faults"), strata.Sync))
	})
}
