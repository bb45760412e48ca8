package checkpoint_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/checkpoint"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// TestSegments packs every file into segments and overwrites keys for many
// checkpoints: segments whose live ratio falls below the threshold have
// their live pieces re-uploaded, so space amplification stays bounded, the
// store holds far fewer objects than files, and every retained checkpoint
// restores.
func TestSegments(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, root string) {
		ctx := context.Background()
		const minLive = 0.75
		db, store, u := openWithUploader(t, fs, root, &checkpoint.UploadOptions{
			KeepLast: 2, SmallFileSize: 1 << 30, SegmentSize: 256 << 10, MinLiveRatio: minLive})
		rng := rand.New(rand.NewPCG(5, 6))
		var reuploaded int64
		var last checkpoint.Stats
		for round := range 30 {
			for range 100 {
				i := rng.IntN(400)
				require.NoError(t, db.Set([]byte(fmt.Sprintf("key%05d", i)), []byte(bigValue(i, round)), strata.NoSync))
			}
			st, err := db.CheckpointToStore(ctx, u)
			require.NoError(t, err)
			reuploaded += st.ReuploadedBytes
			last = st
			// Every object is a segment, and none stays below the
			// threshold for long: at most the ones the last KeepLast
			// checkpoints still need.
			objs, err := checkpoint.Objects(ctx, store)
			require.NoError(t, err)
			require.Equal(t, st.Objects, len(objs)+1) // and the registry
			for _, o := range objs {
				require.True(t, o.Segment, o.Name)
				require.Greater(t, o.LiveBytes, int64(0), o.Name)
			}
			require.Less(t, len(objs), st.Files, "segments: %v", st)
			require.LessOrEqual(t, st.SpaceAmp, 2.0, "round %d: %v", round, st)
		}
		t.Log(last)
		require.Positive(t, reuploaded, "no sparse segment was ever re-uploaded")
		requireStoreTidy(t, store)
		want := scanAll(t, db)
		dst := fs.PathJoin(root, "restore")
		require.NoError(t, checkpoint.Restore(ctx, store, last.ID, fs, dst, nil))
		require.Equal(t, len(want), len(dbState(t, fs, dst)))
	})
}
