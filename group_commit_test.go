package strata

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// TestGroupCommitSharesSyncs: concurrent Sync writers are committed in
// groups, so the WAL is synced fewer times than there are writes, and every
// write is readable afterwards.
func TestGroupCommitSharesSyncs(t *testing.T) {
	var walSyncs atomic.Int64
	fs := vfs.NewErrorFS(vfs.NewMem(), vfs.InjectorFunc(func(op vfs.Op) error {
		if op.Kind == vfs.OpSync && strings.HasSuffix(op.Path, ".log") {
			walSyncs.Add(1)
			// A disk whose sync takes a while, as real ones do: writers
			// arriving meanwhile queue behind the leader.
			time.Sleep(200 * time.Microsecond)
		}
		return nil
	}))
	db, err := Open("db", &Options{FS: fs})
	require.NoError(t, err)
	const writers, each = 8, 200
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if err := db.Set([]byte(fmt.Sprintf("w%d-%d", w, i)), []byte("v"), Sync); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	syncs := walSyncs.Load()
	t.Logf("%d Sync writes took %d WAL syncs", writers*each, syncs)
	require.Less(t, syncs, int64(writers*each/2), "writers did not share syncs")
	// Every write committed by another's group waited for it: at least
	// one per write beyond the groups (each group made one WAL sync).
	m := db.Metrics()
	require.Equal(t, uint64(writers*each), m.Latency.Commit.Count)
	require.GreaterOrEqual(t, m.Latency.CommitWait.Count, uint64(writers*each)-uint64(syncs))
	require.LessOrEqual(t, m.Latency.CommitWait.Count, uint64(writers*each))
	for w := 0; w < writers; w++ {
		for i := 0; i < each; i++ {
			_, err := db.Get([]byte(fmt.Sprintf("w%d-%d", w, i)))
			require.NoError(t, err)
		}
	}
	require.NoError(t, db.Close())
}
