package compaction

import (
	"errors"
	"strings"
	"testing"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/rangedel"
	"github.com/strata-db/strata/vfs"
	"github.com/strata-db/strata/vlog"
	"github.com/stretchr/testify/require"
)

// joinMerger joins a value and its operands with "+"; it cannot merge the
// keys starting with "x" (as a merger meeting an operand it cannot read).
type joinMerger struct{}

var errCannotMerge = errors.New("cannot merge")

func (joinMerger) Merge(key, existing []byte, ops [][]byte) ([]byte, error) {
	if key[0] == 'x' {
		return nil, errCannotMerge
	}
	parts := []string{string(existing)}
	for _, op := range ops {
		parts = append(parts, string(op))
	}
	return []byte(strings.Join(parts, "+")), nil
}

func (joinMerger) PartialMerge(key []byte, ops [][]byte) ([]byte, bool) {
	if key[0] == 'x' {
		return nil, false
	}
	v, _ := joinMerger{}.Merge(key, nil, ops)
	return v, true
}

// TestRunMergeFailureKeepsEntries pins what a flush or compaction writes
// when Merger.Merge fails for a key: the entries it would have folded,
// exactly as they were, and no error; other keys fold as usual.
func TestRunMergeFailureKeepsEntries(t *testing.T) {
	for _, tc := range []struct {
		name       string
		entries    string
		tombs      string
		snaps      []base.SeqNum
		bottommost bool
		want       string
	}{
		{name: "operands and the value below are kept",
			entries: "a#4,MERGE a#1,SET x#3,MERGE x#2,MERGE x#1,SET x#0,SET",
			want:    "a#4,SET=a#1,SET+a#4,MERGE x#3,MERGE=x#3,MERGE x#2,MERGE=x#2,MERGE x#1,SET=x#1,SET"},
		{name: "a tombstone below is kept above the bottom",
			entries: "x#3,MERGE x#2,DEL x#1,SET",
			want:    "x#3,MERGE=x#3,MERGE x#2,DEL="},
		{name: "a tombstone below goes at the bottom",
			entries: "x#3,MERGE x#2,DEL x#1,SET", bottommost: true,
			want: "x#3,MERGE=x#3,MERGE"},
		{name: "operands with nothing below at the bottom",
			entries: "x#3,MERGE x#2,MERGE", bottommost: true,
			want: "x#3,MERGE=x#3,MERGE x#2,MERGE=x#2,MERGE"},
		{name: "a range-deleted value below stays dropped",
			entries: "x#3,MERGE x#1,SET", tombs: "[x,y)#2",
			want: "x#3,MERGE=x#3,MERGE [x,y)#2"},
		{name: "each snapshot stripe is kept as it was",
			entries: "x#5,MERGE x#4,SET x#2,MERGE x#1,SET", snaps: []base.SeqNum{3},
			want: "x#5,MERGE=x#5,MERGE x#4,SET=x#4,SET x#2,MERGE=x#2,MERGE x#1,SET=x#1,SET"},
		{name: "a set above the operands shadows them",
			entries: "x#4,SET x#3,MERGE x#1,SET",
			want:    "x#4,SET=x#4,SET"},
		{name: "a delete above the operands drops them at the bottom",
			entries: "x#4,DEL x#3,MERGE x#1,SET", bottommost: true,
			want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := &memFS{fs: vfs.NewMem()}
			outs, stats, err := Run(Config{
				Input:      &sliceIter{es: parseEntries(t, tc.entries), pos: -1},
				RangeDels:  rangedel.Build(parseTombs(t, tc.tombs)),
				Snapshots:  tc.snaps,
				Bottommost: tc.bottommost,
				NewFile:    fs.newFile,
				Merger:     joinMerger{},
			})
			require.NoError(t, err)
			var want []string
			if tc.want != "" {
				want = []string{tc.want}
			}
			require.Equal(t, want, readOutputs(t, fs.fs, outs, ""))
			points := 0
			for _, f := range strings.Fields(tc.want) {
				if !strings.HasPrefix(f, "[") {
					points++
				}
			}
			require.Equal(t, uint64(points), stats.EntriesOut)
		})
	}
}

// TestRunMergeFailureKeepsPointer: a separated value below operands that
// cannot be merged stays in the tree and is not metered as garbage; when
// the merge succeeds, its record is.
func TestRunMergeFailureKeepsPointer(t *testing.T) {
	p := vlog.Pointer{FileNum: 7, Offset: 4096, Length: 30, ValueLen: 20}
	for _, key := range []string{"a", "x"} {
		t.Run(key, func(t *testing.T) {
			es := []entry{
				{key: base.MakeInternalKey([]byte(key), 2, base.KindMerge), value: []byte("op")},
				{key: base.MakeInternalKey([]byte(key), 1, base.KindValuePointer), value: p.Encode(nil)},
			}
			fs := &memFS{fs: vfs.NewMem()}
			reads := 0
			outs, stats, err := Run(Config{
				Input:   &sliceIter{es: es, pos: -1},
				NewFile: fs.newFile,
				Merger:  joinMerger{},
				ReadValue: func(_, ptr []byte) ([]byte, error) {
					reads++
					return []byte("value"), nil
				},
			})
			require.NoError(t, err)
			require.Equal(t, 1, reads)
			require.Len(t, outs, 1)
			if key == "a" {
				require.Equal(t, []string{"a#2,SET=value+op"}, readOutputs(t, fs.fs, outs, "a"))
				require.Equal(t, map[base.FileNum]uint64{7: 30}, stats.VlogGarbage)
				require.Empty(t, outs[0].VlogRefs)
				return
			}
			require.Equal(t, []string{"x#2,MERGE x#1,VPTR"}, readOutputs(t, fs.fs, outs))
			require.Empty(t, stats.VlogGarbage, "the pointer is kept")
			require.Len(t, outs[0].VlogRefs, 1)
			require.Equal(t, uint64(30), outs[0].VlogRefs[0].Bytes)
		})
	}
}

// TestRunMergeFailureOverExpiredValue: an expired value below operands
// that cannot be merged is gone either way: a tombstone stands for it
// above the bottom, nothing at the bottom.
func TestRunMergeFailureOverExpiredValue(t *testing.T) {
	for _, bottommost := range []bool{false, true} {
		es := []entry{
			{key: base.MakeInternalKey([]byte("x"), 2, base.KindMerge), value: []byte("op")},
			{key: base.MakeInternalKey([]byte("x"), 1, base.KindSetMeta), value: append(base.EntryMeta{ExpiresAt: 1000}.Append(nil), "v"...)},
		}
		fs := &memFS{fs: vfs.NewMem()}
		outs, stats, err := Run(Config{
			Input:      &sliceIter{es: es, pos: -1},
			NewFile:    fs.newFile,
			Merger:     joinMerger{},
			Now:        2000,
			Bottommost: bottommost,
		})
		require.NoError(t, err)
		want := "x#2,MERGE x#1,DEL"
		if bottommost {
			want = "x#2,MERGE"
		}
		require.Equal(t, []string{want}, readOutputs(t, fs.fs, outs), "bottommost %t", bottommost)
		require.Equal(t, uint64(1), stats.Expired)
	}
}
