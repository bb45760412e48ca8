package tool

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// testValue is key i's value in generation gen: every other one large
// enough to go to a value log.
func testValue(i, gen int) string {
	v := fmt.Sprintf("v%d.%d-", i, gen)
	if i%2 == 0 {
		v += strings.Repeat("x", 300)
	}
	return v
}

func testKey(i int) string { return fmt.Sprintf("key%05d", i) }

func testOptions(fs vfs.FS) *strata.Options {
	return &strata.Options{FS: fs, ValueThreshold: 100, MemTableSize: 64 << 10, ValueLogFileSize: 64 << 10, Compression: "none", Merger: strata.ListAppend}
}

// makeDB builds a database in dir with tables in several levels, value
// logs, deletions, a range deletion, and writes left in the WAL only (with
// values in a value log the manifest does not list), and returns what it
// holds. With crash set, dir is a copy of the files taken while the writer
// still has them open, with nothing running in the background: what a
// kill of the writer would leave.
func makeDB(t *testing.T, fs vfs.FS, dir string, crash bool) map[string]string {
	t.Helper()
	opts := testOptions(fs)
	live := dir
	if crash {
		live = dir + ".live"
		opts.DisableAutomaticCompactions = true
		opts.DisableGC = true
	}
	db, err := strata.Open(live, opts)
	require.NoError(t, err)
	want := make(map[string]string)
	for i := 0; i < 2000; i++ {
		require.NoError(t, db.Set([]byte(testKey(i)), []byte(testValue(i, 0)), strata.NoSync))
		want[testKey(i)] = testValue(i, 0)
	}
	require.NoError(t, db.Compact(nil, nil))
	for i := 0; i < 2000; i += 3 {
		require.NoError(t, db.Set([]byte(testKey(i)), []byte(testValue(i, 1)), strata.NoSync))
		want[testKey(i)] = testValue(i, 1)
	}
	require.NoError(t, db.Flush())
	require.NoError(t, db.Delete([]byte(testKey(5)), strata.NoSync))
	delete(want, testKey(5))
	require.NoError(t, db.DeleteRange([]byte(testKey(100)), []byte(testKey(110)), strata.NoSync))
	for i := 100; i < 110; i++ {
		delete(want, testKey(i))
	}
	require.NoError(t, db.Flush())
	for i := 0; i < 2000; i += 7 {
		require.NoError(t, db.Set([]byte(testKey(i)), []byte(testValue(i, 2)), strata.NoSync))
		want[testKey(i)] = testValue(i, 2)
	}
	require.NoError(t, db.DeleteRange([]byte(testKey(1990)), []byte(testKey(1995)), strata.NoSync))
	for i := 1990; i < 1995; i++ {
		delete(want, testKey(i))
	}
	// A value with a time to live (a day: it does not expire during the
	// test), large enough to be separated, and a list built by merges.
	require.NoError(t, db.SetWithTTL([]byte("ttl"), []byte(testValue(0, 7)), 24*time.Hour, strata.NoSync))
	want["ttl"] = testValue(0, 7)
	require.NoError(t, db.Merge([]byte("list"), strata.ListElement(nil, []byte("a")), strata.NoSync))
	require.NoError(t, db.Merge([]byte("list"), strata.ListElement(nil, []byte("b")), strata.NoSync))
	want["list"] = string(strata.ListElement(strata.ListElement(nil, []byte("a")), []byte("b")))
	require.NoError(t, db.Set([]byte("last"), []byte(testValue(0, 9)), strata.Sync))
	want["last"] = testValue(0, 9)
	if !crash {
		require.NoError(t, db.Close())
		return want
	}
	t.Cleanup(func() { db.Close() })
	require.NoError(t, fs.MkdirAll(dir, 0o755))
	names, err := fs.List(live)
	require.NoError(t, err)
	for _, name := range names {
		if name == "LOCK" {
			continue
		}
		src, err := fs.Open(fs.PathJoin(live, name))
		require.NoError(t, err)
		dst, err := fs.Create(fs.PathJoin(dir, name))
		require.NoError(t, err)
		_, err = io.Copy(dst, src)
		require.NoError(t, err)
		require.NoError(t, dst.Close())
		require.NoError(t, src.Close())
	}
	return want
}

// run runs the tool with args, and the merger makeDB's databases need,
// and returns its exit status and output.
func run(t *testing.T, fs vfs.FS, args ...string) (int, string) {
	t.Helper()
	return runArgs(t, fs, append([]string{"--merger", "list"}, args...)...)
}

// runArgs runs the tool with args as they are.
func runArgs(t *testing.T, fs vfs.FS, args ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	tl := &Tool{FS: fs, Stdout: &out, Stderr: &out}
	code := tl.Run(args)
	return code, out.String()
}

func openDB(dir string, o *strata.Options) (*strata.DB, error) { return strata.Open(dir, o) }

// contains is require.Contains that prints at most the start of a long
// output.
func contains(t *testing.T, out, want string) {
	t.Helper()
	if !strings.Contains(out, want) {
		if len(out) > 3000 {
			out = out[:3000] + "..."
		}
		t.Fatalf("output does not contain %q:\n%s", want, out)
	}
}
