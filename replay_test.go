package strata

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/record"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// TestReplayStopsAtSequenceGap: a rotation leaves the old WAL's sync to
// the sealer; a power loss before that sync can keep the old WAL's
// synced part, ending cleanly on a record boundary, and some of the new
// WAL's unsynced records. Replay must not go on into the new WAL then:
// the recovered state would hold b writes without the a writes before
// them. Every crash state (torn writes, 64 seeds) recovers a prefix of
// the history.
func TestReplayStopsAtSequenceGap(t *testing.T) {
	mem := vfs.NewMem()
	var holdLogs atomic.Bool
	held := make(chan struct{})
	efs := vfs.NewErrorFS(mem, vfs.InjectorFunc(func(op vfs.Op) error {
		if op.Kind == vfs.OpSync && strings.HasSuffix(op.Path, ".log") && holdLogs.Load() {
			<-held
		}
		return nil
	}))
	db, err := Open("db", &Options{FS: efs})
	require.NoError(t, err)
	defer func() {
		close(held)
		require.NoError(t, db.Close())
	}()
	key := func(p string, i int) []byte { return []byte(fmt.Sprintf("%s%d", p, i)) }
	require.NoError(t, db.Set(key("a", 0), []byte("v"), Sync))
	holdLogs.Store(true) // the sealer's sync of the old WAL never ends
	for i := 1; i <= 5; i++ {
		require.NoError(t, db.Set(key("a", i), []byte("value a"), NoSync))
	}
	require.NoError(t, db.writeOp(nil, false, opRotate))
	for i := 1; i <= 5; i++ {
		require.NoError(t, db.Set(key("b", i), []byte("value b"), NoSync))
	}
	// The new WAL's bytes reach the file (not the disk) as the WAL
	// flusher would write them.
	require.NoError(t, db.walFile.Load().flushPending())

	gaps := 0
	for seed := uint64(0); seed < 64; seed++ {
		crashed := mem.CrashClone(vfs.CrashOptions{TornWrites: true, Rand: rand.New(rand.NewPCG(seed, 9))})
		db2, err := Open("db", &Options{FS: crashed})
		require.NoError(t, err, "seed %d", seed)
		var present []string
		for _, k := range []string{"a0", "a1", "a2", "a3", "a4", "a5", "b1", "b2", "b3", "b4", "b5"} {
			_, err := db2.Get([]byte(k))
			if err == nil {
				present = append(present, k)
			} else {
				require.True(t, errors.Is(err, ErrNotFound), "seed %d key %s: %v", seed, k, err)
			}
		}
		require.NoError(t, db2.Close())
		want := []string{"a0", "a1", "a2", "a3", "a4", "a5", "b1", "b2", "b3", "b4", "b5"}[:len(present)]
		require.Equal(t, want, present, "seed %d: the recovered state is not a prefix of the history", seed)
		if len(present) < 6 {
			gaps++
		}
	}
	t.Logf("%d of 64 crash states lost some a writes", gaps)
}

// TestReplaySplitBatchTwoCrashes: replay that fills its memtable in the
// middle of a batch flushes the first part to L0, and the manifest's last
// sequence number then falls inside the batch. A second crash before the
// rest is flushed replays the batch again: its first entries must not be
// applied twice (merge operands would fold twice).
func TestReplaySplitBatchTwoCrashes(t *testing.T) {
	const n = 60
	mem := vfs.NewMem()
	opts := func(fs vfs.FS) *Options {
		return &Options{FS: fs, MemTableSize: 64 << 10, Merger: ListAppend}
	}
	db, err := Open("db", opts(mem))
	require.NoError(t, err)
	filler := make([]byte, 1000)
	for i := range 40 {
		require.NoError(t, db.Set(key2("f", i), filler, Sync))
	}
	b := db.NewBatch()
	elem := make([]byte, 900)
	for i := range n {
		elem[0] = byte(i)
		require.NoError(t, b.Merge([]byte("m"), ListElement(nil, elem)))
	}
	require.NoError(t, db.Apply(b, Sync))
	crash1 := mem.CrashClone(vfs.CrashOptions{})
	require.NoError(t, db.Close())

	// The first recovery flushes the memtables its replay fills; the
	// background flush of what is left after Open never gets to create
	// its table.
	var holdTables atomic.Bool
	release := make(chan struct{})
	var once sync.Once
	efs := vfs.NewErrorFS(crash1, vfs.InjectorFunc(func(op vfs.Op) error {
		if op.Kind == vfs.OpCreate && strings.HasSuffix(op.Path, ".sst") && holdTables.Load() {
			<-release
			return vfs.ErrInjected
		}
		return nil
	}))
	o := opts(efs)
	o.EventListener = &EventListener{FlushBegin: func(FlushInfo) { holdTables.Store(true) }}
	db1, err := Open("db", o)
	require.NoError(t, err)
	defer once.Do(func() { close(release) })
	countList(t, db1, n, "after the first recovery")
	crash2 := crash1.CrashClone(vfs.CrashOptions{})
	once.Do(func() { close(release) })
	db1.Close()

	db2, err := Open("db", opts(crash2))
	require.NoError(t, err)
	countList(t, db2, n, "after the second recovery")
	for i := range 40 {
		_, err := db2.Get(key2("f", i))
		require.NoError(t, err)
	}
	require.NoError(t, db2.Close())
}

func key2(p string, i int) []byte { return []byte(fmt.Sprintf("%s%04d", p, i)) }

func countList(t *testing.T, db *DB, want int, when string) {
	t.Helper()
	v, err := db.Get([]byte("m"))
	require.NoError(t, err, when)
	elems, err := DecodeList(v)
	require.NoError(t, err, when)
	require.Equal(t, want, len(elems), "list elements %s", when)
}

// TestReplayDamagedOlderWALWithSyncedLater: replay stops early at an older
// WAL that ends torn, or at a gap in sequence numbers, only when nothing
// after that point was synced. When a later WAL's chunks say it was synced
// (a WAL sync waits for every older WAL's), the older WAL was complete on
// the disk, so its torn end is damage: Open fails with ErrCorruption
// instead of dropping the later, synced writes. A later WAL that cannot
// be read fails Open too (the check read it up to any error, so an
// unreadable one passed for one with nothing synced).
func TestReplayDamagedOlderWALWithSyncedLater(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		syncedLater, unreadable bool
	}{{"synced-later=false", false, false}, {"synced-later=true", true, false}, {"synced-later-unreadable", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			fs := vfs.NewMem()
			db, err := Open("db", &Options{FS: fs})
			require.NoError(t, err)
			require.NoError(t, db.Set([]byte("base"), []byte("v-base"), Sync))
			require.NoError(t, db.Close())
			walNum := liveWAL(t, fs)
			// The older WAL: base, a1, a2 and half of a batch (torn).
			writeWAL(t, fs, walNum, 1, true, "base", "a1", "a2")
			// The newer WAL: b1, a sync, b2 (whose chunk records the sync).
			later := base.MakeFilename(base.FileTypeLog, walNum+100)
			f, err := fs.Create(fs.PathJoin("db", later))
			require.NoError(t, err)
			w := record.NewWriter(f)
			for i, k := range []string{"b1", "b2"} {
				b := &Batch{}
				require.NoError(t, b.Set([]byte(k), []byte("v-"+k)))
				b.setSeq(base.SeqNum(5 + i))
				_, err := w.WriteRecord(b.repr)
				require.NoError(t, err)
				if i == 0 && tc.syncedLater {
					require.NoError(t, w.Sync())
				}
			}
			require.NoError(t, w.Flush())
			require.NoError(t, f.Sync())
			require.NoError(t, f.Close())

			if tc.unreadable {
				_, err = Open("db", &Options{FS: failingFS(fs, func(op vfs.Op) bool {
					return op.Kind == vfs.OpRead && strings.HasSuffix(op.Path, later)
				})})
				require.ErrorIs(t, err, vfs.ErrInjected)
			}
			db, err = Open("db", &Options{FS: fs})
			if tc.syncedLater {
				require.ErrorIs(t, err, ErrCorruption)
				require.Contains(t, err.Error(), "holds writes synced after it")
				return
			}
			require.NoError(t, err)
			requireGet(t, db, "a2", "v-a2")
			_, err = db.Get([]byte("b1"))
			require.ErrorIs(t, err, ErrNotFound)
			require.NoError(t, db.Close())
		})
	}
}

// TestReplayFlushBelowIngestedSeq: a marked ingest (the WAL on, no bulk
// load) gives its table a sequence number above the writes still in the
// memtable and their WAL, and writes follow it. A replay whose memtable
// fills before it reaches the ingest's mark flushes the writes so far;
// that flush must record the largest sequence number it holds, not the
// ingested table's. It recorded the latter, so the replay then skipped
// every write between the flush and the mark as "already in a table",
// and they were lost, Sync writes among them. (Found by strata
// crashtest with ingests.)
func TestReplayFlushBelowIngestedSeq(t *testing.T) {
	fs := vfs.NewMem()
	opts := func(memtable int64) *Options {
		return &Options{FS: fs, MemTableSize: memtable, ValueThreshold: -1,
			DisableAutomaticCompactions: true, DisableGC: true}
	}
	db, err := Open("db", opts(64<<20))
	require.NoError(t, err)
	val := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i%26)}, 100) }
	const n = 2000 // far more than a 16 KiB memtable holds
	for i := 0; i < n; i++ {
		require.NoError(t, db.Set([]byte(fmt.Sprintf("a%05d", i)), val(i), NoSync))
	}
	// An ingest of keys no memtable holds: the memtable stays, the WAL
	// gets the ingest's mark.
	w, err := NewTableWriter("ext.sst", &TableWriterOptions{FS: fs})
	require.NoError(t, err)
	require.NoError(t, w.Set([]byte("m"), []byte("ingested")))
	require.NoError(t, w.Close())
	require.NoError(t, db.Ingest([]string{"ext.sst"}))
	for i := n; i < n+100; i++ {
		require.NoError(t, db.Set([]byte(fmt.Sprintf("a%05d", i)), val(i), NoSync))
	}
	require.NoError(t, db.Set([]byte("z"), []byte("last"), Sync))
	crashed := fs.CrashClone(vfs.CrashOptions{})
	require.NoError(t, db.Close())

	fs = crashed
	for round := 0; round < 2; round++ { // and again after the recovery's own edits
		db, err = Open("db", opts(16<<10))
		require.NoError(t, err)
		for i := 0; i < n+100; i++ {
			got, err := db.Get([]byte(fmt.Sprintf("a%05d", i)))
			require.NoError(t, err, "round %d: write %d lost", round, i)
			require.Equal(t, val(i), got)
		}
		got, err := db.Get([]byte("m"))
		require.NoError(t, err)
		require.Equal(t, "ingested", string(got))
		got, err = db.Get([]byte("z"))
		require.NoError(t, err)
		require.Equal(t, "last", string(got))
		crashed = fs.CrashClone(vfs.CrashOptions{})
		require.NoError(t, db.Close())
		fs = crashed
	}
}
