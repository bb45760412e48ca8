package strata

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/strata-db/strata/checkpoint"
	"github.com/strata-db/strata/remote"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// breakingStore is a store that breaks, as a process that crashes would
// stop making requests: once broken, every request fails. It breaks
// when told (breakAfter: after n more requests) or right after a Put
// whose name has the prefix armed (armPut).
type breakingStore struct {
	checkpoint.Store
	mu     sync.Mutex
	left   int // requests before it breaks; < 0: not counting
	prefix string
	broken bool
}

var errBroken = errors.New("injected: the store is out of reach")

func newBreakingStore(s checkpoint.Store) *breakingStore { return &breakingStore{Store: s, left: -1} }

// request reports whether a request may go through.
func (s *breakingStore) request() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.left == 0 {
		s.broken = true
	}
	if s.left > 0 {
		s.left--
	}
	if s.broken {
		return errBroken
	}
	return nil
}

func (s *breakingStore) breakAfter(n int) {
	s.mu.Lock()
	s.left = n
	s.mu.Unlock()
}

func (s *breakingStore) armPut(prefix string) {
	s.mu.Lock()
	s.prefix = prefix
	s.mu.Unlock()
}

func (s *breakingStore) mend() {
	s.mu.Lock()
	s.broken, s.left, s.prefix = false, -1, ""
	s.mu.Unlock()
}

func (s *breakingStore) Put(ctx context.Context, name string, r io.Reader, size int64) error {
	if err := s.request(); err != nil {
		return err
	}
	err := s.Store.Put(ctx, name, r, size)
	s.mu.Lock()
	if s.prefix != "" && strings.HasPrefix(name, s.prefix) {
		s.broken = true
	}
	s.mu.Unlock()
	return err
}

func (s *breakingStore) Get(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	if err := s.request(); err != nil {
		return nil, err
	}
	return s.Store.Get(ctx, name, off, length)
}

func (s *breakingStore) List(ctx context.Context, prefix string) ([]checkpoint.ObjectInfo, error) {
	if err := s.request(); err != nil {
		return nil, err
	}
	return s.Store.List(ctx, prefix)
}

func (s *breakingStore) Delete(ctx context.Context, name string) error {
	if err := s.request(); err != nil {
		return err
	}
	return s.Store.Delete(ctx, name)
}

// sharedWithCheckpoint makes database "a" in fs, its files shared in a
// store that can break, with a checkpoint of its state; a is closed, its
// share loop idle first.
func sharedWithCheckpoint(t *testing.T) (fs *vfs.MemFS, store *checkpoint.LocalStore, br *breakingStore, opts *Options, c checkpoint.StoreCheckpoint, want model, instance string) {
	fs = vfs.NewMem()
	store, err := checkpoint.NewLocalStoreFS(fs, "store")
	require.NoError(t, err)
	br = newBreakingStore(store)
	opts = rescaleOptions(fs, br, nil)
	db, err := Open("a", opts)
	require.NoError(t, err)
	in := newRescaleInstance(t, br, "a", db, model{})
	in.write(t, rand.New(rand.NewPCG(1, 2)), 0, 1000, 2000, 0)
	require.NoError(t, db.Compact(nil, nil))
	db.waitSharedIdle()
	instance = db.shared.files.Instance()
	c = in.checkpoint(t)
	// Quiet before Close: an upload Close abandons leaves a stray marker
	// (the instance's own, dropped at its next Open), which would muddle
	// the audits of the tests.
	db.waitSharedIdle()
	require.NoError(t, db.Close())
	return fs, store, br, opts, c, in.want.clone(), instance
}

// markersOf returns the objects holder has a marker on.
func markersOf(t *testing.T, s checkpoint.Store, holder string) []string {
	marked, err := remote.Marked(t.Context(), s)
	require.NoError(t, err)
	var out []string
	for object, holders := range marked {
		for _, h := range holders {
			if h == holder {
				out = append(out, object)
			}
		}
	}
	return out
}

// TestDestroyInterrupted: a Destroy that stops part way (here the store
// goes out of reach; a crash does the same) leaves a directory marked as
// being destroyed: Open, read-write or read-only, refuses it with
// ErrDestroying, since objects it would read may be gone, and an audit
// leaves it out. Destroy run again finishes; what the checkpoint uses
// stays.
func TestDestroyInterrupted(t *testing.T) {
	ctx := t.Context()
	fs, store, br, opts, c, want, instance := sharedWithCheckpoint(t)
	require.NotEmpty(t, markersOf(t, store, remote.InstanceHolder(instance)))

	br.breakAfter(4) // the hold, the markers' list, and a drop or two
	require.ErrorIs(t, Destroy(ctx, "a", opts), errBroken)
	br.mend()
	require.True(t, remote.Destroying(fs, "a"))
	_, err := Open("a", opts)
	require.ErrorIs(t, err, ErrDestroying)
	_, err = Open("a", &Options{FS: fs, SharedStore: store, ReadOnly: true})
	require.ErrorIs(t, err, ErrDestroying)
	in, err := remote.ReadInstance(fs, "a")
	require.NoError(t, err)
	require.True(t, in.Destroying)

	require.NoError(t, Destroy(ctx, "a", opts))
	_, err = fs.Stat("a")
	require.ErrorIs(t, err, os.ErrNotExist)
	require.Empty(t, markersOf(t, store, remote.InstanceHolder(instance)))
	requireLeftForCheckpoint(t, fs, store, c, want)
}

// requireLeftForCheckpoint requires that checkpoint c restores to want
// and that the store's audit finds nothing missing, damaged or
// unreferenced: what a Destroy left is what the checkpoint uses.
func requireLeftForCheckpoint(t *testing.T, fs vfs.FS, store checkpoint.Store, c checkpoint.StoreCheckpoint, want model) {
	t.Helper()
	requireRestores(t, fs, c.Store, c.ID, want)
	rep, err := checkpoint.Audit(t.Context(), store, nil)
	require.NoError(t, err)
	require.Empty(t, rep.Problems)
	require.Empty(t, rep.Unreferenced)
}

// TestOpenFromStoreInterrupted: an OpenFromStore whose hold reached the
// store but whose database never reached its directory (the store went
// out of reach right after the hold, so the hold could not be dropped
// either; a crash leaves the same) leaves a record of the hold beside
// the directory. Opening from the store into the directory again drops
// that hold before it writes its own, and so does Destroy of the
// directory: no hold stays that nothing would ever drop.
func TestOpenFromStoreInterrupted(t *testing.T) {
	ctx := t.Context()
	fs, store, br, opts, c, want, aInstance := sharedWithCheckpoint(t)
	holds := func() []string {
		objs, err := store.List(ctx, "holds/")
		require.NoError(t, err)
		var names []string
		for _, o := range objs {
			names = append(names, o.Name)
		}
		return names
	}
	require.Empty(t, holds())
	stop := func(dir string) string {
		t.Helper()
		br.armPut("holds/")
		_, err := OpenFromStore(ctx, c.Store, c.ID, dir, opts)
		require.ErrorIs(t, err, errBroken)
		br.mend()
		_, err = fs.Stat(dir)
		require.ErrorIs(t, err, os.ErrNotExist)
		left := holds()
		require.Len(t, left, 1, "the hold was dropped: nothing to recover")
		return left[0]
	}

	// Opened again into the same directory.
	stale := stop("b")
	db, err := OpenFromStore(ctx, c.Store, c.ID, "b", opts)
	require.NoError(t, err)
	require.NotContains(t, holds(), stale)
	got, err := readAll(t, db)
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.NoError(t, db.Close())
	require.NoError(t, Destroy(ctx, "b", opts))
	require.Empty(t, holds())

	// Destroyed instead.
	stop("d")
	require.ErrorIs(t, Destroy(ctx, "d", &Options{FS: fs}), ErrSharedStoreRequired, "the record needs the store")
	require.NoError(t, Destroy(ctx, "d", opts))
	require.Empty(t, holds())
	names, err := fs.List(".")
	require.NoError(t, err)
	for _, n := range names {
		require.False(t, strings.HasPrefix(n, "d."), "%s stayed", n)
	}
	// What the audit knows of no database is a's alone (it was not
	// given): no instance of the stopped opens holds anything.
	rep, err := checkpoint.Audit(ctx, store, &checkpoint.AuditOptions{AllInstances: true})
	require.NoError(t, err)
	require.Empty(t, rep.Problems)
	aHolder := remote.InstanceHolder(aInstance)
	for _, f := range rep.Strays {
		require.True(t, f.Object == aHolder || f.Holder == aHolder, "%s", f)
	}

	// A record whose instance did reach its directory, but whose
	// database cannot be read now (a crash between the rename and the
	// record's removal, then damage): nothing is dropped, since the
	// instance may be the one in the directory.
	db, err = OpenFromStore(ctx, c.Store, c.ID, "f", opts)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	in, err := remote.ReadInstance(fs, "f")
	require.NoError(t, err)
	require.NoError(t, vfs.WriteFileSynced(fs, "f.pending-instance", []byte(in.ID+"\n")))
	current, err := vfs.ReadFile(fs, "f/CURRENT")
	require.NoError(t, err)
	require.NoError(t, fs.Remove("f/CURRENT"))
	require.NoError(t, vfs.WriteFileSynced(fs, "f/CURRENT", []byte("MANIFEST-999999\n")))
	require.ErrorContains(t, Destroy(ctx, "f", opts), "cannot be read")
	require.True(t, len(holds()) > 0 || len(markersOf(t, store, in.Holder())) > 0, "the instance's references were dropped")
	require.NoError(t, fs.Remove("f/CURRENT"))
	require.NoError(t, vfs.WriteFileSynced(fs, "f/CURRENT", current))
	require.NoError(t, Destroy(ctx, "f", opts))
	require.Empty(t, holds())
	require.Empty(t, markersOf(t, store, in.Holder()))
}
