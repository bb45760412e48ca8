package strata

import (
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
