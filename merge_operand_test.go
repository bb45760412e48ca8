package strata

import (
	"testing"

	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// TestMergeRefusesInvalidOperand: an operand the built-in mergers cannot
// take is refused when it is written, by DB.Merge and by DB.Apply, and
// nothing of the write lands: flushes go on and the key keeps its value.
func TestMergeRefusesInvalidOperand(t *testing.T) {
	fs := vfs.NewMem()
	db, err := Open("db", &Options{FS: fs, Merger: Counter})
	require.NoError(t, err)
	require.NoError(t, db.Set([]byte("c"), CounterDelta(1), nil))
	err = db.Merge([]byte("c"), []byte("abc"), nil)
	require.ErrorIs(t, err, ErrInvalidOperand)
	require.EqualError(t, err, `strata: invalid merge operand: key "c": counter operand of 3 bytes, want 8`)

	b := db.NewBatch()
	require.NoError(t, b.Set([]byte("x"), []byte("1")))
	require.NoError(t, b.Merge([]byte("c"), CounterDelta(2)))
	require.NoError(t, b.Merge([]byte("c"), []byte("abc")))
	require.ErrorIs(t, db.Apply(b, nil), ErrInvalidOperand)
	_, err = db.Get([]byte("x"))
	require.ErrorIs(t, err, ErrNotFound, "a refused batch writes nothing")

	require.NoError(t, db.Flush())
	require.NoError(t, db.Merge([]byte("c"), CounterDelta(2), nil))
	require.NoError(t, db.Compact(nil, nil))
	v, err := db.Get([]byte("c"))
	require.NoError(t, err)
	n, err := CounterValue(v)
	require.NoError(t, err)
	require.Equal(t, int64(3), n)
	require.NoError(t, db.Close())
	db, err = Open("db", &Options{FS: fs, Merger: Counter})
	require.NoError(t, err)
	require.NoError(t, db.Set([]byte("d"), CounterDelta(1), nil), "writes go on after a reopen")
	require.NoError(t, db.Close())
}

// TestListAppendValidatesOperands: a ListAppend operand must be a whole
// sequence of elements; none is a valid (empty) sequence.
func TestListAppendValidatesOperands(t *testing.T) {
	db, err := Open("db", &Options{FS: vfs.NewMem(), Merger: ListAppend})
	require.NoError(t, err)
	two := ListElement(ListElement(nil, []byte("a")), []byte("bc"))
	for _, op := range [][]byte{nil, ListElement(nil, nil), two} {
		require.NoError(t, db.Merge([]byte("k"), op, nil))
	}
	for _, op := range [][]byte{{5, 'a'}, {0x80}, append(two, 3)} {
		require.ErrorIs(t, db.Merge([]byte("k"), op, nil), ErrInvalidOperand, "%x", op)
	}
	err = db.Merge([]byte("k"), append(two, 3), nil)
	require.EqualError(t, err, `strata: invalid merge operand: key "k": list operand malformed at element 2`)
	v, err := db.Get([]byte("k"))
	require.NoError(t, err)
	require.Equal(t, []string{"", "a", "bc"}, listOf(t, v))
	require.NoError(t, db.Close())
}

// TestApplyMergeWithoutMerger: a batch with merge operands is refused by a
// DB without a Merger, as DB.Merge is; other batches pass.
func TestApplyMergeWithoutMerger(t *testing.T) {
	db, err := Open("db", &Options{FS: vfs.NewMem()})
	require.NoError(t, err)
	b := db.NewBatch()
	require.NoError(t, b.Set([]byte("a"), []byte("1")))
	require.NoError(t, b.Merge([]byte("k"), []byte("x")))
	require.ErrorIs(t, db.Apply(b, nil), ErrNoMerger)
	b.Reset()
	require.NoError(t, b.Set([]byte("a"), []byte("1")))
	require.NoError(t, db.Apply(b, nil), "Reset forgets the operands")
	require.NoError(t, db.Close())
}
