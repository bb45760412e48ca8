package vfs

import (
	"errors"
	"io"
	"os"
	"slices"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// The conformance tests run the same operations on the disk FS and on MemFS
// (bare and wrapped in a pass-through ErrorFS) and expect the same results.

type fsCase struct {
	name string
	// open returns a filesystem and an existing, empty directory in it.
	open func(t *testing.T) (FS, string)
}

var conformanceCases = []fsCase{
	{"disk", func(t *testing.T) (FS, string) { return Default, t.TempDir() }},
	{"mem", func(t *testing.T) (FS, string) {
		fs := NewMem()
		require.NoError(t, fs.MkdirAll("/data/test", 0o755))
		return fs, "/data/test"
	}},
	{"mem-root", func(t *testing.T) (FS, string) { return NewMem(), "" }},
	{"errorfs", func(t *testing.T) (FS, string) {
		fs := NewErrorFS(NewMem(), OnIndex(-1))
		require.NoError(t, fs.MkdirAll("db", 0o755))
		return fs, "db"
	}},
}

func forEachFS(t *testing.T, f func(t *testing.T, fs FS, dir string)) {
	for _, c := range conformanceCases {
		t.Run(c.name, func(t *testing.T) {
			fs, dir := c.open(t)
			f(t, fs, dir)
		})
	}
}

func writeFile(t *testing.T, fs FS, name, data string) {
	t.Helper()
	f, err := fs.Create(name)
	require.NoError(t, err)
	_, err = f.Write([]byte(data))
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

func readFile(t *testing.T, fs FS, name string) string {
	t.Helper()
	f, err := fs.Open(name)
	require.NoError(t, err)
	defer f.Close()
	b, err := io.ReadAll(f)
	require.NoError(t, err)
	return string(b)
}

func listSorted(t *testing.T, fs FS, dir string) []string {
	t.Helper()
	names, err := fs.List(dir)
	require.NoError(t, err)
	slices.Sort(names)
	return names
}

func requirePathError(t *testing.T, err error, target error) {
	t.Helper()
	var pe *os.PathError
	require.ErrorAs(t, err, &pe)
	require.ErrorIs(t, err, target)
}

func requireLinkError(t *testing.T, err error, target error) {
	t.Helper()
	var le *os.LinkError
	require.ErrorAs(t, err, &le)
	require.ErrorIs(t, err, target)
}

func TestConformanceMissing(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs FS, dir string) {
		missing := fs.PathJoin(dir, "missing")
		_, err := fs.Open(missing)
		requirePathError(t, err, os.ErrNotExist)
		_, err = fs.Stat(missing)
		requirePathError(t, err, os.ErrNotExist)
		requirePathError(t, fs.Remove(missing), os.ErrNotExist)
		_, err = fs.List(missing)
		requirePathError(t, err, os.ErrNotExist)
		_, err = fs.OpenDir(missing)
		requirePathError(t, err, os.ErrNotExist)
		_, err = fs.Create(fs.PathJoin(missing, "f"))
		requirePathError(t, err, os.ErrNotExist)
		_, err = fs.CreateExclusive(fs.PathJoin(missing, "f"))
		requirePathError(t, err, os.ErrNotExist)
		requirePathError(t, fs.Mkdir(fs.PathJoin(missing, "d"), 0o755), os.ErrNotExist)
		requireLinkError(t, fs.Rename(missing, fs.PathJoin(dir, "x")), os.ErrNotExist)
		requireLinkError(t, fs.Link(missing, fs.PathJoin(dir, "x")), os.ErrNotExist)
		require.NoError(t, fs.RemoveAll(missing))
		require.NoError(t, fs.RemoveAll(fs.PathJoin(missing, "below")))
	})
}

func TestConformanceOffsets(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs FS, dir string) {
		name := fs.PathJoin(dir, "f")
		w, err := fs.Create(name)
		require.NoError(t, err)
		n, err := w.Write([]byte("hello "))
		require.NoError(t, err)
		require.Equal(t, 6, n)
		_, err = w.Write([]byte("world"))
		require.NoError(t, err)

		// The read-write handle's offset is at the end.
		buf := make([]byte, 4)
		n, err = w.Read(buf)
		require.Equal(t, 0, n)
		require.ErrorIs(t, err, io.EOF)
		// ReadAt ignores the offset.
		n, err = w.ReadAt(buf, 6)
		require.NoError(t, err)
		require.Equal(t, "worl", string(buf[:n]))
		n, err = w.ReadAt(buf, 9)
		require.ErrorIs(t, err, io.EOF)
		require.Equal(t, "ld", string(buf[:n]))
		n, err = w.ReadAt(buf, 100)
		require.ErrorIs(t, err, io.EOF)
		require.Equal(t, 0, n)
		_, err = w.ReadAt(buf, -1)
		require.Error(t, err)

		r, err := fs.Open(name)
		require.NoError(t, err)
		n, err = r.Read(buf)
		require.NoError(t, err)
		require.Equal(t, "hell", string(buf[:n]))
		n, err = r.ReadAt(buf[:2], 0)
		require.NoError(t, err)
		require.Equal(t, "he", string(buf[:n]))
		rest, err := io.ReadAll(r)
		require.NoError(t, err)
		require.Equal(t, "o world", string(rest))

		// A write through another handle is visible to the reader.
		_, err = w.Write([]byte("!"))
		require.NoError(t, err)
		n, err = r.Read(buf)
		require.NoError(t, err)
		require.Equal(t, "!", string(buf[:n]))

		// A read-only handle cannot write.
		_, err = r.Write([]byte("x"))
		require.Error(t, err)

		for _, f := range []File{w, r} {
			fi, err := f.Stat()
			require.NoError(t, err)
			require.Equal(t, int64(12), fi.Size())
			require.Equal(t, "f", fi.Name())
			require.False(t, fi.IsDir())
		}
		fi, err := fs.Stat(name)
		require.NoError(t, err)
		require.Equal(t, int64(12), fi.Size())
		require.NoError(t, w.Close())
		require.NoError(t, r.Close())
	})
}

func TestConformanceCreateTruncates(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs FS, dir string) {
		name := fs.PathJoin(dir, "f")
		old, err := fs.Create(name)
		require.NoError(t, err)
		_, err = old.Write([]byte("0123456789"))
		require.NoError(t, err)

		w, err := fs.Create(name)
		require.NoError(t, err)
		fi, err := fs.Stat(name)
		require.NoError(t, err)
		require.Equal(t, int64(0), fi.Size())
		_, err = w.Write([]byte("ab"))
		require.NoError(t, err)
		// The old handle still writes at its own offset, leaving a hole of
		// zeros.
		_, err = old.Write([]byte("X"))
		require.NoError(t, err)
		require.Equal(t, "ab\x00\x00\x00\x00\x00\x00\x00\x00X", readFile(t, fs, name))
		require.NoError(t, old.Close())
		require.NoError(t, w.Close())
	})
}

func TestConformanceCreateExclusive(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs FS, dir string) {
		name := fs.PathJoin(dir, "f")
		w, err := fs.CreateExclusive(name)
		require.NoError(t, err)
		_, err = w.Write([]byte("first"))
		require.NoError(t, err)
		// The handle reads too, like Create's.
		buf := make([]byte, 5)
		_, err = w.ReadAt(buf, 0)
		require.NoError(t, err)
		require.Equal(t, "first", string(buf))
		require.NoError(t, w.Close())

		// An existing file is neither truncated nor opened.
		_, err = fs.CreateExclusive(name)
		requirePathError(t, err, os.ErrExist)
		require.Equal(t, "first", readFile(t, fs, name))
		// Nor is a second name of a file.
		link := fs.PathJoin(dir, "link")
		require.NoError(t, fs.Link(name, link))
		_, err = fs.CreateExclusive(link)
		requirePathError(t, err, os.ErrExist)
		require.Equal(t, "first", readFile(t, fs, name))
		// Nor a directory.
		sub := fs.PathJoin(dir, "sub")
		require.NoError(t, fs.Mkdir(sub, 0o755))
		_, err = fs.CreateExclusive(sub)
		requirePathError(t, err, os.ErrExist)
		_, err = fs.CreateExclusive(fs.PathJoin(dir, "f", "x"))
		requirePathError(t, err, syscall.ENOTDIR)
	})
}

func TestConformanceMkdir(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs FS, dir string) {
		sub := fs.PathJoin(dir, "sub")
		require.NoError(t, fs.Mkdir(sub, 0o755))
		fi, err := fs.Stat(sub)
		require.NoError(t, err)
		require.True(t, fi.IsDir())
		require.Empty(t, listSorted(t, fs, sub))
		writeFile(t, fs, fs.PathJoin(sub, "f"), "x")

		// An existing name, directory or file, is left as it is.
		requirePathError(t, fs.Mkdir(sub, 0o755), os.ErrExist)
		require.Equal(t, []string{"f"}, listSorted(t, fs, sub))
		requirePathError(t, fs.Mkdir(fs.PathJoin(sub, "f"), 0o755), os.ErrExist)
		require.Equal(t, "x", readFile(t, fs, fs.PathJoin(sub, "f")))
		requirePathError(t, fs.Mkdir(dir, 0o755), os.ErrExist)

		// Only one level is made.
		requirePathError(t, fs.Mkdir(fs.PathJoin(dir, "a", "b"), 0o755), os.ErrNotExist)
		requirePathError(t, fs.Mkdir(fs.PathJoin(sub, "f", "x"), 0o755), syscall.ENOTDIR)
		require.Equal(t, []string{"sub"}, listSorted(t, fs, dir))
	})
}

func TestConformanceListStat(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs FS, dir string) {
		require.Empty(t, listSorted(t, fs, dir))
		writeFile(t, fs, fs.PathJoin(dir, "b"), "bb")
		writeFile(t, fs, fs.PathJoin(dir, "a"), "a")
		sub := fs.PathJoin(dir, "sub", "deeper")
		require.NoError(t, fs.MkdirAll(sub, 0o755))
		require.NoError(t, fs.MkdirAll(sub, 0o755)) // exists: no error
		require.Equal(t, []string{"a", "b", "sub"}, listSorted(t, fs, dir))
		require.Equal(t, []string{"deeper"}, listSorted(t, fs, fs.PathJoin(dir, "sub")))

		fi, err := fs.Stat(fs.PathJoin(dir, "sub"))
		require.NoError(t, err)
		require.True(t, fi.IsDir())
		require.Equal(t, "sub", fi.Name())
		fi, err = fs.Stat(fs.PathJoin(dir, "b"))
		require.NoError(t, err)
		require.False(t, fi.IsDir())
		require.Equal(t, int64(2), fi.Size())

		_, err = fs.List(fs.PathJoin(dir, "a"))
		require.ErrorIs(t, err, syscall.ENOTDIR)
		err = fs.MkdirAll(fs.PathJoin(dir, "a"), 0o755)
		requirePathError(t, err, syscall.ENOTDIR)
		err = fs.MkdirAll(fs.PathJoin(dir, "a", "x"), 0o755)
		requirePathError(t, err, syscall.ENOTDIR)
		_, err = fs.Create(fs.PathJoin(dir, "sub"))
		requirePathError(t, err, syscall.EISDIR)
		_, err = fs.Create(fs.PathJoin(dir, "a", "x"))
		requirePathError(t, err, syscall.ENOTDIR)
		_, err = fs.Stat(fs.PathJoin(dir, "a", "x"))
		requirePathError(t, err, syscall.ENOTDIR)

		d, err := fs.OpenDir(dir)
		require.NoError(t, err)
		require.NoError(t, d.Sync())
		require.NoError(t, d.Close())

		p := fs.PathJoin(dir, "sub", "deeper")
		require.Equal(t, "deeper", fs.PathBase(p))
		require.Equal(t, fs.PathJoin(dir, "sub"), fs.PathDir(p))
	})
}

func TestConformanceRename(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs FS, dir string) {
		a, b := fs.PathJoin(dir, "a"), fs.PathJoin(dir, "b")
		writeFile(t, fs, a, "new")
		writeFile(t, fs, b, "old contents")
		require.NoError(t, fs.Rename(a, b))
		require.Equal(t, "new", readFile(t, fs, b))
		_, err := fs.Stat(a)
		require.ErrorIs(t, err, os.ErrNotExist)
		require.Equal(t, []string{"b"}, listSorted(t, fs, dir))

		// Renaming a file onto a directory fails.
		sub := fs.PathJoin(dir, "sub")
		require.NoError(t, fs.MkdirAll(sub, 0o755))
		requireLinkError(t, fs.Rename(b, sub), syscall.EISDIR)

		// Renaming into another directory.
		moved := fs.PathJoin(sub, "c")
		require.NoError(t, fs.Rename(b, moved))
		require.Equal(t, "new", readFile(t, fs, moved))
		require.Equal(t, []string{"sub"}, listSorted(t, fs, dir))
	})
}

func TestConformanceRenameDirectory(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs FS, dir string) {
		src := fs.PathJoin(dir, "src")
		require.NoError(t, fs.Mkdir(src, 0o755))
		writeFile(t, fs, fs.PathJoin(src, "f"), "data")

		// A directory replaces an empty directory.
		empty := fs.PathJoin(dir, "empty")
		require.NoError(t, fs.Mkdir(empty, 0o755))
		require.NoError(t, fs.Rename(src, empty))
		require.Equal(t, "data", readFile(t, fs, fs.PathJoin(empty, "f")))
		require.Equal(t, []string{"empty"}, listSorted(t, fs, dir))

		// It does not replace a non-empty directory, whose contents stay.
		other := fs.PathJoin(dir, "other")
		require.NoError(t, fs.Mkdir(other, 0o755))
		writeFile(t, fs, fs.PathJoin(other, "g"), "mine")
		err := fs.Rename(empty, other)
		var le *os.LinkError
		require.ErrorAs(t, err, &le)
		require.True(t, errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST), "%v", err)
		require.Equal(t, []string{"g"}, listSorted(t, fs, other))
		require.Equal(t, "mine", readFile(t, fs, fs.PathJoin(other, "g")))
		require.Equal(t, "data", readFile(t, fs, fs.PathJoin(empty, "f")))

		// Nor a file.
		requireLinkError(t, fs.Rename(empty, fs.PathJoin(other, "g")), syscall.ENOTDIR)
		// Nor can it move below itself, even onto an empty directory.
		below := fs.PathJoin(empty, "below")
		require.NoError(t, fs.Mkdir(below, 0o755))
		requireLinkError(t, fs.Rename(empty, below), syscall.EINVAL)
		requireLinkError(t, fs.Rename(empty, fs.PathJoin(below, "x")), syscall.EINVAL)
		// Onto its own parent, which holds it, it finds a non-empty directory.
		requireLinkError(t, fs.Rename(below, empty), syscall.ENOTEMPTY)
		require.Equal(t, []string{"below", "f"}, listSorted(t, fs, empty))
	})
}

func TestConformanceLink(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs FS, dir string) {
		a, b := fs.PathJoin(dir, "a"), fs.PathJoin(dir, "b")
		w, err := fs.Create(a)
		require.NoError(t, err)
		_, err = w.Write([]byte("x"))
		require.NoError(t, err)
		require.NoError(t, fs.Link(a, b))
		requireLinkError(t, fs.Link(a, b), os.ErrExist)

		// Both names are one file.
		_, err = w.Write([]byte("yz"))
		require.NoError(t, err)
		require.Equal(t, "xyz", readFile(t, fs, b))
		require.NoError(t, fs.Remove(a))
		require.Equal(t, "xyz", readFile(t, fs, b))
		require.Equal(t, []string{"b"}, listSorted(t, fs, dir))
		require.NoError(t, w.Close())

		// Renaming one name of a file onto another name of it does nothing.
		require.NoError(t, fs.Link(b, a))
		require.NoError(t, fs.Rename(a, b))
		require.Equal(t, []string{"a", "b"}, listSorted(t, fs, dir))
	})
}

func TestConformanceRemove(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs FS, dir string) {
		sub := fs.PathJoin(dir, "sub")
		require.NoError(t, fs.MkdirAll(sub, 0o755))
		f := fs.PathJoin(sub, "f")
		writeFile(t, fs, f, "data")
		requirePathError(t, fs.Remove(sub), syscall.ENOTEMPTY)

		// A removed file stays readable through an open handle.
		r, err := fs.Open(f)
		require.NoError(t, err)
		require.NoError(t, fs.Remove(f))
		_, err = fs.Stat(f)
		require.ErrorIs(t, err, os.ErrNotExist)
		buf := make([]byte, 4)
		n, err := r.ReadAt(buf, 0)
		require.NoError(t, err)
		require.Equal(t, "data", string(buf[:n]))
		require.NoError(t, r.Close())

		require.NoError(t, fs.Remove(sub))
		require.Empty(t, listSorted(t, fs, dir))

		require.NoError(t, fs.MkdirAll(fs.PathJoin(sub, "x", "y"), 0o755))
		writeFile(t, fs, fs.PathJoin(sub, "x", "f"), "data")
		require.NoError(t, fs.RemoveAll(sub))
		_, err = fs.Stat(sub)
		require.ErrorIs(t, err, os.ErrNotExist)
	})
}

func TestConformanceClosed(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs FS, dir string) {
		f, err := fs.Create(fs.PathJoin(dir, "f"))
		require.NoError(t, err)
		require.NoError(t, f.Close())
		buf := make([]byte, 1)
		_, err = f.Write(buf)
		require.ErrorIs(t, err, os.ErrClosed)
		_, err = f.Read(buf)
		require.ErrorIs(t, err, os.ErrClosed)
		_, err = f.ReadAt(buf, 0)
		require.ErrorIs(t, err, os.ErrClosed)
		require.ErrorIs(t, f.Sync(), os.ErrClosed)
		_, err = f.Stat()
		require.ErrorIs(t, err, os.ErrClosed)
		require.ErrorIs(t, f.Close(), os.ErrClosed)

		d, err := fs.OpenDir(dir)
		require.NoError(t, err)
		require.NoError(t, d.Close())
		require.ErrorIs(t, d.Sync(), os.ErrClosed)
	})
}

func TestConformanceOpenDirectory(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs FS, dir string) {
		d, err := fs.Open(dir)
		require.NoError(t, err)
		_, err = d.Read(make([]byte, 1))
		require.Error(t, err)
		require.False(t, errors.Is(err, io.EOF))
		fi, err := d.Stat()
		require.NoError(t, err)
		require.True(t, fi.IsDir())
		require.NoError(t, d.Sync())
		require.NoError(t, d.Close())
	})
}
