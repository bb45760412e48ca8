package strata

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/strata-db/strata/checkpoint"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// TestCheckpointWhileWriting takes checkpoints while a writer runs. Each
// checkpoint must open as an independent database holding keys 0..n-1 for
// some n: every key acknowledged before Checkpoint was called, none whose
// write began after it returned, and nothing out of order.
func TestCheckpointWhileWriting(t *testing.T) {
	for _, fsName := range []string{"mem", "disk"} {
		t.Run(fsName, func(t *testing.T) {
			var fs vfs.FS = vfs.NewMem()
			dir := "db"
			if fsName == "disk" {
				fs, dir = vfs.Default, t.TempDir()+"/db"
			}
			// Values of about 110 bytes: with a 64-byte threshold they live in
			// value logs, which the checkpoint must carry.
			opts := &Options{FS: fs, MemTableSize: 64 << 10, TargetFileSize: 16 << 10, LBaseMaxBytes: 64 << 10, ValueThreshold: 64}
			db, err := Open(dir, opts)
			require.NoError(t, err)

			var acked, started atomic.Int64 // keys [0, acked) are acknowledged
			var writerFailed atomic.Bool
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := int64(0); ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					started.Store(i + 1)
					if err := db.Set(ckKey(i), ckValue(i), NoSync); err != nil {
						t.Errorf("Set: %v", err)
						writerFailed.Store(true)
						return
					}
					acked.Store(i + 1)
				}
			}()
			for c := 0; c < 5; c++ {
				for acked.Load() < int64(2000*(c+1)) {
					if writerFailed.Load() {
						t.FailNow()
					}
					runtime.Gosched()
				}
				before := acked.Load()
				cdir := fmt.Sprintf("%s-ckpt-%d", dir, c)
				require.NoError(t, db.Checkpoint(cdir))
				after := started.Load()

				cdb, err := Open(cdir, &Options{FS: fs, ErrorIfNotExists: true, ValueThreshold: 64})
				require.NoError(t, err)
				got, err := readAll(t, cdb)
				require.NoError(t, err)
				n := int64(len(got))
				require.GreaterOrEqual(t, n, before, "checkpoint %d lacks acknowledged writes", c)
				require.LessOrEqual(t, n, after, "checkpoint %d holds writes started after it returned", c)
				for i := int64(0); i < n; i++ {
					require.Equal(t, string(ckValue(i)), got[string(ckKey(i))], "checkpoint %d key %d", c, i)
				}
				// The checkpoint is independent: writing it does not touch
				// the original, and it survives reopening.
				require.NoError(t, cdb.Set([]byte("only-in-checkpoint"), []byte("x"), Sync))
				require.NoError(t, cdb.Compact(nil, nil))
				require.NoError(t, cdb.Close())
				cdb, err = Open(cdir, &Options{FS: fs})
				require.NoError(t, err)
				v, err := cdb.Get([]byte("only-in-checkpoint"))
				require.NoError(t, err)
				require.Equal(t, "x", string(v))
				require.NoError(t, cdb.Close())
				_, err = db.Get([]byte("only-in-checkpoint"))
				require.True(t, errors.Is(err, ErrNotFound))
			}
			close(stop)
			wg.Wait()
			// The original is intact after its checkpoints were compacted.
			got, err := readAll(t, db)
			require.NoError(t, err)
			require.Equal(t, int(acked.Load()), len(got))
			require.NoError(t, db.Close())

			require.Error(t, db.Checkpoint(dir+"-late"), "Checkpoint on a closed DB")
		})
	}
}

func TestCheckpointRefusesNonEmptyDir(t *testing.T) {
	fs := vfs.NewMem()
	db, err := Open("db", &Options{FS: fs})
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.Set([]byte("k"), []byte("v"), Sync))
	require.NoError(t, db.Checkpoint("ckpt"))
	require.ErrorContains(t, db.Checkpoint("ckpt"), "not empty")
	// A crash right after Checkpoint returns keeps the checkpoint whole.
	crashed := fs.CrashClone(vfs.CrashOptions{})
	cdb, err := Open("ckpt", &Options{FS: crashed, ErrorIfNotExists: true})
	require.NoError(t, err)
	v, err := cdb.Get([]byte("k"))
	require.NoError(t, err)
	require.Equal(t, "v", string(v))
	require.NoError(t, cdb.Close())
}

func ckKey(i int64) []byte   { return []byte(fmt.Sprintf("key%08d", i)) }
func ckValue(i int64) []byte { return []byte(fmt.Sprintf("value-%d-%0100d", i, i)) }

// TestCheckpointToStoreIDsFollowPins: of two CheckpointToStore calls on
// one Uploader, the one that pins the newer state commits the higher id.
// The first call is held right after it pinned its version until the
// second has been called and waits for it, or (as before the uploader's
// serialization covered the pin) has pinned a newer state and committed
// it: then the older state got the higher id and, with KeepLast 1, was
// the one the store kept.
func TestCheckpointToStoreIDsFollowPins(t *testing.T) {
	defer func() { testHookToStore, testHookPinned = nil, nil }()
	ctx := context.Background()
	fs := vfs.NewMem()
	db, err := Open("db", &Options{FS: fs})
	require.NoError(t, err)
	defer db.Close()
	store, err := checkpoint.NewLocalStoreFS(fs, "store")
	require.NoError(t, err)
	u, err := checkpoint.NewUploader(store, &checkpoint.UploadOptions{KeepLast: 1})
	require.NoError(t, err)

	var (
		calls       atomic.Int32
		secondWaits = make(chan struct{}) // the second call waits its turn
		held        atomic.Bool
		pinned      = make(chan struct{}) // the first call pinned its version
		release     = make(chan struct{}) // and may go on
	)
	testHookToStore = func() {
		if calls.Add(1) == 2 {
			close(secondWaits)
		}
	}
	testHookPinned = func() {
		if held.CompareAndSwap(false, true) {
			close(pinned)
			<-release
		}
	}
	type result struct {
		st  checkpoint.Stats
		err error
	}
	checkpointTo := func(c chan<- result) {
		st, err := db.CheckpointToStore(ctx, u)
		c <- result{st, err}
	}
	first, second := make(chan result, 1), make(chan result, 1)
	require.NoError(t, db.Set([]byte("k"), []byte("older"), NoSync))
	go checkpointTo(first)
	<-pinned
	require.NoError(t, db.Set([]byte("k"), []byte("newer"), NoSync))
	go checkpointTo(second)
	var r2 result
	done2 := false
	select {
	case <-secondWaits:
	case r2 = <-second:
		done2 = true
	}
	close(release)
	r1 := <-first
	if !done2 {
		r2 = <-second
	}
	require.NoError(t, r1.err)
	require.NoError(t, r2.err)
	require.Less(t, r1.st.ID, r2.st.ID, "the older state has the higher checkpoint id")

	ids, err := checkpoint.Checkpoints(ctx, store)
	require.NoError(t, err)
	require.Equal(t, []uint64{r2.st.ID}, ids)
	require.NoError(t, checkpoint.Restore(ctx, store, r2.st.ID, fs, "restored", nil))
	rdb, err := Open("restored", &Options{FS: fs, ErrorIfNotExists: true})
	require.NoError(t, err)
	defer rdb.Close()
	requireGet(t, rdb, "k", "newer")
}
