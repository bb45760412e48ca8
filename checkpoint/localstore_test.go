package checkpoint_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/strata-db/strata/checkpoint"
	"github.com/strata-db/strata/checkpoint/storetest"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

func TestLocalStoreConformance(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, root string) {
		n := 0
		storetest.Run(t, func(t *testing.T) checkpoint.Store {
			n++
			s, err := checkpoint.NewLocalStoreFS(fs, fs.PathJoin(root, "store", strings.Repeat("s", n)))
			require.NoError(t, err)
			return s
		})
	})
}

// TestLocalStorePutFaults fails each filesystem operation of a Put in
// turn: the Put fails, and the store holds what it held before (a crash
// clone too: unsynced state never shows a partial object).
func TestLocalStorePutFaults(t *testing.T) {
	ctx := context.Background()
	for i := int64(0); ; i++ {
		mem := vfs.NewMem()
		inj := vfs.OnIndex(i)
		efs := vfs.NewErrorFS(mem, inj)
		efs.SetEnabled(false)
		s, err := checkpoint.NewLocalStoreFS(efs, "store")
		require.NoError(t, err)
		require.NoError(t, s.Put(ctx, "dir/obj", strings.NewReader("old"), 3))
		efs.SetEnabled(true)
		err = s.Put(ctx, "dir/obj", strings.NewReader("new!"), 4)
		efs.SetEnabled(false)
		if inj.Injected() == 0 {
			require.NoError(t, err)
			require.Greater(t, i, int64(2))
			return
		}
		// A failed Stat while making directories is harmless (MkdirAll
		// follows); any other failure fails the Put.
		if err != nil {
			require.True(t, errors.Is(err, vfs.ErrInjected), "operation %d: %v", i, err)
		}
		rc, gerr := s.Get(ctx, "dir/obj", 0, -1)
		require.NoError(t, gerr)
		b, _ := io.ReadAll(rc)
		rc.Close()
		// The object is the old one, or (only when what failed was the
		// directory sync after the rename) the new one, whole.
		if err == nil {
			require.Equal(t, "new!", string(b), "operation %d", i)
		} else {
			require.Contains(t, []string{"old", "new!"}, string(b), "operation %d", i)
		}
		list, lerr := s.List(ctx, "")
		require.NoError(t, lerr)
		require.Len(t, list, 1, "operation %d", i)
		names, _ := mem.List("store/.tmp")
		require.Empty(t, names, "operation %d: temporary files left", i)
	}
}
