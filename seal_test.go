package strata

import (
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/record"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// writeWAL writes WAL num into fs's "db": one batch per key, sequence
// numbers from seq, and, with torn, half of one more batch after them, as a
// crash in the middle of an append leaves it.
func writeWAL(t *testing.T, fs vfs.FS, num base.FileNum, seq base.SeqNum, torn bool, keys ...string) {
	t.Helper()
	scratch := vfs.NewMem()
	sf, err := scratch.Create("log")
	require.NoError(t, err)
	w := record.NewWriter(sf)
	var tornStart int64
	for _, k := range append(keys, "torn") {
		b := &Batch{}
		b.Set([]byte(k), []byte("v-"+k))
		b.setSeq(seq)
		seq++
		tornStart, err = w.WriteRecord(b.repr)
		require.NoError(t, err)
	}
	require.NoError(t, w.Close())
	rf, err := scratch.Open("log")
	require.NoError(t, err)
	all, err := io.ReadAll(rf)
	require.NoError(t, err)
	end := tornStart
	if torn {
		end += (int64(len(all)) - tornStart) / 2
	}
	f, err := fs.Create(fs.PathJoin("db", base.MakeFilename(base.FileTypeLog, num)))
	require.NoError(t, err)
	_, err = f.Write(all[:end])
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
}

// liveWAL returns the number of the only WAL in fs's "db".
func liveWAL(t *testing.T, fs vfs.FS) base.FileNum {
	t.Helper()
	names, err := fs.List("db")
	require.NoError(t, err)
	var wals []base.FileNum
	for _, n := range names {
		if typ, num, ok := base.ParseFilename(n); ok && typ == base.FileTypeLog {
			wals = append(wals, num)
		}
	}
	require.Len(t, wals, 1)
	return wals[0]
}

// TestReplayStopsAtTornOlderWAL: a memtable rotation leaves the old WAL's
// sync to the sealer, so a crash can leave an older WAL torn while a newer
// one holds (unsynced) writes. Replay must stop at the torn WAL: applying
// the newer writes without the lost older ones would not be a prefix of
// what was written. With the older WAL intact, both replay.
func TestReplayStopsAtTornOlderWAL(t *testing.T) {
	for _, torn := range []bool{false, true} {
		t.Run(fmt.Sprintf("torn=%t", torn), func(t *testing.T) {
			fs := vfs.NewMem()
			db, err := Open("db", &Options{FS: fs})
			require.NoError(t, err)
			require.NoError(t, db.Set([]byte("base"), []byte("v-base"), Sync))
			require.NoError(t, db.Close())
			walNum := liveWAL(t, fs)
			// The live WAL holds "base" (seq 1); rewrite it with "base" and
			// a1, a2 (and, torn, half of a batch of seq 4), and add a newer
			// WAL with b1, b2, whose sequence numbers run on.
			writeWAL(t, fs, walNum, 1, torn, "base", "a1", "a2")
			next := base.SeqNum(4)
			if torn {
				next = 5
			}
			writeWAL(t, fs, walNum+100, next, false, "b1", "b2")

			db, err = Open("db", &Options{FS: fs})
			require.NoError(t, err)
			for _, k := range []string{"base", "a1", "a2"} {
				requireGet(t, db, k, "v-"+k)
			}
			for _, k := range []string{"b1", "b2"} {
				v, err := db.Get([]byte(k))
				if torn {
					require.ErrorIs(t, err, ErrNotFound, "%s replayed past a torn older WAL", k)
				} else {
					require.NoError(t, err)
					require.Equal(t, "v-"+k, string(v))
				}
			}
			_, err = db.Get([]byte("torn"))
			require.ErrorIs(t, err, ErrNotFound)
			// Writes after this Open survive the next one: the torn WAL did
			// not outlive the recovery.
			require.NoError(t, db.Set([]byte("after"), []byte("v-after"), Sync))
			require.NoError(t, db.Close())
			db, err = Open("db", &Options{FS: fs})
			require.NoError(t, err)
			requireGet(t, db, "after", "v-after")
			requireGet(t, db, "a2", "v-a2")
			require.NoError(t, db.Close())
		})
	}
}

// TestTornLastWALDoesNotOutliveOpen: a WAL that ends torn is flushed at
// Open rather than kept: kept, it would be an older WAL ending torn after
// the next rotation, and a crash then would stop the replay there, before
// writes synced after this Open.
func TestTornLastWALDoesNotOutliveOpen(t *testing.T) {
	fs := vfs.NewMem()
	db, err := Open("db", &Options{FS: fs})
	require.NoError(t, err)
	require.NoError(t, db.Close())
	writeWAL(t, fs, liveWAL(t, fs), 1, true, "a1", "a2")

	db, err = Open("db", &Options{FS: fs})
	require.NoError(t, err)
	requireGet(t, db, "a2", "v-a2")
	require.NoError(t, db.Set([]byte("synced"), []byte("v"), Sync))
	crashed := fs.CrashClone(vfs.CrashOptions{})
	require.NoError(t, db.Close())

	db, err = Open("db", &Options{FS: crashed})
	require.NoError(t, err)
	requireGet(t, db, "synced", "v")
	requireGet(t, db, "a1", "v-a1")
	require.NoError(t, db.Close())
}

// TestRotationLeavesSyncsToSealer: while the sealer is held in the sync of
// the value log a rotation left behind, writes without Sync go on; a Sync
// write and a Flush wait for it, and everything is there once it runs.
func TestRotationLeavesSyncsToSealer(t *testing.T) {
	var hold atomic.Bool
	release := make(chan struct{})
	fs := vfs.NewErrorFS(vfs.NewMem(), vfs.InjectorFunc(func(op vfs.Op) error {
		if op.Kind == vfs.OpSync && strings.HasSuffix(op.Path, ".vlog") && hold.Load() {
			<-release
		}
		return nil
	}))
	db, err := Open("db", &Options{FS: fs, ValueThreshold: 16})
	require.NoError(t, err)
	big := strings.Repeat("v", 100)
	require.NoError(t, db.Set([]byte("k0"), []byte(big), NoSync))
	hold.Store(true)
	rotated := make(chan error, 1)
	go func() { rotated <- db.writeOp(nil, false, opRotate) }()
	select {
	case err := <-rotated:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("the rotation waited for the sync of the value log it left behind")
	}
	for i := 1; i < 50; i++ {
		require.NoError(t, db.Set([]byte(fmt.Sprintf("k%d", i)), []byte(big), NoSync))
	}
	synced := make(chan error, 1)
	go func() { synced <- db.Set([]byte("s"), []byte(big), Sync) }()
	flushed := make(chan error, 1)
	go func() { flushed <- db.Flush() }()
	select {
	case err := <-synced:
		t.Fatalf("a Sync write returned (%v) before the older value log was synced", err)
	case err := <-flushed:
		t.Fatalf("a flush returned (%v) before the memtable's value log was recorded", err)
	case <-time.After(50 * time.Millisecond):
	}
	hold.Store(false)
	close(release)
	require.NoError(t, <-synced)
	require.NoError(t, <-flushed)
	for i := 0; i < 50; i++ {
		requireGet(t, db, fmt.Sprintf("k%d", i), big)
	}
	requireGet(t, db, "s", big)
	require.NoError(t, db.Close())
}
