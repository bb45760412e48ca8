package goka

import (
	"fmt"
	"testing"

	"github.com/lovoo/goka/storage"
	"github.com/stretchr/testify/require"
	"github.com/syndtr/goleveldb/leveldb"
	ldbstorage "github.com/syndtr/goleveldb/leveldb/storage"
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
// ranges (start above limit: nothing) among them.
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

}

func rangePairs(t *testing.T, s storage.Storage, start, limit string) ([]string, error) {
	t.Helper()
	it, err := s.IteratorWithRange([]byte(start), []byte(limit))
	require.NoError(t, err)
	defer it.Release()
	return pairs(t, it)
}
