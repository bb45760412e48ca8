package checkpoint_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/strata-db/strata/checkpoint"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// TestFormat1Store: a store written with registry format 1, whose
// manifests are objects of their own (checkpoints/<id>), restores as it
// is; an upload into it writes format 2, keeps the old manifests while
// their checkpoints are retained and deletes them as they are dropped.
func TestFormat1Store(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, root string) {
		ctx := context.Background()
		db, store, u := openWithUploader(t, fs, root, &checkpoint.UploadOptions{KeepLast: 3, SmallFileSize: 16 << 10})
		states := map[uint64]map[string]string{}
		for round := range 3 {
			overwriteRound(t, db, u, round, states)
		}
		toFormat1(t, store)
		manifests := func() int {
			list, err := store.List(ctx, "checkpoints/")
			require.NoError(t, err)
			return len(list)
		}
		require.Equal(t, 3, manifests())
		requireRetainedRestore(t, fs, root, store, states, "format1")

		// Each upload drops one old checkpoint, and its manifest object.
		for round := 3; round < 6; round++ {
			st := overwriteRound(t, db, u, round, states)
			require.Equal(t, 5-round, manifests(), "round %d", round)
			require.Equal(t, 1+(5-round)+dataObjects(t, store), st.Objects, "round %d: %v", round, st)
			requireRetainedRestore(t, fs, root, store, states, fmt.Sprint("mixed-", round))
		}
		requireStoreTidy(t, store)
	})
}

func dataObjects(t *testing.T, s checkpoint.Store) int {
	list, err := s.List(context.Background(), "data/")
	require.NoError(t, err)
	return len(list)
}

// toFormat1 rewrites the store's registry as format 1 wrote it: each
// checkpoint's manifest moves out into a sealed object of its own.
func toFormat1(t *testing.T, s checkpoint.Store) {
	ctx := context.Background()
	contents := storeContents(t, s)
	reg := unsealJSON(t, contents["registry"])
	for _, c := range reg["checkpoints"].([]any) {
		c := c.(map[string]any)
		m, err := json.Marshal(c["manifest"])
		require.NoError(t, err)
		sealed := sealJSON(m)
		name := fmt.Sprintf("checkpoints/%020s", c["id"].(json.Number).String())
		require.NoError(t, s.Put(ctx, name, strings.NewReader(sealed), int64(len(sealed))))
		delete(c, "manifest")
		c["manifest_size"] = len(sealed)
	}
	reg["format"] = 1
	b, err := json.Marshal(reg)
	require.NoError(t, err)
	sealed := sealJSON(b)
	require.NoError(t, s.Put(ctx, "registry", strings.NewReader(sealed), int64(len(sealed))))
}

func unsealJSON(t *testing.T, sealed string) map[string]any {
	body, _, ok := strings.Cut(sealed, "\nxxhash64:")
	require.True(t, ok)
	d := json.NewDecoder(bytes.NewReader([]byte(body)))
	d.UseNumber()
	var v map[string]any
	require.NoError(t, d.Decode(&v))
	return v
}

func sealJSON(b []byte) string {
	return fmt.Sprintf("%s\nxxhash64:%016x\n", b, xxhash.Sum64(b))
}
