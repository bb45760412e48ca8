package vlog

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-db/strata/cache"
	"github.com/strata-db/strata/vfs"
)

// openMapped writes data to a file on the OS's filesystem and opens it
// with ReaderOptions.Map; the file's path is returned so that tests can
// damage it.
func openMapped(t *testing.T, data []byte, o ReaderOptions) (*Reader, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), testFileName)
	require.NoError(t, os.WriteFile(path, data, 0o644))
	f, err := vfs.Default.Open(path)
	require.NoError(t, err)
	o.Map = true
	r, err := NewReader(f, testFileNum, int64(len(data)), o)
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	return r, path
}

func TestMappedReads(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	recs := genRecords(rng, 300, true)
	data, ptrs := buildFile(t, recs, true)
	c := cache.New(64 << 20)
	r, _ := openMapped(t, data, ReaderOptions{Cache: c, CacheID: c.NewID()})
	require.True(t, r.Mapped())

	ra := r.NewReadAhead(0)
	for i, p := range ptrs {
		v, err := r.Get(p, recs[i].key)
		require.NoError(t, err)
		require.Equal(t, recs[i].value, v)
		require.NotNil(t, v)
		v, err = r.AppendValue(nil, p, recs[i].key)
		require.NoError(t, err)
		require.Equal(t, recs[i].value, v)
		require.NotNil(t, v)
		v, err = r.AppendValue([]byte("x"), p, recs[i].key)
		require.NoError(t, err)
		require.Equal(t, append([]byte("x"), recs[i].value...), v)
		v, err = ra.Get(p, recs[i].key)
		require.NoError(t, err)
		require.Equal(t, recs[i].value, v)
		v, ok, err := r.MappedValue(p, recs[i].key)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, recs[i].value, v)
	}
	// A mapped file does not use the value cache.
	m := c.Metrics()
	require.Zero(t, m.Count)
	require.Zero(t, m.Hits+m.Misses)

	// Values handed out are copies: they outlive the Reader.
	v, err := r.Get(ptrs[5], recs[5].key)
	require.NoError(t, err)
	require.NoError(t, r.Close())
	require.Equal(t, recs[5].value, v)
}

func TestMappedOnlyFinished(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	recs := genRecords(rng, 20, false)
	data, ptrs := buildFile(t, recs, false)
	r, _ := openMapped(t, data, ReaderOptions{})
	require.False(t, r.Mapped(), "an unfinished file may still grow: read it with ReadAt")
	v, err := r.Get(ptrs[3], recs[3].key)
	require.NoError(t, err)
	require.Equal(t, recs[3].value, v)

	// Files of other filesystems are read with ReadAt.
	full, _ := buildFile(t, recs, true)
	r2, _, err := openBytes(full, ReaderOptions{Map: true})
	require.NoError(t, err)
	require.False(t, r2.Mapped())
	v, ok, err := r2.MappedValue(ptrs[3], recs[3].key)
	require.NoError(t, err)
	require.False(t, ok, "no mapping: read with AppendValue")
	require.Nil(t, v)
}

func TestMappedCorruption(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	recs := genRecords(rng, 50, false)
	data, ptrs := buildFile(t, recs, true)
	i := 7
	for len(recs[i].value) == 0 {
		i++
	}
	p := ptrs[i]
	bad := append([]byte(nil), data...)
	bad[p.End()-1] ^= 0x10
	r, _ := openMapped(t, bad, ReaderOptions{})
	require.True(t, r.Mapped())
	_, err := r.Get(p, recs[i].key)
	requireCorruption(t, err, int64(p.Offset))
	_, err = r.AppendValue(nil, p, recs[i].key)
	requireCorruption(t, err, int64(p.Offset))
	_, err = r.NewReadAhead(0).Get(p, recs[i].key)
	requireCorruption(t, err, int64(p.Offset))
	// Whatever a read prefetches, the record still fails.
	_, err = r.AppendValueAhead(nil, p, recs[i].key, r.Ahead(ptrs[i+1]))
	requireCorruption(t, err, int64(p.Offset))
	_, _, err = r.MappedValueAhead(p, recs[i].key, r.Ahead(ptrs[i+1]))
	requireCorruption(t, err, int64(p.Offset))
	_, err = r.Get(ptrs[i-1], []byte("another key"))
	requireCorruption(t, err, int64(ptrs[i-1].Offset))
}

// TestMappedTruncated truncates a mapped file under its Reader: reads past
// the new end fault, which must become corruption errors, not a crash.
func TestMappedTruncated(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 10))
	recs := genRecords(rng, 400, false)
	data, ptrs := buildFile(t, recs, true)
	r, path := openMapped(t, data, ReaderOptions{})
	require.True(t, r.Mapped())
	require.NoError(t, os.Truncate(path, HeaderLen))
	page := uint64(os.Getpagesize())
	faults := 0
	for i, p := range ptrs {
		_, err := r.Get(p, recs[i].key)
		if p.Offset >= page {
			requireCorruption(t, err, int64(p.Offset))
			faults++
			_, ok, err := r.MappedValue(p, recs[i].key)
			require.True(t, ok)
			requireCorruption(t, err, int64(p.Offset))
		}
	}
	require.Positive(t, faults)
	// The goroutine's fault handling is back to what it was.
	require.NotPanics(t, func() { _, _ = r.AppendValue(nil, ptrs[len(ptrs)-1], recs[len(recs)-1].key) })
}

// TestMappedCorruptionEveryByte damages each byte of the records of a
// mapped file in turn: the read of the record holding it, copied
// (AppendValue, which copies the value before checksumming) or in place
// (MappedValue), fails with a corruption error, and every other record
// reads back intact.
func TestMappedCorruptionEveryByte(t *testing.T) {
	recs, data, ptrs := smallFile(t)
	for off := HeaderLen; off < len(data)-FooterLen; off++ {
		for _, mask := range []byte{0x01, 0x80} {
			d := append([]byte(nil), data...)
			d[off] ^= mask
			r, _ := openMapped(t, d, ReaderOptions{})
			require.True(t, r.Mapped())
			bad := recordAt(ptrs, off)
			for i, p := range ptrs {
				v, err := r.AppendValue([]byte("x"), p, recs[i].key)
				mv, ok, merr := r.MappedValue(p, recs[i].key)
				require.True(t, ok)
				if i == bad {
					requireCorruption(t, err, int64(p.Offset))
					require.Nil(t, v)
					requireCorruption(t, merr, int64(p.Offset))
					require.Nil(t, mv)
					continue
				}
				require.NoError(t, err, "byte %d, record %d", off, i)
				require.Equal(t, append([]byte("x"), recs[i].value...), v)
				require.NoError(t, merr, "byte %d, record %d", off, i)
				require.Equal(t, recs[i].value, mv)
			}
		}
	}
}
