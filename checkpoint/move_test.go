package checkpoint_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/checkpoint"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// moveOptions empty every segment with a dead byte, so that uploads move
// pieces, those only older checkpoints use included.
func moveOptions(keep int) *checkpoint.UploadOptions {
	return &checkpoint.UploadOptions{KeepLast: keep, SmallFileSize: 1 << 30, SegmentSize: 64 << 10,
		MinLiveRatio: 0.99, MergeSmallSegments: -1, ReuploadBytes: 1 << 30}
}

// TestSegmentsMove: uploads that empty sparse segments move their live
// pieces and point every retained checkpoint at the new place, so that no
// piece is stored twice, the emptied segments go at once, and every
// retained checkpoint restores to its own state. The local store composes
// the new objects from the old ones; behind a Store that is not a
// Composer, the pieces are read and uploaded.
func TestSegmentsMove(t *testing.T) {
	for _, compose := range []bool{true, false} {
		t.Run(map[bool]string{true: "compose", false: "send"}[compose], func(t *testing.T) { testSegmentsMove(t, compose) })
	}
}

func testSegmentsMove(t *testing.T, compose bool) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, root string) {
		ctx := context.Background()
		db, store, u := openWithUploader(t, fs, root, moveOptions(3))
		if !compose {
			var err error
			u, err = checkpoint.NewUploader(struct{ checkpoint.Store }{store}, moveOptions(3))
			require.NoError(t, err)
		}
		states := map[uint64]map[string]string{}
		var moved, copied int64
		for round := range 12 {
			st := overwriteRound(t, db, u, round, states)
			moved += st.ReuploadedBytes
			copied += st.CopiedBytes
			if compose { // the local store copies every stored range
				require.Equal(t, st.ReuploadedBytes, st.ComposedBytes, "round %d", round)
			} else {
				require.Zero(t, st.ComposedBytes, "round %d", round)
			}
			// Uploaded: the data not composed, and the registry.
			list, err := store.List(ctx, "registry")
			require.NoError(t, err)
			require.Len(t, list, 1)
			data := st.UploadedBytes - list[0].Size
			require.Equal(t, st.NewBytes+st.ReuploadedBytes-st.ComposedBytes, data, "round %d: %v", round, st)
			// Nothing stored twice: the live bytes of the objects are the
			// distinct file bytes the retained checkpoints reference.
			objs, err := checkpoint.Objects(ctx, store)
			require.NoError(t, err)
			var live, size int64
			for _, o := range objs {
				live += o.LiveBytes
				size += o.Size
			}
			meta := st.StoreBytes - size // the registry
			require.Equal(t, st.ReferencedBytes-meta, live, "round %d: %v", round, st)
			requireStoreTidy(t, store)
			requireRetainedRestore(t, fs, root, store, states, fmt.Sprint(round))
		}
		require.Positive(t, moved, "no piece moved")
		require.Positive(t, copied, "no piece copied within the store")
	})
}

// requireRetainedRestore restores every checkpoint the store retains, into
// directories of root named after stage, and checks each holds its state.
func requireRetainedRestore(t *testing.T, fs vfs.FS, root string, store checkpoint.Store, states map[uint64]map[string]string, stage string) {
	t.Helper()
	ctx := context.Background()
	ids, err := checkpoint.Checkpoints(ctx, store)
	require.NoError(t, err)
	for _, id := range ids {
		dst := fs.PathJoin(root, fmt.Sprintf("restore-%s-%d", stage, id))
		require.NoError(t, checkpoint.Restore(ctx, store, id, fs, dst, nil), "%s: checkpoint %d", stage, id)
		require.Equal(t, states[id], dbState(t, fs, dst), "%s: checkpoint %d", stage, id)
	}
}

// hookStore calls hook before the first Get of a data object, and counts
// the Gets that found their object missing.
type hookStore struct {
	checkpoint.Store
	hook    func()
	hooked  atomic.Bool
	missing atomic.Int64
}

func (s *hookStore) Get(ctx context.Context, name string, off, n int64) (io.ReadCloser, error) {
	if strings.HasPrefix(name, "data/") && s.hooked.CompareAndSwap(false, true) {
		s.hook()
	}
	rc, err := s.Store.Get(ctx, name, off, n)
	if errors.Is(err, checkpoint.ErrNotExist) {
		s.missing.Add(1)
	}
	return rc, err
}

// TestRestoreWhilePiecesMove: an upload that moves the pieces of the
// checkpoint being restored, and deletes the segments they were in, while
// the restore downloads: the restore finds them at their new place.
func TestRestoreWhilePiecesMove(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, root string) {
		ctx := context.Background()
		raced := false
		for attempt := 0; attempt < 5 && !raced; attempt++ {
			dir := fs.PathJoin(root, fmt.Sprintf("attempt-%d", attempt))
			db, err := strata.Open(fs.PathJoin(dir, "db"), smallOptions(fs))
			require.NoError(t, err)
			plain := newStore(t, fs, fs.PathJoin(dir, "store"))
			u, err := checkpoint.NewUploader(plain, moveOptions(2))
			require.NoError(t, err)
			write := func(round int) {
				for i := range 150 {
					require.NoError(t, db.Set([]byte(fmt.Sprintf("key%05d", (i*7+round*31)%300)), []byte(bigValue(i, round)), strata.NoSync))
				}
			}
			var id uint64
			var want map[string]string
			for round := range 3 {
				write(round)
				st, err := db.CheckpointToStore(ctx, u)
				require.NoError(t, err)
				id, want = st.ID, scanAll(t, db)
			}
			hs := &hookStore{Store: plain}
			hs.hook = func() {
				write(10 + attempt)
				_, err := db.CheckpointToStore(ctx, u)
				require.NoError(t, err)
			}
			dst := fs.PathJoin(dir, "restore")
			require.NoError(t, checkpoint.Restore(ctx, hs, id, fs, dst, &checkpoint.RestoreOptions{Parallelism: 1}))
			require.Equal(t, want, dbState(t, fs, dst))
			raced = hs.missing.Load() > 0
			require.NoError(t, db.Close())
		}
		require.True(t, raced, "no restore found a piece moved away in 5 attempts")
	})
}

// overwriteRound overwrites 150 of 300 keys with generation round's
// values, checkpoints db through u, and records the state the checkpoint
// holds in states.
func overwriteRound(t *testing.T, db *strata.DB, u *checkpoint.Uploader, round int, states map[uint64]map[string]string) checkpoint.Stats {
	t.Helper()
	for i := range 150 {
		require.NoError(t, db.Set([]byte(fmt.Sprintf("key%05d", (i*7+round*31)%300)), []byte(bigValue(i, round)), strata.NoSync))
	}
	st, err := db.CheckpointToStore(context.Background(), u)
	require.NoError(t, err)
	states[st.ID] = scanAll(t, db)
	return st
}
