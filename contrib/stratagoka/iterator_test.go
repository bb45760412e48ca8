package stratagoka

import (
	"fmt"
	"testing"

	"github.com/lovoo/goka/storage"
	"github.com/stretchr/testify/require"
	"github.com/syndtr/goleveldb/leveldb"
	ldbstorage "github.com/syndtr/goleveldb/leveldb/storage"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/vfs"
)

// pairs drains it with Next and returns "key=value" for each pair, and
// Err at the end.
func pairs(t *testing.T, it storage.Iterator) ([]string, error) {
	t.Helper()
	var out []string
	for it.Next() {
		v, err := it.Value()
		require.NoError(t, err)
		out = append(out, fmt.Sprintf("%s=%s", it.Key(), v))
	}
	return out, it.Err()
}

// TestIteratorRangesAgainstLevelDB: IteratorWithRange returns what goka's
// own LevelDB storage returns for the same pairs and range, inverted
// ranges (start above limit: nothing) among them; and after Release both
// are exhausted, with an error once moved.
func TestIteratorRangesAgainstLevelDB(t *testing.T) {
	ldb, err := leveldb.Open(ldbstorage.NewMemStorage(), nil)
	require.NoError(t, err)
	ref, err := storage.New(ldb)
	require.NoError(t, err)
	defer ref.Close()
	st := newTestStorage(t, t.TempDir())
	defer st.Close()
	for _, s := range []storage.Storage{ref, st} {
		for _, k := range []string{"a", "b", "ba", "bb", "c", "d"} {
			require.NoError(t, s.Set(k, []byte("v"+k)))
		}
		require.NoError(t, s.SetOffset(42))
	}

	for _, r := range []struct{ start, limit string }{
		{"", ""}, {"b", ""}, {"b", "c"}, {"", "c"}, {"a", "z"}, {"x", ""},
		{"b", "b"}, {"c", "b"}, {"bb", "ba"}, {"z", "a"}, {"__", ""},
	} {
		name := fmt.Sprintf("[%q, %q)", r.start, r.limit)
		want, wantErr := rangePairs(t, ref, r.start, r.limit)
		got, gotErr := rangePairs(t, st, r.start, r.limit)
		require.Equal(t, want, got, name)
		require.NoError(t, wantErr, name)
		require.NoError(t, gotErr, name)
	}

	for _, s := range []storage.Storage{ref, st} {
		it, err := s.Iterator()
		require.NoError(t, err)
		require.True(t, it.Next())
		it.Release()
		require.NoError(t, it.Err(), "Release of an iteration that did not fail")
		require.Nil(t, it.Key())
		require.False(t, it.Next())
		require.False(t, it.Seek([]byte("a")))
		require.Nil(t, it.Key())
		v, err := it.Value()
		require.NoError(t, err)
		require.Nil(t, v)
		require.Error(t, it.Err(), "a move after Release")
		it.Release() // twice: no effect
	}
}

func rangePairs(t *testing.T, s storage.Storage, start, limit string) ([]string, error) {
	t.Helper()
	it, err := s.IteratorWithRange([]byte(start), []byte(limit))
	require.NoError(t, err)
	defer it.Release()
	return pairs(t, it)
}

// TestIteratorErrorSurvivesRelease: the error that stopped an iteration
// (here a merge operand in a DB opened without a merger) is still Err's
// after Release, and moving the released iterator does not hide it; Err
// of a released iterator that never failed is strata.ErrClosed once moved.
func TestIteratorErrorSurvivesRelease(t *testing.T) {
	fs := vfs.NewMem()
	db, err := strata.Open("db", &strata.Options{FS: fs, Merger: strata.ListAppend})
	require.NoError(t, err)
	require.NoError(t, db.Set([]byte("a"), []byte("1"), nil))
	require.NoError(t, db.Merge([]byte("b"), strata.ListElement(nil, []byte("x")), nil))
	require.NoError(t, db.Close())
	db, err = strata.Open("db", &strata.Options{FS: fs})
	require.NoError(t, err)
	st := New(db, false)

	it, err := st.Iterator()
	require.NoError(t, err)
	got, err := pairs(t, it)
	require.Equal(t, []string{"a=1"}, got)
	require.ErrorIs(t, err, strata.ErrNoMerger)
	it.Release()
	require.ErrorIs(t, it.Err(), strata.ErrNoMerger)
	require.False(t, it.Next())
	require.ErrorIs(t, it.Err(), strata.ErrNoMerger)

	it, err = st.IteratorWithRange(nil, []byte("b"))
	require.NoError(t, err)
	got, err = pairs(t, it)
	require.Equal(t, []string{"a=1"}, got)
	require.NoError(t, err)
	it.Release()
	require.NoError(t, it.Err())
	require.False(t, it.Seek([]byte("a")))
	require.ErrorIs(t, it.Err(), strata.ErrClosed)
	require.NoError(t, db.Close())
}
