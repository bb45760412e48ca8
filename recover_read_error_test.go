package strata

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

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
	efs := vfs.NewErrorFS(crashed, vfs.InjectorFunc(func(op vfs.Op) error {
		// The header, the footer (none), then the scan's first window.
		if op.Kind == vfs.OpReadAt && strings.HasSuffix(op.Path, ".vlog") && reads.Add(1) == 3 {
			return fmt.Errorf("EIO %s: %w", op, vfs.ErrInjected)
		}
		return nil
	}))
	_, err = Open("db", opts(efs))
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
