package checkpoint

import (
	"io"
	"os"
	"syscall"
	"testing"

	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

func forEachFS(t *testing.T, f func(t *testing.T, fs vfs.FS, dir string)) {
	t.Run("disk", func(t *testing.T) { f(t, vfs.Default, t.TempDir()) })
	t.Run("mem", func(t *testing.T) {
		fs := vfs.NewMem()
		require.NoError(t, fs.MkdirAll("test", 0o755))
		f(t, fs, "test")
	})
}

func writeFile(t *testing.T, fs vfs.FS, name, data string) {
	t.Helper()
	f, err := fs.Create(name)
	require.NoError(t, err)
	_, err = f.Write([]byte(data))
	require.NoError(t, err)
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

// crossDevice fails every link as a link across devices does, so
// linkOrCopy takes its copy path.
func crossDevice(fs vfs.FS) vfs.FS {
	return vfs.NewErrorFS(fs, vfs.InjectorFunc(func(op vfs.Op) error {
		if op.Kind == vfs.OpLink {
			return &os.LinkError{Op: "link", Old: op.Path, New: op.NewPath, Err: syscall.EXDEV}
		}
		return nil
	}))
}

// TestLinkOrCopyNeverTruncates: whatever already exists at the destination
// (a hard link to the source itself, or another file), linkOrCopy fails
// and leaves both files as they were, on the link path and on the copy
// path.
func TestLinkOrCopyNeverTruncates(t *testing.T) {
	for _, path := range []string{"link", "copy"} {
		t.Run(path, func(t *testing.T) {
			forEachFS(t, func(t *testing.T, inner vfs.FS, dir string) {
				fs := inner
				if path == "copy" {
					fs = crossDevice(inner)
				}
				src := inner.PathJoin(dir, "000001.sst")
				writeFile(t, inner, src, "live table")

				// The destination is already a hard link to the source,
				// as after another checkpoint linked it.
				linked := inner.PathJoin(dir, "linked")
				require.NoError(t, inner.Link(src, linked))
				require.ErrorIs(t, linkOrCopy(fs, src, linked), os.ErrExist)
				require.Equal(t, "live table", readFile(t, inner, src))
				require.Equal(t, "live table", readFile(t, inner, linked))

				// The destination is some other file.
				other := inner.PathJoin(dir, "other")
				writeFile(t, inner, other, "other contents")
				require.ErrorIs(t, linkOrCopy(fs, src, other), os.ErrExist)
				require.Equal(t, "other contents", readFile(t, inner, other))
				require.Equal(t, "live table", readFile(t, inner, src))
			})
		})
	}
}

// TestLinkOrCopyCopies: when the link is impossible, linkOrCopy makes an
// independent copy.
func TestLinkOrCopyCopies(t *testing.T) {
	forEachFS(t, func(t *testing.T, inner vfs.FS, dir string) {
		src, dst := inner.PathJoin(dir, "000001.vlog"), inner.PathJoin(dir, "copy")
		writeFile(t, inner, src, "live value log")
		require.NoError(t, linkOrCopy(crossDevice(inner), src, dst))
		require.Equal(t, "live value log", readFile(t, inner, dst))
		// It is a copy, not a link: changing one leaves the other.
		writeFile(t, inner, dst, "changed")
		require.Equal(t, "live value log", readFile(t, inner, src))
	})
}

// TestLinkOrCopyFailingCopyRemovesOnlyItsFile: a copy that fails part way
// removes the partial file it created, and nothing else.
func TestLinkOrCopyFailingCopyRemovesOnlyItsFile(t *testing.T) {
	forEachFS(t, func(t *testing.T, inner vfs.FS, dir string) {
		src, dst := inner.PathJoin(dir, "000001.sst"), inner.PathJoin(dir, "copy")
		writeFile(t, inner, src, "live table")
		fs := vfs.NewErrorFS(inner, vfs.InjectorFunc(func(op vfs.Op) error {
			switch {
			case op.Kind == vfs.OpLink:
				return &os.LinkError{Op: "link", Old: op.Path, New: op.NewPath, Err: syscall.EXDEV}
			case op.Kind == vfs.OpSync && op.Path == dst:
				return syscall.EIO
			}
			return nil
		}))
		require.ErrorIs(t, linkOrCopy(fs, src, dst), syscall.EIO)
		_, err := inner.Stat(dst)
		require.ErrorIs(t, err, os.ErrNotExist)
		require.Equal(t, "live table", readFile(t, inner, src))
	})
}
