package sstable

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/vfs"
)

// discardFile is a table file whose writes go nowhere; it only counts the
// bytes written to it. Its other operations are an in-memory file's.
type discardFile struct {
	vfs.File
	n int64
}

func newDiscardFile(b *testing.B) *discardFile { return &discardFile{File: newTestFile(b)} }

func (f *discardFile) Write(p []byte) (int, error) { f.n += int64(len(p)); return len(p), nil }

// benchKey returns the i-th 16-byte key: an 8-byte prefix and a big-endian
// counter.
func benchKey(buf []byte, i int) []byte {
	buf = append(buf[:0], "usertab:"...)
	return binary.BigEndian.AppendUint64(buf, uint64(i)*7)
}

// benchValue returns a 100-byte value built from 10-byte words of a small
// vocabulary, so that block compressors find matches (about 2x with s2).
func benchValue(rng *rand.Rand) []byte {
	v := make([]byte, 0, 100)
	for len(v) < 100 {
		w := rng.IntN(256)
		v = fmt.Appendf(v, "w%03d-%05d", w, w*w%7919)
	}
	return v[:100]
}

func BenchmarkWriter(b *testing.B) {
	for c := range numCompressions {
		b.Run(c.String(), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			values := make([][]byte, 1024)
			for i := range values {
				values[i] = benchValue(rng)
			}
			const perTable = 500_000 // about 58 MB of raw entries
			var key []byte
			var out int64
			b.SetBytes(16 + 100)
			b.ReportAllocs()
			start := time.Now()
			for i := 0; i < b.N; {
				f := newDiscardFile(b)
				w := NewWriter(f, WriterOptions{Compression: c})
				for j := 0; j < perTable && i < b.N; j, i = j+1, i+1 {
					key = benchKey(key, j)
					if err := w.Add(base.MakeInternalKey(key, base.SeqNum(j+1), base.KindSet), values[j%len(values)]); err != nil {
						b.Fatal(err)
					}
				}
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
				out += f.n
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "entries/s")
			b.ReportMetric(float64(out)/float64(b.N*116), "size-ratio")
		})
	}
}

type benchTable struct {
	keys [][]byte
	mem  *testFile
	path string
	size int64
}

var benchTables = map[Compression]*benchTable{}

// TestMain removes the benchmark tables' temporary directories.
func TestMain(m *testing.M) {
	code := m.Run()
	for _, t := range benchTables {
		os.RemoveAll(filepath.Dir(t.path))
	}
	os.Exit(code)
}

// getBenchTable builds (once) a 100k-entry table of 16-byte keys and
// 100-byte values, in memory and on disk.
func getBenchTable(b *testing.B, c Compression) *benchTable {
	if t, ok := benchTables[c]; ok {
		return t
	}
	rng := rand.New(rand.NewPCG(3, 4))
	t := &benchTable{mem: newTestFile(b)}
	w := NewWriter(t.mem, WriterOptions{Compression: c})
	for i := range 100_000 {
		k := benchKey(nil, i)
		t.keys = append(t.keys, k)
		if err := w.Add(base.MakeInternalKey(k, base.SeqNum(i+1), base.KindSet), benchValue(rng)); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	data := t.mem.contents(b)
	t.size = int64(len(data))
	dir, err := os.MkdirTemp("", "sstable-bench")
	if err != nil {
		b.Fatal(err)
	}
	t.path = filepath.Join(dir, "bench.sst")
	if err := os.WriteFile(t.path, data, 0o644); err != nil {
		b.Fatal(err)
	}
	benchTables[c] = t
	return t
}

func (t *benchTable) open(b *testing.B, cached, disk bool) *Reader {
	var f vfs.File = t.mem.reopen(b)
	if disk {
		df, err := vfs.Default.Open(t.path)
		if err != nil {
			b.Fatal(err)
		}
		f = df
	}
	o := ReaderOptions{FileNum: 1}
	if cached {
		o.Cache = newMapCache()
	}
	r, err := NewReader(f, t.size, o)
	if err != nil {
		b.Fatal(err)
	}
	if cached { // warm the cache
		it := r.NewIter()
		for ok := it.First(); ok; ok = it.Next() {
		}
		it.Close()
	}
	return r
}

var readModes = []struct {
	name         string
	cached, disk bool
}{
	{"cache-hit", true, false},
	{"no-cache-pread", false, true},
	{"no-cache-memfile", false, false},
}

func BenchmarkGet(b *testing.B) {
	for _, c := range []Compression{NoCompression, S2Compression} {
		t := getBenchTable(b, c)
		for _, m := range readModes {
			b.Run(fmt.Sprintf("%s/%s", c, m.name), func(b *testing.B) {
				r := t.open(b, m.cached, m.disk)
				defer r.Close()
				rng := rand.New(rand.NewPCG(5, 6))
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					k := t.keys[rng.IntN(len(t.keys))]
					_, _, _, ok, err := r.Get(k, base.SeqNumMax)
					if !ok || err != nil {
						b.Fatal("missing key", err)
					}
				}
			})
		}
	}
	// The same cache hits over 512 keys (a few blocks): the CPU cost of a
	// Get without the DRAM misses of a random lookup in a 12 MB table.
	b.Run("none/cache-hit-hot512", func(b *testing.B) {
		t := getBenchTable(b, NoCompression)
		r := t.open(b, true, false)
		rng := rand.New(rand.NewPCG(5, 6))
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if _, _, _, ok, err := r.Get(t.keys[rng.IntN(512)], base.SeqNumMax); !ok || err != nil {
				b.Fatal("missing key", err)
			}
		}
	})
	b.Run("absent-filtered", func(b *testing.B) {
		t := getBenchTable(b, NoCompression)
		r := t.open(b, true, false)
		key := []byte("usertab:\x00\x00\x00\x00\x00\x00\x00\x00")
		b.ReportAllocs()
		for i := range b.N {
			binary.BigEndian.PutUint64(key[8:], uint64(i)*7+3)
			r.Get(key, base.SeqNumMax)
		}
	})
}

func BenchmarkIterNext(b *testing.B) {
	for _, c := range []Compression{NoCompression, S2Compression} {
		t := getBenchTable(b, c)
		for _, m := range readModes {
			b.Run(fmt.Sprintf("%s/%s", c, m.name), func(b *testing.B) {
				r := t.open(b, m.cached, m.disk)
				defer r.Close()
				it := r.NewIter()
				defer it.Close()
				it.First()
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					if !it.Next() {
						it.First()
					}
				}
			})
		}
	}
}

func BenchmarkIterPrev(b *testing.B) {
	t := getBenchTable(b, NoCompression)
	r := t.open(b, true, false)
	it := r.NewIter()
	defer it.Close()
	it.Last()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if !it.Prev() {
			it.Last()
		}
	}
}

func BenchmarkSeekGE(b *testing.B) {
	t := getBenchTable(b, NoCompression)
	for _, m := range readModes[:2] {
		b.Run(m.name, func(b *testing.B) {
			r := t.open(b, m.cached, m.disk)
			defer r.Close()
			it := r.NewIter()
			defer it.Close()
			rng := rand.New(rand.NewPCG(7, 8))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if !it.SeekGE(t.keys[rng.IntN(len(t.keys))]) {
					b.Fatal("seek failed")
				}
			}
		})
	}
}

func BenchmarkNewIter(b *testing.B) {
	t := getBenchTable(b, NoCompression)
	r := t.open(b, true, false)
	b.ReportAllocs()
	for range b.N {
		it := r.NewIter()
		it.Close()
	}
}

// BenchmarkGetFilterUse: random lookups of keys a 4,000,000-key table
// holds (its filter 5 MB, past the CPU's caches), with the filter probed
// on every lookup ("probe-always": filterUse never decides) and with
// filterUse skipping it once it has seen the lookups hit ("adaptive").
func BenchmarkGetFilterUse(b *testing.B) {
	const n = 4_000_000
	mem := newTestFile(b)
	w := NewWriter(mem, WriterOptions{})
	var v [8]byte
	for i := range n {
		binary.BigEndian.PutUint64(v[:], uint64(i))
		if err := w.Add(base.MakeInternalKey(benchKey(nil, i), 1, base.KindSet), v[:]); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	size := int64(len(mem.contents(b)))
	for _, mode := range []string{"probe-always", "adaptive"} {
		b.Run(mode, func(b *testing.B) {
			r, err := NewReader(mem.reopen(b), size, ReaderOptions{FileNum: 1})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			if mode == "probe-always" {
				r.fuse.counted.Store(1 << 31) // never reaches a window's end
			}
			rng := rand.New(rand.NewPCG(5, 6))
			var key []byte
			b.ResetTimer()
			for range b.N {
				key = benchKey(key, rng.IntN(n))
				if _, _, _, ok, err := r.Get(key, base.SeqNumMax); !ok || err != nil {
					b.Fatal("missing key", err)
				}
			}
			b.StopTimer()
			b.ReportMetric(map[bool]float64{false: 0, true: 1}[r.fuse.skip.Load()], "skipping")
		})
	}
}
