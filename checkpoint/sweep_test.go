package checkpoint_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/checkpoint"
	"github.com/strata-db/strata/checkpoint/storetest"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// TestSweepInParallel: an upload's sweep deletes what the registry no
// longer names side by side, not one object after the other, and every
// one of those objects goes.
func TestSweepInParallel(t *testing.T) {
	fs := vfs.NewMem()
	db, store, _ := openWithUploader(t, fs, "", nil)
	slow := &storetest.SlowDeletes{Store: store, Delay: 10 * time.Millisecond}
	u, err := checkpoint.NewUploader(slow, &checkpoint.UploadOptions{KeepLast: 1, SmallFileSize: 1})
	require.NoError(t, err)
	states := map[uint64]map[string]string{}
	overwriteRound(t, db, u, 0, states)
	objs, err := store.List(context.Background(), "data/")
	require.NoError(t, err)
	require.Greater(t, len(objs), 2)
	// Every key overwritten: the next checkpoint names none of the
	// first one's data objects, and KeepLast drops it.
	for round := 1; round <= 3; round++ {
		for i := range 300 {
			require.NoError(t, db.Set([]byte(fmt.Sprintf("key%05d", i)), []byte(bigValue(i, round)), strata.NoSync))
		}
	}
	require.NoError(t, db.Compact(nil, nil))
	st := overwriteRound(t, db, u, 4, states)
	require.GreaterOrEqual(t, st.DeletedObjects, len(objs))
	require.Greater(t, slow.MaxInFlight(), 1, "the sweep deleted one object at a time")
	after, err := store.List(context.Background(), "data/")
	require.NoError(t, err)
	for _, o := range objs {
		for _, a := range after {
			require.NotEqual(t, o.Name, a.Name, "%s not deleted", o.Name)
		}
	}
}
