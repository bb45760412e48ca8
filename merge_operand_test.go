package strata

import (
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/strata-db/strata/internal/base"
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

// sumMerger adds 8-byte little-endian integers, as Counter does, but has no
// ValidateOperand: a merger written before OperandValidator existed.
type sumMerger struct{}

var errNotAnInt = errors.New("not an 8-byte integer")

func (sumMerger) Name() string { return "test.sum" }

func (sumMerger) Merge(_, existing []byte, ops [][]byte) ([]byte, error) {
	var n uint64
	for i, v := range append([][]byte{existing}, ops...) {
		if i == 0 && v == nil {
			continue
		}
		if len(v) != 8 {
			return nil, fmt.Errorf("%w: %d bytes", errNotAnInt, len(v))
		}
		n += binary.LittleEndian.Uint64(v)
	}
	return binary.LittleEndian.AppendUint64(nil, n), nil
}

func (m sumMerger) PartialMerge(key []byte, ops [][]byte) ([]byte, bool) {
	v, err := m.Merge(key, nil, ops)
	return v, err == nil
}

// TestMergeFoldFailureKeepsWriting: an operand the merger cannot merge
// reaches the database (a merger without validation). Flushes,
// compactions and a reopen that replays it from the WAL all succeed and
// writes go on; reads of that key fail naming it, with the merger's error,
// other keys read fine; a Set of the key heals it, and the next
// compaction drops the bad operand.
func TestMergeFoldFailureKeepsWriting(t *testing.T) {
	fs := vfs.NewMem()
	opts := &Options{FS: fs, Merger: sumMerger{}}
	db, err := Open("db", opts)
	require.NoError(t, err)
	require.NoError(t, db.Set([]byte("c"), CounterDelta(1), nil))
	require.NoError(t, db.Set([]byte("d"), CounterDelta(1), nil))
	require.NoError(t, db.Merge([]byte("c"), []byte("abc"), nil))
	require.NoError(t, db.Merge([]byte("d"), CounterDelta(2), nil))

	counter := func(key string) int64 {
		t.Helper()
		v, err := db.Get([]byte(key))
		require.NoError(t, err, key)
		n, err := CounterValue(v)
		require.NoError(t, err)
		return n
	}
	broken := func(when string) {
		t.Helper()
		_, err := db.Get([]byte("c"))
		require.ErrorIs(t, err, errNotAnInt, when)
		require.NotErrorIs(t, err, ErrCorruption, when)
		require.EqualError(t, err, `strata: merge of key "c": not an 8-byte integer: 3 bytes`, when)
		snap := db.NewSnapshot()
		_, err = snap.Get([]byte("c"))
		require.ErrorIs(t, err, errNotAnInt, when)
		require.NoError(t, snap.Close())
		it, err := db.NewIter(nil)
		require.NoError(t, err)
		require.False(t, it.First(), when)
		require.ErrorIs(t, it.Error(), errNotAnInt, when)
		require.ErrorIs(t, it.Close(), errNotAnInt, when) // Close reports the iteration error
		require.Equal(t, int64(3), counter("d"), when)
	}
	broken("in the memtable")

	// The operand is only in the WAL: a reopen replays it and flushes it.
	require.NoError(t, db.Close())
	db, err = Open("db", opts)
	require.NoError(t, err)
	require.NoError(t, db.Flush())
	broken("after a reopen and a flush")
	require.NoError(t, db.Merge([]byte("c"), CounterDelta(5), nil))
	require.NoError(t, db.Flush())
	require.NoError(t, db.Compact(nil, nil))
	broken("after a compaction")
	require.NoError(t, db.Set([]byte("e"), CounterDelta(9), nil), "writes go on")
	require.Equal(t, int64(9), counter("e"))

	require.NoError(t, db.Set([]byte("c"), CounterDelta(7), nil))
	require.Equal(t, int64(7), counter("c"))
	require.NoError(t, db.Compact(nil, nil))
	require.Equal(t, int64(7), counter("c"))
	var entries uint64
	for _, f := range currentVersion(db).Levels[6] {
		h, err := db.tableCache.get(f)
		require.NoError(t, err)
		entries += h.reader.Properties().NumEntries
		db.tableCache.release(h)
	}
	require.Equal(t, uint64(3), entries, "one entry per key: the bad operands are gone")
	require.NoError(t, db.Close())

	db, err = Open("db", opts)
	require.NoError(t, err)
	require.Equal(t, int64(7), counter("c"))
	require.Equal(t, int64(3), counter("d"))
	require.NoError(t, db.Close())
}

// recordedMerger returns the merger name db's manifest records.
func recordedMerger(db *DB) string { return currentVersion(db).MergerName }

// TestMergerNameChecked: the database records the merger it is first
// opened with; Open refuses another, read-only or not, and allows none.
func TestMergerNameChecked(t *testing.T) {
	fs := vfs.NewMem()
	db, err := Open("db", &Options{FS: fs, Merger: ListAppend})
	require.NoError(t, err)
	require.Equal(t, "strata.ListAppend", recordedMerger(db))
	require.NoError(t, db.Merge([]byte("k"), ListElement(nil, []byte("a")), nil))
	require.NoError(t, db.Close())

	for _, readOnly := range []bool{false, true} {
		_, err = Open("db", &Options{FS: fs, Merger: Counter, ReadOnly: readOnly})
		require.ErrorIs(t, err, ErrMergerMismatch, "read-only %t", readOnly)
		require.EqualError(t, err, `strata: Options.Merger is not the merger the database records: the database records "strata.ListAppend", Options.Merger is "strata.Counter"`)
	}

	// Without a merger: it opens, reads of merge keys fail as before,
	// and the record stays.
	db, err = Open("db", &Options{FS: fs})
	require.NoError(t, err)
	require.Equal(t, "strata.ListAppend", recordedMerger(db))
	_, err = db.Get([]byte("k"))
	require.ErrorIs(t, err, ErrNoMerger)
	require.NoError(t, db.Set([]byte("x"), []byte("1"), nil))
	require.NoError(t, db.Compact(nil, nil))
	require.NoError(t, db.Close())
	_, err = Open("db", &Options{FS: fs, Merger: Counter})
	require.ErrorIs(t, err, ErrMergerMismatch, "an open without a merger does not forget it")

	db, err = Open("db", &Options{FS: fs, Merger: ListAppend})
	require.NoError(t, err)
	v, err := db.Get([]byte("k"))
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, listOf(t, v))
	require.NoError(t, db.Close())
}

// TestMergerNameRecordedLate: a database created without a merger (or by
// a binary that did not record it) records the first one it is opened
// with; a read-only open records nothing.
func TestMergerNameRecordedLate(t *testing.T) {
	fs := vfs.NewMem()
	db, err := Open("db", &Options{FS: fs})
	require.NoError(t, err)
	require.NoError(t, db.Set([]byte("c"), CounterDelta(1), nil))
	require.Empty(t, recordedMerger(db))
	require.NoError(t, db.Close())

	db, err = Open("db", &Options{FS: fs, Merger: Counter, ReadOnly: true})
	require.NoError(t, err)
	require.NoError(t, db.Close())
	db, err = Open("db", &Options{FS: fs, Merger: ListAppend, ReadOnly: true})
	require.NoError(t, err, "nothing was recorded by the read-only open")
	require.NoError(t, db.Close())

	db, err = Open("db", &Options{FS: fs, Merger: Counter})
	require.NoError(t, err)
	require.Equal(t, "strata.Counter", recordedMerger(db))
	require.NoError(t, db.Merge([]byte("c"), CounterDelta(2), nil))
	require.NoError(t, db.Close())
	_, err = Open("db", &Options{FS: fs, Merger: ListAppend})
	require.ErrorIs(t, err, ErrMergerMismatch)
	db, err = Open("db", &Options{FS: fs, Merger: Counter})
	require.NoError(t, err)
	v, err := db.Get([]byte("c"))
	require.NoError(t, err)
	n, err := CounterValue(v)
	require.NoError(t, err)
	require.Equal(t, int64(3), n)
	require.NoError(t, db.Close())
}

// TestCounterOperandFromOlderBinary: the scenario as a database
// written before validation holds it: a Counter operand of 3 bytes in the
// WAL. Reopening replays and flushes it, compaction keeps it, writes go
// on, reads of the key fail naming it, and a Set heals the key.
func TestCounterOperandFromOlderBinary(t *testing.T) {
	fs := vfs.NewMem()
	opts := &Options{FS: fs, Merger: Counter}
	db, err := Open("db", opts)
	require.NoError(t, err)
	require.NoError(t, db.Set([]byte("c"), CounterDelta(1), nil))
	b := db.NewBatch()
	require.NoError(t, b.add(base.KindMerge, []byte("c"), []byte("abc"), true)) // as Batch.Merge did, unchecked
	require.NoError(t, db.Apply(b, nil))
	require.NoError(t, db.Close())

	db, err = Open("db", opts)
	require.NoError(t, err)
	require.NoError(t, db.Flush())
	require.NoError(t, db.Compact(nil, nil))
	require.NoError(t, db.Set([]byte("d"), CounterDelta(4), nil))
	_, err = db.Get([]byte("c"))
	require.EqualError(t, err, `strata: merge of key "c": counter operand of 3 bytes, want 8`)
	require.NoError(t, db.Set([]byte("c"), CounterDelta(2), nil))
	require.NoError(t, db.Compact(nil, nil))
	v, err := db.Get([]byte("c"))
	require.NoError(t, err)
	require.Equal(t, CounterDelta(2), v)
	require.NoError(t, db.Close())
}
