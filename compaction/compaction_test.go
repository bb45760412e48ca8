package compaction

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/rangedel"
	"github.com/strata-db/strata/lsm/sstable"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

type entry struct {
	key   base.InternalKey
	value []byte
}

// sliceIter iterates forward over sorted entries (all Run needs).
type sliceIter struct {
	es  []entry
	pos int
}

func (s *sliceIter) First() bool           { s.pos = 0; return s.Valid() }
func (s *sliceIter) Next() bool            { s.pos++; return s.Valid() }
func (s *sliceIter) Valid() bool           { return s.pos >= 0 && s.pos < len(s.es) }
func (s *sliceIter) Key() base.InternalKey { return s.es[s.pos].key }
func (s *sliceIter) Value() []byte         { return s.es[s.pos].value }
func (s *sliceIter) Error() error          { return nil }
func (s *sliceIter) Close() error          { return nil }
func (s *sliceIter) SeekGE([]byte) bool    { panic("unused") }
func (s *sliceIter) SeekLT([]byte) bool    { panic("unused") }
func (s *sliceIter) Last() bool            { panic("unused") }
func (s *sliceIter) Prev() bool            { panic("unused") }
func (s *sliceIter) String() string        { return fmt.Sprint(s.es) }
func (e entry) String() string {
	return fmt.Sprintf("%s#%d,%s", e.key.UserKey, e.key.SeqNum(), e.key.Kind())
}
func kindOf(s string) base.Kind {
	return map[string]base.Kind{"SET": base.KindSet, "DEL": base.KindDelete, "MERGE": base.KindMerge}[s]
}

// parseEntries reads "a#5,SET b#3,DEL".
func parseEntries(t *testing.T, s string) []entry {
	var out []entry
	for _, f := range strings.Fields(s) {
		k, rest, _ := strings.Cut(f, "#")
		seq, kind, _ := strings.Cut(rest, ",")
		n, err := strconv.Atoi(seq)
		require.NoError(t, err)
		out = append(out, entry{key: base.MakeInternalKey([]byte(k), base.SeqNum(n), kindOf(kind)), value: []byte(f)})
	}
	slices.SortFunc(out, func(a, b entry) int { return base.InternalCompare(a.key, b.key) })
	return out
}

// parseTombs reads "[a,c)#7 [b,d)#2".
func parseTombs(t *testing.T, s string) []base.RangeTombstone {
	var out []base.RangeTombstone
	for _, f := range strings.Fields(s) {
		span, seq, _ := strings.Cut(f, "#")
		a, b, _ := strings.Cut(strings.Trim(span, "[)"), ",")
		n, err := strconv.Atoi(seq)
		require.NoError(t, err)
		out = append(out, base.RangeTombstone{Start: []byte(a), End: []byte(b), Seq: base.SeqNum(n)})
	}
	return out
}

type memFS struct {
	fs   *vfs.MemFS
	next base.FileNum
}

func (m *memFS) newFile() (base.FileNum, vfs.File, error) {
	m.next++
	f, err := m.fs.Create(base.MakeFilename(base.FileTypeTable, m.next))
	return m.next, f, err
}

// readOutputs returns the entries and tombstones of every output, one
// string per output file. Keys starting with valuePrefix (when not empty)
// are followed by "=value".
func readOutputs(t *testing.T, fs *vfs.MemFS, outs []Output, valuePrefix ...string) []string {
	var files []string
	for _, o := range outs {
		name := base.MakeFilename(base.FileTypeTable, o.FileNum)
		f, err := fs.Open(name)
		require.NoError(t, err)
		r, err := sstable.NewReader(f, int64(o.Meta.Size), sstable.ReaderOptions{FileNum: o.FileNum})
		require.NoError(t, err)
		var parts []string
		it := r.NewIter()
		for ok := it.First(); ok; ok = it.Next() {
			k := it.Key()
			part := fmt.Sprintf("%s#%d,%s", k.UserKey, k.SeqNum(), k.Kind())
			if len(valuePrefix) > 0 && strings.HasPrefix(string(k.UserKey), valuePrefix[0]) {
				part += "=" + string(it.Value())
			}
			parts = append(parts, part)
		}
		require.NoError(t, it.Close())
		for _, ts := range r.RangeTombstones() {
			parts = append(parts, fmt.Sprintf("[%s,%s)#%d", ts.Start, ts.End, ts.Seq))
		}
		files = append(files, strings.Join(parts, " "))
		require.NoError(t, r.Close())
	}
	return files
}

// TestRunDecisions pins which entries a flush or compaction keeps. Each row
// reads as: given these entries, tombstones and open snapshots, the outputs
// hold exactly these.
func TestRunDecisions(t *testing.T) {
	for _, tc := range []struct {
		name       string
		entries    string
		tombs      string
		snaps      []base.SeqNum
		bottommost bool
		want       string
	}{
		{name: "newest version wins without snapshots",
			entries: "a#3,SET a#2,SET a#1,SET b#4,SET",
			want:    "a#3,SET b#4,SET"},
		{name: "a snapshot keeps the version it sees",
			entries: "a#3,SET a#2,SET a#1,SET", snaps: []base.SeqNum{2},
			want: "a#3,SET a#2,SET"},
		{name: "two snapshots in one stripe keep one version",
			entries: "a#5,SET a#4,SET a#2,SET a#1,SET", snaps: []base.SeqNum{2, 3},
			want: "a#5,SET a#2,SET"},
		{name: "deletes stay above the bottom",
			entries: "a#3,DEL a#1,SET b#2,SET",
			want:    "a#3,DEL b#2,SET"},
		{name: "deletes go at the bottom with what they hide",
			entries: "a#3,DEL a#1,SET b#2,SET", bottommost: true,
			want: "b#2,SET"},
		{name: "a delete a snapshot needs stays at the bottom",
			entries: "a#3,DEL a#1,SET", snaps: []base.SeqNum{2}, bottommost: true,
			want: "a#3,DEL a#1,SET"},
		{name: "range tombstone drops covered entries of its stripe",
			entries: "a#1,SET b#2,SET c#6,SET", tombs: "[a,c)#5",
			want: "c#6,SET [a,c)#5"},
		{name: "a snapshot between entry and tombstone keeps the entry",
			entries: "a#1,SET b#4,SET", tombs: "[a,c)#5", snaps: []base.SeqNum{1},
			want: "a#1,SET [a,c)#5"},
		{name: "range tombstones and what they cover go at the bottom",
			entries: "a#1,SET b#2,SET d#1,SET", tombs: "[a,c)#5", bottommost: true,
			want: "d#1,SET"},
		{name: "overlapping tombstones fragment; the older of a stripe is dropped",
			entries: "x#1,SET", tombs: "[a,e)#5 [c,g)#3",
			want: "x#1,SET [a,c)#5 [c,e)#5 [e,g)#3"},
		{name: "a snapshot keeps the older tombstone of a fragment",
			entries: "x#1,SET", tombs: "[a,e)#5 [c,g)#3", snaps: []base.SeqNum{4},
			want: "x#1,SET [a,c)#5 [c,e)#5 [c,e)#3 [e,g)#3"},
		{name: "tombstones alone still make an output",
			tombs: "[a,b)#2",
			want:  "[a,b)#2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := &memFS{fs: vfs.NewMem()}
			outs, _, err := Run(Config{
				Input:      &sliceIter{es: parseEntries(t, tc.entries), pos: -1},
				RangeDels:  rangedel.Build(parseTombs(t, tc.tombs)),
				Snapshots:  tc.snaps,
				Bottommost: tc.bottommost,
				NewFile:    fs.newFile,
			})
			require.NoError(t, err)
			require.Equal(t, []string{tc.want}, readOutputs(t, fs.fs, outs))
		})
	}
}

// TestRunSplitsOutputs checks files are cut at user-key boundaries past the
// target size, tombstones are clipped to each file's span, and file bounds
// never overlap.
func TestRunSplitsOutputs(t *testing.T) {
	var es []entry
	for i := 0; i < 400; i++ {
		k := []byte(fmt.Sprintf("k%04d", i))
		for seq := 3; seq >= 1; seq-- {
			es = append(es, entry{key: base.MakeInternalKey(k, base.SeqNum(1000*seq+i), base.KindSet), value: make([]byte, 50)})
		}
	}
	slices.SortFunc(es, func(a, b entry) int { return base.InternalCompare(a.key, b.key) })
	fs := &memFS{fs: vfs.NewMem()}
	tombs := []base.RangeTombstone{{Start: []byte("k0000"), End: []byte("k9999"), Seq: 500}}
	outs, stats, err := Run(Config{
		Input:          &sliceIter{es: es, pos: -1},
		RangeDels:      rangedel.Build(tombs),
		Snapshots:      []base.SeqNum{2500}, // keeps versions at 2xxx below the 3xxx ones
		NewFile:        fs.newFile,
		TargetFileSize: 4096,
	})
	require.NoError(t, err)
	require.Greater(t, len(outs), 3)
	require.Equal(t, uint64(800), stats.EntriesOut)
	var prev *sstable.WriterMetadata
	for _, o := range outs {
		m := o.Meta
		require.True(t, m.HasRangeDels, "every output carries its piece of the tombstone")
		if prev != nil {
			c := base.Compare(prev.Largest().UserKey, m.Smallest().UserKey)
			require.True(t, c < 0 || (c == 0 && prev.Largest().IsRangeDelSentinel()),
				"outputs overlap: %s and %s", prev.Largest(), m.Smallest())
		}
		prev = m
	}
	require.Equal(t, "k9999", string(prev.Largest().UserKey))
	// Clipped pieces tile the tombstone exactly.
	var spans [][2]string
	for _, files := range readOutputs(t, fs.fs, outs) {
		for _, f := range strings.Fields(files) {
			if strings.HasPrefix(f, "[") {
				a, b, _ := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(f, "["), ")#500"), ",")
				spans = append(spans, [2]string{a, b})
			}
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i][0] < spans[j][0] })
	require.Equal(t, "k0000", spans[0][0])
	for i := 1; i < len(spans); i++ {
		require.Equal(t, spans[i-1][1], spans[i][0])
	}
	require.Equal(t, "k9999", spans[len(spans)-1][1])
}

// prefixFilter removes keys starting with "x" and upper-cases the values of
// keys starting with "u".
type prefixFilter struct{}

func (prefixFilter) Filter(k base.InternalKey, v []byte) (Decision, []byte) {
	switch k.UserKey[0] {
	case 'x':
		return Remove, nil
	case 'u':
		return ChangeValue, []byte(strings.ToUpper(string(v)))
	}
	return Keep, nil
}

// TestRunFilter pins the filter hook: it sees only the newest version no
// snapshot can see; a removal is dropped at the bottom and becomes a
// tombstone above it; a changed value is written.
func TestRunFilter(t *testing.T) {
	for _, tc := range []struct {
		name       string
		entries    string
		snaps      []base.SeqNum
		bottommost bool
		want       string
	}{
		{name: "removed at the bottom", entries: "a#1,SET x#2,SET x#1,SET", bottommost: true, want: "a#1,SET"},
		{name: "removed above the bottom becomes a tombstone", entries: "a#1,SET x#2,SET x#1,SET", want: "a#1,SET x#2,DEL"},
		{name: "a version a snapshot sees is not filtered", entries: "x#5,SET x#2,SET", snaps: []base.SeqNum{3}, bottommost: true,
			want: "x#5,DEL x#2,SET"},
		{name: "changed values are written", entries: "u#3,SET", want: "u#3,SET=U#3,SET"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := &memFS{fs: vfs.NewMem()}
			outs, _, err := Run(Config{
				Input:      &sliceIter{es: parseEntries(t, tc.entries), pos: -1},
				Snapshots:  tc.snaps,
				Bottommost: tc.bottommost,
				NewFile:    fs.newFile,
				Filter:     prefixFilter{},
			})
			require.NoError(t, err)
			require.Equal(t, []string{tc.want}, readOutputs(t, fs.fs, outs, "u"))
		})
	}
}
