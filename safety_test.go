package strata

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// Regression tests for data-safety defects in edge paths: recovery with
// options that change it, a missing CURRENT, directory durability, the
// directory lock, calls racing Close, use after Close, the bound on open
// files, and writes after a background error.

// fsCase is a filesystem to run a test on: the in-memory one and the disk.
type fsCase struct {
	name string
	fs   vfs.FS
	dir  string
}

func bothFS(t *testing.T) []fsCase {
	return []fsCase{
		{"mem", vfs.NewMem(), "db"},
		{"disk", vfs.Default, t.TempDir() + "/db"},
	}
}

func requireGet(t *testing.T, db *DB, key, want string) {
	t.Helper()
	got, err := db.Get([]byte(key))
	require.NoError(t, err, "Get(%s)", key)
	require.Equal(t, want, string(got), "Get(%s)", key)
}

// TestReopenDisableWAL switches DisableWAL between runs in both directions:
// a write acknowledged with Sync while the WAL was on must survive a reopen
// with the WAL off (it was replayed into a memtable that was then dropped),
// and the reopen after that with the WAL on again; writes made with the
// WAL off and closed cleanly must survive a reopen with it on.
func TestReopenDisableWAL(t *testing.T) {
	for _, c := range bothFS(t) {
		t.Run(c.name, func(t *testing.T) {
			big := string(bytes.Repeat([]byte("v"), 3000)) // separated
			walOn := &Options{FS: c.fs}
			walOff := &Options{FS: c.fs, DisableWAL: true}

			db, err := Open(c.dir, walOn)
			require.NoError(t, err)
			require.NoError(t, db.Set([]byte("synced"), []byte("1"), Sync))
			require.NoError(t, db.Set([]byte("synced-big"), []byte(big), Sync))
			require.NoError(t, db.Close()) // the writes are only in the WAL

			db, err = Open(c.dir, walOff)
			require.NoError(t, err)
			requireGet(t, db, "synced", "1")
			requireGet(t, db, "synced-big", big)
			require.NoError(t, db.Set([]byte("unlogged"), []byte("2"), nil))
			require.NoError(t, db.Close()) // flushes: nothing lost

			db, err = Open(c.dir, walOn)
			require.NoError(t, err)
			requireGet(t, db, "synced", "1")
			requireGet(t, db, "synced-big", big)
			requireGet(t, db, "unlogged", "2")
			require.NoError(t, db.Set([]byte("synced-again"), []byte("3"), Sync))
			require.NoError(t, db.Close())

			for _, o := range []*Options{walOff, walOn} {
				db, err = Open(c.dir, o)
				require.NoError(t, err)
				for k, v := range map[string]string{"synced": "1", "synced-big": big, "unlogged": "2", "synced-again": "3"} {
					requireGet(t, db, k, v)
				}
				require.NoError(t, db.Close())
			}
		})
	}
}

// TestReopenDisableWALAfterCrash: Sync writes, a power loss, and the
// recovery done with the WAL off.
func TestReopenDisableWALAfterCrash(t *testing.T) {
	fs := vfs.NewMem()
	db, err := Open("db", &Options{FS: fs})
	require.NoError(t, err)
	for i := 0; i < 100; i++ {
		require.NoError(t, db.Set([]byte(fmt.Sprintf("k%03d", i)), bytes.Repeat([]byte{byte(i)}, 10*i), Sync))
	}
	crashed := fs.CrashClone(vfs.CrashOptions{})
	require.NoError(t, db.Close())
	for round := 0; round < 2; round++ {
		db, err = Open("db", &Options{FS: crashed, DisableWAL: round == 0})
		require.NoError(t, err)
		for i := 0; i < 100; i++ {
			requireGet(t, db, fmt.Sprintf("k%03d", i), string(bytes.Repeat([]byte{byte(i)}, 10*i)))
		}
		require.NoError(t, db.Close())
	}
}

func listDir(t *testing.T, fs vfs.FS, dir string) []string {
	t.Helper()
	names, err := fs.List(dir)
	require.NoError(t, err)
	slices.Sort(names)
	return names
}

// TestOpenRefusesMissingCurrent: a database directory without CURRENT is
// refused with ErrNoCurrent and left untouched; restoring CURRENT makes it
// open with its data.
func TestOpenRefusesMissingCurrent(t *testing.T) {
	for _, c := range bothFS(t) {
		t.Run(c.name, func(t *testing.T) {
			opts := &Options{FS: c.fs, ValueThreshold: 64}
			db, err := Open(c.dir, opts)
			require.NoError(t, err)
			for i := 0; i < 50; i++ {
				require.NoError(t, db.Set([]byte(fmt.Sprintf("k%02d", i)), bytes.Repeat([]byte("x"), 100), nil))
			}
			require.NoError(t, db.Flush())
			require.NoError(t, db.Set([]byte("in-wal"), []byte("w"), Sync))
			require.NoError(t, db.Close())

			current := c.fs.PathJoin(c.dir, "CURRENT")
			saved := readFile(t, c.fs, current)
			require.NoError(t, c.fs.Remove(current))
			before := listDir(t, c.fs, c.dir)
			for _, o := range []*Options{opts, {FS: c.fs, ErrorIfNotExists: true}} {
				_, err = Open(c.dir, o)
				require.ErrorIs(t, err, ErrNoCurrent)
				require.Equal(t, before, listDir(t, c.fs, c.dir), "a refused Open changed the directory")
			}

			f, err := c.fs.Create(current)
			require.NoError(t, err)
			_, err = f.Write(saved)
			require.NoError(t, err)
			require.NoError(t, f.Close())
			db, err = Open(c.dir, opts)
			require.NoError(t, err)
			requireGet(t, db, "k07", string(bytes.Repeat([]byte("x"), 100)))
			requireGet(t, db, "in-wal", "w")
			require.NoError(t, db.Close())
		})
	}
}

// TestOpenAfterInterruptedCreate: a creation that stopped after writing
// the first manifest but before CURRENT left no data; Open creates the
// database, numbering its files past the stray manifest.
func TestOpenAfterInterruptedCreate(t *testing.T) {
	fs := vfs.NewMem()
	db, err := Open("db", &Options{FS: fs, DisableWAL: true})
	require.NoError(t, err)
	require.NoError(t, db.Close())
	require.NoError(t, fs.Remove("db/CURRENT"))
	db, err = Open("db", &Options{FS: fs})
	require.NoError(t, err)
	require.NoError(t, db.Set([]byte("a"), []byte("1"), Sync))
	require.NoError(t, db.Close())
	db, err = Open("db", &Options{FS: fs})
	require.NoError(t, err)
	requireGet(t, db, "a", "1")
	require.NoError(t, db.Close())
}

// TestOpenSyncsNewDirectories: the entries of the directories Open creates
// must be durable, or a power loss after the first Sync write takes them.
func TestOpenSyncsNewDirectories(t *testing.T) {
	fs := vfs.NewMem()
	db, err := Open("data/nested/db", &Options{FS: fs})
	require.NoError(t, err)
	require.NoError(t, db.Set([]byte("k"), []byte("v"), Sync))
	crashed := fs.CrashClone(vfs.CrashOptions{})
	require.NoError(t, db.Close())
	db, err = Open("data/nested/db", &Options{FS: crashed, ErrorIfNotExists: true})
	require.NoError(t, err)
	requireGet(t, db, "k", "v")
	require.NoError(t, db.Close())
}

// wrapFS is a user's wrapper around a filesystem: it adds nothing but
// Unwrap.
type wrapFS struct{ vfs.FS }

func (w wrapFS) Unwrap() vfs.FS { return w.FS }

// TestLockThroughWrappers: a database is opened once at a time, whatever
// wraps the filesystem it is opened through.
func TestLockThroughWrappers(t *testing.T) {
	for _, c := range bothFS(t) {
		t.Run(c.name, func(t *testing.T) {
			wrappers := []vfs.FS{
				c.fs,
				vfs.NewErrorFS(c.fs, nil),
				wrapFS{c.fs},
				wrapFS{vfs.NewErrorFS(c.fs, nil)},
			}
			for i, first := range wrappers {
				db, err := Open(c.dir, &Options{FS: first})
				require.NoError(t, err)
				for j, second := range wrappers {
					_, err := Open(c.dir, &Options{FS: second})
					require.Error(t, err, "opened twice: through wrapper %d, then %d", i, j)
				}
				require.NoError(t, db.Close())
			}
		})
	}
}

// TestLockAcrossProcesses: another process cannot open a database this one
// has open.
func TestLockAcrossProcesses(t *testing.T) {
	if dir := os.Getenv("STRATA_LOCK_CHILD_DIR"); dir != "" {
		_, err := Open(dir, nil)
		if err == nil {
			fmt.Println("child: opened")
			os.Exit(3)
		}
		fmt.Println("child: refused:", err)
		os.Exit(0)
	}
	dir := t.TempDir() + "/db"
	db, err := Open(dir, nil)
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockAcrossProcesses$")
	cmd.Env = append(os.Environ(), "STRATA_LOCK_CHILD_DIR="+dir)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the child process opened the locked database:\n%s", out)
	require.Contains(t, string(out), "child: refused")
	require.NoError(t, db.Close())
}

// TestCallsRacingClose runs Close in the window after the entry check of
// Flush, Compact and Checkpoint. Each call must end (not wait for ever on
// background work Close stopped) with nil or ErrClosed, and nothing may be
// created in the directory after Close returned.
func TestCallsRacingClose(t *testing.T) {
	defer func() { testHookEntry = nil }()
	for _, op := range []string{"flush", "compact", "checkpoint", "endbulk", "ingest"} {
		for _, walOff := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/disable-wal=%t", op, walOff), func(t *testing.T) {
				fs := vfs.NewMem()
				db, err := Open("db", &Options{FS: fs, DisableWAL: walOff})
				require.NoError(t, err)
				if op == "endbulk" {
					require.NoError(t, db.BeginBulkLoad())
				}
				if op == "ingest" {
					writeExternal(t, fs, "ext.sst", map[string]string{"x": string(bytes.Repeat([]byte("y"), 3000))})
				}
				require.NoError(t, db.Set([]byte("k"), bytes.Repeat([]byte("v"), 2000), NoSync))
				var closeErr atomic.Value
				var atClose []string // the directory when Close returned
				closed := make(chan struct{})
				testHookEntry = func(string) {
					go func() {
						if err := db.Close(); err != nil {
							closeErr.Store(err)
						}
						atClose = listDir(t, fs, "db")
						close(closed)
					}()
					if op == "checkpoint" {
						// Close must wait for this checkpoint: let it
						// begin, then go on.
						for !db.closed.Load() {
							runtime.Gosched()
						}
						return
					}
					<-closed
				}
				done := make(chan error, 1)
				go func() {
					switch op {
					case "flush":
						done <- db.Flush()
					case "compact":
						done <- db.Compact(nil, nil)
					case "checkpoint":
						done <- db.Checkpoint("ckpt")
					case "endbulk":
						done <- db.EndBulkLoad()
					case "ingest":
						done <- db.Ingest([]string{"ext.sst"})
					}
				}()
				var err2 error
				select {
				case err2 = <-done:
				case <-time.After(30 * time.Second):
					t.Fatalf("%s did not return after racing Close", op)
				}
				testHookEntry = nil
				<-closed
				if err2 != nil {
					require.ErrorIs(t, err2, ErrClosed)
				}
				if e := closeErr.Load(); e != nil {
					t.Fatalf("Close: %v", e)
				}
				require.Equal(t, atClose, listDir(t, fs, "db"), "%s created files after Close returned", op)
				if op == "checkpoint" && err2 == nil {
					ck, err := Open("ckpt", &Options{FS: fs})
					require.NoError(t, err)
					requireGet(t, ck, "k", string(bytes.Repeat([]byte("v"), 2000)))
					require.NoError(t, ck.Close())
				}
				db2, err := Open("db", &Options{FS: fs, DisableWAL: walOff})
				require.NoError(t, err)
				if walOff || op != "flush" {
					// Close flushed (WAL off, or a bulk load), or the
					// data is in the WAL.
					requireGet(t, db2, "k", string(bytes.Repeat([]byte("v"), 2000)))
				}
				require.NoError(t, db2.Close())
			})
		}
	}
}

// TestFlushAfterCloseCreatesNoWAL: once Close has returned, a Flush that
// passed its entry check must not create a WAL in the closed directory.
// TestClosed: Closed is false while the DB is open and true from Close on,
// when reads fail with ErrClosed; Metrics still answers.
func TestClosed(t *testing.T) {
	db, err := Open("db", &Options{FS: vfs.NewMem()})
	require.NoError(t, err)
	require.False(t, db.Closed())
	require.NoError(t, db.Set([]byte("k"), []byte("v"), NoSync))
	require.NoError(t, db.Close())
	require.True(t, db.Closed())
	_, err = db.Get([]byte("k"))
	require.ErrorIs(t, err, ErrClosed)
	require.NotNil(t, db.Metrics())
}

func TestFlushAfterCloseCreatesNoWAL(t *testing.T) {
	defer func() { testHookEntry = nil }()
	fs := vfs.NewMem()
	db, err := Open("db", &Options{FS: fs})
	require.NoError(t, err)
	require.NoError(t, db.Set([]byte("k"), []byte("v"), Sync))
	var atClose []string
	testHookEntry = func(string) {
		require.NoError(t, db.Close())
		atClose = listDir(t, fs, "db")
	}
	done := make(chan error, 1)
	go func() { done <- db.Flush() }()
	select {
	case err := <-done:
		require.ErrorIs(t, err, ErrClosed)
	case <-time.After(30 * time.Second):
		t.Fatal("Flush after Close did not return")
	}
	require.Equal(t, atClose, listDir(t, fs, "db"), "Flush after Close created files")
}

// TestIteratorAfterClose: Close reports open iterators and snapshots; from
// then on the iterators fail with ErrClosed (never rows, never a raw file
// error) and open no file.
func TestIteratorAfterClose(t *testing.T) {
	fs := vfs.NewMem()
	db, err := Open("db", &Options{FS: fs, ValueThreshold: 64})
	require.NoError(t, err)
	big := bytes.Repeat([]byte("b"), 200)
	for i := 0; i < 100; i++ {
		require.NoError(t, db.Set([]byte(fmt.Sprintf("k%03d", i)), big, nil))
	}
	require.NoError(t, db.Flush())
	fresh, err := db.NewIter(nil) // has read no value log yet
	require.NoError(t, err)
	used, err := db.NewIter(nil)
	require.NoError(t, err)
	require.True(t, used.First())
	require.Equal(t, big, used.Value())
	require.True(t, used.Next()) // positioned, value not read
	snap := db.NewSnapshot()
	// An iterator on an inline value, and one at its end, make no call
	// between DB.Close and the checks: Valid, Key, Value, Error and Close
	// must still see the DB closed.
	require.NoError(t, db.Set([]byte("inline"), []byte("v"), nil))
	inline, err := db.NewIter(nil)
	require.NoError(t, err)
	require.True(t, inline.SeekGE([]byte("inline")))
	require.Equal(t, []byte("v"), inline.Value())
	ended, err := db.NewIter(nil)
	require.NoError(t, err)
	require.False(t, ended.SeekGE([]byte("z")))
	require.NoError(t, ended.Error())

	err = db.Close()
	require.Error(t, err)
	require.Contains(t, err.Error(), "4 iterators and 1 snapshots still open")

	require.False(t, inline.Valid())
	require.Nil(t, inline.Key())
	require.Nil(t, inline.Value())
	require.ErrorIs(t, inline.Error(), ErrClosed)
	require.ErrorIs(t, inline.Close(), ErrClosed)
	require.ErrorIs(t, ended.Close(), ErrClosed, "an iterator at its end closed after DB.Close")

	require.Nil(t, used.Value())
	require.ErrorIs(t, used.Error(), ErrClosed)
	require.False(t, used.Next())
	require.ErrorIs(t, used.Error(), ErrClosed)
	require.False(t, fresh.First())
	require.ErrorIs(t, fresh.Error(), ErrClosed)
	require.False(t, fresh.SeekGE([]byte("k050")))
	require.ErrorIs(t, fresh.Error(), ErrClosed)
	all, _ := db.files.Len(base.FileTypeVlog)
	require.Zero(t, all, "a reader was opened after Close")
	// Close releases them and reports the error their last calls met.
	require.ErrorIs(t, used.Close(), ErrClosed)
	require.ErrorIs(t, fresh.Close(), ErrClosed)
	_, err = snap.Get([]byte("k001"))
	require.ErrorIs(t, err, ErrClosed)
	require.NoError(t, snap.Close())
	_, err = db.NewIter(nil)
	require.ErrorIs(t, err, ErrClosed)
	s := db.NewSnapshot()
	_, err = s.Get([]byte("k001"))
	require.ErrorIs(t, err, ErrClosed)
}

// TestOpenFilesBounded: MaxOpenFiles bounds value-log readers together
// with tables. 200 overwrites of one key, each flushed, make 200 value
// logs that a full compaction keeps (their garbage is not collected here).
func TestOpenFilesBounded(t *testing.T) {
	fs := vfs.NewMem()
	db, err := Open("db", &Options{FS: fs, ValueThreshold: 64, MaxOpenFiles: 16})
	require.NoError(t, err)
	for i := 0; i < 200; i++ {
		require.NoError(t, db.Set([]byte("key"), bytes.Repeat([]byte{byte(i)}, 100), nil))
		require.NoError(t, db.Set([]byte(fmt.Sprintf("other%03d", i)), bytes.Repeat([]byte{byte(i)}, 100), nil))
		require.NoError(t, db.Flush())
		requireGet(t, db, "key", string(bytes.Repeat([]byte{byte(i)}, 100)))
	}
	require.NoError(t, db.Compact(nil, nil))
	for i := 0; i < 200; i++ {
		requireGet(t, db, fmt.Sprintf("other%03d", i), string(bytes.Repeat([]byte{byte(i)}, 100)))
		all, _ := db.files.Len(base.FileTypeVlog)
		require.LessOrEqual(t, all, 16, "open files past MaxOpenFiles")
	}
	it, err := db.NewIter(nil)
	require.NoError(t, err)
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		require.Len(t, it.Value(), 100)
		n++
	}
	require.NoError(t, it.Error())
	require.Equal(t, 201, n)
	require.NoError(t, it.Close())
	all, _ := db.files.Len(base.FileTypeVlog)
	require.LessOrEqual(t, all, 16, "open files past MaxOpenFiles once the scan is closed")
	require.NoError(t, db.Close())
}

// TestWritesFailAfterBackgroundError: once a flush fails, writes are
// refused (with the WAL off they could never become durable), reads go on,
// and the EventListener hears of the error once.
func TestWritesFailAfterBackgroundError(t *testing.T) {
	for _, walOff := range []bool{false, true} {
		t.Run(fmt.Sprintf("disable-wal=%t", walOff), func(t *testing.T) {
			var failTables atomic.Bool
			fs := vfs.NewErrorFS(vfs.NewMem(), vfs.InjectorFunc(func(op vfs.Op) error {
				if failTables.Load() && op.Kind == vfs.OpCreate && bytes.HasSuffix([]byte(op.Path), []byte(".sst")) {
					return vfs.ErrInjected
				}
				return nil
			}))
			var reported atomic.Int32
			db, err := Open("db", &Options{FS: fs, DisableWAL: walOff,
				EventListener: &EventListener{BackgroundError: func(error) { reported.Add(1) }}})
			require.NoError(t, err)
			require.NoError(t, db.Set([]byte("a"), []byte("1"), Sync))
			failTables.Store(true)
			require.ErrorIs(t, db.Flush(), vfs.ErrInjected)
			for _, o := range []*WriteOptions{Sync, NoSync} {
				err := db.Set([]byte("b"), []byte("2"), o)
				require.ErrorIs(t, err, vfs.ErrInjected, "a write was acknowledged after a background error")
				require.ErrorIs(t, err, ErrWritesStopped)
			}
			b := db.NewBatch()
			b.Set([]byte("c"), []byte("3"))
			require.ErrorIs(t, db.Apply(b, Sync), vfs.ErrInjected)
			requireGet(t, db, "a", "1")
			_, err = db.Get([]byte("b"))
			require.ErrorIs(t, err, ErrNotFound)
			// Flush returned the error after the listener heard of it,
			// once, and Close reports nothing new to it.
			require.Equal(t, int32(1), reported.Load())
			require.Error(t, db.Close())
			require.Equal(t, int32(1), reported.Load())
		})
	}
}

// TestWALWriteErrorIsReported: a failed background WAL write becomes the
// background error and reaches the EventListener.
func TestWALWriteErrorIsReported(t *testing.T) {
	var failWAL atomic.Bool
	fs := vfs.NewErrorFS(vfs.NewMem(), vfs.InjectorFunc(func(op vfs.Op) error {
		if failWAL.Load() && op.Kind == vfs.OpWrite && bytes.HasSuffix([]byte(op.Path), []byte(".log")) {
			return vfs.ErrInjected
		}
		return nil
	}))
	reported := make(chan error, 4)
	db, err := Open("db", &Options{FS: fs, EventListener: &EventListener{BackgroundError: func(err error) { reported <- err }}})
	require.NoError(t, err)
	failWAL.Store(true)
	require.NoError(t, db.Set([]byte("a"), []byte("1"), NoSync)) // the flusher fails later
	select {
	case err := <-reported:
		require.ErrorIs(t, err, vfs.ErrInjected)
	case <-time.After(30 * time.Second):
		t.Fatal("the failed WAL write was never reported")
	}
	err = db.Set([]byte("b"), []byte("2"), NoSync)
	require.ErrorIs(t, err, vfs.ErrInjected)
	require.ErrorIs(t, err, ErrWritesStopped)
	require.Error(t, db.Close())
}

// TestOpenRefusesNewerTableFormat: a table of a format this build does not
// know fails Open, rather than a background compaction after it.
func TestOpenRefusesNewerTableFormat(t *testing.T) {
	fs := vfs.NewMem()
	opts := &Options{FS: fs}
	_, table := oneFileDB(t, opts, 100, 3, base.FileTypeTable)
	name := "db/" + table
	data := readFile(t, fs, name)
	// The footer's format version (u32 at 40 of its 56 bytes) and the
	// checksum over what precedes it, so only the version is "wrong".
	foot := data[len(data)-56:]
	binary.LittleEndian.PutUint32(foot[40:], 4)
	binary.LittleEndian.PutUint32(foot[44:], uint32(xxhash.Sum64(foot[:44])))
	f, err := fs.Create(name)
	require.NoError(t, err)
	_, err = f.Write(data)
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
	_, err = Open("db", opts)
	requireNewerFormat(t, err, "Open")
	require.Contains(t, err.Error(), "format version 4")
	require.Contains(t, err.Error(), table)
}
