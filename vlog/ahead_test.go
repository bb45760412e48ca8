package vlog

import (
	"hash/crc32"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAppendSum: appendSum appends what append does, to a nil dst, one
// with room and one without (which it must not write past), and returns
// the checksum extended over the value, for values and next records of
// every length around the sizes the copy works in.
func TestAppendSum(t *testing.T) {
	table := crc32.MakeTable(crc32.Castagnoli)
	forAheadCases(func(src, next []byte) {
		n, m := len(src), len(next)
		for _, room := range []int{-1, 0, 7, n + 9} {
			var dst []byte
			if room >= 0 {
				dst = append(make([]byte, 0, 3+room), "pre"...)
			}
			// Bytes past dst's length, which appendSum may only
			// overwrite within the copy's length.
			full := dst[:cap(dst)]
			for j := len(dst); j < len(full); j++ {
				full[j] = 0xee
			}
			want := append(append([]byte(nil), dst...), src...)
			got, sum := appendSum(dst, src, 0xdeadbeef, next)
			require.Equal(t, want, got[:len(got):len(got)], "value %d, next %d, room %d", n, m, room)
			require.Equal(t, crc32.Update(0xdeadbeef, table, src), sum, "value %d, next %d, room %d", n, m, room)
			if room >= 0 && cap(dst) >= len(want) {
				require.Equal(t, &full[0], &got[0], "value %d, room %d: the copy went elsewhere though it fit", n, room)
				for j := len(want); j < len(full); j++ {
					require.Equal(t, byte(0xee), full[j], "value %d, room %d: byte %d past the copy", n, room, j)
				}
			}
		}
	})
}

// forAheadCases calls f with values and next records of random bytes, of
// every length around the sizes the copy and checksum work in (64-byte
// blocks, 256-byte groups, 1 KiB chunks).
func forAheadCases(f func(b, next []byte)) {
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 5*1024+100)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	lens := []int{0, 1, 63, 64, 65, 255, 256, 257, 1023, 1024, 1025, 3*1024 + 17, 5 * 1024}
	for _, n := range lens {
		for _, m := range lens {
			f(buf[:n], buf[len(buf)-m:])
		}
	}
}

// TestMappedAhead: reads that prefetch another record return what reads
// that do not return, for next records in the same file, in another, the
// record itself, or none; a pointer that does not fit the file, or a file
// not mapped, locates nothing (TestMappedCorruption reads a corrupt record
// with a prefetch).
func TestMappedAhead(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 11))
	recs := genRecords(rng, 200, true)
	data, ptrs := buildFile(t, recs, true)
	r, _ := openMapped(t, data, ReaderOptions{})
	other, _ := openMapped(t, data, ReaderOptions{})
	require.True(t, r.Mapped())

	for i, p := range ptrs {
		for _, next := range []Ahead{{}, r.Ahead(ptrs[(i+1)%len(ptrs)]), other.Ahead(ptrs[rng.IntN(len(ptrs))]), r.Ahead(p)} {
			v, err := r.AppendValueAhead([]byte("x"), p, recs[i].key, next)
			require.NoError(t, err)
			require.Equal(t, append([]byte("x"), recs[i].value...), v)
			v, ok, err := r.MappedValueAhead(p, recs[i].key, next)
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, recs[i].value, v)
		}
		require.True(t, r.Ahead(p).Located())
	}

	last := ptrs[len(ptrs)-1]
	past := last
	past.Offset = last.End() + 1<<20
	require.False(t, r.Ahead(past).Located(), "a pointer past the records")
	wrong := last
	wrong.FileNum++
	require.False(t, r.Ahead(wrong).Located(), "a pointer into another file")
	unmapped, _, err := openBytes(data, ReaderOptions{Map: true})
	require.NoError(t, err)
	require.False(t, unmapped.Ahead(last).Located(), "a Reader without a mapping")
	v, err := unmapped.AppendValueAhead(nil, last, recs[len(recs)-1].key, r.Ahead(ptrs[0]))
	require.NoError(t, err)
	require.Equal(t, recs[len(recs)-1].value, v)
}
