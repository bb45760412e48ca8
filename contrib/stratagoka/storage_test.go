package stratagoka

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/lovoo/goka/storage"
	"github.com/stretchr/testify/require"

	"github.com/strata-db/strata"
)

// The cases below are goka v1.1.14's own storage tests (storage package:
// iterator_test.go, storage_test.go, memory_test.go), which are internal
// to that package and so cannot be imported: ported to this storage, the
// LevelDB-backed ones word for word apart from the constructor.

func newTestStorage(t *testing.T, dir string) storage.Storage {
	t.Helper()
	st, err := NewBuilder(dir, &Options{MemoryBudget: 16 << 20, CacheSize: 4 << 20})("topic", 0)
	require.NoError(t, err)
	return st
}

// goka: TestIterator.
func TestIterator(t *testing.T) {
	st := newTestStorage(t, t.TempDir())
	defer st.Close()
	kv := map[string]string{
		"key-1": "val-1",
		"key-2": "val-2",
		"key-3": "val-3",
	}
	for k, v := range kv {
		require.NoError(t, st.Set(k, []byte(v)))
	}
	require.NoError(t, st.MarkRecovered())
	require.NoError(t, st.SetOffset(777))

	iter, err := st.Iterator()
	require.NoError(t, err)
	defer iter.Release()
	count := 0
	// accessing iterator before Next should only return nils
	val, err := iter.Value()
	require.True(t, val == nil)
	require.NoError(t, err)
	require.Nil(t, iter.Key())

	for iter.Next() {
		count++
		key := string(iter.Key())
		expected, ok := kv[key]
		require.True(t, ok, "unexpected key from iterator: %s", key)
		val, err := iter.Value()
		require.NoError(t, err)
		require.Equal(t, expected, string(val))
	}
	require.NoError(t, iter.Err())
	require.Equal(t, len(kv), count)
}

// goka: TestMemIter, against this storage: released iterators, order,
// the offset key hidden, ranges, Seek landing on the pair.
func TestIter(t *testing.T) {
	st := newTestStorage(t, t.TempDir())
	defer st.Close()
	kv := map[string]string{
		"key-1": "val-1",
		"key-2": "val-2",
		"key-3": "val-3",
	}
	require.NoError(t, st.Set(offsetKey, []byte("not-returned")))
	for k, v := range kv {
		require.NoError(t, st.Set(k, []byte(v)))
	}

	// released iterator should be immediately exhausted
	iter, err := st.Iterator()
	require.NoError(t, err)
	iter.Release()
	require.False(t, iter.Next())
	require.False(t, iter.Seek([]byte("key-2")))

	iter, err = st.Iterator()
	require.NoError(t, err)
	i := 1
	for iter.Next() {
		raw, err := iter.Value()
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("key-%d", i), string(iter.Key()))
		require.Equal(t, fmt.Sprintf("val-%d", i), string(raw))
		i++
	}
	require.Equal(t, 4, i)
	key := iter.Key()
	val, err := iter.Value()
	require.NoError(t, err)
	require.True(t, key == nil)
	require.True(t, val == nil)
	iter.Release()

	k := []byte("key-1")
	iter, err = st.IteratorWithRange(k, nil)
	require.NoError(t, err)
	require.True(t, iter.Next())
	require.Equal(t, k, iter.Key())
	require.False(t, iter.Next(), "a range without limit is the prefix of start")
	iter.Release()

	iter, err = st.IteratorWithRange([]byte("key-2"), []byte("key-3"))
	require.NoError(t, err)
	require.True(t, iter.Next())
	require.Equal(t, []byte("key-2"), iter.Key())
	require.False(t, iter.Next(), "limit is exclusive")
	iter.Release()

	iter, err = st.Iterator()
	require.NoError(t, err)
	ok := iter.Seek([]byte("key-2"))
	require.True(t, ok)
	require.Equal(t, []byte("key-2"), iter.Key())
	val, err = iter.Value()
	require.NoError(t, err)
	require.Equal(t, []byte("val-2"), val)
	require.True(t, iter.Next(), "Next after Seek moves past the pair")
	require.Equal(t, []byte("key-3"), iter.Key())

	// Seek onto the offset key lands past it.
	require.True(t, iter.Seek([]byte("__")))
	require.Equal(t, []byte("key-1"), iter.Key())

	ok = iter.Seek([]byte("key-4"))
	require.False(t, ok)
	require.Nil(t, iter.Key())
	iter.Release()
}

// goka: TestGetHas.
func TestGetHas(t *testing.T) {
	st := newTestStorage(t, t.TempDir())
	defer st.Close()

	hasKey, err := st.Has("test-key")
	require.NoError(t, err)
	require.False(t, hasKey)

	value, err := st.Get("test-key")
	require.True(t, value == nil)
	require.NoError(t, err)

	require.NoError(t, st.Set("test-key", []byte("test")))

	hasKey, err = st.Has("test-key")
	require.NoError(t, err)
	require.True(t, hasKey)

	value, err = st.Get("test-key")
	require.NoError(t, err)
	require.Equal(t, []byte("test"), value)

	hasKey, err = st.Has("nil-value")
	require.NoError(t, err)
	require.False(t, hasKey)
}

// goka: TestMemStorageDelete and TestSetGet.
func TestSetGetDelete(t *testing.T) {
	st := newTestStorage(t, t.TempDir())
	defer st.Close()

	hasKey, err := st.Has("example1")
	require.NoError(t, err)
	require.False(t, hasKey)

	value, err := st.Get("example1")
	require.True(t, value == nil)
	require.NoError(t, err)

	require.NoError(t, st.Set("example1", []byte("example-message")))
	hasKey, err = st.Has("example1")
	require.NoError(t, err)
	require.True(t, hasKey)
	value, err = st.Get("example1")
	require.NoError(t, err)

	require.NoError(t, st.Delete("example1"))
	hasKey, err = st.Has("example1")
	require.NoError(t, err)
	require.False(t, hasKey)

	// test iteration
	require.NoError(t, st.Set("key1", []byte("value1")))
	require.NoError(t, st.Set("key2", []byte("value2")))
	iter, err := st.Iterator()
	require.NoError(t, err)
	defer iter.Release()
	messages := make(map[string]string)
	for iter.Next() {
		val, err := iter.Value()
		require.NoError(t, err)
		messages[string(iter.Key())] = string(val)
	}
	require.Len(t, messages, 2)
	require.Equal(t, "value1", messages["key1"])
	require.Equal(t, "value2", messages["key2"])
	require.Equal(t, "example-message", string(value))
}

// goka: TestLeveldbStorage (getset, set-reopen, mark-recovered-reopen),
// without its one-second sleeps, which wait for nothing here.
func TestStorageOffsets(t *testing.T) {
	dir := t.TempDir()
	t.Run("getset", func(t *testing.T) {
		st := newTestStorage(t, filepath.Join(dir, "getset"))
		require.NoError(t, st.Open())
		requireOffset(t, st, 0)

		require.NoError(t, st.SetOffset(100))
		requireOffset(t, st, 100)
		require.NoError(t, st.Close())
	})
	t.Run("set-reopen", func(t *testing.T) {
		path := filepath.Join(dir, "set-reopen")
		st := newTestStorage(t, path)
		require.NoError(t, st.Open())
		requireOffset(t, st, 0)

		require.NoError(t, st.SetOffset(100))
		require.NoError(t, st.Close())

		st = newTestStorage(t, path)
		requireOffset(t, st, 100)
		require.NoError(t, st.Close())
	})
	t.Run("mark-recovered-reopen", func(t *testing.T) {
		path := filepath.Join(dir, "mark-recovered-reopen")
		st := newTestStorage(t, path)
		require.NoError(t, st.Open())
		requireOffset(t, st, 0)

		require.NoError(t, st.SetOffset(100))
		require.NoError(t, st.MarkRecovered())
		require.NoError(t, st.SetOffset(101))
		require.NoError(t, st.Close())

		st = newTestStorage(t, path)
		requireOffset(t, st, 101)
		require.NoError(t, st.Close())
	})
}

// TestRecoveryIsBulkLoad: from Open to MarkRecovered the DB is in a bulk
// load (no WAL); MarkRecovered leaves it with everything in tables, and
// Has never reads a value log.
func TestRecoveryIsBulkLoad(t *testing.T) {
	st := newTestStorage(t, t.TempDir())
	s := st.(*Storage)
	require.NoError(t, st.Open())
	require.True(t, s.DB().BulkLoading())
	big := make([]byte, 4096) // separated into a value log
	for i := 0; i < 500; i++ {
		require.NoError(t, st.Set(fmt.Sprintf("k%04d", i), big))
		require.NoError(t, st.SetOffset(int64(i)))
	}
	require.Zero(t, s.DB().Metrics().WAL.BytesWritten)
	require.NoError(t, st.MarkRecovered())
	require.False(t, s.DB().BulkLoading())
	m := s.DB().Metrics()
	require.Zero(t, m.MemTable.Immutable)
	require.Positive(t, m.Flush.Count)
	reads := m.ValueLogs.Reads
	for i := 0; i < 500; i++ {
		ok, err := st.Has(fmt.Sprintf("k%04d", i))
		require.NoError(t, err)
		require.True(t, ok)
	}
	require.Equal(t, reads, s.DB().Metrics().ValueLogs.Reads)
	off, err := st.GetOffset(-1)
	require.NoError(t, err)
	require.Equal(t, int64(499), off)
	require.NoError(t, st.Close())
	require.ErrorIs(t, st.Close(), strata.ErrClosed)
}

// requireOffset checks the offset st stores (GetOffset with default 0).
func requireOffset(t *testing.T, st interface{ GetOffset(int64) (int64, error) }, want int64) {
	t.Helper()
	offset, err := st.GetOffset(0)
	require.NoError(t, err)
	require.Equal(t, want, offset)
}
