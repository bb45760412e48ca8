package vlog

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// smallFile returns a finished file of a few records, empty key and value
// included.
func smallFile(t *testing.T) ([]kv, []byte, []Pointer) {
	recs := []kv{
		{[]byte(""), []byte("first")},
		{[]byte("b"), []byte("")},
		{[]byte("c"), []byte("a value of some length")},
		{[]byte("dd"), bytes.Repeat([]byte("x"), 200)},
		{[]byte("e"), []byte("last")},
	}
	data, ptrs := buildFile(t, recs, true)
	return recs, data, ptrs
}

// recordAt returns the index of the record holding byte off, or -1.
func recordAt(ptrs []Pointer, off int) int {
	for i, p := range ptrs {
		if uint64(off) >= p.Offset && uint64(off) < p.End() {
			return i
		}
	}
	return -1
}

// TestCorruptionEveryByte damages every byte of a small file in turn, in
// several ways. A damaged header makes NewReader fail; a damaged footer
// makes the file unfinished with every record still readable; a damaged
// record makes Get, ReadAhead and Scanner report corruption at that
// record, and only there.
func TestCorruptionEveryByte(t *testing.T) {
	recs, data, ptrs := smallFile(t)
	footerStart := len(data) - FooterLen
	for off := range data {
		for _, mask := range []byte{0x01, 0x80, 0xff} {
			d := bytes.Clone(data)
			d[off] ^= mask
			r, _, err := openBytes(d, ReaderOptions{})
			if off < HeaderLen {
				requireCorruption(t, err, 0)
				continue
			}
			require.NoError(t, err, "byte %d", off)
			bad := recordAt(ptrs, off)
			require.Equal(t, off < footerStart, r.Finished(), "byte %d", off)
			require.Equal(t, off >= footerStart, bad < 0, "byte %d", off)

			for i, p := range ptrs {
				v, err := r.Get(p, recs[i].key)
				if i == bad {
					requireCorruption(t, err, int64(p.Offset))
					require.Nil(t, v)
				} else {
					require.NoError(t, err, "byte %d, record %d", off, i)
					require.Equal(t, recs[i].value, v)
				}
			}
			ra := r.NewReadAhead(0)
			for i, p := range ptrs {
				v, err := ra.Get(p, recs[i].key)
				if i == bad {
					requireCorruption(t, err, int64(p.Offset))
				} else {
					require.NoError(t, err, "byte %d, record %d", off, i)
					require.Equal(t, recs[i].value, v)
				}
			}

			got, _, err := scanAll(r)
			switch {
			case bad < 0:
				require.NoError(t, err)
				requireRecs(t, recs, got)
			default:
				requireCorruption(t, err, int64(ptrs[bad].Offset))
				requireRecs(t, recs[:bad], got)
			}
		}
	}
}

// TestCorruptionUnfinishedScan: in an unfinished file, a damaged record
// ends the scan silently, and Get still reports it.
func TestCorruptionUnfinishedScan(t *testing.T) {
	recs, data, ptrs := smallFile(t)
	data = data[:len(data)-FooterLen]
	d := bytes.Clone(data)
	d[ptrs[2].Offset+5] ^= 0x10
	r, _, err := openBytes(d, ReaderOptions{})
	require.NoError(t, err)
	require.False(t, r.Finished())
	got, _, err := scanAll(r)
	require.NoError(t, err)
	requireRecs(t, recs[:2], got)
	_, err = r.Get(ptrs[2], recs[2].key)
	requireCorruption(t, err, int64(ptrs[2].Offset))
	v, err := r.Get(ptrs[3], recs[3].key)
	require.NoError(t, err)
	require.Equal(t, recs[3].value, v)
}

// TestTruncation cuts a file at every offset: NewReader fails cleanly only
// when the header is cut; records before the cut are readable, records
// after it are corruption, and the scan returns exactly the whole records
// before the cut.
func TestTruncation(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	recs := genRecords(rng, 12, false)
	data, ptrs := buildFile(t, recs, true)
	step := 1
	if raceEnabled {
		step = 7
	}
	for cut := 0; cut <= len(data); cut += step {
		d := data[:cut]
		r, _, err := openBytes(d, ReaderOptions{})
		if cut < HeaderLen {
			requireCorruption(t, err, 0)
			continue
		}
		require.NoError(t, err, "cut %d", cut)
		require.Equal(t, cut == len(data), r.Finished(), "cut %d", cut)
		var whole []kv
		ra := r.NewReadAhead(0)
		for i, p := range ptrs {
			v, err := r.Get(p, recs[i].key)
			v2, err2 := ra.Get(p, recs[i].key)
			if p.End() <= uint64(cut) {
				require.NoError(t, err, "cut %d record %d", cut, i)
				require.NoError(t, err2, "cut %d record %d", cut, i)
				require.Equal(t, recs[i].value, v)
				require.Equal(t, recs[i].value, v2)
				whole = append(whole, recs[i])
			} else {
				requireCorruption(t, err, int64(p.Offset))
				requireCorruption(t, err2, int64(p.Offset))
			}
		}
		got, _, err := scanAll(r)
		require.NoError(t, err, "cut %d", cut)
		requireRecs(t, whole, got, "cut", cut)
	}
}

// rewriteFooter returns a copy of a finished file with its footer changed
// by fn and its checksum recomputed.
func rewriteFooter(data []byte, fn func(f []byte)) []byte {
	d := bytes.Clone(data)
	f := d[len(d)-FooterLen:]
	fn(f)
	binary.LittleEndian.PutUint32(f[footerSumOff:], crc(f[:footerSumOff]))
	return d
}

func TestFooterChecks(t *testing.T) {
	recs, data, ptrs := smallFile(t)
	for _, tc := range []struct {
		name     string
		fn       func(f []byte)
		finished bool
		scanErr  bool
	}{
		{"unchanged", func([]byte) {}, true, false},
		{"records end", func(f []byte) { f[16]-- }, false, false},
		{"file number", func(f []byte) { f[24]++ }, false, false},
		{"impossible value bytes", func(f []byte) { binary.LittleEndian.PutUint64(f[8:], 1<<40) }, false, false},
		{"impossible count", func(f []byte) { binary.LittleEndian.PutUint64(f[0:], 1<<40) }, false, false},
		{"wrong count", func(f []byte) { f[0]++ }, true, true},
		{"wrong value bytes", func(f []byte) { f[8]-- }, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _, err := openBytes(rewriteFooter(data, tc.fn), ReaderOptions{})
			require.NoError(t, err)
			require.Equal(t, tc.finished, r.Finished())
			for i, p := range ptrs {
				v, err := r.Get(p, recs[i].key)
				require.NoError(t, err)
				require.Equal(t, recs[i].value, v)
			}
			got, _, err := scanAll(r)
			requireRecs(t, recs, got)
			if tc.scanErr {
				requireCorruption(t, err, int64(len(data)-FooterLen))
			} else {
				require.NoError(t, err)
			}
		})
	}
}

// TestFooterInsideValue: an unfinished file whose last value ends with a
// valid footer of another file does not pass for finished.
func TestFooterInsideValue(t *testing.T) {
	inner, _ := buildFile(t, []kv{{[]byte("x"), []byte("y")}}, true)
	recs := []kv{{[]byte("k"), inner}}
	data, ptrs := buildFile(t, recs, false)
	r, _, err := openBytes(data, ReaderOptions{})
	require.NoError(t, err)
	require.False(t, r.Finished())
	v, err := r.Get(ptrs[0], []byte("k"))
	require.NoError(t, err)
	require.Equal(t, inner, v)
}
