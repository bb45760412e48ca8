package strata

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// TestGetAppend reads values from every place they can be (memtable,
// table, active value log, finished and mapped value log, merged) with Get
// and GetAppend, which must agree; GetAppend keeps dst's prefix and reuses
// its storage.
func TestGetAppend(t *testing.T) {
	for _, fs := range []vfs.FS{vfs.NewMem(), vfs.Default} {
		dir := "db"
		if fs == vfs.Default {
			dir = t.TempDir()
		}
		db, err := Open(dir, &Options{FS: fs, ValueThreshold: 64, MemTableSize: 256 << 10, ValueLogFileSize: 64 << 10, Merger: ListAppend})
		require.NoError(t, err)
		val := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i%26)}, 10+i%200) }
		key := func(i int) []byte { return []byte(fmt.Sprintf("key%05d", i)) }
		const n = 3000
		for i := range n {
			require.NoError(t, db.Set(key(i), val(i), NoSync))
			if i == n/2 {
				require.NoError(t, db.Flush())
			}
		}
		require.NoError(t, db.Merge([]byte("list"), ListElement(nil, []byte("x")), NoSync))
		require.NoError(t, db.Merge([]byte("list"), ListElement(nil, []byte("y")), NoSync))
		check := func() {
			buf := make([]byte, 3, 1024)
			copy(buf, "pre")
			for i := 0; i < n; i += 7 {
				v, err := db.Get(key(i))
				require.NoError(t, err)
				require.Equal(t, val(i), v)
				out, err := db.GetAppend(key(i), buf[:3])
				require.NoError(t, err)
				require.Equal(t, append([]byte("pre"), val(i)...), out)
				require.Same(t, &buf[0], &out[0], "dst's storage is reused")
			}
			want, err := db.Get([]byte("list"))
			require.NoError(t, err)
			got, err := db.GetAppend([]byte("list"), []byte("pre"))
			require.NoError(t, err)
			require.Equal(t, append([]byte("pre"), want...), got)
			_, err = db.GetAppend([]byte("absent"), buf)
			require.True(t, errors.Is(err, ErrNotFound))
			v, err := db.GetAppend(key(1), nil)
			require.NoError(t, err)
			require.Equal(t, val(1), v)
		}
		check()
		require.NoError(t, db.Flush())
		check()
		require.NoError(t, db.Close())
		db, err = Open(dir, &Options{FS: fs, ValueThreshold: 64, Merger: ListAppend})
		require.NoError(t, err)
		check()
		require.NoError(t, db.Close())
	}
}

// TestGetAppendAllocs pins the allocations of a point read: none for
// GetAppend into a buffer with room, one (the value) for Get, whether the
// value is in a table or in a mapped value log.
func TestGetAppendAllocs(t *testing.T) {
	if readRaceEnabled {
		t.Skip("the race detector allocates")
	}
	db, err := Open(t.TempDir(), &Options{FS: vfs.Default, ValueThreshold: 1024})
	require.NoError(t, err)
	defer db.Close()
	for i := range 1000 {
		require.NoError(t, db.Set([]byte(fmt.Sprintf("key%05d", i)), bytes.Repeat([]byte{byte(i)}, 100+i%2*4000), NoSync))
	}
	require.NoError(t, db.Flush())
	require.NoError(t, db.Close())
	db, err = Open(db.dirname, &Options{FS: vfs.Default, ValueThreshold: 1024})
	require.NoError(t, err)
	buf := make([]byte, 0, 8192)
	for _, k := range []string{"key00010", "key00011"} { // inline, separated
		key := []byte(k)
		_, err := db.GetAppend(key, buf) // opens the files
		require.NoError(t, err)
		require.Zero(t, testing.AllocsPerRun(100, func() {
			if _, err := db.GetAppend(key, buf); err != nil {
				t.Fatal(err)
			}
		}), "GetAppend of %s", k)
		require.Equal(t, 1.0, testing.AllocsPerRun(100, func() {
			if _, err := db.Get(key); err != nil {
				t.Fatal(err)
			}
		}), "Get of %s", k)
	}
}
