package manifest

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/record"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// writeManifest makes dir a database whose CURRENT names MANIFEST-000001,
// holding the given records.
func writeManifest(t *testing.T, fs vfs.FS, dir string, recs ...[]byte) {
	t.Helper()
	require.NoError(t, fs.MkdirAll(dir, 0o755))
	f, err := fs.Create(fs.PathJoin(dir, "MANIFEST-000001"))
	require.NoError(t, err)
	w := record.NewWriter(f)
	for _, r := range recs {
		_, err = w.WriteRecord(r)
		require.NoError(t, err)
	}
	require.NoError(t, w.Sync())
	require.NoError(t, w.Close())
	require.NoError(t, SetCurrent(fs, dir, 1, 2))
}

// snapshotRecord is the snapshot record of an empty tree, of format
// version v (0: without the field, as manifests before it were written).
func snapshotRecord(v uint64) []byte {
	ve := &VersionEdit{FormatVersion: v, ComparerName: ComparerName}
	ve.SetLogNum(3)
	ve.SetNextFileNum(4)
	return ve.Encode(nil)
}

// TestFormatVersionWritten: every snapshot record a build writes carries
// its format version, first.
func TestFormatVersionWritten(t *testing.T) {
	fs := vfs.NewMem()
	require.NoError(t, fs.MkdirAll("db", 0o755))
	var mu sync.Mutex
	vs, err := Create(Options{FS: fs, Dirname: "db", Mu: &mu})
	require.NoError(t, err)
	require.NoError(t, vs.Close())
	f, err := fs.Open("db/" + base.MakeFilename(base.FileTypeManifest, vs.ManifestNum()))
	require.NoError(t, err)
	defer f.Close()
	rec, err := record.NewStrictReader(f, "MANIFEST").Next()
	require.NoError(t, err)
	require.Equal(t, []byte{tagFormatVersion, 1, FormatVersion}, rec[:3], "the format version is the first field")
	var ve VersionEdit
	require.NoError(t, ve.Decode(rec))
	require.Equal(t, uint64(FormatVersion), ve.FormatVersion)
}

// TestFormatVersionNewerRefused: a manifest of a newer format version is
// refused with an error matching ErrNewerFormat (not ErrCorruption) that
// says a newer Strata wrote the database, even when what follows the
// version is nothing this build can decode (a required field it does not
// know).
func TestFormatVersionNewerRefused(t *testing.T) {
	fs := vfs.NewMem()
	newer := append(snapshotRecord(FormatVersion+1), 60, 1, 'x') // tag 60: required, unknown here
	writeManifest(t, fs, "db", newer)
	var mu sync.Mutex
	_, err := Load(Options{FS: fs, Dirname: "db", Mu: &mu})
	require.True(t, errors.Is(err, base.ErrNewerFormat), "%v", err)
	require.False(t, errors.Is(err, base.ErrCorruption), "%v", err)
	require.True(t, strings.Contains(err.Error(), "newer Strata") && strings.Contains(err.Error(), "MANIFEST-000001"), "%v", err)
	_, err = ReadVersion(fs, "db", "MANIFEST-000001")
	require.True(t, errors.Is(err, base.ErrNewerFormat), "%v", err)

	// The same unknown field in a manifest of this build's version is
	// damage.
	writeManifest(t, fs, "db2", append(snapshotRecord(FormatVersion), 60, 1, 'x'))
	_, err = Load(Options{FS: fs, Dirname: "db2", Mu: &mu})
	require.True(t, errors.Is(err, base.ErrCorruption), "%v", err)
}

// TestFormatVersionOlderRead: a manifest written before the format version
// was recorded loads, and the next manifest records this build's version.
func TestFormatVersionOlderRead(t *testing.T) {
	fs := vfs.NewMem()
	writeManifest(t, fs, "db", snapshotRecord(0))
	var mu sync.Mutex
	vs, err := Load(Options{FS: fs, Dirname: "db", Mu: &mu})
	require.NoError(t, err)
	mu.Lock()
	require.NoError(t, vs.LogAndApply(&VersionEdit{NewFiles: []NewFile{{Level: 6, Meta: meta(vs.NewFileNum(), "a", "b", 1)}}}))
	mu.Unlock()
	require.NoError(t, vs.Close())
	f, err := fs.Open("db/" + base.MakeFilename(base.FileTypeManifest, vs.ManifestNum()))
	require.NoError(t, err)
	defer f.Close()
	rec, err := record.NewStrictReader(f, "MANIFEST").Next()
	require.NoError(t, err)
	var ve VersionEdit
	require.NoError(t, ve.Decode(rec))
	require.Equal(t, uint64(FormatVersion), ve.FormatVersion)
}
