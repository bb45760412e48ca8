package strata

import (
	"bytes"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

func sepValue(i int) []byte {
	v := bytes.Repeat([]byte{byte('a' + i%26)}, 2000+i%100)
	copy(v, fmt.Sprintf("v%d/", i))
	return v
}

// TestSeparateAtCommitWritesValuesOnce: with the WAL on, a large value is
// written to a value log at commit and the WAL carries only its pointer;
// reads find it in the active value log before any flush; a flush writes
// only keys and pointers.
func TestSeparateAtCommitWritesValuesOnce(t *testing.T) {
	fs := vfs.NewMem()
	db, err := Open("db", &Options{FS: fs})
	require.NoError(t, err)
	const n = 500
	for i := 0; i < n; i++ {
		require.NoError(t, db.Set([]byte(fmt.Sprintf("k%04d", i)), sepValue(i), NoSync))
	}
	for i := 0; i < n; i += 7 {
		got, err := db.Get([]byte(fmt.Sprintf("k%04d", i)))
		require.NoError(t, err)
		require.Equal(t, sepValue(i), got)
	}
	m := db.Metrics()
	var user uint64
	for i := 0; i < n; i++ {
		user += uint64(5 + len(sepValue(i)))
	}
	require.Less(t, m.WAL.BytesWritten, user/20, "the WAL carried the values")
	require.GreaterOrEqual(t, m.ValueLogs.BytesWritten, user-uint64(5*n))
	it, err := db.NewIter(nil)
	require.NoError(t, err)
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		require.Equal(t, sepValue(i), it.Value())
		i++
	}
	require.NoError(t, it.Close())
	require.Equal(t, n, i)
	require.NoError(t, db.Flush())
	require.Less(t, db.Metrics().Flush.BytesWritten, user/20, "the flush rewrote the values")
	require.NoError(t, db.Close())

	db, err = Open("db", &Options{FS: fs})
	require.NoError(t, err)
	for i := 0; i < n; i++ {
		got, err := db.Get([]byte(fmt.Sprintf("k%04d", i)))
		require.NoError(t, err)
		require.Equal(t, sepValue(i), got)
	}
	require.NoError(t, currentVersion(db).CheckLedger())
	require.NoError(t, db.Close())
}

// TestTornValueLogTail: the WAL reached the disk but the values its last
// records point to did not (they were still in the value log's buffer):
// recovery keeps a prefix of the writes, never a wrong value, and the
// writes made after that recovery survive the next one.
func TestTornValueLogTail(t *testing.T) {
	fs := vfs.NewMem()
	db, err := Open("db", &Options{FS: fs})
	require.NoError(t, err)
	for i := 0; i < 50; i++ {
		require.NoError(t, db.Set([]byte(fmt.Sprintf("k%04d", i)), sepValue(i), Sync))
	}
	// Unsynced writes whose WAL records are then synced on their own, as if
	// the operating system had written the WAL but not the value log.
	for i := 50; i < 80; i++ {
		require.NoError(t, db.Set([]byte(fmt.Sprintf("k%04d", i)), sepValue(i), NoSync))
	}
	require.NoError(t, db.walFile.Load().Sync())
	crashed := fs.CrashClone(vfs.CrashOptions{})
	require.NoError(t, db.Close())

	db, err = Open("db", &Options{FS: crashed})
	require.NoError(t, err)
	got, err := readAll(t, db)
	require.NoError(t, err)
	for i := 0; i < 50; i++ {
		require.Equal(t, string(sepValue(i)), got[fmt.Sprintf("k%04d", i)], "a synced write was lost")
	}
	for k, v := range got {
		var i int
		fmt.Sscanf(k, "k%04d", &i)
		require.Equal(t, string(sepValue(i)), v, "wrong value for %s", k)
	}
	require.Less(t, len(got), 80, "values that never reached the disk were returned")
	// Later writes must survive the next recovery, which must not stop at
	// the same torn record again.
	for i := 100; i < 120; i++ {
		require.NoError(t, db.Set([]byte(fmt.Sprintf("k%04d", i)), sepValue(i), Sync))
	}
	crashed2 := crashed.CrashClone(vfs.CrashOptions{})
	require.NoError(t, db.Close())
	db, err = Open("db", &Options{FS: crashed2})
	require.NoError(t, err)
	for i := 100; i < 120; i++ {
		v, err := db.Get([]byte(fmt.Sprintf("k%04d", i)))
		require.NoError(t, err, "a synced write after recovery was lost")
		require.Equal(t, sepValue(i), v)
	}
	require.NoError(t, currentVersion(db).CheckLedger())
	require.NoError(t, db.Close())
}

// TestAdoptFinishedValueLog: a value log finished at commit whose
// manifest edit failed is adopted at the next Open from the WAL's
// pointers, not deleted as an orphan: every write acknowledged before the
// failure is there.
func TestAdoptFinishedValueLog(t *testing.T) {
	mem := vfs.NewMem()
	var failManifest atomic.Bool
	fs := vfs.NewErrorFS(mem, vfs.InjectorFunc(func(op vfs.Op) error {
		if failManifest.Load() && strings.Contains(op.Path, "MANIFEST") && op.Kind.IsWrite() {
			return vfs.ErrInjected
		}
		return nil
	}))
	db, err := Open("db", &Options{FS: fs, ValueLogFileSize: 64 << 10})
	require.NoError(t, err)
	failManifest.Store(true)
	acked := 0
	for i := 0; i < 100; i++ { // the value log rolls at about 32 values
		if err := db.Set([]byte(fmt.Sprintf("k%04d", i)), sepValue(i), Sync); err != nil {
			require.ErrorIs(t, err, vfs.ErrInjected)
			break
		}
		acked++
	}
	require.Less(t, acked, 100, "the value log never rolled")
	require.Positive(t, acked)
	_ = db.Close()
	failManifest.Store(false)

	db, err = Open("db", &Options{FS: mem})
	require.NoError(t, err)
	for i := 0; i < acked; i++ {
		got, err := db.Get([]byte(fmt.Sprintf("k%04d", i)))
		require.NoError(t, err, "acknowledged write %d lost", i)
		require.Equal(t, sepValue(i), got)
	}
	require.NoError(t, currentVersion(db).CheckLedger())
	require.NoError(t, db.Close())
}

// TestAdoptedValueLogLedger: a value log written at commit that a crash
// left without its footer is adopted by recovery; once its values reach
// tables, the garbage ledger must count its records exactly: live bytes
// plus garbage equal the bytes its records take, which for a file without
// a footer are its size less the header only. (Found by strata
// crashtest's check: the ledger took a footer's 44 bytes off such a file,
// so a wholly live one had more live bytes than records.)
func TestAdoptedValueLogLedger(t *testing.T) {
	fs := vfs.NewMem()
	db, err := Open("db", &Options{FS: fs, DisableAutomaticCompactions: true, DisableGC: true})
	require.NoError(t, err)
	for i := 0; i < 20; i++ {
		require.NoError(t, db.Set([]byte(fmt.Sprintf("k%04d", i)), sepValue(i), Sync))
	}
	crashed := fs.CrashClone(vfs.CrashOptions{})
	require.NoError(t, db.Close())

	db, err = Open("db", &Options{FS: crashed, DisableAutomaticCompactions: true, DisableGC: true})
	require.NoError(t, err)
	require.NoError(t, db.Flush())
	db.mu.Lock()
	v := db.vs.Current()
	l := db.ledgerLocked(v)
	db.mu.Unlock()
	adopted := 0
	for _, f := range l.Files {
		if f.Live == 0 {
			continue
		}
		adopted++
		require.Equal(t, f.RecordBytes, f.Live+f.Garbage(), "value log %s: live %d + garbage %d != records %d", f.FileNum, f.Live, f.Garbage(), f.RecordBytes)
		require.Equal(t, f.RecordBytes, f.Live, "value log %s: every record is live", f.FileNum)
	}
	require.Equal(t, 1, adopted)
	require.NoError(t, db.Close())

	// The exact count survives a reopen (it is in the manifest).
	db, err = Open("db", &Options{FS: crashed, DisableAutomaticCompactions: true, DisableGC: true})
	require.NoError(t, err)
	db.mu.Lock()
	l = db.ledgerLocked(db.vs.Current())
	db.mu.Unlock()
	for _, f := range l.Files {
		if f.Live > 0 {
			require.Equal(t, f.RecordBytes, f.Live, "after reopen: value log %s", f.FileNum)
		}
	}
	require.NoError(t, db.Close())
}

// TestReplayFlushFoldsMergeOntoAdoptedValue: a separated value written at
// commit, merge operands onto it, and a crash before the value log reached
// the manifest. The reopen's memtable is smaller, so the replay writes a
// full memtable to L0 while it still replays; that flush folds the
// operands onto the value, which lies in a value log recovery adopts (the
// manifest lists it only from the recovery edit on). The fold must read it
// there: it did not, and every read-write Open failed with "a value pointer
// into a value log the database does not hold". (Found by strata
// crashtest with merges.)
func TestReplayFlushFoldsMergeOntoAdoptedValue(t *testing.T) {
	fs := vfs.NewMem()
	opts := func(memtable int64) *Options {
		return &Options{FS: fs, Merger: ListAppend, ValueThreshold: 512, MemTableSize: memtable, ValueLogFileSize: 64 << 20,
			DisableAutomaticCompactions: true, DisableGC: true}
	}
	db, err := Open("db", opts(64<<20))
	require.NoError(t, err)
	base := ListElement(nil, sepValue(1))
	require.NoError(t, db.Set([]byte("k"), base, Sync))
	want := append([]byte(nil), base...)
	for i := 0; i < 5; i++ {
		op := ListElement(nil, []byte(fmt.Sprintf("op%d", i)))
		require.NoError(t, db.Merge([]byte("k"), op, Sync))
		want = append(want, op...)
	}
	// Enough more writes that the reopen's 16 KiB memtable fills while
	// replaying them, with k still in it.
	for i := 0; i < 2000; i++ {
		require.NoError(t, db.Set([]byte(fmt.Sprintf("z%04d", i)), sepValue(i), NoSync))
	}
	require.NoError(t, db.Merge([]byte("k2"), ListElement(nil, []byte("last")), Sync))
	crashed := fs.CrashClone(vfs.CrashOptions{})
	require.NoError(t, db.Close())

	fs = crashed
	db, err = Open("db", opts(16<<10))
	require.NoError(t, err)
	require.Positive(t, db.Metrics().Levels[0].Files, "the replay flushed nothing")
	got, err := db.Get([]byte("k"))
	require.NoError(t, err)
	require.Equal(t, want, got)
	for i := 0; i < 2000; i++ {
		got, err := db.Get([]byte(fmt.Sprintf("z%04d", i)))
		require.NoError(t, err)
		require.Equal(t, sepValue(i), got)
	}
	require.NoError(t, currentVersion(db).CheckLedger())
	require.NoError(t, db.Close())

	db, err = Open("db", opts(16<<10))
	require.NoError(t, err)
	got, err = db.Get([]byte("k"))
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.NoError(t, db.Close())
}
