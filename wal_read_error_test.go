package strata

import (
	"fmt"
	"strings"
	"testing"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/record"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// WAL replay reads to decide where the writes that survived a crash end;
// a read that fails there must fail Open rather than pass for a torn tail
// or for a WAL with nothing synced (see also recover_read_error_test.go).

// TestRecoverySyncedLaterWALReadError: replay stops at an older WAL that
// ends torn only if no later WAL holds a synced write; the check read the
// later WAL up to any error, so one it could not read passed for one with
// nothing synced.
func TestRecoverySyncedLaterWALReadError(t *testing.T) {
	fs := vfs.NewMem()
	db, err := Open("db", &Options{FS: fs})
	require.NoError(t, err)
	require.NoError(t, db.Set([]byte("base"), []byte("v-base"), Sync))
	require.NoError(t, db.Close())
	walNum := liveWAL(t, fs)
	writeWAL(t, fs, walNum, 1, true, "base", "a1", "a2") // ends torn
	later := base.MakeFilename(base.FileTypeLog, walNum+100)
	f, err := fs.Create(fs.PathJoin("db", later))
	require.NoError(t, err)
	w := record.NewWriter(f)
	for i, k := range []string{"b1", "b2"} {
		b := &Batch{}
		require.NoError(t, b.Set([]byte(k), []byte("v-"+k)))
		b.setSeq(base.SeqNum(5 + i))
		_, err := w.WriteRecord(b.repr)
		require.NoError(t, err)
		if i == 0 {
			require.NoError(t, w.Sync())
		}
	}
	require.NoError(t, w.Flush())
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())

	efs := vfs.NewErrorFS(fs, vfs.InjectorFunc(func(op vfs.Op) error {
		if op.Kind == vfs.OpRead && strings.HasSuffix(op.Path, later) {
			return fmt.Errorf("EIO %s: %w", op, vfs.ErrInjected)
		}
		return nil
	}))
	_, err = Open("db", &Options{FS: efs})
	require.ErrorIs(t, err, vfs.ErrInjected)
	// Readable, the later WAL shows the damage for what it is.
	_, err = Open("db", &Options{FS: fs})
	require.ErrorIs(t, err, ErrCorruption)
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

	efs := vfs.NewErrorFS(crashed, vfs.InjectorFunc(func(op vfs.Op) error {
		if op.Kind == vfs.OpFileStat && strings.HasSuffix(op.Path, ".log") {
			return fmt.Errorf("EIO %s: %w", op, vfs.ErrInjected)
		}
		return nil
	}))
	_, err = Open("db", opts(efs))
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
