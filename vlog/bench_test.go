package vlog

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/strata-db/strata/cache"
	"github.com/strata-db/strata/vfs"
)

// BenchmarkWriterAdd appends 4 KiB values with 16-byte keys to a file on
// disk (no sync until the end, as at flush).
func BenchmarkWriterAdd(b *testing.B) {
	for _, vlen := range []int{128, 4 << 10, 64 << 10} {
		b.Run(fmt.Sprintf("value=%d", vlen), func(b *testing.B) {
			f, err := vfs.Default.Create(filepath.Join(b.TempDir(), "000001.vlog"))
			if err != nil {
				b.Fatal(err)
			}
			w := NewWriter(f, 1)
			key, value := make([]byte, 16), randBytes(rand.New(rand.NewPCG(1, 1)), vlen)
			b.SetBytes(int64(len(key) + len(value)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				key[i%16]++
				if _, err := w.Add(key, value); err != nil {
					b.Fatal(err)
				}
			}
			if err := w.Finish(); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// benchFile writes n records of vlen-byte values to a file on disk and
// returns the file's name, keys and pointers. The file is then in the page
// cache.
func benchFile(b *testing.B, n, vlen int) (string, [][]byte, []Pointer) {
	name := filepath.Join(b.TempDir(), "000001.vlog")
	f, err := vfs.Default.Create(name)
	if err != nil {
		b.Fatal(err)
	}
	w := NewWriter(f, 1)
	value := randBytes(rand.New(rand.NewPCG(2, 2)), vlen)
	keys := make([][]byte, n)
	ptrs := make([]Pointer, n)
	for i := range n {
		keys[i] = fmt.Appendf(nil, "key%012d", i)
		if ptrs[i], err = w.Add(keys[i], value); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Finish(); err != nil {
		b.Fatal(err)
	}
	return name, keys, ptrs
}

func openBench(b *testing.B, name string, o ReaderOptions) *Reader {
	f, err := vfs.Default.Open(name)
	if err != nil {
		b.Fatal(err)
	}
	st, err := f.Stat()
	if err != nil {
		b.Fatal(err)
	}
	r, err := NewReader(f, 1, st.Size(), o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	return r
}

// BenchmarkGet reads 4 KiB values at random from a page-cached 64 MiB
// file, without a cache, and with a cache that holds them all (warm).
func BenchmarkGet(b *testing.B) {
	const n, vlen = 16384, 4 << 10
	name, keys, ptrs := benchFile(b, n, vlen)
	for _, cached := range []bool{false, true} {
		b.Run(fmt.Sprintf("cache=%t", cached), func(b *testing.B) {
			var o ReaderOptions
			if cached {
				o.Cache = cache.New(256 << 20)
				o.CacheID = o.Cache.NewID()
			}
			r := openBench(b, name, o)
			if cached {
				for i, p := range ptrs {
					if _, err := r.Get(p, keys[i]); err != nil {
						b.Fatal(err)
					}
				}
			}
			rng := rand.New(rand.NewPCG(3, 3))
			b.SetBytes(vlen)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				i := rng.IntN(n)
				if _, err := r.Get(ptrs[i], keys[i]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkScan reads every value of a page-cached file in order, through
// a ReadAhead and by one Get per record, and reports rows per second.
func BenchmarkScan(b *testing.B) {
	for _, vlen := range []int{1 << 10, 4 << 10} {
		n := (32 << 20) / vlen
		name, keys, ptrs := benchFile(b, n, vlen)
		for _, mode := range []string{"readahead", "get"} {
			b.Run(fmt.Sprintf("value=%d/%s", vlen, mode), func(b *testing.B) {
				r := openBench(b, name, ReaderOptions{})
				b.SetBytes(int64(n * vlen))
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					ra := r.NewReadAhead(0)
					for i, p := range ptrs {
						var err error
						if mode == "readahead" {
							_, err = ra.Get(p, keys[i])
						} else {
							_, err = r.Get(p, keys[i])
						}
						if err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "rows/s")
			})
		}
	}
}

// BenchmarkScanner reads a page-cached file with a Scanner.
func BenchmarkScanner(b *testing.B) {
	const vlen = 4 << 10
	n := (32 << 20) / vlen
	name, _, _ := benchFile(b, n, vlen)
	r := openBench(b, name, ReaderOptions{})
	b.SetBytes(int64(n * vlen))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		s := r.NewScanner()
		for s.Next() {
		}
		if s.Err() != nil {
			b.Fatal(s.Err())
		}
	}
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkAdaptiveObserveWrite measures the write-path cost of the
// adaptive policy, from two goroutines.
func BenchmarkAdaptiveObserveWrite(b *testing.B) {
	a := NewAdaptiveThreshold(AdaptiveOptions{})
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			i++
			a.ObserveWrite(16, 1000+i&4095)
		}
	})
}

func BenchmarkAdaptiveObserveWriteSerial(b *testing.B) {
	a := NewAdaptiveThreshold(AdaptiveOptions{})
	for i := range b.N {
		a.ObserveWrite(16, 1000+i&4095)
	}
}
