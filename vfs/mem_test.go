package vfs

import (
	"io"
	"math/rand/v2"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

const dirMarker = "<dir>"

func create(t *testing.T, fs FS, name string) File {
	t.Helper()
	f, err := fs.Create(name)
	require.NoError(t, err)
	return f
}

func write(t *testing.T, f File, s string) {
	t.Helper()
	n, err := f.Write([]byte(s))
	require.NoError(t, err)
	require.Equal(t, len(s), n)
}

func syncDir(t *testing.T, fs FS, dir string) {
	t.Helper()
	d, err := fs.OpenDir(dir)
	require.NoError(t, err)
	require.NoError(t, d.Sync())
	require.NoError(t, d.Close())
}

// contents walks fs and returns every path below the root with its file
// contents, or dirMarker for a directory.
func contents(t *testing.T, fs *MemFS) map[string]string {
	t.Helper()
	out := map[string]string{}
	var walk func(dir string)
	walk = func(dir string) {
		names, err := fs.List(dir)
		require.NoError(t, err)
		for _, name := range names {
			p := path.Join(dir, name)
			fi, err := fs.Stat(p)
			require.NoError(t, err)
			if fi.IsDir() {
				out[p] = dirMarker
				walk(p)
				continue
			}
			out[p] = readFile(t, fs, p)
		}
	}
	walk("")
	return out
}

func TestMemPathForms(t *testing.T) {
	fs := NewMem()
	require.NoError(t, fs.MkdirAll("/a//b/", 0o755))
	writeFile(t, fs, "a/b/f", "x")
	for _, name := range []string{"/a/b/f", "a/b/f", "./a/b/../b/f", "a//b/f"} {
		require.Equal(t, "x", readFile(t, fs, name), name)
	}
	for _, root := range []string{"", ".", "/"} {
		require.Equal(t, []string{"a"}, listSorted(t, fs, root), root)
		fi, err := fs.Stat(root)
		require.NoError(t, err)
		require.True(t, fi.IsDir())
	}
	require.Equal(t, "a/b", fs.PathJoin("a", "b"))
	require.Equal(t, "b", fs.PathBase("a/b"))
	require.Equal(t, "a", fs.PathDir("a/b"))

	requirePathError(t, fs.Remove("/"), syscall.EBUSY)
	requirePathError(t, fs.RemoveAll("."), syscall.EINVAL)
	_, err := fs.Create("/")
	requirePathError(t, err, syscall.EISDIR)
	requireLinkError(t, fs.Rename("a", "a/b/c"), syscall.EINVAL)
	requireLinkError(t, fs.Link("a", "x"), syscall.EPERM)
	requireLinkError(t, fs.Rename("a", "/"), syscall.EBUSY)
	_, err = fs.OpenDir("a/b/f")
	requirePathError(t, err, syscall.ENOTDIR)
}

func TestMemDirHandle(t *testing.T) {
	fs := NewMem()
	d, err := fs.OpenDir("")
	require.NoError(t, err)
	_, err = d.Write([]byte("x"))
	requirePathError(t, err, syscall.EBADF)
	_, err = d.ReadAt(make([]byte, 1), 0)
	requirePathError(t, err, syscall.EISDIR)
	require.NoError(t, d.Close())
}

type crashCase struct {
	name  string
	setup func(t *testing.T, fs *MemFS)
	// want is every path the crashed FS holds, with file contents or
	// dirMarker.
	want map[string]string
}

var crashCases = []crashCase{
	{
		name: "unsynced data is lost",
		setup: func(t *testing.T, fs *MemFS) {
			f := create(t, fs, "db/f")
			syncDir(t, fs, "db")
			write(t, f, "abc")
		},
		want: map[string]string{"db": dirMarker, "db/f": ""},
	},
	{
		name: "synced data is kept",
		setup: func(t *testing.T, fs *MemFS) {
			f := create(t, fs, "db/f")
			write(t, f, "abc")
			require.NoError(t, f.Sync())
			write(t, f, "def")
			syncDir(t, fs, "db")
		},
		want: map[string]string{"db": dirMarker, "db/f": "abc"},
	},
	{
		name: "synced file in unsynced directory disappears",
		setup: func(t *testing.T, fs *MemFS) {
			f := create(t, fs, "db/f")
			write(t, f, "abc")
			require.NoError(t, f.Sync())
		},
		want: map[string]string{"db": dirMarker},
	},
	{
		name: "sync through a read-only handle",
		setup: func(t *testing.T, fs *MemFS) {
			writeFile(t, fs, "db/f", "abc")
			syncDir(t, fs, "db")
			r, err := fs.Open("db/f")
			require.NoError(t, err)
			require.NoError(t, r.Sync())
		},
		want: map[string]string{"db": dirMarker, "db/f": "abc"},
	},
	{
		name: "rename is not durable until the directory is synced",
		setup: func(t *testing.T, fs *MemFS) {
			f := create(t, fs, "db/a")
			write(t, f, "abc")
			require.NoError(t, f.Sync())
			syncDir(t, fs, "db")
			require.NoError(t, fs.Rename("db/a", "db/b"))
		},
		want: map[string]string{"db": dirMarker, "db/a": "abc"},
	},
	{
		name: "rename is durable after the directory is synced",
		setup: func(t *testing.T, fs *MemFS) {
			f := create(t, fs, "db/a")
			write(t, f, "abc")
			require.NoError(t, f.Sync())
			syncDir(t, fs, "db")
			require.NoError(t, fs.Rename("db/a", "db/b"))
			syncDir(t, fs, "db")
		},
		want: map[string]string{"db": dirMarker, "db/b": "abc"},
	},
	{
		name: "unsynced rename over a file leaves both as they were",
		setup: func(t *testing.T, fs *MemFS) {
			for _, n := range []string{"a", "b"} {
				f := create(t, fs, "db/"+n)
				write(t, f, n+n)
				require.NoError(t, f.Sync())
			}
			syncDir(t, fs, "db")
			require.NoError(t, fs.Rename("db/a", "db/b"))
		},
		want: map[string]string{"db": dirMarker, "db/a": "aa", "db/b": "bb"},
	},
	{
		name: "rename across directories with only the target synced",
		setup: func(t *testing.T, fs *MemFS) {
			require.NoError(t, fs.MkdirAll("db/x", 0o755))
			require.NoError(t, fs.MkdirAll("db/y", 0o755))
			syncDir(t, fs, "db")
			f := create(t, fs, "db/x/a")
			write(t, f, "abc")
			require.NoError(t, f.Sync())
			syncDir(t, fs, "db/x")
			require.NoError(t, fs.Rename("db/x/a", "db/y/a"))
			syncDir(t, fs, "db/y")
		},
		want: map[string]string{
			"db": dirMarker, "db/x": dirMarker, "db/y": dirMarker,
			"db/x/a": "abc", "db/y/a": "abc",
		},
	},
	{
		name: "removal is not durable until the directory is synced",
		setup: func(t *testing.T, fs *MemFS) {
			f := create(t, fs, "db/f")
			write(t, f, "abc")
			require.NoError(t, f.Sync())
			syncDir(t, fs, "db")
			require.NoError(t, fs.Remove("db/f"))
		},
		want: map[string]string{"db": dirMarker, "db/f": "abc"},
	},
	{
		name: "removal is durable after the directory is synced",
		setup: func(t *testing.T, fs *MemFS) {
			writeFile(t, fs, "db/f", "abc")
			syncDir(t, fs, "db")
			require.NoError(t, fs.Remove("db/f"))
			syncDir(t, fs, "db")
		},
		want: map[string]string{"db": dirMarker},
	},
	{
		name: "a removed file synced through its handle",
		setup: func(t *testing.T, fs *MemFS) {
			f := create(t, fs, "db/f")
			syncDir(t, fs, "db")
			require.NoError(t, fs.Remove("db/f"))
			write(t, f, "abc")
			require.NoError(t, f.Sync())
		},
		want: map[string]string{"db": dirMarker, "db/f": "abc"},
	},
	{
		name: "RemoveAll is not durable until the parent is synced",
		setup: func(t *testing.T, fs *MemFS) {
			require.NoError(t, fs.MkdirAll("db/sub", 0o755))
			syncDir(t, fs, "db")
			f := create(t, fs, "db/sub/f")
			write(t, f, "abc")
			require.NoError(t, f.Sync())
			syncDir(t, fs, "db/sub")
			require.NoError(t, fs.RemoveAll("db/sub"))
		},
		want: map[string]string{"db": dirMarker, "db/sub": dirMarker, "db/sub/f": "abc"},
	},
	{
		name: "mkdir is not durable until the parent is synced",
		setup: func(t *testing.T, fs *MemFS) {
			require.NoError(t, fs.MkdirAll("db", 0o755))
			require.NoError(t, fs.Mkdir("db/a", 0o755))
			require.NoError(t, fs.Mkdir("db/b", 0o755))
			f := create(t, fs, "db/b/f")
			write(t, f, "abc")
			require.NoError(t, f.Sync())
			syncDir(t, fs, "db/b")
			syncDir(t, fs, "db")
			require.NoError(t, fs.Mkdir("db/c", 0o755))
		},
		want: map[string]string{"db": dirMarker, "db/a": dirMarker, "db/b": dirMarker, "db/b/f": "abc"},
	},
	{
		name: "renaming a directory over an empty one is not durable until the parent is synced",
		setup: func(t *testing.T, fs *MemFS) {
			require.NoError(t, fs.MkdirAll("db/empty", 0o755))
			syncDir(t, fs, "")
			syncDir(t, fs, "db")
			require.NoError(t, fs.Mkdir("db/tmp", 0o755))
			writeFile(t, fs, "db/tmp/f", "abc")
			syncDir(t, fs, "db/tmp")
			require.NoError(t, fs.Rename("db/tmp", "db/empty"))
		},
		want: map[string]string{"db": dirMarker, "db/empty": dirMarker},
	},
	{
		name: "renaming a directory over an empty one is durable after the parent is synced",
		setup: func(t *testing.T, fs *MemFS) {
			require.NoError(t, fs.MkdirAll("db/empty", 0o755))
			syncDir(t, fs, "")
			syncDir(t, fs, "db")
			require.NoError(t, fs.Mkdir("db/tmp", 0o755))
			f := create(t, fs, "db/tmp/f")
			write(t, f, "abc")
			require.NoError(t, f.Sync())
			syncDir(t, fs, "db/tmp")
			require.NoError(t, fs.Rename("db/tmp", "db/empty"))
			syncDir(t, fs, "db")
		},
		want: map[string]string{"db": dirMarker, "db/empty": dirMarker, "db/empty/f": "abc"},
	},
	{
		name: "link is not durable until the directory is synced",
		setup: func(t *testing.T, fs *MemFS) {
			f := create(t, fs, "db/a")
			write(t, f, "abc")
			require.NoError(t, f.Sync())
			syncDir(t, fs, "db")
			require.NoError(t, fs.Link("db/a", "db/b"))
		},
		want: map[string]string{"db": dirMarker, "db/a": "abc"},
	},
	{
		name: "data synced through one link is durable under both",
		setup: func(t *testing.T, fs *MemFS) {
			f := create(t, fs, "db/a")
			require.NoError(t, fs.Link("db/a", "db/b"))
			syncDir(t, fs, "db")
			write(t, f, "abc")
			r, err := fs.Open("db/b")
			require.NoError(t, err)
			require.NoError(t, r.Sync())
			write(t, f, "def")
		},
		want: map[string]string{"db": dirMarker, "db/a": "abc", "db/b": "abc"},
	},
	{
		name: "truncation by Create is not durable until the file is synced",
		setup: func(t *testing.T, fs *MemFS) {
			f := create(t, fs, "db/f")
			write(t, f, "old")
			require.NoError(t, f.Sync())
			syncDir(t, fs, "db")
			write(t, create(t, fs, "db/f"), "new!")
		},
		want: map[string]string{"db": dirMarker, "db/f": "old"},
	},
	{
		name: "truncation by Create then sync",
		setup: func(t *testing.T, fs *MemFS) {
			f := create(t, fs, "db/f")
			write(t, f, "old")
			require.NoError(t, f.Sync())
			syncDir(t, fs, "db")
			f = create(t, fs, "db/f")
			write(t, f, "new!")
			require.NoError(t, f.Sync())
		},
		want: map[string]string{"db": dirMarker, "db/f": "new!"},
	},
	{
		name: "overwrite of synced bytes through a stale handle",
		setup: func(t *testing.T, fs *MemFS) {
			stale := create(t, fs, "db/f")
			f := create(t, fs, "db/f")
			write(t, f, "synced")
			require.NoError(t, f.Sync())
			syncDir(t, fs, "db")
			write(t, stale, "XY")
			require.Equal(t, "XYnced", readFile(t, fs, "db/f"))
		},
		want: map[string]string{"db": dirMarker, "db/f": "synced"},
	},
	{
		name: "a directory made by MkdirAll is not durable until its parent is synced",
		setup: func(t *testing.T, fs *MemFS) {
			require.NoError(t, fs.MkdirAll("db/a/b", 0o755))
			writeFile(t, fs, "db/a/f", "x")
		},
		want: map[string]string{"db": dirMarker},
	},
	{
		name: "a directory removed and made again by MkdirAll comes back as it was",
		setup: func(t *testing.T, fs *MemFS) {
			require.NoError(t, fs.MkdirAll("db/sub", 0o755))
			syncDir(t, fs, "db")
			f := create(t, fs, "db/sub/f")
			write(t, f, "abc")
			require.NoError(t, f.Sync())
			syncDir(t, fs, "db/sub")
			require.NoError(t, fs.RemoveAll("db/sub"))
			require.NoError(t, fs.MkdirAll("db/sub", 0o755))
			require.Empty(t, listSorted(t, fs, "db/sub"))
		},
		want: map[string]string{"db": dirMarker, "db/sub": dirMarker, "db/sub/f": "abc"},
	},
	{
		name: "rename of a directory is not durable until the parent is synced",
		setup: func(t *testing.T, fs *MemFS) {
			require.NoError(t, fs.MkdirAll("db/x", 0o755))
			syncDir(t, fs, "db")
			require.NoError(t, fs.Rename("db/x", "db/y"))
		},
		want: map[string]string{"db": dirMarker, "db/x": dirMarker},
	},
	{
		name: "rename of a directory is durable after the parent is synced",
		setup: func(t *testing.T, fs *MemFS) {
			require.NoError(t, fs.MkdirAll("db/x", 0o755))
			syncDir(t, fs, "db")
			require.NoError(t, fs.Rename("db/x", "db/y"))
			syncDir(t, fs, "db")
		},
		want: map[string]string{"db": dirMarker, "db/y": dirMarker},
	},
}

// TestMemMkdirAllDurability checks that a directory made by MkdirAll is
// treated like a file made by Create: its entry is in its parent's current
// entries at once but survives a crash only once the parent is synced, and
// everything below a directory whose entry is lost is lost with it.
func TestMemMkdirAllDurability(t *testing.T) {
	// mkFile makes a/b, creates a/b/f with synced data and syncs a/b, so
	// that only the entries of a and a/b in their parents are in question.
	mkFile := func(t *testing.T, fs *MemFS) {
		require.NoError(t, fs.MkdirAll("a/b", 0o755))
		// Both levels are visible at once.
		require.Equal(t, []string{"a"}, listSorted(t, fs, ""))
		require.Equal(t, []string{"b"}, listSorted(t, fs, "a"))
		f := create(t, fs, "a/b/f")
		write(t, f, "data")
		require.NoError(t, f.Sync())
		require.NoError(t, f.Close())
		syncDir(t, fs, "a/b")
	}
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, fs *MemFS)
		want  map[string]string
	}{
		{
			name:  "no parent synced",
			setup: mkFile,
			want:  map[string]string{},
		},
		{
			name: "root synced",
			setup: func(t *testing.T, fs *MemFS) {
				mkFile(t, fs)
				syncDir(t, fs, "")
			},
			want: map[string]string{"a": dirMarker},
		},
		{
			name: "only a synced",
			setup: func(t *testing.T, fs *MemFS) {
				mkFile(t, fs)
				syncDir(t, fs, "a")
			},
			want: map[string]string{},
		},
		{
			name: "every level synced",
			setup: func(t *testing.T, fs *MemFS) {
				mkFile(t, fs)
				syncDir(t, fs, "a")
				syncDir(t, fs, "")
			},
			want: map[string]string{"a": dirMarker, "a/b": dirMarker, "a/b/f": "data"},
		},
		{
			name: "every level synced, parents first",
			setup: func(t *testing.T, fs *MemFS) {
				require.NoError(t, fs.MkdirAll("a/b", 0o755))
				syncDir(t, fs, "")
				syncDir(t, fs, "a")
				f := create(t, fs, "a/b/f")
				write(t, f, "data")
				require.NoError(t, f.Sync())
				syncDir(t, fs, "a/b")
			},
			want: map[string]string{"a": dirMarker, "a/b": dirMarker, "a/b/f": "data"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := NewMem()
			c.setup(t, fs)
			before := contents(t, fs)
			crashed := fs.CrashClone(CrashOptions{})
			require.Equal(t, c.want, contents(t, crashed), "before the crash:\n%s", fs)
			require.Equal(t, before, contents(t, fs), "cloning changes nothing in the original")
			require.Equal(t, c.want, contents(t, crashed.CrashClone(CrashOptions{})))
			// The root always exists.
			fi, err := crashed.Stat("")
			require.NoError(t, err)
			require.True(t, fi.IsDir())
		})
	}
}

// TestMemMkdirAllExistingChangesNothingDurable checks that MkdirAll of a
// directory that already exists, or of a path below one, makes no existing
// entry durable.
func TestMemMkdirAllExistingChangesNothingDurable(t *testing.T) {
	fs := NewMem()
	require.NoError(t, fs.MkdirAll("a", 0o755))
	syncDir(t, fs, "")
	require.NoError(t, fs.MkdirAll("a/b", 0o755))
	want := map[string]string{"a": dirMarker}
	require.Equal(t, want, contents(t, fs.CrashClone(CrashOptions{})))

	// Again on the whole path, on a prefix of it, and below it: a/b's
	// entry stays not durable, and a/b/c's is not durable either.
	require.NoError(t, fs.MkdirAll("a/b", 0o755))
	require.NoError(t, fs.MkdirAll("a", 0o755))
	require.NoError(t, fs.MkdirAll("", 0o755))
	require.Equal(t, want, contents(t, fs.CrashClone(CrashOptions{})))
	require.NoError(t, fs.MkdirAll("a/b/c", 0o755))
	syncDir(t, fs, "a/b")
	require.Equal(t, want, contents(t, fs.CrashClone(CrashOptions{})))
	require.Contains(t, fs.String(), "a/b/ [entry not durable]")

	// Once durable, MkdirAll of the same path keeps it as it is.
	syncDir(t, fs, "a")
	want = map[string]string{"a": dirMarker, "a/b": dirMarker, "a/b/c": dirMarker}
	require.Equal(t, want, contents(t, fs.CrashClone(CrashOptions{})))
	require.NoError(t, fs.MkdirAll("a/b/c", 0o755))
	require.Equal(t, want, contents(t, fs.CrashClone(CrashOptions{})))
	require.NotContains(t, fs.String(), "not durable")
}

func TestMemCrashClone(t *testing.T) {
	for _, c := range crashCases {
		t.Run(c.name, func(t *testing.T) {
			fs := NewMem()
			require.NoError(t, fs.MkdirAll("db", 0o755))
			syncDir(t, fs, "")
			c.setup(t, fs)
			before := contents(t, fs)
			crashed := fs.CrashClone(CrashOptions{})
			require.Equal(t, c.want, contents(t, crashed), "before the crash:\n%s", fs)
			// Cloning changes nothing in the original.
			require.Equal(t, before, contents(t, fs))
			// Everything in the clone is durable: a second crash loses
			// nothing.
			require.Equal(t, c.want, contents(t, crashed.CrashClone(CrashOptions{})))
		})
	}
}

func TestMemCrashCloneLinksStayShared(t *testing.T) {
	fs := NewMem()
	writeFile(t, fs, "a", "abc")
	require.NoError(t, fs.Link("a", "b"))
	syncDir(t, fs, "")
	crashed := fs.CrashClone(CrashOptions{})
	w := create(t, crashed, "a") // truncates the shared file
	write(t, w, "xy")
	require.Equal(t, "xy", readFile(t, crashed, "b"))
	require.Equal(t, "abc", readFile(t, fs, "b"), "the original is not touched")
}

func TestMemCrashCloneIndependence(t *testing.T) {
	fs := NewMem()
	require.NoError(t, fs.MkdirAll("db", 0o755))
	syncDir(t, fs, "")
	f := create(t, fs, "db/f")
	write(t, f, "one")
	require.NoError(t, f.Sync())
	syncDir(t, fs, "db")

	first := fs.CrashClone(CrashOptions{})
	write(t, f, "two")
	require.NoError(t, f.Sync())
	require.NoError(t, fs.Remove("db/f"))
	syncDir(t, fs, "db")
	second := fs.CrashClone(CrashOptions{})

	// Writes to the original after a clone do not reach the clone.
	require.Equal(t, map[string]string{"db": dirMarker, "db/f": "one"}, contents(t, first))
	require.Equal(t, map[string]string{"db": dirMarker}, contents(t, second))

	// Writes to a clone do not reach the original or other clones.
	w := create(t, first, "db/g")
	write(t, w, "clone")
	require.NoError(t, w.Sync())
	syncDir(t, first, "db")
	a, err := first.Create("db/f")
	require.NoError(t, err)
	write(t, a, "changed")
	require.NoError(t, first.MkdirAll("db/sub", 0o755))

	write(t, f, "three") // the original's handle on the removed file
	require.Equal(t, "onetwothree", func() string {
		b := make([]byte, 64)
		n, _ := f.ReadAt(b, 0)
		return string(b[:n])
	}())
	require.Equal(t, map[string]string{"db": dirMarker}, contents(t, fs))
	require.Equal(t, map[string]string{"db": dirMarker}, contents(t, second))
	require.Equal(t, map[string]string{
		"db": dirMarker, "db/f": "changed", "db/g": "clone", "db/sub": dirMarker,
	}, contents(t, first))
}

func TestMemTornWrites(t *testing.T) {
	const synced, current = "0123456789", "0123456789abcdefghijklmnopqrst"
	fs := NewMem()
	f := create(t, fs, "f")
	write(t, f, synced)
	require.NoError(t, f.Sync())
	write(t, f, current[len(synced):])
	syncDir(t, fs, "")

	lengths := map[int]int{}
	for seed := range uint64(200) {
		crashed := fs.CrashClone(CrashOptions{TornWrites: true, Rand: rand.New(rand.NewPCG(seed, 0))})
		got := readFile(t, crashed, "f")
		require.GreaterOrEqual(t, len(got), len(synced), "seed %d", seed)
		require.True(t, strings.HasPrefix(current, got), "seed %d: %q", seed, got)
		lengths[len(got)]++

		// The same seed replays the same crash.
		again := fs.CrashClone(CrashOptions{TornWrites: true, Rand: rand.New(rand.NewPCG(seed, 0))})
		require.Equal(t, got, readFile(t, again, "f"))
	}
	require.Positive(t, lengths[len(synced)], "sometimes nothing unsynced survives")
	require.Positive(t, lengths[len(current)], "sometimes all of it survives")
	require.Greater(t, len(lengths), 5, "lengths in between survive: %v", lengths)

	// Without TornWrites, only synced data survives; a nil Rand is allowed.
	require.Equal(t, synced, readFile(t, fs.CrashClone(CrashOptions{}), "f"))
	got := readFile(t, fs.CrashClone(CrashOptions{TornWrites: true}), "f")
	require.True(t, strings.HasPrefix(current, got) && len(got) >= len(synced), got)
}

func TestMemTornWritesAfterTruncation(t *testing.T) {
	fs := NewMem()
	f := create(t, fs, "f")
	write(t, f, "old contents")
	require.NoError(t, f.Sync())
	syncDir(t, fs, "")
	write(t, create(t, fs, "f"), "new")
	// g is truncated and nothing is written after.
	g := create(t, fs, "g")
	write(t, g, "old g")
	require.NoError(t, g.Sync())
	syncDir(t, fs, "")
	create(t, fs, "g")

	seen := map[string]bool{}
	for seed := range uint64(100) {
		crashed := fs.CrashClone(CrashOptions{TornWrites: true, Rand: rand.New(rand.NewPCG(seed, 1))})
		got := readFile(t, crashed, "f")
		require.True(t, got == "old contents" || strings.HasPrefix("new", got), "seed %d: %q", seed, got)
		seen["f="+got] = true
		got = readFile(t, crashed, "g")
		require.True(t, got == "old g" || got == "", "seed %d: %q", seed, got)
		seen["g="+got] = true
	}
	require.True(t, seen["f=old contents"] && seen["f=new"] && seen["g=old g"] && seen["g="], "%v", seen)
	require.Equal(t, map[string]string{"f": "old contents", "g": "old g"}, contents(t, fs.CrashClone(CrashOptions{})))
}

func TestMemCrashCloneDurableCycle(t *testing.T) {
	// Renames of directories with their parents synced separately can leave
	// the durable entries with a cycle: p -> A -> p. CrashClone must still
	// terminate, and show each directory once.
	fs := NewMem()
	require.NoError(t, fs.MkdirAll("p/A", 0o755))
	require.NoError(t, fs.MkdirAll("q", 0o755))
	syncDir(t, fs, "")
	syncDir(t, fs, "p")
	require.NoError(t, fs.Rename("p/A", "q/A"))
	syncDir(t, fs, "q")
	require.NoError(t, fs.Rename("p", "q/A/p"))
	syncDir(t, fs, "q/A")
	require.Equal(t, map[string]string{
		"q": dirMarker, "q/A": dirMarker, "q/A/p": dirMarker,
	}, contents(t, fs))

	crashed := fs.CrashClone(CrashOptions{})
	require.Equal(t, map[string]string{
		"p": dirMarker, "p/A": dirMarker, "q": dirMarker,
	}, contents(t, crashed))
	require.NotEmpty(t, fs.String())
}

func TestMemString(t *testing.T) {
	fs := NewMem()
	require.Contains(t, fs.String(), "(empty)")
	require.NoError(t, fs.MkdirAll("db", 0o755))
	syncDir(t, fs, "")
	f := create(t, fs, "db/a")
	write(t, f, "abcd")
	require.NoError(t, f.Sync())
	write(t, f, "ef")
	syncDir(t, fs, "db")
	writeFile(t, fs, "db/new", "x")
	require.NoError(t, fs.Remove("db/a"))
	s := fs.String()
	require.Contains(t, s, "db/\n")
	require.Contains(t, s, "db/a: 6 bytes (4 synced) [removed; removal not durable]")
	require.Contains(t, s, "db/new: 1 bytes (0 synced) [entry not durable]")
}

// TestMemConcurrentReadAtWhileAppending runs readers, an appender and crash
// clones at once; under -race it checks the locking, and the readers check
// that they never see bytes that were not written.
func TestMemConcurrentReadAtWhileAppending(t *testing.T) {
	fs := NewMem()
	w := create(t, fs, "f")
	syncDir(t, fs, "")
	pattern := func(off int64) byte { return byte(off*7 + off/251) }

	var done atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		defer done.Store(true)
		var off int64
		buf := make([]byte, 97)
		for i := range 2000 {
			for j := range buf {
				buf[j] = pattern(off + int64(j))
			}
			_, err := w.Write(buf)
			if err != nil {
				t.Error(err)
				return
			}
			off += int64(len(buf))
			if i%50 == 0 {
				if err := w.Sync(); err != nil {
					t.Error(err)
					return
				}
			}
		}
	})
	check := func(b []byte, off int64) bool {
		for i, c := range b {
			if c != pattern(off+int64(i)) {
				t.Errorf("byte %d is %d, want %d", off+int64(i), c, pattern(off+int64(i)))
				return false
			}
		}
		return true
	}
	for g := range 3 {
		wg.Go(func() {
			r, err := fs.Open("f")
			if err != nil {
				t.Error(err)
				return
			}
			defer r.Close()
			rng := rand.New(rand.NewPCG(uint64(g), 0))
			buf := make([]byte, 300)
			for !done.Load() {
				fi, err := r.Stat()
				if err != nil {
					t.Error(err)
					return
				}
				if fi.Size() == 0 {
					continue
				}
				off := rng.Int64N(fi.Size())
				n, err := r.ReadAt(buf, off)
				if err != nil && err != io.EOF {
					t.Error(err)
					return
				}
				if !check(buf[:n], off) {
					return
				}
			}
		})
	}
	wg.Go(func() {
		for !done.Load() {
			crashed := fs.CrashClone(CrashOptions{TornWrites: true, Rand: rand.New(rand.NewPCG(1, 1))})
			b := []byte(readFile(t, crashed, "f"))
			if !check(b, 0) {
				return
			}
		}
	})
	wg.Wait()
	fi, err := fs.Stat("f")
	require.NoError(t, err)
	require.Equal(t, int64(2000*97), fi.Size())
	require.NoError(t, w.Close())
}

func TestMemReadAfterRemoveAndRecreate(t *testing.T) {
	fs := NewMem()
	writeFile(t, fs, "f", "first")
	r, err := fs.Open("f")
	require.NoError(t, err)
	require.NoError(t, fs.Remove("f"))
	writeFile(t, fs, "f", "second")
	b, err := io.ReadAll(r)
	require.NoError(t, err)
	require.Equal(t, "first", string(b))
	require.Equal(t, "second", readFile(t, fs, "f"))
	require.NoError(t, r.Close())
	fi, err := fs.Stat("f")
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o644), fi.Mode())
	require.Equal(t, int64(len("second")), fi.Size())
}

// TestMemCrashCloneIsOneInstant: a clone taken while another goroutine
// syncs file "a" and then file "b", over and over, never holds a "b" that
// is longer than its "a": no instant had that. (Cloning file by file while
// syncs ran in between produced such states, and a manifest naming a
// value log whose synced data the clone did not have.)
func TestMemCrashCloneIsOneInstant(t *testing.T) {
	fs := NewMem()
	a, err := fs.Create("a")
	require.NoError(t, err)
	b, err := fs.Create("b")
	require.NoError(t, err)
	d, err := fs.Open("")
	require.NoError(t, err)
	require.NoError(t, d.Sync())
	stop := make(chan struct{})
	done := make(chan error)
	go func() {
		for {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			for _, f := range []File{a, b} {
				if _, err := f.Write([]byte{1}); err != nil {
					done <- err
					return
				}
				if err := f.Sync(); err != nil {
					done <- err
					return
				}
			}
		}
	}()
	for i := 0; i < 20000; i++ {
		c := fs.CrashClone(CrashOptions{})
		sa, err := c.Stat("a")
		require.NoError(t, err)
		sb, err := c.Stat("b")
		require.NoError(t, err)
		if sb.Size() > sa.Size() {
			close(stop)
			<-done
			t.Fatalf("clone %d holds b of %d bytes after a of %d: not one instant", i, sb.Size(), sa.Size())
		}
	}
	close(stop)
	require.NoError(t, <-done)
}
