package checkpoint_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/checkpoint"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// TestUploadCrash simulates a power loss of the store's machine before
// every filesystem operation of uploads into a local store (and with torn
// writes): after each, the store must hold a registry that loads and every
// checkpoint it retains must restore, to its own state; a crash never
// leaves a checkpoint half committed.
func TestUploadCrash(t *testing.T) {
	for _, oc := range uploadFaultOptions {
		t.Run(oc.name, func(t *testing.T) { testUploadCrash(t, oc.opts, "") })
	}
	// Into a named registry, whose objects live under a prefix of its
	// own: the same, and the audit finds no problem after any crash.
	t.Run("named", func(t *testing.T) { testUploadCrash(t, uploadFaultOptions[0].opts, "op-1") })
}

// view returns s, or its view of registry name.
func view(t *testing.T, s checkpoint.Store, name string) checkpoint.Store {
	t.Helper()
	if name == "" {
		return s
	}
	v, err := checkpoint.Named(s, name)
	require.NoError(t, err)
	return v
}

func testUploadCrash(t *testing.T, opts checkpoint.UploadOptions, name string) {
	ctx := context.Background()
	dbfs := vfs.NewMem()
	db, err := strata.Open("db", smallOptions(dbfs))
	require.NoError(t, err)
	defer db.Close()
	smem := vfs.NewMem()

	var (
		mu     sync.Mutex
		clones []*vfs.MemFS
		rng    = rand.New(rand.NewPCG(9, 10))
	)
	capture := vfs.InjectorFunc(func(op vfs.Op) error {
		if op.Kind.IsWrite() {
			mu.Lock()
			clones = append(clones, smem.CrashClone(vfs.CrashOptions{}), smem.CrashClone(vfs.CrashOptions{TornWrites: true, Rand: rng}))
			mu.Unlock()
		}
		return nil
	})
	store, err := checkpoint.NewLocalStoreFS(vfs.NewErrorFS(smem, capture), "store")
	require.NoError(t, err)
	u, err := checkpoint.NewUploader(view(t, store, name), &opts)
	require.NoError(t, err)
	states := map[uint64]map[string]string{}
	var moved, copied int64
	defer func() {
		if opts.MinLiveRatio > 0.9 { // the options that empty segments
			require.Positive(t, moved, "no upload moved a piece")
			require.Positive(t, copied, "no upload copied a piece within the store")
		}
	}()
	// Six rounds, and with the "move" options more until an upload has
	// copied a piece within the store: which round does first depends on
	// the sizes of the files the writes leave, so on when background
	// compactions ran (usually the sixth; later under load).
	needCopy := opts.MinLiveRatio > 0.9
	rounds := 0
	for ; rounds < 6 || (needCopy && copied == 0 && rounds < 14); rounds++ {
		st := overwriteRound(t, db, u, rounds, states)
		moved += st.ReuploadedBytes
		copied += st.CopiedBytes
	}
	t.Logf("%d rounds, %d crash states", rounds, len(clones))
	for n, c := range clones {
		raw, err := checkpoint.NewLocalStoreFS(c, "store")
		require.NoError(t, err, "crash %d", n)
		cs := view(t, raw, name)
		if name != "" {
			rep, err := checkpoint.Audit(ctx, raw, &checkpoint.AuditOptions{Quick: true})
			require.NoError(t, err, "crash %d", n)
			require.Empty(t, rep.Problems, "crash %d: %v", n, findings(rep.Problems))
		}
		ids, err := checkpoint.Checkpoints(ctx, cs)
		require.NoError(t, err, "crash %d: the registry does not load", n)
		for _, id := range ids {
			dst := fmt.Sprintf("restore-%d", id)
			require.NoError(t, checkpoint.Restore(ctx, cs, id, c, dst, nil), "crash %d, checkpoint %d", n, id)
			rdb, err := strata.Open(dst, &strata.Options{FS: c, ErrorIfNotExists: true})
			require.NoError(t, err)
			require.Equal(t, states[id], scanAll(t, rdb), "crash %d, checkpoint %d", n, id)
			require.NoError(t, rdb.Close())
		}
	}
}
