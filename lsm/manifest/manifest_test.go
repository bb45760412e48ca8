package manifest

import (
	"errors"
	"io"
	"sync"
	"testing"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

func ikey(s string, seq base.SeqNum) base.InternalKey {
	return base.MakeInternalKey([]byte(s), seq, base.KindSet)
}

func meta(num base.FileNum, a, b string, seq base.SeqNum) *FileMetadata {
	return &FileMetadata{FileNum: num, Size: uint64(num) * 100, Smallest: ikey(a, seq), Largest: ikey(b, seq),
		SmallestSeq: seq, LargestSeq: seq}
}

func TestVersionEditRoundTrip(t *testing.T) {
	ve := &VersionEdit{ComparerName: ComparerName, MergerName: "strata.ListAppend"}
	ve.SetLogNum(7)
	ve.SetNextFileNum(12)
	ve.SetLastSeq(99)
	ve.DeletedFiles = []DeletedFile{{Level: 0, FileNum: 3}, {Level: 6, FileNum: 4}}
	m := meta(9, "a", "z", 5)
	m.Largest = base.InternalKey{UserKey: []byte("zz"), Trailer: base.RangeDelSentinel}
	m.HasRangeDels = true
	ve.NewFiles = []NewFile{{Level: 1, Meta: m}}
	ve.NewVlogs = []*VlogMetadata{{FileNum: 8, Size: 1 << 20, Records: 250, ValueBytes: 1 << 19}, {FileNum: 10, Size: 5000, Records: 3, ValueBytes: 4000, RecordsEnd: 4100}}
	ve.DeletedVlogs = []base.FileNum{2}
	enc := ve.Encode(nil)
	var got VersionEdit
	require.NoError(t, got.Decode(enc))
	require.Equal(t, ve.String(), got.String())
	require.True(t, got.NewFiles[0].Meta.HasRangeDels)
	require.True(t, got.NewFiles[0].Meta.Largest.IsRangeDelSentinel())
	require.Zero(t, got.NewVlogs[0].RecordsEnd)
	require.Equal(t, uint64(4100), got.NewVlogs[1].RecordsEnd)
	require.Equal(t, "strata.ListAppend", got.MergerName)

	// A reader that knows only the first four fields of a new value log
	// (before RecordsEnd) reads what it knows and ignores the rest: the
	// field's payload is length-prefixed.
	old := &VersionEdit{NewVlogs: []*VlogMetadata{{FileNum: 10, Size: 5000, Records: 3, ValueBytes: 4000}}}
	withEnd := &VersionEdit{NewVlogs: []*VlogMetadata{{FileNum: 10, Size: 5000, Records: 3, ValueBytes: 4000, RecordsEnd: 4100}}}
	require.Greater(t, len(withEnd.Encode(nil)), len(old.Encode(nil)))

	// Optional fields from a newer writer are skipped; unknown required
	// fields are refused.
	withOptional := append(append([]byte(nil), enc...), 70, 2, 'h', 'i')
	require.NoError(t, (&VersionEdit{}).Decode(withOptional))
	withRequired := append(append([]byte(nil), enc...), 60, 1, 'x')
	require.Error(t, (&VersionEdit{}).Decode(withRequired))
	// Every truncation is an error or a shorter valid edit, never a panic.
	for i := range enc {
		_ = (&VersionEdit{}).Decode(enc[:i])
	}
}

func FuzzVersionEditDecode(f *testing.F) {
	ve := &VersionEdit{ComparerName: ComparerName}
	ve.SetLastSeq(3)
	ve.NewFiles = []NewFile{{Level: 2, Meta: meta(5, "b", "c", 3)}}
	f.Add(ve.Encode(nil))
	f.Add([]byte{6, 3, 1, 2, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		var ve VersionEdit
		if err := ve.Decode(data); err != nil {
			return
		}
		// What decodes re-encodes to something that decodes the same.
		var again VersionEdit
		if err := again.Decode(ve.Encode(nil)); err != nil {
			t.Fatalf("re-encoded edit does not decode: %v", err)
		}
		if ve.String() != again.String() {
			t.Fatalf("round trip changed the edit:\n%s\n%s", ve.String(), again.String())
		}
	})
}

func TestApply(t *testing.T) {
	v, err := Apply(nil, &VersionEdit{NewFiles: []NewFile{
		{Level: 0, Meta: meta(1, "a", "m", 10)},
		{Level: 0, Meta: meta(2, "c", "d", 5)},
		{Level: 1, Meta: meta(3, "n", "p", 1)},
		{Level: 1, Meta: meta(4, "a", "c", 1)},
	}})
	require.NoError(t, err)
	require.Equal(t, []base.FileNum{2, 1}, nums(v.Levels[0]), "L0 sorted oldest first")
	require.Equal(t, []base.FileNum{4, 3}, nums(v.Levels[1]), "L1 sorted by key")
	require.Equal(t, 0, v.FindFile(1, []byte("b")))
	require.Equal(t, -1, v.FindFile(1, []byte("e")))
	require.Equal(t, []base.FileNum{3}, nums(v.Overlaps(1, []byte("o"), nil)))
	lo, hi, ok := v.KeyRange()
	require.True(t, ok)
	require.Equal(t, "a", string(lo))
	require.Equal(t, "p", string(hi))
	_, _, ok = (&Version{}).KeyRange()
	require.False(t, ok, "a version without tables has no key range")

	_, err = Apply(v, &VersionEdit{DeletedFiles: []DeletedFile{{Level: 2, FileNum: 3}}})
	require.ErrorContains(t, err, "does not hold it")
	_, err = Apply(v, &VersionEdit{NewFiles: []NewFile{{Level: 2, Meta: meta(3, "x", "y", 1)}}})
	require.ErrorContains(t, err, "already holds it")
	_, err = Apply(v, &VersionEdit{NewFiles: []NewFile{{Level: 1, Meta: meta(5, "b", "o", 1)}}})
	require.ErrorContains(t, err, "overlap")

	// A file moves between levels with one edit.
	v2, err := Apply(v, &VersionEdit{
		DeletedFiles: []DeletedFile{{Level: 1, FileNum: 3}},
		NewFiles:     []NewFile{{Level: 2, Meta: v.Levels[1][1]}},
	})
	require.NoError(t, err)
	require.Equal(t, []base.FileNum{3}, nums(v2.Levels[2]))
}

func nums(files []*FileMetadata) []base.FileNum {
	var out []base.FileNum
	for _, f := range files {
		out = append(out, f.FileNum)
	}
	return out
}

func TestVersionRefsReportObsoleteFiles(t *testing.T) {
	var obsolete []base.FileNum
	v1, err := Apply(nil, &VersionEdit{NewFiles: []NewFile{{Level: 0, Meta: meta(1, "a", "b", 1)}, {Level: 0, Meta: meta(2, "a", "b", 2)}}})
	require.NoError(t, err)
	v1.onZero = func(o Obsolete) { obsolete = append(obsolete, nums(o.Tables)...) }
	v1.Ref()
	v2, err := Apply(v1, &VersionEdit{DeletedFiles: []DeletedFile{{Level: 0, FileNum: 1}}})
	require.NoError(t, err)
	v2.Ref()
	v1.Unref()
	require.Equal(t, []base.FileNum{1}, obsolete, "file 1 is in no version now")
	v2.Unref()
	require.Equal(t, []base.FileNum{1, 2}, obsolete)
}

func TestVersionSetPersists(t *testing.T) {
	fs := vfs.NewMem()
	require.NoError(t, fs.MkdirAll("db", 0o755))
	syncRoot(t, fs) // the directory itself must survive the crash
	var mu sync.Mutex
	opts := Options{FS: fs, Dirname: "db", Mu: &mu, MaxManifestSize: 4096}
	vs, err := Create(opts)
	require.NoError(t, err)
	mu.Lock()
	for i := 0; i < 200; i++ {
		num := vs.NewFileNum()
		ve := &VersionEdit{NewFiles: []NewFile{{Level: 0, Meta: meta(num, "a", "b", base.SeqNum(i+1))}}}
		ve.SetLastSeq(base.SeqNum(i + 1))
		ve.SetLogNum(num)
		require.NoError(t, vs.LogAndApply(ve))
	}
	want := vs.Current().String()
	mu.Unlock()
	require.NoError(t, vs.Close())
	names, err := fs.List("db")
	require.NoError(t, err)
	manifests := 0
	for _, n := range names {
		if typ, _, _ := base.ParseFilename(n); typ == base.FileTypeManifest {
			manifests++
		}
	}
	require.Equal(t, 1, manifests, "rotation removes old manifests: %v", names)

	// A crash keeps everything: every edit was synced before LogAndApply
	// returned.
	crashed := fs.CrashClone(vfs.CrashOptions{})
	opts.FS = crashed
	vs2, err := Load(opts)
	require.NoError(t, err)
	require.Equal(t, want, vs2.Current().String())
	require.Equal(t, base.SeqNum(200), vs2.LastSeq())
	require.Greater(t, vs2.NextFileNum(), vs2.LogNum())
}

func TestLoadCorruptCurrent(t *testing.T) {
	fs := vfs.NewMem()
	require.NoError(t, fs.MkdirAll("db", 0o755))
	var mu sync.Mutex
	opts := Options{FS: fs, Dirname: "db", Mu: &mu}
	for _, contents := range []string{"", "MANIFEST-000009\n", "garbage\n", "MANIFEST-000001"} {
		f, err := fs.Create("db/CURRENT")
		require.NoError(t, err)
		_, err = io.WriteString(f, contents)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		_, err = Load(opts)
		require.True(t, errors.Is(err, base.ErrCorruption), "CURRENT %q: %v", contents, err)
	}
}

func TestVersionVlogs(t *testing.T) {
	var obsolete []base.FileNum
	v1, err := Apply(nil, &VersionEdit{NewVlogs: []*VlogMetadata{{FileNum: 3, Size: 10}, {FileNum: 4, Size: 20}}})
	require.NoError(t, err)
	v1.onZero = func(o Obsolete) {
		for _, vl := range o.Vlogs {
			obsolete = append(obsolete, vl.FileNum)
		}
	}
	v1.Ref()
	_, err = Apply(v1, &VersionEdit{DeletedVlogs: []base.FileNum{9}})
	require.ErrorContains(t, err, "does not hold")
	_, err = Apply(v1, &VersionEdit{NewVlogs: []*VlogMetadata{{FileNum: 3}}})
	require.ErrorContains(t, err, "twice")
	v2, err := Apply(v1, &VersionEdit{DeletedVlogs: []base.FileNum{3}})
	require.NoError(t, err)
	v2.Ref()
	v1.Unref()
	require.Equal(t, []base.FileNum{3}, obsolete, "value log 3 is in no version now")
	require.Len(t, v2.Vlogs, 1)
	snap, err := Apply(nil, v2.SnapshotEdit())
	require.NoError(t, err)
	require.Equal(t, v2.String(), snap.String())
}

// syncRoot makes the entry of a directory made in the root durable.
func syncRoot(t *testing.T, fs vfs.FS) {
	t.Helper()
	d, err := fs.OpenDir("")
	require.NoError(t, err)
	require.NoError(t, d.Sync())
	require.NoError(t, d.Close())
}

// TestMergerNameRecorded: the merger name an edit records is carried by
// every later version and by the snapshot a new manifest starts with, so
// it survives rotations and reloads; a manifest that never recorded one
// (written before the field existed) loads with none.
func TestMergerNameRecorded(t *testing.T) {
	fs := vfs.NewMem()
	require.NoError(t, fs.MkdirAll("db", 0o755))
	var mu sync.Mutex
	opts := Options{FS: fs, Dirname: "db", Mu: &mu, MaxManifestSize: 1024}
	vs, err := Create(opts)
	require.NoError(t, err)
	mu.Lock()
	require.Empty(t, vs.Current().MergerName)
	ve := &VersionEdit{NewFiles: []NewFile{{Level: 0, Meta: meta(vs.NewFileNum(), "a", "b", 1)}}}
	require.NoError(t, vs.LogAndApply(ve))
	mu.Unlock()
	require.NoError(t, vs.Close())
	vs, err = Load(opts)
	require.NoError(t, err)
	require.Empty(t, vs.Current().MergerName, "a manifest without the field records none")

	mu.Lock()
	require.NoError(t, vs.LogAndApply(&VersionEdit{MergerName: "strata.Counter"}))
	for i := 0; i < 50; i++ { // past MaxManifestSize: new manifests
		ve := &VersionEdit{NewFiles: []NewFile{{Level: 0, Meta: meta(vs.NewFileNum(), "a", "b", base.SeqNum(i+2))}}}
		require.NoError(t, vs.LogAndApply(ve))
		require.Equal(t, "strata.Counter", vs.Current().MergerName)
	}
	mu.Unlock()
	require.NoError(t, vs.Close())
	vs, err = Load(opts)
	require.NoError(t, err)
	require.Equal(t, "strata.Counter", vs.Current().MergerName)
	require.Equal(t, "strata.Counter", vs.Current().SnapshotEdit().MergerName)
	require.NoError(t, vs.Close())
}

// TestClipVirtual: a table clipped to a range that holds all of its keys
// stays as it is; one that straddles a bound gets the bound (the first
// internal key of start, an exclusive sentinel at end) and is virtual,
// which an edit records and a version accepts beside a neighbour that
// starts at the same bound.
func TestClipVirtual(t *testing.T) {
	m := meta(9, "c", "m", 5)
	for _, tc := range []struct {
		start, end string
		ok         bool
		virtual    bool
		lower      string
		upper      string
	}{
		{"", "", true, false, "", ""},
		{"a", "z", true, false, "", ""},
		{"c", "m\x00", true, false, "", ""},
		{"d", "", true, true, "d", "m\x00"},
		{"", "m", true, true, "c", "m"},
		{"e", "g", true, true, "e", "g"},
		{"m", "z", true, true, "m", "m\x00"},
		{"n", "z", false, false, "", ""},
		{"a", "c", false, false, "", ""},
	} {
		var start, end []byte
		if tc.start != "" {
			start = []byte(tc.start)
		}
		if tc.end != "" {
			end = []byte(tc.end)
		}
		c, ok := m.Clip(start, end)
		require.Equal(t, tc.ok, ok, "[%q, %q)", tc.start, tc.end)
		if !ok {
			continue
		}
		require.Equal(t, tc.virtual, c.Virtual, "[%q, %q)", tc.start, tc.end)
		lo, hi := c.VisibleRange()
		require.Equal(t, tc.lower, string(lo), "[%q, %q)", tc.start, tc.end)
		require.Equal(t, tc.upper, string(hi), "[%q, %q)", tc.start, tc.end)
		if tc.virtual {
			require.True(t, c.ContainsUserKey([]byte(tc.lower)))
			require.False(t, c.ContainsUserKey([]byte(tc.upper)))
		}
	}

	left, _ := meta(10, "a", "k", 3).Clip(nil, []byte("f"))
	right, _ := m.Clip([]byte("f"), nil)
	right.FileNum = 11
	ve := &VersionEdit{NewFiles: []NewFile{{Level: 6, Meta: left}, {Level: 6, Meta: right}}}
	var got VersionEdit
	require.NoError(t, got.Decode(ve.Encode(nil)))
	require.Equal(t, ve.String(), got.String())
	require.True(t, got.NewFiles[0].Meta.Virtual)
	require.True(t, got.NewFiles[1].Meta.Virtual)
	v, err := Apply(nil, &got)
	require.NoError(t, err)
	require.NoError(t, v.CheckOrdering())
}

// TestSeqOffsetRoundTrip: an ingested table's sequence-number offset
// survives an edit's encoding and a clip; an offset above the file's
// smallest sequence number is refused.
func TestSeqOffsetRoundTrip(t *testing.T) {
	m := meta(9, "a", "z", 40)
	m.LargestSeq = 42
	m.SeqOffset = 40
	c, ok := m.Clip([]byte("b"), []byte("c"))
	require.True(t, ok)
	require.Equal(t, base.SeqNum(40), c.SeqOffset)
	ve := &VersionEdit{NewFiles: []NewFile{{Level: 6, Meta: m}, {Level: 5, Meta: meta(10, "a", "b", 7)}}}
	var got VersionEdit
	require.NoError(t, got.Decode(ve.Encode(nil)))
	require.Equal(t, ve.String(), got.String())
	require.Contains(t, got.String(), "+40[")
	require.Equal(t, base.SeqNum(40), got.NewFiles[0].Meta.SeqOffset)
	require.Zero(t, got.NewFiles[1].Meta.SeqOffset)

	m.SeqOffset = 41
	require.ErrorContains(t, got.Decode(ve.Encode(nil)), "offset 41 above")
}
