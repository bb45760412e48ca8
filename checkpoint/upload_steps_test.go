package checkpoint

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/remote"
	"github.com/stretchr/testify/require"
)

// testObject returns a registry object of size bytes holding pieces back
// to back, each given as its file name, size and references.
func testObject(segment bool, group int, size int64, pieces ...regPiece) *regObject {
	o := &regObject{Size: size, Segment: segment, Group: group}
	var off int64
	for _, p := range pieces {
		p.Offset = off
		off += p.Size
		o.Pieces = append(o.Pieces, p)
	}
	return o
}

// piece is a piece of a testObject: size bytes of file, used by refs
// retained checkpoints.
func piece(file string, size int64, refs int) regPiece {
	return regPiece{File: file, Size: size, Refs: refs}
}

// TestRetire: the new checkpoint counts towards KeepLast; the checkpoints
// beyond it go, oldest first, and their pieces lose their references.
func TestRetire(t *testing.T) {
	for _, tc := range []struct {
		keepLast    int
		wantDropped []uint64
		wantKept    []uint64
		wantRefs    []int // of the pieces at 0, 1 and 2
	}{
		{keepLast: 1, wantDropped: []uint64{1, 2, 3}, wantRefs: []int{0, 0, 0}},
		{keepLast: 2, wantDropped: []uint64{1, 2}, wantKept: []uint64{3}, wantRefs: []int{1, 0, 1}},
		{keepLast: 3, wantDropped: []uint64{1}, wantKept: []uint64{2, 3}, wantRefs: []int{2, 0, 1}},
		{keepLast: 4, wantKept: []uint64{1, 2, 3}, wantRefs: []int{3, 1, 1}},
	} {
		t.Run(fmt.Sprint("KeepLast ", tc.keepLast), func(t *testing.T) {
			r := &registry{NextID: 4, Objects: map[string]*regObject{
				"data/x": testObject(true, groupVlogs, 3, piece("a", 1, 3), piece("b", 1, 1), piece("c", 1, 1)),
			}, Checkpoints: []regCheckpoint{
				{ID: 1, Pieces: []pieceRef{{"data/x", 0}, {"data/x", 1}}},
				{ID: 2, Pieces: []pieceRef{{"data/x", 0}}},
				{ID: 3, Pieces: []pieceRef{{"data/x", 0}, {"data/x", 2}}},
			}}
			up := &upload{u: &Uploader{opts: UploadOptions{KeepLast: tc.keepLast}}, next: r}
			up.retire()
			ids := func(cs []regCheckpoint) []uint64 {
				var ids []uint64
				for _, c := range cs {
					ids = append(ids, c.ID)
				}
				return ids
			}
			require.Equal(t, tc.wantDropped, ids(up.dropped))
			require.Equal(t, tc.wantKept, ids(r.Checkpoints))
			var refs []int
			for _, p := range r.Objects["data/x"].Pieces {
				refs = append(refs, p.Refs)
			}
			require.Equal(t, tc.wantRefs, refs)
			require.Len(t, r.Objects, 1, "retire drops no object: register does")
		})
	}
}

// TestMatchStored: which of the version's files the store holds, and which
// files are read for their checksums to find out.
func TestMatchStored(t *testing.T) {
	const (
		older = "data/00000000000000000001-0000-aaaaaaaa"
		newer = "data/00000000000000000002-0000-bbbbbbbb"
	)
	storeRegistry := func() *registry {
		return &registry{Objects: map[string]*regObject{
			older: testObject(true, groupTables, 30,
				regPiece{File: "000001.sst", Size: 10, Checksum: 0x11, Refs: 1},
				regPiece{File: "000002.vlog", Size: 20, Checksum: 0x22, Refs: 0}), // only a retired checkpoint used it
			newer: testObject(true, groupTables, 20,
				regPiece{File: "000001.sst", Size: 10, Checksum: 0x11, Refs: 1}, // stored twice
				regPiece{File: "000003.sst", Size: 10, Checksum: 0x33, Refs: 1}),
		}}
	}
	errRead := errors.New("read failed")
	for _, tc := range []struct {
		name string
		file localFile
		// reading the file gives sum, or fails with readErr
		sum     uint64
		readErr error

		wantErr   error
		wantReads int
		wantRef   *pieceRef // nil: not stored
		wantRefs  int       // of the piece at wantRef, after
	}{
		{name: "a file of a name the store does not hold is not read",
			file: localFile{name: "000009.sst", size: 10}},
		{name: "nor one of a size it does not hold",
			file: localFile{name: "000003.sst", size: 11}},
		{name: "a file of a name and size it holds is read, and found",
			file: localFile{name: "000003.sst", size: 10}, sum: 0x33,
			wantReads: 1, wantRef: &pieceRef{newer, 10}, wantRefs: 2},
		{name: "a known checksum is not read again",
			file:    localFile{name: "000003.sst", size: 10, checksum: 0x33, sumKnown: true},
			wantRef: &pieceRef{newer, 10}, wantRefs: 2},
		{name: "the same name and size with other bytes is not the file",
			file: localFile{name: "000003.sst", size: 10}, sum: 0x34,
			wantReads: 1},
		{name: "of two copies, the newest object's",
			file:    localFile{name: "000001.sst", size: 10, checksum: 0x11, sumKnown: true},
			wantRef: &pieceRef{newer, 0}, wantRefs: 2},
		{name: "a piece only retired checkpoints used is used again",
			file: localFile{name: "000002.vlog", size: 20}, sum: 0x22,
			wantReads: 1, wantRef: &pieceRef{older, 10}, wantRefs: 1},
		{name: "a failed read fails the match",
			file: localFile{name: "000003.sst", size: 10}, readErr: errRead,
			wantErr: errRead, wantReads: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := storeRegistry()
			f := tc.file
			reads := 0
			err := matchStored(r, []*localFile{&f}, func(*localFile) (uint64, error) {
				reads++
				return tc.sum, tc.readErr
			})
			require.ErrorIs(t, err, tc.wantErr)
			require.Equal(t, tc.wantReads, reads, "reads")
			if tc.wantErr != nil {
				return
			}
			if tc.wantRef == nil {
				require.False(t, f.stored, "stored at %v", f.ref)
				require.Equal(t, storeRegistry(), r, "references taken for a file not stored")
				return
			}
			require.True(t, f.stored)
			require.Equal(t, *tc.wantRef, f.ref)
			require.Equal(t, tc.wantRefs, r.piece(f.ref).Refs)
		})
	}
}

// TestMatchShared: a shared file is referenced where its object is: a
// piece the registry holds there takes a reference, any other place
// becomes a new external piece (its object to be marked). Either way the
// file's checksum is the piece's, unknown for an external one, even when
// the uploader knows the file's from an earlier upload of it (a file an
// upload stored before the database shared it): the manifest and the
// registry must agree, or ReadManifest refuses the checkpoint.
func TestMatchShared(t *testing.T) {
	const (
		data  = "data/00000000000000000001-0000-aaaaaaaa"
		mine  = "shared/0000000000000001/000005.vlog"
		other = "shared/0000000000000002/000007.sst"
	)
	storeRegistry := func() *registry {
		return &registry{Objects: map[string]*regObject{
			data:  testObject(false, groupTables, 10, regPiece{File: "000004.sst", Size: 10, Checksum: 0x44, Refs: 1}),
			other: {External: true, Size: 30, Pieces: []regPiece{{File: "000007.sst", Size: 30, Refs: 1}}},
		}}
	}
	for _, tc := range []struct {
		name        string
		file        localFile
		wantAdded   []string
		wantRefs    int
		wantObjects int
	}{
		{name: "a new object becomes an external piece",
			file:      localFile{name: "000005.vlog", size: 20, shared: &manifest.SharedRef{Object: mine}},
			wantAdded: []string{mine}, wantRefs: 1, wantObjects: 3},
		{name: "with the checksum of an earlier upload of the file unknown all the same",
			file:      localFile{name: "000005.vlog", size: 20, checksum: 0x55, sumKnown: true, shared: &manifest.SharedRef{Object: mine}},
			wantAdded: []string{mine}, wantRefs: 1, wantObjects: 3},
		{name: "an external piece the registry holds takes a reference",
			file:     localFile{name: "000007.sst", size: 30, checksum: 0x77, sumKnown: true, shared: &manifest.SharedRef{Object: other}},
			wantRefs: 2, wantObjects: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := storeRegistry()
			f := tc.file
			added := matchShared(r, []*localFile{&f})
			require.Equal(t, tc.wantAdded, added)
			require.Len(t, r.Objects, tc.wantObjects)
			require.True(t, f.stored)
			require.True(t, f.external)
			p := r.piece(f.ref)
			require.NotNil(t, p)
			require.Equal(t, tc.wantRefs, p.Refs)
			require.Equal(t, f.name, p.File)
			require.Equal(t, f.size, p.Size)
			require.False(t, f.sumKnown, "an external piece's checksum is not known")
			require.Equal(t, p.Checksum, f.checksum, "the manifest's checksum is not the registry's")
		})
	}
}

// TestSegmentsToEmpty: the segments an upload empties, from the live
// share of each, ReuploadBytes, and the small value-log segments the
// checkpoint uses.
func TestSegmentsToEmpty(t *testing.T) {
	// obj is a segment of 100 bytes, live of them used by a retained
	// checkpoint.
	obj := func(group int, live int64) *regObject {
		return testObject(true, group, 100, piece("live", live, 1), piece("dead", 100-live, 0))
	}
	base := UploadOptions{SegmentSize: 1000, MinLiveRatio: 0.75, ReuploadBytes: 1000, MergeSmallSegments: -1}
	for _, tc := range []struct {
		name    string
		objects map[string]*regObject
		uses    []string // the objects the new checkpoint uses (its first piece)
		opts    func(*UploadOptions)
		want    []string
	}{
		{name: "a segment at MinLiveRatio is kept",
			objects: map[string]*regObject{"data/1": obj(groupTables, 75)}},
		{name: "a segment below it is emptied",
			objects: map[string]*regObject{"data/1": obj(groupTables, 74)},
			want:    []string{"data/1"}},
		{name: "an object of one file is never emptied",
			objects: map[string]*regObject{"data/1": testObject(false, groupTables, 100, piece("live", 50, 1))}},
		{name: "a segment with no live byte is left to the sweep",
			objects: map[string]*regObject{"data/1": obj(groupTables, 0)}},
		{name: "the sparsest first, up to ReuploadBytes",
			objects: map[string]*regObject{"data/1": obj(groupTables, 60), "data/2": obj(groupTables, 30), "data/3": obj(groupTables, 50)},
			opts:    func(o *UploadOptions) { o.ReuploadBytes = 100 },
			want:    []string{"data/2", "data/3"}},
		{name: "at least one, past ReuploadBytes",
			objects: map[string]*regObject{"data/1": obj(groupTables, 60)},
			opts:    func(o *UploadOptions) { o.ReuploadBytes = 10 },
			want:    []string{"data/1"}},
		{name: "of equally sparse ones, by name",
			objects: map[string]*regObject{"data/b": obj(groupTables, 50), "data/a": obj(groupTables, 50)},
			opts:    func(o *UploadOptions) { o.ReuploadBytes = 50 },
			want:    []string{"data/a"}},
		{name: "an expiring segment the new checkpoint does not use is left to die",
			objects: map[string]*regObject{"data/1": obj(groupExpiring, 10)}},
		{name: "one it uses is emptied",
			objects: map[string]*regObject{"data/1": obj(groupExpiring, 10)},
			uses:    []string{"data/1"},
			want:    []string{"data/1"}},
		{name: "small value-log segments of one tier the checkpoint uses merge",
			objects: map[string]*regObject{"data/1": obj(groupVlogs, 100), "data/2": testObject(true, groupVlogs, 64, piece("live", 64, 1))},
			uses:    []string{"data/1", "data/2"},
			opts:    func(o *UploadOptions) { o.MergeSmallSegments = 2 },
			want:    []string{"data/1", "data/2"}},
		{name: "not while merging is off",
			objects: map[string]*regObject{"data/1": obj(groupVlogs, 100), "data/2": obj(groupVlogs, 100)},
			uses:    []string{"data/1", "data/2"}},
		{name: "nor fewer than MergeSmallSegments of them",
			objects: map[string]*regObject{"data/1": obj(groupVlogs, 100), "data/2": obj(groupVlogs, 100)},
			uses:    []string{"data/1", "data/2"},
			opts:    func(o *UploadOptions) { o.MergeSmallSegments = 3 }},
		{name: "only the ones the checkpoint uses count",
			objects: map[string]*regObject{"data/1": obj(groupVlogs, 100), "data/2": obj(groupVlogs, 100)},
			uses:    []string{"data/1"},
			opts:    func(o *UploadOptions) { o.MergeSmallSegments = 2 }},
		{name: "segments of tables do not merge",
			objects: map[string]*regObject{"data/1": obj(groupTables, 100), "data/2": obj(groupTables, 100)},
			uses:    []string{"data/1", "data/2"},
			opts:    func(o *UploadOptions) { o.MergeSmallSegments = 2 }},
		{name: "segments of different tiers do not merge",
			objects: map[string]*regObject{"data/1": obj(groupVlogs, 100), "data/2": testObject(true, groupVlogs, 400, piece("live", 400, 1))},
			uses:    []string{"data/1", "data/2"},
			opts:    func(o *UploadOptions) { o.MergeSmallSegments = 2 }},
		{name: "segments of half SegmentSize or more do not merge",
			objects: map[string]*regObject{"data/1": obj(groupVlogs, 100), "data/2": obj(groupVlogs, 100)},
			uses:    []string{"data/1", "data/2"},
			opts:    func(o *UploadOptions) { o.MergeSmallSegments = 2; o.SegmentSize = 200 }},
		{name: "a sparse segment emptied anyway does not count towards a merge",
			objects: map[string]*regObject{"data/1": obj(groupVlogs, 50), "data/2": obj(groupVlogs, 100)},
			uses:    []string{"data/1", "data/2"},
			opts:    func(o *UploadOptions) { o.MergeSmallSegments = 2 },
			want:    []string{"data/1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := base
			if tc.opts != nil {
				tc.opts(&opts)
			}
			r := &registry{Objects: tc.objects}
			var files []*localFile
			for _, name := range tc.uses {
				files = append(files, &localFile{name: "f-" + name, stored: true, ref: pieceRef{name, 0}})
			}
			got := segmentsToEmpty(r, files, &opts)
			require.Equal(t, tc.want, slices.Sorted(maps.Keys(got)))
		})
	}
}

// TestPlanWrites: what an upload writes, given the segments it empties:
// the files the store does not hold, the files it holds in those segments
// (moved), then the pieces of those segments only older checkpoints use,
// copied from the store into expiring segments, segment by segment in
// name order.
func TestPlanWrites(t *testing.T) {
	r := &registry{Objects: map[string]*regObject{
		"data/s": testObject(true, groupVlogs, 300,
			regPiece{File: "a.vlog", Size: 100, Checksum: 0xa, Refs: 2},  // the new checkpoint and an older one
			regPiece{File: "b.vlog", Size: 100, Checksum: 0xb, Refs: 1},  // an older one
			regPiece{File: "c.vlog", Size: 100, Checksum: 0xc, Refs: 0}), // none: not moved
		"data/r": testObject(true, groupVlogs, 100, regPiece{File: "e.vlog", Size: 100, Checksum: 0xe, Refs: 1}),
		"data/k": testObject(true, groupVlogs, 100, regPiece{File: "k.vlog", Size: 100, Checksum: 0xf, Refs: 1}),
	}}
	a := &localFile{name: "a.vlog", size: 100, checksum: 0xa, sumKnown: true, stored: true, ref: pieceRef{"data/s", 0}, group: groupVlogs}
	d := &localFile{name: "d.vlog", size: 50, group: groupVlogs}
	k := &localFile{name: "k.vlog", size: 100, checksum: 0xf, sumKnown: true, stored: true, ref: pieceRef{"data/k", 0}, group: groupVlogs}
	writes := planWrites(r, []*localFile{a, d, k}, map[string]bool{"data/s": true, "data/r": true})

	require.Equal(t, []*localFile{
		{name: "a.vlog", size: 100, checksum: 0xa, sumKnown: true, ref: pieceRef{"data/s", 0}, group: groupVlogs,
			reupload: true, moveFrom: pieceRef{"data/s", 0}},
		{name: "d.vlog", size: 50, group: groupVlogs},
		{name: "e.vlog", size: 100, checksum: 0xe, sumKnown: true, group: groupExpiring,
			reupload: true, remote: true, moveFrom: pieceRef{"data/r", 0}},
		{name: "b.vlog", size: 100, checksum: 0xb, sumKnown: true, group: groupExpiring,
			reupload: true, remote: true, moveFrom: pieceRef{"data/s", 100}},
	}, writes)
	require.Same(t, a, writes[0], "the checkpoint's own file moves, not a copy of it")
	require.True(t, k.stored, "a file in a segment kept stays where it is")
}

// TestSweepChoice: what an upload deletes after its commit, given the
// registry it built: the objects no retained checkpoint uses, the
// manifest objects of the format-1 checkpoints it dropped, and whatever
// the store lists under data/ and checkpoints/ that the registry does not
// name; each once, and never an object the registry names.
func TestSweepChoice(t *testing.T) {
	live := func() *regObject { return testObject(true, groupVlogs, 10, piece("f", 10, 1)) }
	dead := func() *regObject { return testObject(true, groupVlogs, 10, piece("f", 10, 0)) }
	list := func(names ...string) []ObjectInfo {
		var l []ObjectInfo
		for _, n := range names {
			l = append(l, ObjectInfo{Name: n})
		}
		return l
	}
	for _, tc := range []struct {
		name        string
		objects     map[string]*regObject
		checkpoints []regCheckpoint // retained
		dropped     []regCheckpoint
		listed      []ObjectInfo
		marked      map[string][]string // the store's reference markers
		wantKept    []string            // objects left in the registry
		want        []string            // released
	}{
		{name: "objects in use stay",
			objects:  map[string]*regObject{"data/a": live()},
			listed:   list("data/a"),
			wantKept: []string{"data/a"}},
		{name: "an object whose pieces lost their last reference goes, once",
			objects:  map[string]*regObject{"data/a": live(), "data/b": dead()},
			listed:   list("data/a", "data/b"),
			wantKept: []string{"data/a"},
			want:     []string{"data/b"}},
		{name: "an object with one piece in use stays whole",
			objects:  map[string]*regObject{"data/a": testObject(true, groupVlogs, 20, piece("f", 10, 0), piece("g", 10, 1))},
			listed:   list("data/a"),
			wantKept: []string{"data/a"}},
		{name: "what the registry drops goes though the store did not list it",
			objects: map[string]*regObject{"data/b": dead()},
			want:    []string{"data/b"}},
		{name: "leftovers of failed uploads go",
			objects:  map[string]*regObject{"data/a": live()},
			listed:   list("data/a", "data/zz"),
			wantKept: []string{"data/a"},
			want:     []string{"data/zz"}},
		{name: "manifests of format-1 checkpoints: the dropped ones' go, the retained ones' stay",
			checkpoints: []regCheckpoint{{ID: 5, ManifestSize: 10}},
			dropped:     []regCheckpoint{{ID: 3, Manifest: &Manifest{ID: 3}}, {ID: 4, ManifestSize: 10}},
			listed:      list(manifestName(3), manifestName(4), manifestName(5)),
			want:        []string{manifestName(4), manifestName(3)}},
		{name: "the registry itself never goes",
			listed: list(registryName)},
		{name: "the registry's stray marks go; others' marks and named objects stay",
			objects: map[string]*regObject{"data/a": live()},
			marked: map[string][]string{
				"data/a":                 {remote.RegistryHolder},
				"shared/x/000001.sst":    {remote.RegistryHolder, "i-x"},
				"shared/x/000002.sst":    {"i-x"},
				"data/old-moved-segment": {"i-y"},
			},
			wantKept: []string{"data/a"},
			want:     []string{"shared/x/000001.sst"}},
		{name: "an external object no checkpoint uses goes from the registry",
			objects:  map[string]*regObject{"data/a": live(), "shared/x/000003.sst": {External: true, Size: 10, Pieces: []regPiece{{File: "000003.sst", Size: 10}}}},
			marked:   map[string][]string{"shared/x/000003.sst": {remote.RegistryHolder, "i-x"}},
			wantKept: []string{"data/a"},
			want:     []string{"shared/x/000003.sst"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objects := tc.objects
			if objects == nil {
				objects = map[string]*regObject{}
			}
			r := &registry{Objects: objects, Checkpoints: tc.checkpoints, object: registryName}
			unused := dropUnused(r, tc.dropped)
			got := toSweep(r, remote.RegistryHolder, unused, tc.listed, tc.marked)
			require.ElementsMatch(t, tc.want, got)
			var kept []string
			for name := range r.Objects {
				kept = append(kept, name)
			}
			require.ElementsMatch(t, tc.wantKept, kept)
		})
	}
}

// TestMoveOnePieceNamedTwice: a version with two files that are one
// piece (virtual tables of one table, as a union of range checkpoints
// makes), in a segment the upload empties: the piece moves once, both
// files and the older checkpoint name its new place, and the registry
// the upload builds is consistent.
func TestMoveOnePieceNamedTwice(t *testing.T) {
	seg := "data/00000000000000000001-0000-aaaaaaaa"
	r := &registry{NextID: 2, Objects: map[string]*regObject{
		seg: testObject(true, groupTables, 100,
			regPiece{File: "000004.sst", Size: 10, Checksum: 0x44, Refs: 1},
			regPiece{File: "000009.sst", Size: 90, Checksum: 0x99, Refs: 0}),
	}, Checkpoints: []regCheckpoint{{ID: 1, Manifest: &Manifest{ID: 1, Files: []FileRef{{Name: "000004.sst", Size: 10, Checksum: 0x44}}}, Pieces: []pieceRef{{seg, 0}}}}}
	r.object = registryName
	require.NoError(t, r.check())
	next := r.clone()
	next.NextID++
	a := &localFile{name: "000020.sst", size: 10, group: groupTables, shared: &manifest.SharedRef{Object: seg, Offset: 0}}
	b := &localFile{name: "000021.sst", size: 10, group: groupTables, shared: &manifest.SharedRef{Object: seg, Offset: 0}}
	files := []*localFile{a, b}
	u := &Uploader{opts: UploadOptions{KeepLast: 3}, reg: defaultRegistry, sums: map[fileKey]uint64{}}
	u.opts, _ = u.opts.withDefaults()
	up := &upload{u: u, id: 2, next: next, files: files}
	up.retire()
	require.Empty(t, matchShared(next, files))
	require.NoError(t, matchStored(next, files, func(*localFile) (uint64, error) { panic("no") }))
	up.chooseWrites()
	require.Len(t, up.writes, 1, "the piece moves once")
	up.objs = u.planObjects(up.id, up.writes)
	for _, o := range up.objs {
		o.sums = make([]uint64, len(o.files))
		for i, f := range o.files {
			o.sums[i] = f.checksum // the bytes copied are the piece's
		}
	}
	require.NoError(t, up.record())
	// register, less the manifest
	ck := regCheckpoint{ID: up.id, Manifest: &Manifest{ID: up.id}}
	for _, f := range files {
		ck.Pieces = append(ck.Pieces, f.ref)
		ck.Manifest.Files = append(ck.Manifest.Files, FileRef{Name: f.name, Size: f.size, Checksum: f.checksum})
	}
	next.Checkpoints = append(next.Checkpoints, ck)
	dropUnused(next, up.dropped)
	require.NoError(t, next.check())
	require.Equal(t, a.ref, b.ref)
	require.Equal(t, a.ref, next.Checkpoints[0].Pieces[0], "the older checkpoint follows the piece")
}
