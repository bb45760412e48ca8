package manifest

import (
	"sync"
	"testing"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// TestSharedFilesRoundTrip: shared-file fields and the instance id encode
// and decode; a shared-file field is required (an older reader refuses
// the edit rather than open a tree whose files are not all local).
func TestSharedFilesRoundTrip(t *testing.T) {
	ve := &VersionEdit{InstanceID: "1f2e3d4c5b6a7988"}
	ve.SharedFiles = []SharedFile{
		{FileNum: 9, Ref: SharedRef{Object: "shared/1f2e3d4c5b6a7988/000009.sst"}},
		{Vlog: true, FileNum: 8, Ref: SharedRef{Object: "data/3-1-abcd", Offset: 4096}},
	}
	enc := ve.Encode(nil)
	var got VersionEdit
	require.NoError(t, got.Decode(enc))
	require.Equal(t, ve.SharedFiles, got.SharedFiles)
	require.Equal(t, ve.InstanceID, got.InstanceID)
	require.Equal(t, ve.String(), got.String())
	require.Contains(t, got.String(), "shared: vlog 000008 in data/3-1-abcd@4096")
	for i := range enc {
		_ = (&VersionEdit{}).Decode(enc[:i]) // never a panic
	}
	// Without an object, or with unknown flags, the field is refused.
	bad := &VersionEdit{SharedFiles: []SharedFile{{FileNum: 3}}}
	require.Error(t, (&VersionEdit{}).Decode(bad.Encode(nil)))
	b := (&VersionEdit{SharedFiles: []SharedFile{{FileNum: 3, Ref: SharedRef{Object: "x"}}}}).Encode(nil)
	b[2] = 4 // the flags (after the tag and the length): an unknown bit
	require.Error(t, (&VersionEdit{}).Decode(b))
}

// TestApplyShared: an edit shares files the version holds (added by it or
// before), refuses files it does not hold, and a file that leaves the
// version leaves the shared set; the snapshot recreates it, and versions
// do not see each other's changes.
func TestApplyShared(t *testing.T) {
	v1, err := Apply(nil, &VersionEdit{
		InstanceID: "aa",
		NewFiles:   []NewFile{{Level: 6, Meta: meta(1, "a", "c", 1)}, {Level: 6, Meta: meta(2, "d", "f", 1)}},
		NewVlogs:   []*VlogMetadata{{FileNum: 3, Size: 100}},
	})
	require.NoError(t, err)
	v2, err := Apply(v1, &VersionEdit{SharedFiles: []SharedFile{
		{FileNum: 1, Ref: SharedRef{Object: "o1"}},
		{Vlog: true, FileNum: 3, Ref: SharedRef{Object: "o3"}},
	}})
	require.NoError(t, err)
	_, ok := v1.SharedRef(false, 1)
	require.False(t, ok, "the parent version changed")
	r, ok := v2.SharedRef(false, 1)
	require.True(t, ok)
	require.Equal(t, "o1", r.Object)
	_, ok = v2.SharedRef(true, 3)
	require.True(t, ok)
	_, ok = v2.SharedRef(false, 3)
	require.False(t, ok, "a value log's number is not a table's")
	require.Equal(t, "aa", v2.InstanceID)

	_, err = Apply(v2, &VersionEdit{SharedFiles: []SharedFile{{FileNum: 7, Ref: SharedRef{Object: "x"}}}})
	require.ErrorContains(t, err, "does not hold")
	_, err = Apply(v2, &VersionEdit{SharedFiles: []SharedFile{{Vlog: true, FileNum: 1, Ref: SharedRef{Object: "x"}}}})
	require.ErrorContains(t, err, "does not hold")

	// A move to another level keeps the file shared; a deletion drops it.
	v3, err := Apply(v2, &VersionEdit{
		DeletedFiles: []DeletedFile{{Level: 6, FileNum: 1}},
		NewFiles:     []NewFile{{Level: 5, Meta: meta(1, "a", "c", 1)}},
	})
	require.NoError(t, err)
	_, ok = v3.SharedRef(false, 1)
	require.True(t, ok, "moved between levels")
	v4, err := Apply(v3, &VersionEdit{DeletedFiles: []DeletedFile{{Level: 5, FileNum: 1}}, DeletedVlogs: []base.FileNum{3}})
	require.NoError(t, err)
	tables, vlogs := v4.NumShared()
	require.Zero(t, tables+vlogs)
	_, ok = v3.SharedRef(true, 3)
	require.True(t, ok, "an older version changed")

	// The snapshot recreates the shared set and the instance id.
	re, err := Apply(nil, v3.SnapshotEdit())
	require.NoError(t, err)
	require.Equal(t, "aa", re.InstanceID)
	var got []SharedFile
	re.SharedFiles(func(sf SharedFile) { got = append(got, sf) })
	require.ElementsMatch(t, []SharedFile{
		{FileNum: 1, Ref: SharedRef{Object: "o1"}},
		{Vlog: true, FileNum: 3, Ref: SharedRef{Object: "o3"}},
	}, got)
}

// TestSharedFilesPersist: shared files survive a reload of the manifest,
// across rotations (snapshots) and edits after them.
func TestSharedFilesPersist(t *testing.T) {
	fs := vfs.NewMem()
	require.NoError(t, fs.MkdirAll("db", 0o755))
	syncRoot(t, fs)
	var mu sync.Mutex
	opts := Options{FS: fs, Dirname: "db", Mu: &mu, MaxManifestSize: 2048}
	vs, err := Create(opts)
	require.NoError(t, err)
	mu.Lock()
	require.NoError(t, vs.LogAndApply(&VersionEdit{InstanceID: "bb"}))
	for i := 0; i < 60; i++ {
		num := vs.NewFileNum()
		ve := &VersionEdit{NewFiles: []NewFile{{Level: 6, Meta: meta(num, string(rune('a'+i%26))+string(rune('a'+i/26)), string(rune('a'+i%26))+string(rune('a'+i/26))+"z", 1)}}}
		require.NoError(t, vs.LogAndApply(ve))
		if i%3 == 0 {
			require.NoError(t, vs.LogAndApply(&VersionEdit{SharedFiles: []SharedFile{{FileNum: num, Ref: SharedRef{Object: "obj/" + num.String()}}}}))
		}
	}
	want := vs.Current()
	wantTables, _ := want.NumShared()
	mu.Unlock()
	require.Equal(t, 20, wantTables)
	require.NoError(t, vs.Close())
	opts.FS = fs.CrashClone(vfs.CrashOptions{})
	vs2, err := Load(opts)
	require.NoError(t, err)
	got := vs2.Current()
	require.Equal(t, "bb", got.InstanceID)
	want.SharedFiles(func(sf SharedFile) {
		r, ok := got.SharedRef(sf.Vlog, sf.FileNum)
		require.True(t, ok, "%s", sf.FileNum)
		require.Equal(t, sf.Ref, r)
	})
	n, _ := got.NumShared()
	require.Equal(t, wantTables, n)
}
