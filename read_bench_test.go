package strata

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/strata-db/strata/internal/cputime"
	"github.com/strata-db/strata/vfs"
)

// Benchmarks of the read path on the shape kvbench measures: keys are
// db_bench's (an 8-byte big-endian index padded with '0' to 16 bytes),
// written once each in random order, WAL on, no compression. The database
// is built once per run of BenchmarkReadPath and shared by its
// sub-benchmarks.
//
//	go test -run '^$' -bench ReadPath -cpuprofile cpu.out -memprofile mem.out
//
// The STRATA_BENCH_KEYS and STRATA_BENCH_VALUE environment variables
// override the default shape (200,000 keys of 4 KiB values);
// STRATA_BENCH_LEARNED=off runs it with Options.DisableLearnedIndex. On
// Linux each benchmark also reports the CPU time of its thread per
// operation (cpu-ns/op), steadier than ns/op on a shared machine.

func readBenchShape() (keys, value int) {
	keys, value = 200_000, 4096
	if s := os.Getenv("STRATA_BENCH_KEYS"); s != "" {
		fmt.Sscan(s, &keys)
	}
	if s := os.Getenv("STRATA_BENCH_VALUE"); s != "" {
		fmt.Sscan(s, &value)
	}
	return keys, value
}

// benchSink keeps what benchmarks read observable.
var benchSink uint64

func readBenchKey(dst []byte, i uint64) []byte {
	binary.BigEndian.PutUint64(dst[:8], i)
	for j := 8; j < 16; j++ {
		dst[j] = '0'
	}
	return dst[:16]
}

// buildReadBench fills a database of the current shape in a temporary
// directory and waits for its background work.
func buildReadBench(b *testing.B) (*DB, int) {
	b.Helper()
	keys, value := readBenchShape()
	db, err := Open(b.TempDir(), &Options{FS: vfs.Default, Compression: "none",
		DisableLearnedIndex: os.Getenv("STRATA_BENCH_LEARNED") == "off"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	rng := rand.New(rand.NewPCG(1, 2))
	val := make([]byte, value)
	for i := range val {
		val[i] = byte(rng.Uint32())
	}
	var kb [16]byte
	for _, i := range rng.Perm(keys) {
		if err := db.Set(readBenchKey(kb[:], uint64(i)), val, NoSync); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		b.Fatal(err)
	}
	for {
		m := db.Metrics()
		busy := m.MemTable.Immutable > 0 || m.Compact.InProgress > 0
		for level, l := range m.Levels {
			busy = busy || (level < len(m.Levels)-1 && l.Score >= 1)
		}
		if !busy {
			return db, keys
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func BenchmarkReadPath(b *testing.B) {
	db, n := buildReadBench(b)
	// Keys stored, keys past the last one, and keys between stored ones
	// (the last byte differs), in every table's range: what a table's
	// Bloom filter is for.
	for _, c := range []struct {
		name string
		key  func(kb []byte, rng *rand.Rand) []byte
		want error
	}{
		{"get", func(kb []byte, rng *rand.Rand) []byte { return readBenchKey(kb, rng.Uint64N(uint64(n))) }, nil},
		{"get-absent", func(kb []byte, rng *rand.Rand) []byte { return readBenchKey(kb, uint64(n)+rng.Uint64N(uint64(n))) }, ErrNotFound},
		{"get-absent-inside", func(kb []byte, rng *rand.Rand) []byte {
			k := readBenchKey(kb, rng.Uint64N(uint64(n)))
			k[15] = '1'
			return k
		}, ErrNotFound},
	} {
		b.Run(c.name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(3, 4))
			var kb [16]byte
			b.ReportAllocs()
			b.ResetTimer()
			cpu := cputime.Start()
			for i := 0; i < b.N; i++ {
				if _, err := db.Get(c.key(kb[:], rng)); err != c.want {
					b.Fatal(err)
				}
			}
			cpu.Stop(b)
		})
	}
	// Into a reused buffer, as kvbench reads.
	b.Run("get-append", func(b *testing.B) {
		rng := rand.New(rand.NewPCG(3, 4))
		var kb [16]byte
		buf := make([]byte, 0, 64<<10)
		b.ReportAllocs()
		b.ResetTimer()
		cpu := cputime.Start()
		for i := 0; i < b.N; i++ {
			if _, err := db.GetAppend(readBenchKey(kb[:], rng.Uint64N(uint64(n))), buf); err != nil {
				b.Fatal(err)
			}
		}
		cpu.Stop(b)
	})
	// seek+100: a new iterator per seek, 101 rows with their values read
	// (one byte of every 64-byte cache line, as kvbench's scans read them,
	// so that a value handed out without being read is not free), as
	// kvbench's seekrandom does; the figure is per row.
	b.Run("seek+100", func(b *testing.B) {
		rng := rand.New(rand.NewPCG(5, 6))
		var kb [16]byte
		var sum uint64
		b.ReportAllocs()
		b.ResetTimer()
		cpu := cputime.Start()
		rows := 0
		for rows < b.N {
			it, err := db.NewIter(nil)
			if err != nil {
				b.Fatal(err)
			}
			for ok, j := it.SeekGE(readBenchKey(kb[:], rng.Uint64N(uint64(n)))), 0; ok && j < 101; ok, j = it.Next(), j+1 {
				v := it.Value()
				for k := 0; k < len(v); k += 64 {
					sum += uint64(v[k])
				}
				rows++
			}
			if err := it.Close(); err != nil {
				b.Fatal(err)
			}
		}
		cpu.Stop(b)
		benchSink = sum
	})
}
