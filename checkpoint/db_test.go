package checkpoint_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// These tests run checkpoints of a real database, on the disk filesystem
// and on the in-memory one.

type fsCase struct {
	name string
	// open returns a filesystem and an existing, empty directory in it.
	open func(t *testing.T) (vfs.FS, string)
}

var fsCases = []fsCase{
	{"disk", func(t *testing.T) (vfs.FS, string) { return vfs.Default, t.TempDir() }},
	{"mem", func(t *testing.T) (vfs.FS, string) {
		fs := vfs.NewMem()
		require.NoError(t, fs.MkdirAll("test", 0o755))
		return fs, "test"
	}},
}

func forEachFS(t *testing.T, f func(t *testing.T, fs vfs.FS, root string)) {
	for _, c := range fsCases {
		t.Run(c.name, func(t *testing.T) {
			fs, root := c.open(t)
			f(t, fs, root)
		})
	}
}

const numKeys = 96

func key(i int) []byte { return []byte(fmt.Sprintf("key%05d", i)) }

// value is 2 KiB, above the default value threshold, so values live in
// value logs and a checkpoint carries tables and value logs.
func value(i int) []byte {
	return bytes.Repeat([]byte(fmt.Sprintf("v%07d", i)), 256)
}

// openLoaded opens a database in dir holding keys 0..numKeys-1, flushed in
// three parts so that it has several tables.
func openLoaded(t *testing.T, fs vfs.FS, dir string) *strata.DB {
	t.Helper()
	db, err := strata.Open(dir, &strata.Options{FS: fs})
	require.NoError(t, err)
	for i := range numKeys {
		require.NoError(t, db.Set(key(i), value(i), strata.NoSync))
		if i%(numKeys/3) == numKeys/3-1 {
			require.NoError(t, db.Flush())
		}
	}
	require.NoError(t, db.Flush())
	return db
}

// requireAllKeys checks that db holds exactly keys 0..numKeys-1 with their
// values, reading every value back.
func requireAllKeys(t *testing.T, db *strata.DB, what string) {
	t.Helper()
	it, err := db.NewIter(nil)
	require.NoError(t, err, what)
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		require.Less(t, n, numKeys, "%s: too many keys", what)
		require.Equal(t, string(key(n)), string(it.Key()), what)
		require.True(t, bytes.Equal(value(n), it.Value()), "%s: value of key %d", what, n)
		n++
	}
	require.NoError(t, it.Error(), what)
	require.NoError(t, it.Close(), what)
	require.Equal(t, numKeys, n, "%s: keys", what)
	for _, i := range []int{0, numKeys / 2, numKeys - 1} {
		v, err := db.Get(key(i))
		require.NoError(t, err, what)
		require.True(t, bytes.Equal(value(i), v), "%s: Get of key %d", what, i)
	}
}

// requireCheckpoint opens the checkpoint in dir and checks that it holds
// every key.
func requireCheckpoint(t *testing.T, fs vfs.FS, dir string) {
	t.Helper()
	cdb, err := strata.Open(dir, &strata.Options{FS: fs, ErrorIfNotExists: true})
	require.NoError(t, err, "open checkpoint %s", dir)
	requireAllKeys(t, cdb, "checkpoint "+dir)
	require.NoError(t, cdb.Close())
}

// requireNoTemp checks that no temporary checkpoint directory is left in
// dir.
func requireNoTemp(t *testing.T, fs vfs.FS, dir string) {
	t.Helper()
	names, err := fs.List(dir)
	require.NoError(t, err)
	for _, n := range names {
		require.NotContains(t, n, ".tmp-", "temporary directory left in %s: %v", dir, names)
	}
}

// TestConcurrentCheckpointsIntoOneDir runs rounds of two to four
// checkpoints into one directory at once. Exactly one of each round must
// succeed; the others must fail without touching the live database, whose
// tables and value logs the checkpoint links to.
func TestConcurrentCheckpointsIntoOneDir(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, root string) {
		dbDir := fs.PathJoin(root, "db")
		db := openLoaded(t, fs, dbDir)
		const rounds = 40
		for round := range rounds {
			dst := fs.PathJoin(root, fmt.Sprintf("ckpt-%02d", round))
			if round%2 == 1 {
				// An existing empty directory is a valid destination too.
				require.NoError(t, fs.MkdirAll(dst, 0o755))
			}
			n := 2 + round%3
			errs := make([]error, n)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for g := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					errs[g] = db.Checkpoint(dst)
				}()
			}
			close(start)
			wg.Wait()
			succeeded := 0
			for _, err := range errs {
				if err == nil {
					succeeded++
					continue
				}
				require.ErrorContains(t, err, "not empty", "round %d", round)
			}
			require.Equal(t, 1, succeeded, "round %d: successful checkpoints (errors %v)", round, errs)
			requireAllKeys(t, db, fmt.Sprintf("live database after round %d", round))
		}
		requireNoTemp(t, fs, root)
		require.NoError(t, db.Close())

		// Reopening reads every table and value log from its file.
		db, err := strata.Open(dbDir, &strata.Options{FS: fs, ErrorIfNotExists: true})
		require.NoError(t, err)
		requireAllKeys(t, db, "reopened live database")
		require.NoError(t, db.Close())
		for round := range rounds {
			requireCheckpoint(t, fs, fs.PathJoin(root, fmt.Sprintf("ckpt-%02d", round)))
		}
	})
}

// writeFile creates name holding data.
func writeFile(t *testing.T, fs vfs.FS, name, data string) {
	t.Helper()
	f, err := fs.Create(name)
	require.NoError(t, err)
	_, err = f.Write([]byte(data))
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
}

func readFile(t *testing.T, fs vfs.FS, name string) string {
	t.Helper()
	f, err := fs.Open(name)
	require.NoError(t, err)
	defer f.Close()
	b, err := io.ReadAll(f)
	require.NoError(t, err)
	return string(b)
}

func listSorted(t *testing.T, fs vfs.FS, dir string) []string {
	t.Helper()
	names, err := fs.List(dir)
	require.NoError(t, err)
	slices.Sort(names)
	return names
}

// TestCheckpointIntoNonEmptyDirLeavesItAlone: a checkpoint into a directory
// that holds something fails and leaves the directory and its contents as
// they were.
func TestCheckpointIntoNonEmptyDirLeavesItAlone(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, root string) {
		db := openLoaded(t, fs, fs.PathJoin(root, "db"))
		defer db.Close()
		dst := fs.PathJoin(root, "mine")
		require.NoError(t, fs.MkdirAll(fs.PathJoin(dst, "sub"), 0o755))
		writeFile(t, fs, fs.PathJoin(dst, "notes"), "keep me")
		writeFile(t, fs, fs.PathJoin(dst, "sub", "more"), "and me")

		require.ErrorContains(t, db.Checkpoint(dst), "not empty")
		require.Equal(t, []string{"mine/notes", "mine/sub", "mine/sub/more"}, walk(t, fs, root, "mine"))
		require.Equal(t, "keep me", readFile(t, fs, fs.PathJoin(dst, "notes")))
		require.Equal(t, "and me", readFile(t, fs, fs.PathJoin(dst, "sub", "more")))
		require.Equal(t, []string{"db", "mine"}, listSorted(t, fs, root))
		requireAllKeys(t, db, "live database")
	})
}

// walk lists every path below root/name, relative to root.
func walk(t *testing.T, fs vfs.FS, root, name string) []string {
	t.Helper()
	var out []string
	var rec func(rel string)
	rec = func(rel string) {
		for _, n := range listSorted(t, fs, fs.PathJoin(root, rel)) {
			p := rel + "/" + n
			out = append(out, p)
			fi, err := fs.Stat(fs.PathJoin(root, p))
			require.NoError(t, err)
			if fi.IsDir() {
				rec(p)
			}
		}
	}
	rec(name)
	return out
}

// TestCheckpointDestinationFilledMeanwhile: when the destination was empty
// at the start but something else filled it while the checkpoint was
// being built, the checkpoint fails and removes only what it made itself.
func TestCheckpointDestinationFilledMeanwhile(t *testing.T) {
	forEachFS(t, func(t *testing.T, inner vfs.FS, root string) {
		dst := inner.PathJoin(root, "ckpt")
		var filled bool
		fs := vfs.NewErrorFS(inner, vfs.InjectorFunc(func(op vfs.Op) error {
			// Just before the finished checkpoint moves into place, someone
			// else puts a file into the destination. (inPlace does the same
			// for a checkpoint written straight into the destination.)
			moving := op.Kind == vfs.OpRename && op.NewPath == dst
			inPlace := op.Kind == vfs.OpLink && inner.PathDir(op.NewPath) == dst
			if (moving || inPlace) && !filled {
				filled = true
				writeFile(t, inner, inner.PathJoin(dst, "other"), "someone else's")
			}
			return nil
		}))
		db := openLoaded(t, fs, fs.PathJoin(root, "db"))
		defer db.Close()
		require.NoError(t, fs.MkdirAll(dst, 0o755))

		err := db.Checkpoint(dst)
		require.True(t, filled)
		require.ErrorContains(t, err, "not empty")
		require.Equal(t, []string{"ckpt/other"}, walk(t, fs, root, "ckpt"))
		require.Equal(t, "someone else's", readFile(t, fs, fs.PathJoin(dst, "other")))
		requireNoTemp(t, fs, root)
		requireAllKeys(t, db, "live database")
	})
}

// TestFailedCheckpointKeepsEmptyDestination: a checkpoint that fails part
// way leaves an existing empty destination in place (it only removes what
// it created) and the live database intact, whichever of its writes fails.
func TestFailedCheckpointKeepsEmptyDestination(t *testing.T) {
	forEachFS(t, func(t *testing.T, inner vfs.FS, root string) {
		ckpts := inner.PathJoin(root, "ckpts")
		inCkpts := func(p string) bool { return p == ckpts || strings.HasPrefix(p, ckpts+"/") }
		// The database's own background work goes through fs too; fail
		// guards the hook, which sees only the checkpoints' writes.
		var mu sync.Mutex
		var hook func(op vfs.Op) error
		setHook := func(h func(op vfs.Op) error) { mu.Lock(); hook = h; mu.Unlock() }
		fs := vfs.NewErrorFS(inner, vfs.InjectorFunc(func(op vfs.Op) error {
			if !op.Kind.IsWrite() || !(inCkpts(op.Path) || inCkpts(op.NewPath)) {
				return nil
			}
			mu.Lock()
			defer mu.Unlock()
			if hook == nil {
				return nil
			}
			return hook(op)
		}))
		db := openLoaded(t, fs, inner.PathJoin(root, "db"))
		defer db.Close()

		// Count the checkpoint's writes.
		var count int
		setHook(func(vfs.Op) error { count++; return nil })
		require.NoError(t, db.Checkpoint(inner.PathJoin(ckpts, "count")))
		setHook(nil)
		require.Greater(t, count, 5)

		for i := range count {
			dst := inner.PathJoin(ckpts, fmt.Sprintf("c%03d", i))
			require.NoError(t, inner.MkdirAll(dst, 0o755))
			var seen int
			var failed vfs.Op
			setHook(func(op vfs.Op) error {
				seen++
				if seen-1 == i {
					failed = op
					return fmt.Errorf("%w: %s", vfs.ErrInjected, op)
				}
				return nil
			})
			err := db.Checkpoint(dst)
			setHook(nil)
			if err == nil {
				// Only a failure after the checkpoint is in place may be
				// missed: there is nothing left to fail.
				continue
			}
			require.ErrorIs(t, err, vfs.ErrInjected, "failing %s", failed)
			fi, statErr := inner.Stat(dst)
			require.NoError(t, statErr, "failing %s removed the destination", failed)
			require.True(t, fi.IsDir())
			if len(listSorted(t, inner, dst)) > 0 {
				// The checkpoint moved into place and then failed (syncing
				// the parent): it must be complete.
				requireCheckpoint(t, inner, dst)
			}
			requireAllKeys(t, db, fmt.Sprintf("live database after failing %s", failed))
		}
		requireNoTemp(t, inner, ckpts)
	})
}

// linkFailFS fails the links made into the checkpoint directories with a
// chosen errno, as a filesystem that cannot link there would.
func linkFailFS(inner vfs.FS, ckpts string, errno syscall.Errno, links *int) *vfs.ErrorFS {
	var mu sync.Mutex
	return vfs.NewErrorFS(inner, vfs.InjectorFunc(func(op vfs.Op) error {
		if op.Kind != vfs.OpLink || !strings.HasPrefix(op.NewPath, ckpts+"/") {
			return nil
		}
		mu.Lock()
		*links++
		mu.Unlock()
		return &os.LinkError{Op: "link", Old: op.Path, New: op.NewPath, Err: errno}
	}))
}

// TestCheckpointCopiesWhenLinkingIsImpossible: when hard links cannot be
// made (across devices, or on a filesystem that does not permit or support
// them), the checkpoint copies the files instead.
func TestCheckpointCopiesWhenLinkingIsImpossible(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EXDEV, syscall.EPERM, syscall.ENOTSUP, syscall.EMLINK} {
		t.Run(errno.Error(), func(t *testing.T) {
			forEachFS(t, func(t *testing.T, inner vfs.FS, root string) {
				ckpts := inner.PathJoin(root, "ckpts")
				var links int
				fs := linkFailFS(inner, ckpts, errno, &links)
				db := openLoaded(t, fs, fs.PathJoin(root, "db"))
				dst := fs.PathJoin(ckpts, "ckpt")
				require.NoError(t, db.Checkpoint(dst))
				require.Greater(t, links, 1, "the checkpoint tried to link its files")
				requireCheckpoint(t, inner, dst)

				// The copies are independent of the live files: the
				// checkpoint still opens once the live database is gone.
				require.NoError(t, db.Close())
				require.NoError(t, inner.RemoveAll(fs.PathJoin(root, "db")))
				requireCheckpoint(t, inner, dst)
			})
		})
	}
}

// TestCheckpointFailsOnOtherLinkErrors: a link error that does not mean
// "cannot link here" (the name exists, an I/O error, no access) fails the
// checkpoint instead of being papered over with a copy.
func TestCheckpointFailsOnOtherLinkErrors(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EEXIST, syscall.EIO, syscall.EACCES, syscall.ENOSPC} {
		t.Run(errno.Error(), func(t *testing.T) {
			forEachFS(t, func(t *testing.T, inner vfs.FS, root string) {
				ckpts := inner.PathJoin(root, "ckpts")
				var links int
				fs := linkFailFS(inner, ckpts, errno, &links)
				db := openLoaded(t, fs, fs.PathJoin(root, "db"))
				defer db.Close()
				require.NoError(t, inner.MkdirAll(ckpts, 0o755))
				err := db.Checkpoint(fs.PathJoin(ckpts, "ckpt"))
				require.ErrorIs(t, err, errno)
				require.Equal(t, 1, links, "the checkpoint stopped at the first failed link")
				require.Empty(t, listSorted(t, inner, ckpts), "the failed checkpoint removed what it made")
				requireAllKeys(t, db, "live database")
			})
		})
	}
}
