package tool

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/lsm/sstable"
	"github.com/strata-db/strata/vfs"
	"github.com/strata-db/strata/vlog"
	"github.com/stretchr/testify/require"
)

// TestCheckHealthy: check passes on a database closed cleanly and on one
// abandoned with writes in the WAL only and values in a value log the
// manifest does not list, and changes nothing.
func TestCheckHealthy(t *testing.T) {
	for _, crash := range []bool{false, true} {
		dir := t.TempDir() + "/db"
		want := makeDB(t, vfs.Default, dir, crash)
		before := dirFiles(t, dir)
		code, out := run(t, vfs.Default, "check", dir)
		require.Equal(t, 0, code, out)
		require.Contains(t, out, "\nOK\n")
		require.NotContains(t, out, "PROBLEM")
		r := Check(vfs.Default, dir, &strata.Options{Merger: strata.ListAppend})
		require.Equal(t, len(want), r.Keys)
		require.Positive(t, r.Pointers)
		require.Positive(t, r.Records)
		require.Positive(t, r.Batches)
		require.Equal(t, before, dirFiles(t, dir), "check changed the directory")
		if crash {
			require.Contains(t, out, ".vlog is not in the manifest", "the crash image has a value log written at commit")
		}
	}
}

// dirFiles lists dir's files with their sizes.
func dirFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		info, err := e.Info()
		require.NoError(t, err)
		out = append(out, e.Name()+":"+string(rune('0'+info.Size()%10))+":"+info.ModTime().String())
	}
	return out
}

// filesOf returns the names of dir's files of type typ, largest first.
func filesOf(t *testing.T, dir string, typ base.FileType) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	size := make(map[string]int64)
	for _, e := range entries {
		if ft, _, ok := base.ParseFilename(e.Name()); ok && ft == typ {
			info, _ := e.Info()
			size[e.Name()] = info.Size()
			out = append(out, e.Name())
		}
	}
	slices.SortFunc(out, func(a, b string) int { return int(size[b] - size[a]) })
	return out
}

// liveVlog returns a value log of the manifest that tables point into.
func liveVlog(t *testing.T, dir string) string {
	lv, err := loadVersion(vfs.Default, dir)
	require.NoError(t, err)
	for _, m := range lv.v.SortedVlogs() {
		if lv.v.VlogLive(m.FileNum) > 0 {
			return base.MakeFilename(base.FileTypeVlog, m.FileNum)
		}
	}
	t.Fatal("no value log with live bytes")
	return ""
}

// referencedRecord returns a value log and the offset of a record in it
// that a table's pointer reaches.
func referencedRecord(t *testing.T, dir string) (string, int64) {
	t.Helper()
	lv, err := loadVersion(vfs.Default, dir)
	require.NoError(t, err)
	var name string
	var off int64
	lv.v.Files(func(_ int, f *manifest.FileMetadata) {
		if name != "" {
			return
		}
		file, err := os.Open(filepath.Join(dir, base.MakeFilename(base.FileTypeTable, f.FileNum)))
		require.NoError(t, err)
		r, err := sstable.NewReader(vfsFile{file}, int64(f.Size), sstable.ReaderOptions{FileNum: f.FileNum})
		require.NoError(t, err)
		defer r.Close()
		it := r.NewIter()
		defer it.Close()
		for ok := it.First(); ok; ok = it.Next() {
			if it.Key().Kind() == base.KindValuePointer {
				p, err := vlog.DecodePointer(it.Value())
				require.NoError(t, err)
				name, off = base.MakeFilename(base.FileTypeVlog, p.FileNum), int64(p.Offset)
				return
			}
		}
	})
	require.NotEmpty(t, name, "no table points into a value log")
	return name, off
}

// vfsFile is an *os.File as a vfs.File.
type vfsFile struct{ *os.File }

func (f vfsFile) Sync() error { return f.File.Sync() }

func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	defer f.Close()
	b := make([]byte, 1)
	_, err = f.ReadAt(b, off)
	require.NoError(t, err)
	b[0] ^= 0x10
	_, err = f.WriteAt(b, off)
	require.NoError(t, err)
}

// TestCheckDamaged damages a database in one way at a time and checks
// that check fails with a report naming the file and what is wrong; where
// the damage is in what the full scan reads, the scan fails too.
func TestCheckDamaged(t *testing.T) {
	cases := []struct {
		name   string
		damage func(t *testing.T, dir string) string // returns the file damaged
		want   []string
	}{
		{"table byte flip", func(t *testing.T, dir string) string {
			name := filesOf(t, dir, base.FileTypeTable)[0]
			flipByte(t, filepath.Join(dir, name), 100)
			return name
		}, []string{"block checksum mismatch", "offset 0", "full scan failed after"}},
		{"truncated table", func(t *testing.T, dir string) string {
			name := filesOf(t, dir, base.FileTypeTable)[0]
			p := filepath.Join(dir, name)
			st, err := os.Stat(p)
			require.NoError(t, err)
			require.NoError(t, os.Truncate(p, st.Size()/2))
			return name
		}, []string{"the manifest says"}},
		{"missing table", func(t *testing.T, dir string) string {
			name := filesOf(t, dir, base.FileTypeTable)[0]
			require.NoError(t, os.Remove(filepath.Join(dir, name)))
			return name
		}, []string{"missing from the directory"}},
		{"missing value log", func(t *testing.T, dir string) string {
			name := liveVlog(t, dir)
			require.NoError(t, os.Remove(filepath.Join(dir, name)))
			return name
		}, []string{"value log in the manifest is missing from the directory"}},
		{"value log byte flip", func(t *testing.T, dir string) string {
			name, off := referencedRecord(t, dir)
			flipByte(t, filepath.Join(dir, name), off+8) // inside a record a table points to
			return name
		}, []string{"record checksum mismatch", `.sst: key "`}},
		{"manifest byte flip", func(t *testing.T, dir string) string {
			name := filesOf(t, dir, base.FileTypeManifest)[0]
			flipByte(t, filepath.Join(dir, name), 20)
			return name
		}, []string{"manifest"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir() + "/db"
			makeDB(t, vfs.Default, dir, false)
			name := c.damage(t, dir)
			code, out := run(t, vfs.Default, "check", dir)
			require.Equal(t, 1, code, out)
			require.Contains(t, out, "PROBLEM: ")
			require.NotContains(t, out, "\nOK\n")
			require.Contains(t, out, strings.TrimSuffix(name, ""), "the report names the damaged file")
			for _, w := range c.want {
				require.Contains(t, out, w)
			}
		})
	}
}

// TestCheckShiftedValueLog: a value log whose records moved (a byte cut
// out of its middle, its size kept) fails the check: pointers past the cut
// no longer land on record boundaries.
func TestCheckShiftedValueLog(t *testing.T) {
	dir := t.TempDir() + "/db"
	makeDB(t, vfs.Default, dir, false)
	name := liveVlog(t, dir)
	p := filepath.Join(dir, name)
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	mid := len(b) / 2
	shifted := append(append(append([]byte(nil), b[:mid]...), b[mid+1:]...), 0)
	require.NoError(t, os.WriteFile(p, shifted, 0o644))
	code, out := run(t, vfs.Default, "check", dir)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "PROBLEM: "+name)
	t.Log(out)
}

// TestCheckIngested: check passes on a database holding ingested tables,
// whose value log is unnumbered (linked from a TableWriter's output).
func TestCheckIngested(t *testing.T) {
	root := t.TempDir()
	dir := root + "/db"
	db, err := strata.Open(dir, &strata.Options{ValueThreshold: 100})
	require.NoError(t, err)
	require.NoError(t, db.Set([]byte("a"), []byte("inline"), strata.Sync))
	w, err := strata.NewTableWriter(root+"/ext.sst", &strata.TableWriterOptions{ValueThreshold: 100})
	require.NoError(t, err)
	for _, k := range []string{"b", "c", "d"} {
		require.NoError(t, w.Set([]byte(k), []byte(strings.Repeat(k, 500))))
	}
	require.NoError(t, w.Close())
	require.NoError(t, db.Ingest([]string{root + "/ext.sst"}))
	require.NoError(t, db.Close())
	code, out := run(t, vfs.Default, "check", dir)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "\nOK\n")
	r := Check(vfs.Default, dir, nil)
	require.Equal(t, 4, r.Keys)
	require.Equal(t, 3, r.Pointers)
}

// TestCheckFailsWhenScanFails: a read of check's full scan that fails is a
// problem (exit status 1), never the end of the keys: a merge operand read
// without a merger, with a hint to give one (scan and get say it too), and
// a value log the other checks read but the scan cannot.
func TestCheckFailsWhenScanFails(t *testing.T) {
	t.Run("merge operands without --merger", func(t *testing.T) {
		// The manifest records the built-in merger: the tool reads with it.
		dir := t.TempDir() + "/db"
		makeDB(t, vfs.Default, dir, false)
		code, out := runArgs(t, vfs.Default, "check", dir)
		require.Equal(t, 0, code, out)
		contains(t, out, "\nOK\n")
	})

	t.Run("merge operands of a merger the tool does not have", func(t *testing.T) {
		dir := t.TempDir() + "/db"
		opts := testOptions(vfs.Default)
		opts.Merger = namedMerger{strata.ListAppend, "app.Append"}
		db, err := strata.Open(dir, opts)
		require.NoError(t, err)
		require.NoError(t, db.Set([]byte("a"), []byte("value"), strata.NoSync))
		require.NoError(t, db.Merge([]byte("list"), strata.ListElement(nil, []byte("x")), strata.NoSync))
		require.NoError(t, db.Close())
		code, out := runArgs(t, vfs.Default, "check", dir)
		require.Equal(t, 1, code, out)
		contains(t, out, "PROBLEM: full scan failed after ")
		contains(t, out, "merge operand")
		contains(t, out, "--merger")
		require.NotContains(t, out, "\nOK\n")
		for _, args := range [][]string{{"scan", dir}, {"get", dir, "list"}} {
			code, out := runArgs(t, vfs.Default, args...)
			require.Equal(t, 1, code, "%v:\n%s", args, out)
			contains(t, out, "--merger")
		}
	})

	t.Run("value log the scan cannot read", func(t *testing.T) {
		dir := t.TempDir() + "/db"
		makeDB(t, vfs.Default, dir, false)
		name, _ := referencedRecord(t, dir)
		// check's own pass opens the value log first; the read-only
		// open's scan opens it again, and fails.
		var opens atomic.Int32
		fs := vfs.NewErrorFS(vfs.Default, vfs.InjectorFunc(func(op vfs.Op) error {
			if op.Kind == vfs.OpOpen && filepath.Base(op.Path) == name && opens.Add(1) > 1 {
				return fmt.Errorf("open %s: %w", op.Path, vfs.ErrInjected)
			}
			return nil
		}))
		code, out := run(t, fs, "check", dir)
		require.Equal(t, 1, code, out)
		contains(t, out, "PROBLEM: full scan failed after ")
		contains(t, out, "injected error")
		require.NotContains(t, out, "\nOK\n")
		require.Equal(t, 1, strings.Count(out, "PROBLEM"), "only the scan fails:\n%s", out)
	})
}

// namedMerger is a Merger under another name: one the tool does not know.
type namedMerger struct {
	strata.Merger
	name string
}

func (m namedMerger) Name() string { return m.name }
