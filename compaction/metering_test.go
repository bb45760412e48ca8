package compaction

import (
	"slices"
	"testing"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/rangedel"
	"github.com/strata-db/strata/vfs"
	"github.com/strata-db/strata/vlog"
	"github.com/stretchr/testify/require"
)

// TestGarbageMetering: every pointer a compaction drops (shadowed,
// range-deleted, filtered) is metered as garbage of its value log, every
// pointer it relocates as relocated, and for every value log the input's
// references less the outputs' equal the sum of the two: the ledger the
// manifest keeps and the metering agree exactly.
func TestGarbageMetering(t *testing.T) {
	ptr := func(file base.FileNum, off uint64, length uint32) []byte {
		return vlog.Pointer{FileNum: file, Offset: off, Length: length, ValueLen: length - 10}.Encode(nil)
	}
	mk := func(key string, seq base.SeqNum, kind base.Kind, value []byte) entry {
		return entry{key: base.MakeInternalKey([]byte(key), seq, kind), value: value}
	}
	es := []entry{
		mk("a", 9, base.KindValuePointer, ptr(1, 100, 1000)),
		mk("a", 5, base.KindValuePointer, ptr(1, 2000, 1100)), // shadowed
		mk("b", 7, base.KindSet, []byte("inline")),
		mk("b", 3, base.KindValuePointer, ptr(2, 100, 500)),  // shadowed by an inline value
		mk("c", 4, base.KindValuePointer, ptr(2, 700, 600)),  // range-deleted below
		mk("d", 8, base.KindValuePointer, ptr(2, 1400, 700)), // relocated
		mk("e", 6, base.KindValuePointer, ptr(3, 100, 800)),  // filtered
		mk("f", 2, base.KindValuePointer, ptr(1, 4000, 900)),
	}
	slices.SortFunc(es, func(a, b entry) int { return base.InternalCompare(a.key, b.key) })
	inputRefs := map[base.FileNum]uint64{}
	for _, e := range es {
		if e.key.Kind() == base.KindValuePointer {
			p, err := vlog.DecodePointer(e.value)
			require.NoError(t, err)
			inputRefs[p.FileNum] += uint64(p.Length)
		}
	}
	fs := &memFS{fs: vfs.NewMem()}
	next := uint64(1 << 20)
	outs, stats, err := Run(Config{
		Input:      &sliceIter{es: es},
		RangeDels:  rangedel.Build([]base.RangeTombstone{{Start: []byte("c"), End: []byte("d"), Seq: 5}}),
		Bottommost: true,
		NewFile:    fs.newFile,
		Filter:     filterFunc(func(k base.InternalKey, _ []byte) (Decision, []byte) { return keepUnless(k, "e") }),
		Relocate: func(key []byte, p vlog.Pointer) (vlog.Pointer, bool, error) {
			if string(key) != "d" {
				return p, false, nil
			}
			next += uint64(p.Length)
			return vlog.Pointer{FileNum: 4, Offset: next, Length: p.Length, ValueLen: p.ValueLen}, true, nil
		},
	})
	require.NoError(t, err)
	require.Len(t, outs, 1)
	outRefs := map[base.FileNum]uint64{}
	for _, r := range outs[0].VlogRefs {
		outRefs[r.FileNum] = r.Bytes
	}
	require.Equal(t, map[base.FileNum]uint64{1: 1100, 2: 500 + 600, 3: 800}, stats.VlogGarbage)
	require.Equal(t, map[base.FileNum]uint64{2: 700}, stats.VlogRelocated)
	require.Equal(t, map[base.FileNum]uint64{1: 1000 + 900, 4: 700}, outRefs)
	for num, in := range inputRefs {
		require.Equal(t, in-outRefs[num], stats.VlogGarbage[num]+stats.VlogRelocated[num], "value log %s", num)
	}
}

type filterFunc func(base.InternalKey, []byte) (Decision, []byte)

func (f filterFunc) Filter(k base.InternalKey, v []byte) (Decision, []byte) { return f(k, v) }

func keepUnless(k base.InternalKey, key string) (Decision, []byte) {
	if string(k.UserKey) == key {
		return Remove, nil
	}
	return Keep, nil
}
