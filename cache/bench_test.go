package cache

import (
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/strata-db/strata/internal/base"
)

const (
	benchCapacity = 64 << 20
	benchBlock    = 4 << 10
	benchBlocks   = 8192 // 32 MiB of 4 KiB blocks: all fit
)

// newBenchCache returns a cache holding benchBlocks blocks at offsets
// i*benchBlock of file 1.
func newBenchCache(tb testing.TB) *Cache {
	c := New(benchCapacity)
	block := make([]byte, benchBlock)
	for i := range benchBlocks {
		c.Set(1, 1, uint64(i)*benchBlock, block)
	}
	if m := c.Metrics(); m.Count != benchBlocks {
		tb.Fatalf("%d blocks cached, want %d", m.Count, benchBlocks)
	}
	return c
}

func TestGetDoesNotAllocate(t *testing.T) {
	c := newBenchCache(t)
	i := uint64(0)
	hit := testing.AllocsPerRun(1000, func() {
		i++
		if c.Get(1, 1, (i%benchBlocks)*benchBlock) == nil {
			t.Fatal("miss")
		}
	})
	miss := testing.AllocsPerRun(1000, func() {
		i++
		if c.Get(2, 1, i) != nil {
			t.Fatal("hit")
		}
	})
	if hit != 0 || miss != 0 {
		t.Fatalf("Get allocates: %v per hit, %v per miss", hit, miss)
	}
}

func BenchmarkGetHit(b *testing.B) {
	c := newBenchCache(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if c.Get(1, 1, uint64(i%benchBlocks)*benchBlock) == nil {
			b.Fatal("miss")
		}
	}
}

func BenchmarkGetHitParallel(b *testing.B) {
	c := newBenchCache(b)
	var seed atomic.Uint64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := int(seed.Add(1) * 7919)
		for pb.Next() {
			i++
			if c.Get(1, 1, uint64(i%benchBlocks)*benchBlock) == nil {
				b.Error("miss")
				return
			}
		}
	})
}

func BenchmarkGetMiss(b *testing.B) {
	c := newBenchCache(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if c.Get(1, 2, uint64(i)) != nil {
			b.Fatal("hit")
		}
	}
}

// BenchmarkSet inserts new blocks into a full cache, so that every Set
// also evicts.
func BenchmarkSet(b *testing.B) {
	c := New(benchCapacity)
	block := make([]byte, benchBlock)
	for i := range 2 * benchCapacity / benchBlock {
		c.Set(1, 1, uint64(i), block)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		c.Set(1, 2, uint64(i), block)
	}
}

// BenchmarkZipfMixed runs 90% Gets and 10% Sets over zipfian (theta 0.99)
// block numbers, from all cores, on a cache that holds a quarter of the
// blocks. It reports the hit ratio of the Gets.
func BenchmarkZipfMixed(b *testing.B) {
	const (
		universe = 4 * benchCapacity / benchBlock
		traceLen = 1 << 20
	)
	z := newZipfGen(rand.New(rand.NewPCG(3, 4)), universe, 0.99)
	trace := make([]uint64, traceLen)
	for i := range trace {
		// Scramble the ranks so that hot blocks are spread over files.
		trace[i] = z.next() * 0x9E3779B97F4A7C15
	}
	c := New(benchCapacity)
	block := make([]byte, benchBlock)
	for _, k := range trace[:traceLen/4] {
		c.Set(1, base.FileNum(k>>60), k, block)
	}
	before := c.Metrics()
	var seed atomic.Uint64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		g := seed.Add(1)
		rng := rand.New(rand.NewPCG(g, g))
		i := rng.IntN(traceLen)
		for pb.Next() {
			k := trace[i&(traceLen-1)]
			i++
			if rng.IntN(10) == 0 {
				c.Set(1, base.FileNum(k>>60), k, block)
			} else {
				c.Get(1, base.FileNum(k>>60), k)
			}
		}
	})
	b.StopTimer()
	m := c.Metrics()
	hits, misses := m.Hits-before.Hits, m.Misses-before.Misses
	if hits+misses > 0 {
		b.ReportMetric(100*float64(hits)/float64(hits+misses), "hit%")
	}
}
