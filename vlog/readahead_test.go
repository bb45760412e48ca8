package vlog

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-db/strata/internal/base"
)

// uniformFile returns a finished file of n records with values of vlen
// bytes, opened, and its records and pointers.
func uniformFile(t *testing.T, fileNum base.FileNum, n, vlen int) (*Reader, *testFile, []kv, []Pointer) {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(fileNum), uint64(vlen)))
	recs := make([]kv, n)
	for i := range recs {
		recs[i] = kv{key: []byte{byte(i >> 8), byte(i)}, value: randBytes(rng, vlen)}
	}
	f := newTestFile(t)
	w := NewWriter(f, fileNum)
	ptrs := make([]Pointer, n)
	for i, r := range recs {
		p, err := w.Add(r.key, r.value)
		require.NoError(t, err)
		ptrs[i] = p
	}
	require.NoError(t, w.Finish())
	data := f.contents(t)
	f = fileWith(t, data)
	r, err := NewReader(f, fileNum, int64(len(data)), ReaderOptions{})
	require.NoError(t, err)
	return r, f, recs, ptrs
}

func TestReadAheadSequential(t *testing.T) {
	const vlen = 1000
	r, f, recs, ptrs := uniformFile(t, testFileNum, 3000, vlen) // ~3 MB
	ra := r.NewReadAhead(512 << 10)
	var reads []int64
	for i, p := range ptrs {
		before := f.readBytes.Load()
		v, err := ra.Get(p, recs[i].key)
		require.NoError(t, err)
		require.Equal(t, recs[i].value, v)
		if n := f.readBytes.Load() - before; n > 0 {
			reads = append(reads, n)
		}
	}
	// The first record alone, then windows of 64, 128, 256 KiB and then
	// 512 KiB until the end.
	require.Equal(t, int64(ptrs[0].Length), reads[0])
	require.Equal(t, []int64{64 << 10, 128 << 10, 256 << 10, 512 << 10}, reads[1:5])
	for _, n := range reads[5 : len(reads)-1] {
		require.Equal(t, int64(512<<10), n)
	}
	var total int64
	for _, n := range reads {
		total += n
	}
	// Each window starts at the record the previous one cut, so only those
	// records are read twice.
	require.GreaterOrEqual(t, total, int64(ptrs[len(ptrs)-1].End()-HeaderLen))
	require.Less(t, total, int64(ptrs[len(ptrs)-1].End()-HeaderLen)+int64(len(reads))*int64(ptrs[0].Length))
	require.Less(t, len(reads), 12)
}

func TestReadAheadGapsAndJumps(t *testing.T) {
	r, f, recs, ptrs := uniformFile(t, testFileNum, 2000, 500)
	ra := r.NewReadAhead(256 << 10)
	get := func(i int) int64 {
		t.Helper()
		before := f.reads.Load()
		v, err := ra.Get(ptrs[i], recs[i].key)
		require.NoError(t, err)
		require.Equal(t, recs[i].value, v)
		return f.reads.Load() - before
	}
	// Every third record: still served by windows.
	reads := int64(0)
	for i := 0; i < 600; i += 3 {
		reads += get(i)
	}
	require.LessOrEqual(t, reads, int64(6))

	// A jump back reads the record alone and resets the window.
	before := f.readBytes.Load()
	require.Equal(t, int64(1), get(10))
	require.Equal(t, int64(ptrs[10].Length), f.readBytes.Load()-before)
	// The run that follows starts again at 64 KiB.
	before = f.readBytes.Load()
	require.Equal(t, int64(1), get(11))
	require.Equal(t, int64(64<<10), f.readBytes.Load()-before)

	// A far jump forward reads alone as well.
	before = f.readBytes.Load()
	require.Equal(t, int64(1), get(1500))
	require.Equal(t, int64(ptrs[1500].Length), f.readBytes.Load()-before)
	// A record already in the window is served without a read.
	require.Equal(t, int64(0), get(1500))
}

func TestReadAheadBackward(t *testing.T) {
	r, f, recs, ptrs := uniformFile(t, testFileNum, 2000, 500)
	ra := r.NewReadAhead(256 << 10)
	for i := len(ptrs) - 1; i >= 0; i-- {
		v, err := ra.Get(ptrs[i], recs[i].key)
		require.NoError(t, err)
		require.Equal(t, recs[i].value, v)
	}
	require.Less(t, f.reads.Load(), int64(10))
	require.Less(t, f.readBytes.Load(), int64(ptrs[len(ptrs)-1].End()-HeaderLen)+10*int64(ptrs[0].Length))
}

func TestReadAheadLargeRecords(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	var recs []kv
	for i := range 40 {
		n := 100 + rng.IntN(2000)
		if i%5 == 2 {
			n = 100<<10 + rng.IntN(300<<10) // larger than some windows
		}
		recs = append(recs, kv{key: []byte{byte(i)}, value: randBytes(rng, n)})
	}
	data, ptrs := buildFile(t, recs, true)
	for _, max := range []int{1, 4 << 10, 64 << 10, 128 << 10, 0} {
		r, _, err := openBytes(data, ReaderOptions{})
		require.NoError(t, err)
		ra := r.NewReadAhead(max)
		for pass := range 2 {
			for j := range ptrs {
				i := j
				if pass == 1 {
					i = len(ptrs) - 1 - j
				}
				v, err := ra.Get(ptrs[i], recs[i].key)
				require.NoError(t, err)
				require.True(t, bytes.Equal(recs[i].value, v), "max %d record %d", max, i)
			}
		}
	}
}

// TestReadAheadMixedFiles interleaves the pointers of two files, as a scan
// of the tree sees them; each file's ReadAhead keeps its own run.
func TestReadAheadMixedFiles(t *testing.T) {
	ra1, f1, recs1, ptrs1 := uniformFile(t, 11, 1000, 700)
	ra2, f2, recs2, ptrs2 := uniformFile(t, 12, 1000, 700)
	a, b := ra1.NewReadAhead(0), ra2.NewReadAhead(0)
	for i := range 1000 {
		v, err := a.Get(ptrs1[i], recs1[i].key)
		require.NoError(t, err)
		require.Equal(t, recs1[i].value, v)
		v, err = b.Get(ptrs2[i], recs2[i].key)
		require.NoError(t, err)
		require.Equal(t, recs2[i].value, v)
	}
	require.Less(t, f1.reads.Load(), int64(10))
	require.Less(t, f2.reads.Load(), int64(10))

	// A pointer into the other file is refused, naming this file.
	_, err := a.Get(ptrs2[5], recs2[5].key)
	require.ErrorIs(t, err, base.ErrCorruption)
	require.ErrorContains(t, err, "000011.vlog")
	// And the ReadAhead still works afterwards.
	v, err := a.Get(ptrs1[5], recs1[5].key)
	require.NoError(t, err)
	require.Equal(t, recs1[5].value, v)
}

func TestReadAheadUnfinished(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	recs := genRecords(rng, 200, false)
	data, ptrs := buildFile(t, recs, false)
	r, _, err := openBytes(data, ReaderOptions{})
	require.NoError(t, err)
	require.False(t, r.Finished())
	ra := r.NewReadAhead(0)
	for i, p := range ptrs {
		v, err := ra.Get(p, recs[i].key)
		require.NoError(t, err)
		require.True(t, bytes.Equal(recs[i].value, v))
	}
}
