package strata

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// scanAll reads every key and value of it and returns how many it read
// before the loop ended.
func scanAll(it *Iterator) int {
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if it.Value() == nil && it.Error() != nil {
			break
		}
		n++
	}
	return n
}

// TestIteratorCloseReturnsError: a scan that stops because a read failed
// closes with that error, not as if it had reached the end (a loop that
// only checks Close must not take a failure for the end of the keys): a
// merge operand without a Merger, from the DB and from a snapshot, and a
// damaged value-log record. A scan that reaches the end closes with nil.
func TestIteratorCloseReturnsError(t *testing.T) {
	t.Run("merge operand without merger", func(t *testing.T) {
		fs := vfs.NewMem()
		db, err := Open("db", &Options{FS: fs, Merger: ListAppend})
		require.NoError(t, err)
		require.NoError(t, db.Set([]byte("a"), []byte("1"), nil))
		require.NoError(t, db.Merge([]byte("b"), ListElement(nil, []byte("x")), nil))
		require.NoError(t, db.Set([]byte("c"), []byte("3"), nil))
		require.NoError(t, db.Close())

		db, err = Open("db", &Options{FS: fs})
		require.NoError(t, err)
		snap := db.NewSnapshot()
		for _, newIter := range []func(*IterOptions) (*Iterator, error){db.NewIter, snap.NewIter} {
			it, err := newIter(nil)
			require.NoError(t, err)
			require.Equal(t, 1, scanAll(it), "the scan stops at the operand")
			require.ErrorIs(t, it.Error(), ErrNoMerger)
			require.ErrorIs(t, it.Close(), ErrNoMerger)

			// The keys around the operand read to the end: Close is nil.
			it, err = newIter(&IterOptions{UpperBound: []byte("b")})
			require.NoError(t, err)
			require.Equal(t, 1, scanAll(it))
			require.NoError(t, it.Close())
		}
		require.NoError(t, snap.Close())
		require.NoError(t, db.Close())
	})

	t.Run("damaged value log", func(t *testing.T) {
		fs := vfs.NewMem()
		opts := &Options{FS: fs, ValueThreshold: 64, CacheSize: -1}
		m, vlogFile := oneFileDB(t, opts, 300, 4, base.FileTypeVlog)
		name := "db/" + vlogFile
		size := int64(len(readFile(t, fs, name)))
		o := *opts
		o.FS = flipByte(t, fs, name, size/2) // inside a record
		db, err := Open("db", &o)
		require.NoError(t, err)
		it, err := db.NewIter(nil)
		require.NoError(t, err)
		n := scanAll(it)
		require.Less(t, n, len(m), "the scan read past a damaged record")
		requireCorruption(t, it.Error(), vlogFile, "scan")
		err = it.Close()
		requireCorruption(t, err, vlogFile, fmt.Sprintf("Close after %d keys", n))
		require.NoError(t, db.Close())
	})
}

// TestIteratorInvalidAndClosed: an iterator past its last key, or after a
// failure, returns nil from Key and Value and stays where it is (Next and
// Prev return false and keep Error: nil at the end, the failure after
// one); after Close every call reports ErrClosed, and a second Close
// returns ErrClosed. For DB and Snapshot iterators, over inline and
// separated values.
func TestIteratorInvalidAndClosed(t *testing.T) {
	fs := vfs.NewMem()
	db, err := Open("db", &Options{FS: fs, ValueThreshold: 64, Merger: ListAppend})
	require.NoError(t, err)
	require.NoError(t, db.Set([]byte("a"), []byte("inline"), nil))
	require.NoError(t, db.Set([]byte("b"), bytes.Repeat([]byte("s"), 100), nil))
	require.NoError(t, db.Flush())
	require.NoError(t, db.Merge([]byte("c"), ListElement(nil, []byte("x")), nil))
	snap := db.NewSnapshot()

	requireInvalid := func(t *testing.T, it *Iterator, wantErr error) {
		t.Helper()
		require.False(t, it.Valid())
		require.Nil(t, it.Key())
		require.Nil(t, it.Value())
		if wantErr == nil {
			require.NoError(t, it.Error())
		} else {
			require.ErrorIs(t, it.Error(), wantErr)
		}
	}
	requireClosed := func(t *testing.T, it *Iterator) {
		t.Helper()
		requireInvalid(t, it, ErrClosed)
		for name, move := range map[string]func() bool{
			"First": it.First, "Last": it.Last, "Next": it.Next, "Prev": it.Prev,
			"SeekGE": func() bool { return it.SeekGE([]byte("a")) },
			"SeekLT": func() bool { return it.SeekLT([]byte("z")) },
		} {
			require.False(t, move(), name)
			require.ErrorIs(t, it.Error(), ErrClosed, name)
			requireInvalid(t, it, ErrClosed)
		}
		require.ErrorIs(t, it.Close(), ErrClosed, "a second Close")
		requireInvalid(t, it, ErrClosed)
	}

	for name, newIter := range map[string]func(*IterOptions) (*Iterator, error){"db": db.NewIter, "snapshot": snap.NewIter} {
		t.Run(name, func(t *testing.T) {
			for _, upper := range []string{"b", "c"} { // last key inline, separated
				it, err := newIter(&IterOptions{UpperBound: []byte(upper)})
				require.NoError(t, err)
				require.True(t, it.Last())
				require.NotNil(t, it.Value())
				require.False(t, it.Next())
				requireInvalid(t, it, nil)
				require.False(t, it.Next(), "Next past the end")
				require.False(t, it.Prev(), "Prev past the end")
				requireInvalid(t, it, nil)
				require.True(t, it.First())
				require.False(t, it.Prev())
				requireInvalid(t, it, nil)
				require.NoError(t, it.Close())
				requireClosed(t, it)
			}

			// Closed while positioned, on a value not yet read.
			it, err := newIter(nil)
			require.NoError(t, err)
			require.True(t, it.SeekGE([]byte("b")))
			require.NoError(t, it.Close())
			requireClosed(t, it)

		})
	}
	require.NoError(t, snap.Close())
	require.NoError(t, db.Close())

	// After a failure (the merge operand, read without a merger), the
	// error stays until a call positions the iterator anew, and Close
	// returns it.
	db, err = Open("db", &Options{FS: fs, ValueThreshold: 64})
	require.NoError(t, err)
	it, err := db.NewIter(nil)
	require.NoError(t, err)
	require.False(t, it.SeekGE([]byte("c")))
	requireInvalid(t, it, ErrNoMerger)
	require.False(t, it.Next())
	require.False(t, it.Prev())
	requireInvalid(t, it, ErrNoMerger)
	require.True(t, it.SeekLT([]byte("c")))
	require.NoError(t, it.Error())
	require.False(t, it.Next())
	require.ErrorIs(t, it.Close(), ErrNoMerger)
	requireClosed(t, it)
	require.NoError(t, db.Close())
}
