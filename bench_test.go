package strata

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/strata-db/strata/vfs"
)

// Benchmarks of the public API on the disk filesystem. Keys are 16 bytes,
// values 100 bytes unless named otherwise, writes do not sync (the WAL is
// written to the OS on every commit).

func benchKey(buf []byte, i uint64) []byte {
	binary.BigEndian.PutUint64(buf[0:8], i*0x9e3779b97f4a7c15)
	binary.BigEndian.PutUint64(buf[8:16], i)
	return buf[:16]
}

func openBench(b *testing.B, opts *Options) *DB {
	b.Helper()
	if opts == nil {
		opts = &Options{}
	}
	if opts.FS == nil {
		opts.FS = vfs.Default
	}
	db, err := Open(b.TempDir(), opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}

func BenchmarkSet(b *testing.B) {
	for _, c := range []struct {
		size int
		wal  bool
	}{{100, true}, {4096, true}, {100, false}, {4096, false}} {
		b.Run(fmt.Sprintf("value=%d/wal=%t", c.size, c.wal), func(b *testing.B) {
			size := c.size
			db := openBench(b, &Options{Compression: "none", DisableWAL: !c.wal})
			value := make([]byte, size)
			rng := rand.New(rand.NewPCG(1, 2))
			for i := range value {
				value[i] = byte(rng.Uint32())
			}
			var kb [16]byte
			b.SetBytes(int64(16 + size))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := db.Set(benchKey(kb[:], rng.Uint64()), value, NoSync); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkSetParallel(b *testing.B) {
	db := openBench(b, &Options{Compression: "none"})
	value := make([]byte, 100)
	b.SetBytes(116)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		rng := rand.New(rand.NewPCG(rand.Uint64(), 2))
		var kb [16]byte
		for pb.Next() {
			if err := db.Set(benchKey(kb[:], rng.Uint64()), value, NoSync); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkSetSync(b *testing.B) {
	db := openBench(b, &Options{Compression: "none"})
	value := make([]byte, 100)
	var kb [16]byte
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := db.Set(benchKey(kb[:], uint64(i)), value, Sync); err != nil {
			b.Fatal(err)
		}
	}
}

const benchKeys = 200_000

// fillBench loads benchKeys keys and, with flush, moves them to SSTables.
func fillBench(b *testing.B, db *DB, flush bool) {
	b.Helper()
	value := make([]byte, 100)
	var kb [16]byte
	applyBench(b, db, benchKeys, 1000, func(batch *Batch, i uint64) { batch.Set(benchKey(kb[:], i), value) })
	if flush {
		if err := db.Flush(); err != nil {
			b.Fatal(err)
		}
		if err := db.Compact(nil, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// applyBench writes n keys, set adding key i to a batch, applied every
// per keys without syncing.
func applyBench(b *testing.B, db *DB, n uint64, per int, set func(batch *Batch, i uint64)) {
	b.Helper()
	batch := db.NewBatch()
	for i := uint64(0); i < n; i++ {
		set(batch, i)
		if batch.Len() == per {
			if err := db.Apply(batch, NoSync); err != nil {
				b.Fatal(err)
			}
			batch.Reset()
		}
	}
	if err := db.Apply(batch, NoSync); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkGet(b *testing.B) {
	for _, where := range []string{"memtable", "sstable"} {
		b.Run(where, func(b *testing.B) {
			db := openBench(b, &Options{Compression: "none", CacheSize: 256 << 20})
			fillBench(b, db, where == "sstable")
			var kb [16]byte
			rng := rand.New(rand.NewPCG(3, 4))
			// Warm the block cache so the figure is for cached SST data.
			for i := uint64(0); i < benchKeys; i++ {
				if _, err := db.Get(benchKey(kb[:], i)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := db.Get(benchKey(kb[:], rng.Uint64N(benchKeys))); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkGetParallel(b *testing.B) {
	db := openBench(b, &Options{Compression: "none", CacheSize: 256 << 20})
	fillBench(b, db, true)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var kb [16]byte
		rng := rand.New(rand.NewPCG(rand.Uint64(), 4))
		for pb.Next() {
			if _, err := db.Get(benchKey(kb[:], rng.Uint64N(benchKeys))); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkIterate(b *testing.B) {
	for _, where := range []string{"memtable", "sstable"} {
		b.Run(where, func(b *testing.B) {
			db := openBench(b, &Options{Compression: "none", CacheSize: 256 << 20})
			fillBench(b, db, where == "sstable")
			it, err := db.NewIter(nil)
			if err != nil {
				b.Fatal(err)
			}
			defer it.Close()
			b.ReportAllocs()
			b.ResetTimer()
			ok := it.First()
			for i := 0; i < b.N; i++ {
				if !ok {
					ok = it.First()
				}
				_ = it.Value()
				ok = it.Next()
			}
		})
	}
}

func BenchmarkSeekGE(b *testing.B) {
	db := openBench(b, &Options{Compression: "none", CacheSize: 256 << 20})
	fillBench(b, db, true)
	it, err := db.NewIter(nil)
	if err != nil {
		b.Fatal(err)
	}
	defer it.Close()
	var kb [16]byte
	rng := rand.New(rand.NewPCG(5, 6))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if !it.SeekGE(benchKey(kb[:], rng.Uint64N(benchKeys))) {
			b.Fatal("seek found nothing")
		}
	}
}

// BenchmarkScan is one short scan per op, as seekrandom and YCSB E make
// them: a new iterator, a seek to a random key, 100 rows with their values,
// Close. Its allocations are the garbage every scan leaves.
func BenchmarkScan(b *testing.B) {
	for _, sep := range []bool{false, true} {
		name := "inline"
		threshold := -1
		if sep {
			name, threshold = "separated", 64
		}
		b.Run(name, func(b *testing.B) {
			db := openBench(b, &Options{Compression: "none", CacheSize: 256 << 20, ValueThreshold: threshold})
			fillBench(b, db, true)
			var kb [16]byte
			rng := rand.New(rand.NewPCG(7, 8))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				scanBench(b, db, benchKey(kb[:], rng.Uint64N(benchKeys)), func([]byte) {})
			}
		})
	}
}

// scanBench is one scan of BenchmarkScan: a new iterator, a seek to key,
// up to 100 rows whose values it passes to use, Close. It returns the
// rows.
func scanBench(b *testing.B, db *DB, key []byte, use func(v []byte)) int {
	it, err := db.NewIter(nil)
	if err != nil {
		b.Fatal(err)
	}
	rows := 0
	for ok := it.SeekGE(key); ok && rows < 100; ok = it.Next() {
		use(it.Value())
		rows++
	}
	if err := it.Close(); err != nil {
		b.Fatal(err)
	}
	return rows
}

// BenchmarkScan4K is BenchmarkScan over 100,000 separated values of 4 KiB
// (400 MiB, past the CPU's caches), in an order unrelated to the keys', so
// each row's value comes from a random place in memory, as kvbench
// seekrandom's do; each value's lines are read once (as bench.Touch does).
func BenchmarkScan4K(b *testing.B) {
	const n = 100_000
	db := openBench(b, &Options{Compression: "none"})
	value := make([]byte, 4096)
	var kb [16]byte
	applyBench(b, db, n, 100, func(batch *Batch, i uint64) {
		for j := 0; j < len(value); j += 512 {
			value[j] = byte(i + uint64(j))
		}
		batch.Set(benchKey(kb[:], i), value)
	})
	if err := db.Flush(); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	var sum uint64
	rows := 0
	b.ResetTimer()
	touch := func(v []byte) {
		for j := 0; j < len(v); j += 64 {
			sum += uint64(v[j])
		}
	}
	for i := 0; i < b.N; i++ {
		rows += scanBench(b, db, benchKey(kb[:], rng.Uint64N(n)), touch)
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
	scan4KSink = sum
}

var scan4KSink uint64
