package strata

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// TestInvertedIterBounds: a lower bound above the upper bound is an error
// from NewIter and Snapshot.NewIter, not an iterator that yields nothing;
// equal bounds are an empty range, and no iterator is left open.
func TestInvertedIterBounds(t *testing.T) {
	db, err := Open("db", &Options{FS: vfs.NewMem()})
	require.NoError(t, err)
	require.NoError(t, db.Set([]byte("b"), []byte("1"), NoSync))
	snap := db.NewSnapshot()
	inverted := &IterOptions{LowerBound: []byte("c"), UpperBound: []byte("a")}
	for _, newIter := range []func(*IterOptions) (*Iterator, error){db.NewIter, snap.NewIter} {
		it, err := newIter(inverted)
		require.ErrorContains(t, err, "inverted")
		require.Nil(t, it)

		it, err = newIter(&IterOptions{LowerBound: []byte("b"), UpperBound: []byte("b")})
		require.NoError(t, err)
		require.False(t, it.First())
		require.NoError(t, it.Close())
	}
	require.NoError(t, snap.Close())
	require.NoError(t, db.Close(), "a refused iterator must not count as open")
}

// TestInvertedDeleteRange: a range deletion whose start is after its end
// (a nil end is the empty key, not "no bound") is refused by DB and Batch,
// as NewIter and Compact refuse such bounds, and writes nothing; equal
// bounds are an empty range that deletes nothing.
func TestInvertedDeleteRange(t *testing.T) {
	db, err := Open("db", &Options{FS: vfs.NewMem()})
	require.NoError(t, err)
	require.NoError(t, db.Set([]byte("b"), []byte("1"), NoSync))
	seq := db.visibleSeq.Load()
	for _, r := range [][2][]byte{{[]byte("c"), []byte("a")}, {[]byte("b"), nil}} {
		err := db.DeleteRange(r[0], r[1], NoSync)
		require.ErrorContains(t, err, fmt.Sprintf("strata: DeleteRange: start %q is after end %q", r[0], r[1]))
		b := db.NewBatch()
		require.ErrorContains(t, b.DeleteRange(r[0], r[1]), "is after end")
		require.Zero(t, b.Len())
	}
	require.Equal(t, seq, db.visibleSeq.Load(), "a refused deletion was written")
	require.NoError(t, db.DeleteRange([]byte("b"), []byte("b"), NoSync))
	b := db.NewBatch()
	require.NoError(t, b.DeleteRange([]byte("b"), []byte("b")))
	require.NoError(t, db.Apply(b, NoSync))
	requireGet(t, db, "b", "1")
	require.NoError(t, db.Close())
}

// TestCorruptionErrorAs: the details of a corruption error are reachable
// through the root package's CorruptionError, however deeply it is wrapped.
func TestCorruptionErrorAs(t *testing.T) {
	err := fmt.Errorf("strata: get: %w", &CorruptionError{File: "000007.sst", Offset: 4096, Detail: "checksum mismatch"})
	require.ErrorIs(t, err, ErrCorruption)
	var ce *CorruptionError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "000007.sst", ce.File)
	require.Equal(t, int64(4096), ce.Offset)
	require.False(t, errors.Is(err, ErrWritesStopped))
}

// TestCloseReportsFailedWALRotation: when closing the old WAL fails as a
// full memtable is rotated, that failure is the background error, and
// Close reports it rather than the "writer closed" of the WAL it had
// already closed.
func TestCloseReportsFailedWALRotation(t *testing.T) {
	var failSync atomic.Bool
	fs := vfs.NewErrorFS(vfs.NewMem(), vfs.InjectorFunc(func(op vfs.Op) error {
		if failSync.Load() && op.Kind == vfs.OpSync && strings.HasSuffix(op.Path, ".log") {
			return vfs.ErrInjected
		}
		return nil
	}))
	db, err := Open("db", &Options{FS: fs, MemTableSize: 16 << 10, ValueThreshold: -1})
	require.NoError(t, err)
	require.NoError(t, db.Set([]byte("a"), []byte("1"), NoSync))
	failSync.Store(true)
	var werr error
	for i := 0; i < 100 && werr == nil; i++ {
		werr = db.Set([]byte(fmt.Sprint("k", i)), make([]byte, 1024), NoSync)
	}
	require.ErrorIs(t, werr, vfs.ErrInjected, "the rotation's failed WAL close fails the write")
	werr = db.Set([]byte("b"), []byte("2"), NoSync)
	require.ErrorIs(t, werr, ErrWritesStopped, "and every write after it")
	require.ErrorIs(t, werr, vfs.ErrInjected)
	err = db.Close()
	require.ErrorIs(t, err, vfs.ErrInjected)
}

// TestOpenRegularFile: Open of a path that is a file, not a directory,
// says so (rather than failing to lock a file inside it), read-write and
// read-only, and leaves the file as it was.
func TestOpenRegularFile(t *testing.T) {
	mem := vfs.NewMem()
	for name, fs := range map[string]vfs.FS{"disk": vfs.Default, "mem": mem} {
		path := "state"
		if fs == vfs.Default {
			path = filepath.Join(t.TempDir(), "state")
		}
		f, err := fs.Create(path)
		require.NoError(t, err)
		_, err = f.Write([]byte("not a database"))
		require.NoError(t, err)
		require.NoError(t, f.Close())
		for _, readOnly := range []bool{false, true} {
			db, err := Open(path, &Options{FS: fs, ReadOnly: readOnly})
			require.Nil(t, db)
			require.EqualError(t, err, "strata: open "+path+": not a directory", "%s, read-only %t", name, readOnly)
			require.ErrorIs(t, err, syscall.ENOTDIR)
		}
		st, err := fs.Stat(path)
		require.NoError(t, err)
		require.False(t, st.IsDir())
		require.EqualValues(t, len("not a database"), st.Size())
	}
}

// TestDocListsErrors: the package documentation lists every exported
// error of the package.
func TestDocListsErrors(t *testing.T) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	require.NoError(t, err)
	var doc string
	var errs []string
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		require.NoError(t, err)
		if name == "doc.go" {
			doc = f.Doc.Text()
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, spec := range g.Specs {
				for _, n := range spec.(*ast.ValueSpec).Names {
					if n.IsExported() && strings.HasPrefix(n.Name, "Err") {
						errs = append(errs, n.Name)
					}
				}
			}
		}
	}
	require.NotEmpty(t, doc)
	require.GreaterOrEqual(t, len(errs), 15)
	for _, e := range errs {
		require.Contains(t, doc, "  - "+e+":", "the package documentation does not list %s", e)
	}
}
