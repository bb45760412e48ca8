package strata

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// Tests of Options.ReadOnly: recovery into memory only, nothing written or
// deleted, writes refused, no lock, and reopening in both directions.

func roValue(i, gen int) string {
	v := fmt.Sprintf("value-%d-%d-", i, gen)
	if i%2 == 0 {
		v += strings.Repeat("x", 200) // separated (ValueThreshold 64)
	}
	return v
}

func roOptions(fs vfs.FS) *Options {
	return &Options{FS: fs, ValueThreshold: 64, MemTableSize: 16 << 10, ValueLogFileSize: 64 << 10}
}

// dirState describes every file of dir: name and size, and the contents'
// length, so that a test can tell that nothing changed.
func dirState(t *testing.T, fs vfs.FS, dir string) string {
	t.Helper()
	names, err := fs.List(dir)
	require.NoError(t, err)
	var b strings.Builder
	for _, n := range names {
		st, err := fs.Stat(fs.PathJoin(dir, n))
		require.NoError(t, err)
		fmt.Fprintf(&b, "%s:%d ", n, st.Size())
	}
	return b.String()
}

// writeUnflushed fills db with n keys, flushes half of them, and writes the
// rest (and new generations of some) to the WAL only: values separated at
// commit go to a value log the manifest does not list yet.
func writeUnflushed(t *testing.T, db *DB, n int) map[string]string {
	want := make(map[string]string)
	for i := 0; i < n; i++ {
		k := fmt.Sprintf("k%04d", i)
		require.NoError(t, db.Set([]byte(k), []byte(roValue(i, 0)), Sync))
		want[k] = roValue(i, 0)
		if i == n/2 {
			require.NoError(t, db.Flush())
		}
	}
	for i := 0; i < n; i += 3 {
		k := fmt.Sprintf("k%04d", i)
		require.NoError(t, db.Set([]byte(k), []byte(roValue(i, 1)), Sync))
		want[k] = roValue(i, 1)
	}
	require.NoError(t, db.Delete([]byte("k0001"), Sync))
	delete(want, "k0001")
	require.NoError(t, db.DeleteRange([]byte("k0010"), []byte("k0013"), Sync))
	for i := 10; i < 13; i++ {
		delete(want, fmt.Sprintf("k%04d", i))
	}
	return want
}

// waitQuiet waits until db runs no compaction and garbage collection has
// nothing to do; with no more writes, no file is deleted after that.
func waitQuiet(t *testing.T, db *DB) {
	t.Helper()
	timedOut := false
	timer := time.AfterFunc(time.Minute, func() {
		db.mu.Lock()
		timedOut = true
		db.cond.Broadcast()
		db.mu.Unlock()
	})
	defer timer.Stop()
	db.mu.Lock()
	defer db.mu.Unlock()
	for (db.compactions.running > 0 || !db.gcIdleLocked() || len(db.gc.draining) > 0) && db.bgErr == nil && !timedOut {
		db.cond.Wait()
	}
	require.NoError(t, db.bgErr)
	require.False(t, timedOut, "background work did not settle in a minute")
}

// requireReadOnlyWrites checks that every write fails with ErrReadOnly.
func requireReadOnlyWrites(t *testing.T, db *DB) {
	t.Helper()
	b := db.NewBatch()
	require.NoError(t, b.Set([]byte("a"), []byte("b")))
	for name, err := range map[string]error{
		"Set":         db.Set([]byte("a"), []byte("b"), Sync),
		"SetWithTTL":  db.SetWithTTL([]byte("a"), []byte("b"), time.Hour, Sync),
		"Merge":       db.Merge([]byte("a"), []byte("b"), Sync),
		"Delete":      db.Delete([]byte("a"), NoSync),
		"DeleteRange": db.DeleteRange([]byte("a"), []byte("b"), Sync),
		"Apply":       db.Apply(b, Sync),
		"Apply empty": db.Apply(db.NewBatch(), Sync),
		"Flush":       db.Flush(),
		"Compact":     db.Compact(nil, nil),
		"Checkpoint":  db.Checkpoint("ckpt"),
		"Ingest":      db.Ingest([]string{"ext.sst"}),
	} {
		require.ErrorIs(t, err, ErrReadOnly, name)
	}
}

// TestReadOnlyReopen opens read-only a database whose newest writes are in
// the WAL only (with their values in a value log the manifest does not
// list), while its writer still has it open; then reopens read-write after
// read-only and read-only after read-write. Nothing may change on disk
// while read-only (TestReadOnlyAfterCrash checks that no write is even
// tried).
func TestReadOnlyReopen(t *testing.T) {
	for _, c := range bothFS(t) {
		t.Run(c.name, func(t *testing.T) {
			db, err := Open(c.dir, roOptions(c.fs))
			require.NoError(t, err)
			want := writeUnflushed(t, db, 300)
			// A read-only DB reads the files its manifest named at Open: the
			// writer's compactions and garbage collection, which delete
			// files, must be done first.
			waitQuiet(t, db)

			ro, err := Open(c.dir, &Options{FS: c.fs, ReadOnly: true, ValueThreshold: 64, MemTableSize: 16 << 10})
			require.NoError(t, err, "read-only open beside the writer")
			requireContents(t, ro, nil, want, "read-only")
			requireReadOnlyWrites(t, ro)
			snap := ro.NewSnapshot()
			v, err := snap.Get([]byte("k0003"))
			require.NoError(t, err)
			require.Equal(t, want["k0003"], string(v))
			require.NoError(t, snap.Close())
			require.NotEmpty(t, ro.Metrics().String())
			require.NoError(t, ro.Close())

			// The writer goes on; a read-write open after the read-only one.
			require.NoError(t, db.Set([]byte("k0001"), []byte("again"), Sync))
			want["k0001"] = "again"
			require.NoError(t, db.Close())
			db, err = Open(c.dir, roOptions(c.fs))
			require.NoError(t, err)
			requireContents(t, db, nil, want, "read-only")
			require.NoError(t, db.Set([]byte("k0002"), []byte(roValue(2, 9)), Sync))
			want["k0002"] = roValue(2, 9)
			require.NoError(t, db.Close())

			// Read-only after a clean close, then read-write again.
			before := dirState(t, c.fs, c.dir)
			ro, err = Open(c.dir, &Options{FS: c.fs, ReadOnly: true})
			require.NoError(t, err)
			requireContents(t, ro, nil, want, "read-only")
			require.NoError(t, ro.Close())
			require.Equal(t, before, dirState(t, c.fs, c.dir), "a read-only DB changed the directory")
			db, err = Open(c.dir, roOptions(c.fs))
			require.NoError(t, err)
			requireContents(t, db, nil, want, "read-only")
			require.NoError(t, db.Close())
		})
	}
}

// TestReadOnlyAfterCrash: read-only opens of the state a crash leaves,
// through a filesystem that fails every write, with memtables small enough
// that the replay fills several (a writer would flush them). A read-write
// open afterwards recovers the same contents.
func TestReadOnlyAfterCrash(t *testing.T) {
	mem := vfs.NewMem()
	// The writer's memtables are larger than the read-only DB's.
	big := roOptions(mem)
	big.MemTableSize = 4 << 20
	db, err := Open("db", big)
	require.NoError(t, err)
	want := writeUnflushed(t, db, 300)
	// Many more WAL-only writes than one small memtable holds.
	require.NoError(t, db.Flush())
	for i := 0; i < 600; i++ {
		k := fmt.Sprintf("k%04d", i%300)
		require.NoError(t, db.Set([]byte(k), []byte(roValue(i%300, 2+i/300)), NoSync))
		want[k] = roValue(i%300, 2+i/300)
	}
	require.NoError(t, db.Set([]byte("last"), []byte("sync"), Sync))
	want["last"] = "sync"
	crashed := mem.CrashClone(vfs.CrashOptions{})
	require.NoError(t, db.Close())

	var writes atomic.Int64
	noWrites := vfs.NewErrorFS(crashed, vfs.InjectorFunc(func(op vfs.Op) error {
		if op.Kind.IsWrite() {
			writes.Add(1)
			return fmt.Errorf("read-only test: %s: %w", op, vfs.ErrInjected)
		}
		return nil
	}))
	before := dirState(t, crashed, "db")
	for range 2 {
		ro, err := Open("db", &Options{FS: noWrites, ReadOnly: true, MemTableSize: 16 << 10})
		require.NoError(t, err)
		require.Positive(t, ro.Metrics().MemTable.Immutable, "the replay filled several memtables")
		requireContents(t, ro, nil, want, "read-only")
		requireReadOnlyWrites(t, ro)
		require.NoError(t, ro.Close())
	}
	require.Zero(t, writes.Load(), "a read-only DB tried to write")
	require.Equal(t, before, dirState(t, crashed, "db"))

	db, err = Open("db", roOptions(crashed))
	require.NoError(t, err)
	requireContents(t, db, nil, want, "read-only")
	require.NoError(t, db.Close())
}

// TestReadOnlyOpenErrors: read-only Open creates nothing, so a missing
// directory or database is an error, and ErrorIfExists is refused.
func TestReadOnlyOpenErrors(t *testing.T) {
	for _, c := range bothFS(t) {
		t.Run(c.name, func(t *testing.T) {
			_, err := Open(c.dir, &Options{FS: c.fs, ReadOnly: true})
			require.ErrorIs(t, err, os.ErrNotExist)
			_, err = c.fs.Stat(c.dir)
			require.ErrorIs(t, err, os.ErrNotExist, "read-only Open created the directory")
			require.NoError(t, c.fs.MkdirAll(c.dir, 0o755))
			_, err = Open(c.dir, &Options{FS: c.fs, ReadOnly: true})
			require.ErrorIs(t, err, os.ErrNotExist)
			require.Empty(t, listDir(t, c.fs, c.dir))
			_, err = Open(c.dir, &Options{FS: c.fs, ReadOnly: true, ErrorIfExists: true})
			require.ErrorContains(t, err, "ReadOnly and ErrorIfExists")
		})
	}
}

// TestReadOnlyBesideWriter opens a database read-only, again and again,
// while a writer in the same process writes, flushes, compacts and
// collects garbage in it: each open must succeed (retrying when the
// writer deletes a file it was about to read) and every value it returns
// must be one that was written.
func TestReadOnlyBesideWriter(t *testing.T) {
	dir := t.TempDir() + "/db"
	opts := roOptions(vfs.Default)
	opts.L0CompactionThreshold = 2
	db, err := Open(dir, opts)
	require.NoError(t, err)
	var stop atomic.Bool
	var wg sync.WaitGroup
	// The writer stops before the test's directory is removed, even when
	// the test fails.
	t.Cleanup(func() { stop.Store(true); wg.Wait(); db.Close() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			if err := db.Set([]byte(fmt.Sprintf("k%04d", i%300)), []byte(roValue(i%300, i/300)), NoSync); err != nil {
				t.Error(err)
				return
			}
			if i%500 == 499 {
				if err := db.Flush(); err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()
	for round := 0; round < 20; round++ {
		ro, err := Open(dir, &Options{ReadOnly: true})
		require.NoError(t, err, "round %d", round)
		it, err := ro.NewIter(nil)
		if err != nil {
			// A table deleted by the writer after Open: the documented
			// limit of reading a database in use.
			require.ErrorContains(t, err, "missing from the directory")
			require.NoError(t, ro.Close())
			continue
		}
		for ok := it.First(); ok; ok = it.Next() {
			if it.Value() == nil && it.Error() != nil {
				break // see it.Close below
			}
			k, v := string(it.Key()), string(it.Value())
			i, _ := strconv.Atoi(strings.TrimPrefix(k, "k"))
			var gen int
			_, err := fmt.Sscanf(v, fmt.Sprintf("value-%d-%%d-", i), &gen)
			require.NoError(t, err, "key %s has a value never written: %q", k, v)
			require.Equal(t, roValue(i, gen), v)
		}
		// A file deleted by the writer after Open may fail the scan; that
		// is the documented limit of reading a database in use.
		if err := it.Close(); err != nil {
			require.ErrorContains(t, err, "missing from the directory")
		}
		require.NoError(t, ro.Close())
	}
}

// TestReadOnlyCheckpointAcrossProcesses: a checkpoint directory made
// non-writable is opened read-only by a second process, while the first
// process goes on writing the database it was taken from, and serves
// reads; the second process also opens the live database read-only. As
// root, permissions do not stop writes, so the second process drops to an
// unprivileged user when it can (and the test says so when it cannot; the
// in-process tests above prove through a filesystem that fails every
// write that nothing is written).
func TestReadOnlyCheckpointAcrossProcesses(t *testing.T) {
	if dir := os.Getenv("STRATA_RO_CHILD_CKPT"); dir != "" {
		readOnlyChild(dir, os.Getenv("STRATA_RO_CHILD_LIVE"))
		return
	}
	if testing.Short() {
		t.Skip("spawns a process")
	}
	root := t.TempDir()
	dir := filepath.Join(root, "db")
	ckpt := filepath.Join(root, "ckpt")
	db, err := Open(dir, roOptions(vfs.Default))
	require.NoError(t, err)
	want := writeUnflushed(t, db, 300)
	require.NoError(t, db.Checkpoint(ckpt))
	// The checkpoint and everything in it become read-only.
	names, err := os.ReadDir(ckpt)
	require.NoError(t, err)
	for _, n := range names {
		require.NoError(t, os.Chmod(filepath.Join(ckpt, n.Name()), 0o444))
	}
	require.NoError(t, os.Chmod(ckpt, 0o555))
	t.Cleanup(func() { os.Chmod(ckpt, 0o755) })
	before := dirState(t, vfs.Default, ckpt)

	// The writer keeps writing while the child reads.
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			if err := db.Set([]byte(fmt.Sprintf("k%04d", i%300)), []byte(roValue(i%300, 100+i/300)), NoSync); err != nil {
				t.Error(err)
				return
			}
			if i%1000 == 999 {
				db.Flush()
			}
		}
	}()

	bin := os.Args[0]
	cmd := exec.Command(bin, "-test.run=^TestReadOnlyCheckpointAcrossProcesses$")
	cmd.Env = append(os.Environ(), "STRATA_RO_CHILD_CKPT="+ckpt, "STRATA_RO_CHILD_LIVE="+dir)
	unprivileged := false
	if os.Geteuid() == 0 {
		// Run the child as nobody, so that the permissions bind: it needs
		// to reach the test binary and the directories.
		if copyDir, ok := exposeForNobody(t, root, bin); ok {
			cmd.Path = filepath.Join(copyDir, "child.test")
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
			unprivileged = true
		}
	} else {
		unprivileged = true
	}
	out, err := cmd.CombinedOutput()
	stop.Store(true)
	wg.Wait()
	if !unprivileged {
		t.Logf("running as root without a way to drop privileges: the permissions did not bind (the ErrorFS test covers writes)")
	}
	require.NoError(t, err, "child:\n%s", out)
	t.Logf("child:\n%s", out)
	require.Contains(t, string(out), fmt.Sprintf("child: checkpoint read %d keys", len(want)))
	require.Contains(t, string(out), "child: live database read")
	if unprivileged {
		require.Contains(t, string(out), "child: checkpoint not writable")
	}
	require.Equal(t, before, dirState(t, vfs.Default, ckpt))
	require.NoError(t, db.Close())

	ro, err := Open(ckpt, &Options{ReadOnly: true})
	require.NoError(t, err)
	requireContents(t, ro, nil, want, "read-only")
	require.NoError(t, ro.Close())
}

// exposeForNobody makes root and bin reachable by an unprivileged user: it
// copies bin into root and opens the permissions of root and its parents
// that the test created. ok is false if that cannot be done.
func exposeForNobody(t *testing.T, root, bin string) (string, bool) {
	src, err := os.Open(bin)
	if err != nil {
		return "", false
	}
	defer src.Close()
	dir := filepath.Join(root, "bin")
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", false
	}
	dst, err := os.OpenFile(filepath.Join(dir, "child.test"), os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		return "", false
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return "", false
	}
	if dst.Close() != nil {
		return "", false
	}
	// The test's temporary directories are private: open them (only those
	// under the system's temporary directory, which the test made).
	tmp := os.TempDir()
	for d := root; strings.HasPrefix(d, tmp+string(filepath.Separator)); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			return "", false
		}
	}
	// The live database, which nobody reads but does not write.
	filepath.Walk(filepath.Join(root, "db"), func(p string, info os.FileInfo, err error) error {
		if err == nil && info.IsDir() {
			os.Chmod(p, 0o755)
		}
		return nil
	})
	// A quick probe: can nobody run anything at all?
	probe := exec.Command(filepath.Join(dir, "child.test"), "-test.list=^$")
	probe.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if err := probe.Run(); err != nil {
		t.Logf("cannot run the child as an unprivileged user: %v", err)
		return "", false
	}
	return dir, true
}

// readOnlyChild is the second process: it opens the checkpoint and the
// live database read-only and reads everything.
func readOnlyChild(ckpt, live string) {
	fail := func(format string, args ...any) {
		fmt.Printf("child: "+format+"\n", args...)
		os.Exit(2)
	}
	if f, err := os.Create(filepath.Join(ckpt, "probe")); err == nil {
		f.Close()
		os.Remove(filepath.Join(ckpt, "probe"))
		fmt.Println("child: checkpoint writable (running privileged)")
	} else {
		fmt.Println("child: checkpoint not writable:", errors.Unwrap(err))
	}
	for _, dir := range []string{ckpt, live} {
		// The live database's writer may delete files the read-only DB
		// has not opened yet (see Options.ReadOnly): then read it again.
		for attempt := 1; ; attempt++ {
			n, err := readOnlyScan(dir)
			if err != nil && dir == live && attempt < 5 && strings.Contains(err.Error(), "missing from the directory") {
				continue
			}
			if err != nil {
				fail("%s: %v", dir, err)
			}
			if dir == ckpt {
				fmt.Printf("child: checkpoint read %d keys\n", n)
			} else {
				fmt.Printf("child: live database read (%d keys)\n", n)
			}
			break
		}
	}
	os.Exit(0)
}

// readOnlyScan opens dir read-only, checks every value, and tries a write.
func readOnlyScan(dir string) (int, error) {
	db, err := Open(dir, &Options{ReadOnly: true})
	if err != nil {
		return 0, err
	}
	defer db.Close()
	it, err := db.NewIter(nil)
	if err != nil {
		return 0, err
	}
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		k, v := string(it.Key()), string(it.Value())
		i, _ := strconv.Atoi(strings.TrimPrefix(k, "k"))
		if !strings.HasPrefix(v, fmt.Sprintf("value-%d-", i)) {
			it.Close()
			return 0, fmt.Errorf("key %s: value %q was never written", k, v)
		}
		n++
	}
	if err := it.Close(); err != nil {
		return 0, err
	}
	if err := db.Set([]byte("x"), []byte("y"), Sync); !errors.Is(err, ErrReadOnly) {
		return 0, fmt.Errorf("a write to a read-only DB returned %v", err)
	}
	return n, nil
}
