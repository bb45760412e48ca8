package strata

import (
	"errors"
	"fmt"
	"testing"

	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

func memOpts(fs vfs.FS) *Options {
	return &Options{FS: fs, MemTableSize: 256 << 10, CacheSize: 1 << 20}
}

func TestBasic(t *testing.T) {
	fs := vfs.NewMem()
	db, err := Open("db", memOpts(fs))
	require.NoError(t, err)
	require.NoError(t, db.Set([]byte("a"), []byte("1"), NoSync))
	require.NoError(t, db.Set([]byte("b"), []byte("2"), Sync))
	v, err := db.Get([]byte("a"))
	require.NoError(t, err)
	require.Equal(t, "1", string(v))
	require.NoError(t, db.Delete([]byte("a"), nil))
	_, err = db.Get([]byte("a"))
	require.True(t, errors.Is(err, ErrNotFound))
	require.NoError(t, db.Flush())
	v, err = db.Get([]byte("b"))
	require.NoError(t, err)
	require.Equal(t, "2", string(v))
	for i := 0; i < 5000; i++ {
		require.NoError(t, db.Set([]byte(fmt.Sprintf("k%05d", i)), []byte(fmt.Sprintf("v%d", i)), NoSync))
	}
	require.NoError(t, db.DeleteRange([]byte("k01000"), []byte("k02000"), nil))
	it, err := db.NewIter(nil)
	require.NoError(t, err)
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	require.NoError(t, it.Close())
	require.Equal(t, 4001, n)
	require.NoError(t, db.Compact(nil, nil))
	t.Log(db.Metrics())
	require.NoError(t, db.Close())

	db, err = Open("db", memOpts(fs))
	require.NoError(t, err)
	v, err = db.Get([]byte("k04999"))
	require.NoError(t, err)
	require.Equal(t, "v4999", string(v))
	_, err = db.Get([]byte("k01500"))
	require.True(t, errors.Is(err, ErrNotFound))
	require.NoError(t, db.Close())
}
