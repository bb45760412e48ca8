package strata

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// Recovery reads to decide where the writes that survived a crash end.
// A read that fails there must fail Open, not pass for a torn tail (or
// for a WAL with nothing synced): the replay would stop early and drop
// acknowledged Sync writes for good, since the next Open starts from what
// this one recorded. Each case fails one kind of read; Open must fail,
// and once the disk reads again every synced write is there.

// TestRecoveryValueLogReadError: a read of the value log written at
// commit fails while recovery scans it (it has no footer after a crash).
// The scan's error was taken for its torn tail.
func TestRecoveryValueLogReadError(t *testing.T) {
	fs := vfs.NewMem()
	opts := func(fs vfs.FS) *Options {
		return &Options{FS: fs, DisableAutomaticCompactions: true, DisableGC: true}
	}
	db, err := Open("db", opts(fs))
	require.NoError(t, err)
	for i := 0; i < 20; i++ {
		require.NoError(t, db.Set(fmt.Appendf(nil, "k%04d", i), sepValue(i), Sync))
	}
	crashed := fs.CrashClone(vfs.CrashOptions{})
	require.NoError(t, db.Close())

	var reads atomic.Int64
	_, err = Open("db", opts(failingFS(crashed, func(op vfs.Op) bool {
		// The header, the footer (none), then the scan's first window.
		return op.Kind == vfs.OpReadAt && strings.HasSuffix(op.Path, ".vlog") && reads.Add(1) == 3
	})))
	require.ErrorIs(t, err, vfs.ErrInjected)
	db, err = Open("db", opts(crashed))
	require.NoError(t, err)
	defer db.Close()
	for i := 0; i < 20; i++ {
		v, err := db.Get(fmt.Appendf(nil, "k%04d", i))
		require.NoError(t, err, "synced write %d", i)
		require.Equal(t, sepValue(i), v)
	}
}

// TestRecoveryWALStatError: the last WAL ends torn, and its Stat fails.
// Its size was taken as unknown and the WAL as whole, so it stayed beside
// the next one; after the next crash replay stopped at it, before a Sync
// write made since.
func TestRecoveryWALStatError(t *testing.T) {
	mem := vfs.NewMem()
	opts := func(fs vfs.FS) *Options { return &Options{FS: fs, DisableAutomaticCompactions: true} }
	db, err := Open("db", opts(mem))
	require.NoError(t, err)
	require.NoError(t, db.Set([]byte("a"), []byte("1"), Sync))
	crashed := mem.CrashClone(vfs.CrashOptions{})
	require.NoError(t, db.Close())
	// A torn tail: bytes of a write the crash interrupted.
	path := crashed.PathJoin("db", base.MakeFilename(base.FileTypeLog, liveWAL(t, crashed)))
	data, err := vfs.ReadFile(crashed, path)
	require.NoError(t, err)
	f, err := crashed.Create(path)
	require.NoError(t, err)
	_, err = f.Write(append(data, strings.Repeat("\x5a\xa5torn", 40)...))
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())

	_, err = Open("db", opts(failingFS(crashed, func(op vfs.Op) bool {
		return op.Kind == vfs.OpFileStat && strings.HasSuffix(op.Path, ".log")
	})))
	require.ErrorIs(t, err, vfs.ErrInjected)
	db, err = Open("db", opts(crashed))
	require.NoError(t, err)
	require.NoError(t, db.Set([]byte("b"), []byte("2"), Sync))
	again := crashed.CrashClone(vfs.CrashOptions{})
	require.NoError(t, db.Close())
	db, err = Open("db", opts(again))
	require.NoError(t, err)
	defer db.Close()
	for _, k := range []string{"a", "b"} {
		_, err := db.Get([]byte(k))
		require.NoError(t, err, k)
	}
}

// failingFS is fs with the operations fail matches failing (an I/O error
// matching vfs.ErrInjected).
func failingFS(fs vfs.FS, fail func(vfs.Op) bool) vfs.FS {
	return vfs.NewErrorFS(fs, vfs.InjectorFunc(func(op vfs.Op) error {
		if fail(op) {
			return fmt.Errorf("EIO %s: %w", op, vfs.ErrInjected)
		}
		return nil
	}))
}
