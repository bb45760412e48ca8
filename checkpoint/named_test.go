package checkpoint_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/checkpoint"
	"github.com/strata-db/strata/remote"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// namedDB is a database that checkpoints into its own registry of a
// shared store, and the states its retained checkpoints were taken at.
type namedDB struct {
	name   string
	db     *strata.DB
	store  checkpoint.Store // the registry's view ("" : the store itself)
	u      *checkpoint.Uploader
	states map[uint64]map[string]string
}

// TestNamedRegistries: databases that checkpoint into one store, each into
// its own registry (and one into the default registry), upload side by
// side; each registry keeps its own last KeepLast checkpoints, under ids
// of its own, and each retained checkpoint restores to its state; a
// database opened from one registry's checkpoint keeps reading after that
// registry drops it; the audit of the store, with every registry in it,
// stays clean throughout.
func TestNamedRegistries(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewMem()
	raw := newStore(t, fs, "store")
	const keep = 2
	var dbs []*namedDB
	for _, name := range []string{"op-1", "op-2", ""} {
		s := checkpoint.Store(raw)
		if name != "" {
			var err error
			s, err = checkpoint.Named(raw, name)
			require.NoError(t, err)
		}
		require.Equal(t, name, checkpoint.RegistryName(s))
		db, err := strata.Open("db-"+name, smallOptions(fs))
		require.NoError(t, err)
		t.Cleanup(func() { db.Close() })
		u, err := checkpoint.NewUploader(s, &checkpoint.UploadOptions{KeepLast: keep, SmallFileSize: 16 << 10})
		require.NoError(t, err)
		dbs = append(dbs, &namedDB{name: name, db: db, store: s, u: u, states: map[uint64]map[string]string{}})
	}

	var opened *strata.DB
	var openedState map[string]string
	for round := range 6 {
		// Side by side: a registry of its own each, so no upload races
		// another's commit.
		var wg sync.WaitGroup
		var mu sync.Mutex
		for i, d := range dbs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range 150 {
					k := fmt.Sprintf("key%05d", (j*7+round*31+i*11)%300)
					if err := d.db.Set([]byte(k), []byte(bigValue(j, round*10+i)), strata.NoSync); err != nil {
						t.Error(err)
						return
					}
				}
				st, err := d.db.CheckpointToStore(ctx, d.u)
				if err != nil {
					t.Error(err)
					return
				}
				state := scanAllNoT(d.db)
				mu.Lock()
				d.states[st.ID] = state
				mu.Unlock()
			}()
		}
		wg.Wait()
		require.False(t, t.Failed())

		rep := audit(t, raw, nil)
		require.True(t, rep.OK(), "round %d: %v %v %v", round, findings(rep.Problems), findings(rep.Strays), findings(rep.Unreferenced))
		for _, d := range dbs {
			ids, err := checkpoint.Checkpoints(ctx, d.store)
			require.NoError(t, err)
			// The ids count per registry: every registry's are 1, 2, ...
			want := []uint64{}
			for id := uint64(max(1, round+2-keep)); id <= uint64(round+1); id++ {
				want = append(want, id)
			}
			require.Equal(t, want, ids, "registry %q, round %d", d.name, round)
			if d.name == "" {
				require.Equal(t, ids, rep.Checkpoints)
			} else {
				require.Equal(t, ids, rep.Named[d.name])
			}
			for _, o := range mustObjects(t, d.store) {
				if d.name != "" {
					require.True(t, strings.HasPrefix(o, "data/"+d.name+"/"), "registry %s holds %s", d.name, o)
				} else {
					require.Equal(t, 1, strings.Count(o, "/"), "the default registry holds %s", o)
				}
			}
			// Each retained checkpoint restores to its own state: the
			// same id in another registry is another checkpoint.
			for _, id := range ids {
				dst := fmt.Sprintf("restored-%s-%d-%d", d.name, round, id)
				require.NoError(t, checkpoint.Restore(ctx, d.store, id, fs, dst, nil))
				require.Equal(t, d.states[id], dbState(t, fs, dst), "registry %q checkpoint %d", d.name, id)
			}
		}
		if round == 1 {
			// A database opened from op-1's newest checkpoint, which
			// op-1 drops two rounds later.
			d := dbs[0]
			ids, err := checkpoint.Checkpoints(ctx, d.store)
			require.NoError(t, err)
			id := ids[len(ids)-1]
			// The store itself as the shared store: the view is of it.
			require.True(t, checkpoint.SameStore(raw, d.store))
			elsewhere := newStore(t, fs, "elsewhere")
			require.False(t, checkpoint.SameStore(elsewhere, d.store))
			_, err = strata.OpenFromStore(ctx, d.store, id, "refused", &strata.Options{FS: fs, SharedStore: elsewhere})
			require.ErrorContains(t, err, "another store")
			opened, err = strata.OpenFromStore(ctx, d.store, id, "opened", &strata.Options{FS: fs, SharedCacheSize: 1, SharedStore: raw})
			require.NoError(t, err)
			t.Cleanup(func() { opened.Close() })
			openedState = d.states[id]
			require.Equal(t, openedState, scanAll(t, opened))
		}
	}
	// op-1 retains checkpoints 5 and 6 only; the database opened from its
	// checkpoint 2 still reads every value from the store.
	require.Equal(t, openedState, scanAll(t, opened))

	// A registry retains nothing under an id it never had, even where
	// another registry of the store has it.
	other, err := checkpoint.Named(raw, "op-9")
	require.NoError(t, err)
	_, err = checkpoint.ReadManifest(ctx, other, 6)
	require.ErrorIs(t, err, checkpoint.ErrNotExist)

	// A SlowStore over a view means the view's registry.
	slow, err := checkpoint.NewSlowStore(dbs[1].store, checkpoint.SlowOptions{})
	require.NoError(t, err)
	require.Equal(t, "op-2", checkpoint.RegistryName(slow))
	ids, err := checkpoint.Checkpoints(ctx, slow)
	require.NoError(t, err)
	require.Equal(t, []uint64{5, 6}, ids)

	for _, bad := range []string{"", "a/b", ".x", "-x", strings.Repeat("x", 65), "a b"} {
		_, err := checkpoint.Named(raw, bad)
		require.Error(t, err, "%q", bad)
	}
}

// TestAuditNamedRegistry: the audit reports a named registry's marker on
// a missing object as stray even before the registry exists, an object
// under its data prefix that nothing holds as unreferenced, and one it
// uses without its marker as a problem (a named registry has no objects
// from before markers).
func TestAuditNamedRegistry(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewMem()
	raw := newStore(t, fs, "store")
	holder := remote.NamedRegistryHolder("new")
	require.NoError(t, remote.AddRef(ctx, raw, "data/new/00000000000000000001-0000-00000000", holder))
	put(t, raw, "data/new/00000000000000000001-0001-00000000", "left by a crash")
	rep := audit(t, raw, nil)
	requireFinding(t, rep.Strays, "data/new/00000000000000000001-0000-00000000", holder, "on a missing object")
	requireFinding(t, rep.Unreferenced, "data/new/00000000000000000001-0001-00000000", "", "no marker holds")

	// The next upload into the registry sweeps both.
	s, err := checkpoint.Named(raw, "new")
	require.NoError(t, err)
	db, err := strata.Open("db", smallOptions(fs))
	require.NoError(t, err)
	defer db.Close()
	u, err := checkpoint.NewUploader(s, nil)
	require.NoError(t, err)
	require.NoError(t, db.Set([]byte("k"), []byte(bigValue(1, 1)), strata.NoSync))
	_, err = db.CheckpointToStore(ctx, u)
	require.NoError(t, err)
	rep = audit(t, raw, nil)
	require.True(t, rep.OK(), "%v %v %v", findings(rep.Problems), findings(rep.Strays), findings(rep.Unreferenced))
	require.Equal(t, []uint64{1}, rep.Named["new"])
	require.Empty(t, rep.Checkpoints)

	// The registry's marker gone from an object it uses: a problem, which
	// Fix repairs.
	objs := mustObjects(t, s)
	require.NotEmpty(t, objs)
	require.NoError(t, raw.Delete(ctx, remote.MarkerName(objs[0], holder)))
	rep = audit(t, raw, nil)
	requireFinding(t, rep.Problems, objs[0], "", "no marker of registry new, which uses it")
	rep, err = checkpoint.Audit(ctx, raw, &checkpoint.AuditOptions{Fix: true})
	require.NoError(t, err)
	require.Len(t, rep.Fixed, 1)
	rep = audit(t, raw, nil)
	require.True(t, rep.OK(), "%v %v %v", findings(rep.Problems), findings(rep.Strays), findings(rep.Unreferenced))
}

// mustObjects returns the names of the data objects s's registry holds.
func mustObjects(t *testing.T, s checkpoint.Store) []string {
	t.Helper()
	objs, err := checkpoint.Objects(context.Background(), s)
	require.NoError(t, err)
	names := make([]string, len(objs))
	for i, o := range objs {
		names[i] = o.Name
	}
	return names
}

// scanAllNoT is scanAll for a goroutine other than the test's.
func scanAllNoT(db *strata.DB) map[string]string {
	it, err := db.NewIter(nil)
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for ok := it.First(); ok; ok = it.Next() {
		out[string(it.Key())] = string(it.Value())
	}
	if it.Close() != nil {
		return nil
	}
	return out
}

// TestRetire: Retire drops all but the newest checkpoints of one registry
// without taking one, and deletes the objects only they used; an instance
// opened from a dropped checkpoint keeps reading it; another registry of
// the store is untouched; with keep 0 only what the instance holds stays
// of the registry's objects, and the audit stays clean; ids are not
// reused afterwards.
func TestRetire(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewMem()
	raw := newStore(t, fs, "store")
	var views []checkpoint.Store
	var dbs []*strata.DB
	var ups []*checkpoint.Uploader
	states := map[uint64]map[string]string{}
	for _, name := range []string{"old", "other"} {
		v, err := checkpoint.Named(raw, name)
		require.NoError(t, err)
		db, err := strata.Open("db-"+name, smallOptions(fs))
		require.NoError(t, err)
		t.Cleanup(func() { db.Close() })
		u, err := checkpoint.NewUploader(v, &checkpoint.UploadOptions{KeepLast: 3, SmallFileSize: 16 << 10})
		require.NoError(t, err)
		views, dbs, ups = append(views, v), append(dbs, db), append(ups, u)
	}
	for round := range 3 {
		overwriteRound(t, dbs[0], ups[0], round, states)
		overwriteRound(t, dbs[1], ups[1], round, map[uint64]map[string]string{})
	}
	ids, err := checkpoint.Checkpoints(ctx, views[0])
	require.NoError(t, err)
	require.Equal(t, []uint64{1, 2, 3}, ids)
	// An instance reads checkpoint 1 from the store.
	opened, err := strata.OpenFromStore(ctx, views[0], 1, "opened", &strata.Options{FS: fs, SharedCacheSize: 1, SharedStore: raw})
	require.NoError(t, err)
	defer opened.Close()

	st, err := ups[0].Retire(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, uint64(4), st.ID)
	require.Equal(t, 1, st.Retained)
	ids, err = checkpoint.Checkpoints(ctx, views[0])
	require.NoError(t, err)
	require.Equal(t, []uint64{3}, ids)
	require.Equal(t, states[1], scanAll(t, opened), "the instance lost what it read")
	requireRestores := func(v checkpoint.Store, id uint64, want map[string]string) {
		t.Helper()
		dst := fmt.Sprintf("restore-%s-%d", checkpoint.RegistryName(v), id)
		require.NoError(t, checkpoint.Restore(ctx, v, id, fs, dst, nil))
		r, err := strata.Open(dst, &strata.Options{FS: fs, ErrorIfNotExists: true})
		require.NoError(t, err)
		if want != nil {
			require.Equal(t, want, scanAll(t, r))
		}
		require.NoError(t, r.Close())
	}
	requireRestores(views[0], 3, states[3])
	audit := func() {
		t.Helper()
		in, err := remote.ReadInstance(fs, "opened")
		require.NoError(t, err)
		rep, err := checkpoint.Audit(ctx, raw, &checkpoint.AuditOptions{Instances: []*remote.Instance{in}})
		require.NoError(t, err)
		require.Empty(t, rep.Problems, "%v", findings(rep.Problems))
		require.Empty(t, rep.Unreferenced, "%v", rep.Unreferenced)
		// The registry dropped its markers on what it dropped.
		for _, f := range rep.Strays {
			require.NotEqual(t, remote.NamedRegistryHolder("old"), f.Holder, "stray: %v", f)
		}
	}
	audit()

	// Keep 0: nothing of the registry's own stays.
	_, err = ups[0].Retire(ctx, 0)
	require.NoError(t, err)
	ids, err = checkpoint.Checkpoints(ctx, views[0])
	require.NoError(t, err)
	require.Empty(t, ids)
	// What stays of the registry's objects is what the instance holds
	// (by its hold or its markers): the audit finds nothing unreferenced.
	require.Equal(t, states[1], scanAll(t, opened))
	audit()
	// The other registry is as it was.
	ids, err = checkpoint.Checkpoints(ctx, views[1])
	require.NoError(t, err)
	require.Equal(t, []uint64{1, 2, 3}, ids)
	for _, id := range ids {
		requireRestores(views[1], id, nil)
	}
	// The next checkpoint takes a new id.
	st = overwriteRound(t, dbs[0], ups[0], 3, states)
	require.Equal(t, uint64(6), st.ID)
}
