package checkpoint_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/checkpoint"
	"github.com/strata-db/strata/checkpoint/keygroup"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// TestRescaleTwoToThree: two operators hold the key groups of a job with
// maxParallelism 128 and checkpoint into their stores; three operators
// each restore the key-group ranges they own now, from both checkpoints,
// and hold exactly their keys.
func TestRescaleTwoToThree(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, root string) {
		ctx := context.Background()
		rescaleTwoToThree(t, fs, root, func(op int, start, end []byte, olds []oldOperator) map[string]string {
			// The new operator restores its range from each old operator's
			// checkpoint that overlaps it, and merges them (an ingest would
			// do it in one step; here a second range restore and a copy).
			dir := fs.PathJoin(root, fmt.Sprintf("new-%d", op))
			merged := map[string]string{}
			for j, o := range olds {
				part := fmt.Sprintf("%s-from-%d", dir, j)
				require.NoError(t, strata.RestoreRangeFromStore(ctx, o.store, o.id, start, end, part, smallOptions(fs)))
				for k, v := range dbState(t, fs, part) {
					requireInRange(t, k, start, end)
					merged[k] = v
				}
			}
			return merged
		})
	})
}

// TestRescaleTwoToThreeByIngest is TestRescaleTwoToThree with each new
// operator ingesting its range from every old operator's checkpoint
// (DB.IngestRange) into a DB that already holds state of its own.
func TestRescaleTwoToThreeByIngest(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, root string) {
		ctx := context.Background()
		rescaleTwoToThree(t, fs, root, func(op int, start, end []byte, olds []oldOperator) map[string]string {
			// The new operator holds state of its own outside its range
			// (say, of a key group it keeps) and ingests its range from
			// each old operator's checkpoint.
			dir := fs.PathJoin(root, fmt.Sprintf("new-%d", op))
			db, err := strata.Open(dir, smallOptions(fs))
			require.NoError(t, err)
			own := []byte{0xff, 0xff, 'o', 'w', 'n'}
			require.NoError(t, db.Set(own, []byte("mine"), strata.Sync))
			total := 0
			for _, o := range olds {
				n, err := db.IngestRange(ctx, o.store, o.id, start, end)
				require.NoError(t, err)
				total += n
			}
			require.NoError(t, db.Close())
			merged := dbState(t, fs, dir)
			require.Equal(t, "mine", merged[string(own)])
			delete(merged, string(own))
			require.Len(t, merged, total)
			for k := range merged {
				requireInRange(t, k, start, end)
			}
			return merged
		})
		names, err := fs.List(root)
		require.NoError(t, err)
		for _, n := range names {
			require.NotContains(t, n, ".ingest-", "IngestRange left %s behind", n)
		}
	})
}

// rescaleTwoToThree checkpoints two old operators and makes three new
// ones with restore, which returns new operator op's keys for its range
// [start, end): together they must hold exactly the old operators' keys,
// each once.
func rescaleTwoToThree(t *testing.T, fs vfs.FS, root string, restore func(op int, start, end []byte, olds []oldOperator) map[string]string) {
	all, olds := checkpointOldOperators(t, fs, root)
	got := map[string]string{}
	for op := range 3 {
		first, last, err := keygroup.OperatorRange(rescaleMaxP, 3, op)
		require.NoError(t, err)
		start, end, err := keygroup.Range(first, last)
		require.NoError(t, err)
		for k, v := range restore(op, start, end, olds) {
			_, dup := got[k]
			require.False(t, dup, "key %q restored by two operators", k)
			got[k] = v
		}
	}
	require.Equal(t, all, got)
}

func requireInRange(t *testing.T, k string, start, end []byte) {
	t.Helper()
	require.True(t, k >= string(start) && (end == nil || k < string(end)), "key %q outside [%q, %q)", k, start, end)
}

// oldOperator is a checkpoint of one operator before a rescale.
type oldOperator struct {
	store checkpoint.Store
	id    uint64
}

// rescaleMaxP is the maxParallelism (key groups) of the rescale tests.
const rescaleMaxP = 128

// checkpointOldOperators runs two operators, each writing the keys of its
// key groups (some values separated, some inline), and checkpoints each
// into a store of its own. It returns every stored key and value, and the
// checkpoints.
func checkpointOldOperators(t *testing.T, fs vfs.FS, root string) (map[string]string, []oldOperator) {
	ctx := context.Background()
	all := map[string]string{} // stored key -> value
	var olds []oldOperator
	for op := range 2 {
		db, err := strata.Open(fs.PathJoin(root, fmt.Sprintf("old-%d", op)), smallOptions(fs))
		require.NoError(t, err)
		first, last, err := keygroup.OperatorRange(rescaleMaxP, 2, op)
		require.NoError(t, err)
		for i := range 1500 {
			user := []byte(fmt.Sprintf("user-%d", i))
			g, err := keygroup.Of(user, rescaleMaxP)
			require.NoError(t, err)
			if g < first || g > last {
				continue
			}
			k := keygroup.Key(nil, g, user)
			v := bigValue(i, op)
			if i%3 == 0 {
				v = v[:30]
			}
			require.NoError(t, db.Set(k, []byte(v), strata.NoSync))
			all[string(k)] = v
		}
		s := newStore(t, fs, fs.PathJoin(root, fmt.Sprintf("store-%d", op)))
		u, err := checkpoint.NewUploader(s, nil)
		require.NoError(t, err)
		st, err := db.CheckpointToStore(ctx, u)
		require.NoError(t, err)
		require.NoError(t, db.Close())
		olds = append(olds, oldOperator{s, st.ID})
	}
	return all, olds
}
