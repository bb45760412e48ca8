package checkpoint_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/checkpoint"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/lsm/record"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// rewriteRegistry replaces the store's registry by what edit makes of its
// JSON, sealed again.
func rewriteRegistry(t *testing.T, s checkpoint.Store, edit func(reg map[string]any)) {
	t.Helper()
	reg := unsealJSON(t, storeContents(t, s)["registry"])
	edit(reg)
	b, err := json.Marshal(reg)
	require.NoError(t, err)
	sealed := sealJSON(b)
	require.NoError(t, s.Put(context.Background(), "registry", strings.NewReader(sealed), int64(len(sealed))))
}

func requireNewer(t *testing.T, what string, err error) {
	t.Helper()
	require.True(t, errors.Is(err, strata.ErrNewerFormat), "%s: %v", what, err)
	require.False(t, errors.Is(err, strata.ErrCorruption), "%s: %v", what, err)
	require.Contains(t, err.Error(), "newer Strata", what)
}

// TestFormatVersionNewerRegistryRefused: a registry of a newer format is
// refused by Restore and by the next upload, with an error matching
// ErrNewerFormat that says a newer Strata wrote the store; the store is
// left as it was.
func TestFormatVersionNewerRegistryRefused(t *testing.T) {
	fs := vfs.NewMem()
	require.NoError(t, fs.MkdirAll("root", 0o755))
	ctx := context.Background()
	db, store, u := openWithUploader(t, fs, "root", nil)
	require.NoError(t, db.Set([]byte("k"), []byte("v"), strata.NoSync))
	st, err := db.CheckpointToStore(ctx, u)
	require.NoError(t, err)
	rewriteRegistry(t, store, func(reg map[string]any) { reg["format"] = 3 })
	before := storeContents(t, store)

	requireNewer(t, "Restore", checkpoint.Restore(ctx, store, st.ID, fs, "root/restored", nil))
	_, err = db.CheckpointToStore(ctx, u)
	requireNewer(t, "upload", err)
	require.Equal(t, before, storeContents(t, store))
}

// TestFormatVersionNewerManifestRefused: a checkpoint whose database
// manifest records a newer format version is refused by Restore with an
// error matching ErrNewerFormat.
func TestFormatVersionNewerManifestRefused(t *testing.T) {
	fs := vfs.NewMem()
	require.NoError(t, fs.MkdirAll("root", 0o755))
	ctx := context.Background()
	db, store, u := openWithUploader(t, fs, "root", nil)
	require.NoError(t, db.Set([]byte("k"), []byte("v"), strata.NoSync))
	st, err := db.CheckpointToStore(ctx, u)
	require.NoError(t, err)

	// The manifest a newer build would write: its snapshot record says so.
	mem := vfs.NewMem()
	f, err := mem.Create("m")
	require.NoError(t, err)
	w := record.NewWriter(f)
	ve := &manifest.VersionEdit{FormatVersion: manifest.FormatVersion + 1, ComparerName: manifest.ComparerName}
	ve.SetNextFileNum(10)
	_, err = w.WriteRecord(ve.Encode(nil))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	data := storeObject(t, mem, "m")

	rewriteRegistry(t, store, func(reg map[string]any) {
		for _, c := range reg["checkpoints"].([]any) {
			c.(map[string]any)["manifest"].(map[string]any)["db_manifest"] = data
		}
	})
	requireNewer(t, "Restore", checkpoint.Restore(ctx, store, st.ID, fs, "root/restored", nil))
}

// storeObject returns the bytes of file name of fs.
func storeObject(t *testing.T, fs vfs.FS, name string) []byte {
	t.Helper()
	f, err := fs.Open(name)
	require.NoError(t, err)
	defer f.Close()
	st, err := f.Stat()
	require.NoError(t, err)
	b := make([]byte, st.Size())
	_, err = f.ReadAt(b, 0)
	require.NoError(t, err)
	return b
}
