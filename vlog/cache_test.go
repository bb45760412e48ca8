package vlog

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-db/strata/cache"
)

func TestValueCache(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	recs := genRecords(rng, 100, false)
	data, ptrs := buildFile(t, recs, true)
	c := cache.New(64 << 20)
	id := c.NewID()
	r, f, err := openBytes(data, ReaderOptions{Cache: c, CacheID: id})
	require.NoError(t, err)

	first := make([][]byte, len(ptrs))
	for i, p := range ptrs {
		v, err := r.Get(p, recs[i].key)
		require.NoError(t, err)
		require.Equal(t, recs[i].value, v)
		first[i] = v
	}
	m := c.Metrics()
	require.Equal(t, uint64(0), m.Hits)
	require.Equal(t, uint64(len(ptrs)), m.Misses)
	require.Equal(t, int64(len(ptrs)), m.Count)

	f.resetCounts()
	for i, p := range ptrs {
		v, err := r.Get(p, recs[i].key)
		require.NoError(t, err)
		require.Equal(t, recs[i].value, v)
		if len(v) > 0 {
			require.Same(t, &first[i][0], &v[0], "the second Get returns the cached bytes")
		}
	}
	require.Equal(t, uint64(len(ptrs)), c.Metrics().Hits)
	require.Zero(t, f.reads.Load(), "hits do not read the file")

	// A hit still checks the pointer and key against the cached record.
	p := ptrs[3]
	_, err = r.Get(p, []byte("another key"))
	requireCorruption(t, err, int64(p.Offset))
	bad := p
	bad.ValueLen--
	_, err = r.Get(bad, recs[3].key)
	requireCorruption(t, err, int64(p.Offset))

	// ReadAhead serves cached records without reading; it does not add to
	// the cache.
	r2, f2, err := openBytes(data, ReaderOptions{Cache: c, CacheID: c.NewID()})
	require.NoError(t, err)
	ra := r2.NewReadAhead(0)
	for i, p := range ptrs {
		v, err := ra.Get(p, recs[i].key)
		require.NoError(t, err)
		require.Equal(t, recs[i].value, v)
	}
	require.Equal(t, int64(len(ptrs)), c.Metrics().Count)
	require.Positive(t, f2.reads.Load())
	f.resetCounts()
	ra = r.NewReadAhead(0)
	for i, p := range ptrs {
		v, err := ra.Get(p, recs[i].key)
		require.NoError(t, err)
		require.Equal(t, recs[i].value, v)
	}
	require.Zero(t, f.reads.Load())
}
