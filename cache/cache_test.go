package cache

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"

	"github.com/strata-db/strata/internal/base"
)

// blockFor returns a block of n bytes whose content names its key, so that
// a test can tell whether Get returned the block of another key.
func blockFor(cacheID uint64, fileNum base.FileNum, offset uint64, n int) []byte {
	b := make([]byte, max(n, 24))
	binary.LittleEndian.PutUint64(b[0:], cacheID)
	binary.LittleEndian.PutUint64(b[8:], uint64(fileNum))
	binary.LittleEndian.PutUint64(b[16:], offset)
	return b[:n]
}

// checkBlock reports (with t.Errorf, so that goroutines may call it) a
// block b returned for a key that blockFor did not make for that key.
func checkBlock(t testing.TB, b []byte, cacheID uint64, fileNum base.FileNum, offset uint64) {
	t.Helper()
	if len(b) < 24 ||
		binary.LittleEndian.Uint64(b[0:]) != cacheID ||
		binary.LittleEndian.Uint64(b[8:]) != uint64(fileNum) ||
		binary.LittleEndian.Uint64(b[16:]) != offset {
		t.Errorf("Get(%d, %d, %d) returned the block of another key", cacheID, fileNum, offset)
	}
}

func mustCheck(t testing.TB, c *Cache) {
	t.Helper()
	if err := checkInvariants(c); err != nil {
		t.Fatal(err)
	}
}

// TestHashKey pins hashKey to XXH64 of the 24-byte little-endian key
// (vectors computed with github.com/cespare/xxhash/v2).
func TestHashKey(t *testing.T) {
	for _, tc := range []struct {
		cacheID, fileNum, offset uint64
		want                     uint64
	}{
		{1, 2, 3, 0x8799e152e5c0cdfa},
		{0, 0, 0, 0xbb3302e8a9608868},
		{1<<64 - 1, 7, 1 << 40, 0x5949b3abfb4abf9c},
	} {
		if got := hashKey(tc.cacheID, base.FileNum(tc.fileNum), tc.offset); got != tc.want {
			t.Errorf("hashKey(%d, %d, %d) = %d, want %d", tc.cacheID, tc.fileNum, tc.offset, got, tc.want)
		}
	}
}

func TestGetAfterSet(t *testing.T) {
	c := New(64 << 20)
	// Keys that differ in one field only must not collide.
	keys := []struct {
		cacheID uint64
		fileNum base.FileNum
		offset  uint64
	}{
		{1, 1, 0}, {2, 1, 0}, {1, 2, 0}, {1, 1, 4096},
		{0, 0, 0}, {1<<64 - 1, 1<<64 - 1, 1<<64 - 1},
		{1, 0, 1}, {0, 1, 1}, {1, 1, 1}, // same field values, permuted
	}
	blocks := make([][]byte, len(keys))
	for i, k := range keys {
		if got := c.Get(k.cacheID, k.fileNum, k.offset); got != nil {
			t.Fatalf("Get(%+v) before Set = %v, want nil", k, got)
		}
		blocks[i] = blockFor(k.cacheID, k.fileNum, k.offset, 100+i)
		c.Set(k.cacheID, k.fileNum, k.offset, blocks[i])
	}
	for i, k := range keys {
		got := c.Get(k.cacheID, k.fileNum, k.offset)
		if !bytes.Equal(got, blocks[i]) || &got[0] != &blocks[i][0] {
			t.Fatalf("Get(%+v) did not return the block set for it", k)
		}
	}
	m := c.Metrics()
	if m.Count != int64(len(keys)) || m.Hits != uint64(len(keys)) || m.Misses != uint64(len(keys)) {
		t.Fatalf("metrics %+v", m)
	}
	var want int64
	for _, b := range blocks {
		want += int64(len(b)) + EntryOverhead
	}
	if m.Size != want {
		t.Fatalf("Size %d, want %d", m.Size, want)
	}
	mustCheck(t, c)
}

func TestReplace(t *testing.T) {
	c := newCache(1<<20, 1)
	first := blockFor(1, 1, 0, 100)
	c.Set(1, 1, 0, first)

	// The same bytes in another slice: the cached block stays.
	c.Set(1, 1, 0, bytes.Clone(first))
	if got := c.Get(1, 1, 0); &got[0] != &first[0] {
		t.Fatal("Set of equal bytes replaced the cached block")
	}

	// Different bytes: the new block replaces the old one.
	b := blockFor(1, 1, 0, 300)
	c.Set(1, 1, 0, b)
	if got := c.Get(1, 1, 0); &got[0] != &b[0] || len(got) != 300 {
		t.Fatal("Get after replace returned the old block")
	}
	if m := c.Metrics(); m.Count != 1 || m.Size != 300+EntryOverhead {
		t.Fatalf("after replace: %+v", m)
	}
	mustCheck(t, c)
}

func TestEmptyBlock(t *testing.T) {
	c := New(1 << 20)
	c.Set(1, 1, 0, nil)
	c.Set(1, 1, 1, []byte{})
	for off := uint64(0); off < 2; off++ {
		if got := c.Get(1, 1, off); got == nil || len(got) != 0 {
			t.Fatalf("Get of an empty block at %d = %v, want a non-nil empty slice", off, got)
		}
	}
	if m := c.Metrics(); m.Size != 2*EntryOverhead {
		t.Fatalf("Size %d, want %d", m.Size, 2*EntryOverhead)
	}
}

func TestZeroCapacity(t *testing.T) {
	for _, capacity := range []int64{0, -1, -1 << 40} {
		c := New(capacity)
		c.Set(1, 1, 0, []byte("x"))
		if got := c.Get(1, 1, 0); got != nil {
			t.Fatalf("capacity %d: Get = %q, want nil", capacity, got)
		}
		c.EvictFile(1, 1)
		m := c.Metrics()
		if c.Capacity() != 0 || m.Capacity != 0 || m.Size != 0 || m.Count != 0 || m.Misses != 1 {
			t.Fatalf("capacity %d: Capacity() %d, metrics %+v", capacity, c.Capacity(), m)
		}
	}
}

func TestHugeCapacity(t *testing.T) {
	for _, capacity := range []int64{math.MaxInt64, math.MaxInt64 - 1, 1 << 62} {
		c := New(capacity)
		for i := range 100 {
			c.Set(1, 1, uint64(i), blockFor(1, 1, uint64(i), 64))
		}
		for i := range 100 {
			if b := c.Get(1, 1, uint64(i)); b == nil {
				t.Fatalf("capacity %d: block %d missing", capacity, i)
			}
		}
		if m := c.Metrics(); m.Capacity != capacity || m.Count != 100 || m.Evictions != 0 {
			t.Fatalf("capacity %d: %+v", capacity, m)
		}
		for i := range c.shards {
			sh := &c.shards[i]
			if want := sh.capacity / 10; sh.smallCap < want-1 || sh.smallCap > want+1 {
				t.Fatalf("capacity %d: shard of %d has a small queue of %d", capacity, sh.capacity, sh.smallCap)
			}
		}
		mustCheck(t, c)
	}
}

func TestNilCache(t *testing.T) {
	var c *Cache
	c.Set(1, 1, 0, []byte("x"))
	if c.Get(1, 1, 0) != nil || c.Capacity() != 0 || c.Metrics() != (Metrics{}) {
		t.Fatal("a nil cache must behave as an empty cache of capacity zero")
	}
	c.EvictFile(1, 1)
	if c.NewID() == 0 {
		t.Fatal("NewID returned 0")
	}
}

func TestNewID(t *testing.T) {
	a, b := New(1<<20), New(1<<20)
	seen := make(map[uint64]bool)
	for range 100 {
		for _, c := range []*Cache{a, b} {
			id := c.NewID()
			if id == 0 || seen[id] {
				t.Fatalf("NewID returned %d twice or zero", id)
			}
			seen[id] = true
		}
	}
}

func TestShardCount(t *testing.T) {
	maxN := 1
	for maxN < 4*runtime.GOMAXPROCS(0) && maxN < maxShards {
		maxN *= 2
	}
	for _, capacity := range []int64{-1, 0, 1, 1 << 20, 3 << 20, 8 << 20, 1 << 30, 1 << 40} {
		c := New(capacity)
		n := len(c.shards)
		if n&(n-1) != 0 || n < 1 || n > maxN {
			t.Fatalf("capacity %d: %d shards", capacity, n)
		}
		if n > 1 && capacity/int64(n) < minShardCapacity {
			t.Fatalf("capacity %d: %d shards of less than %d bytes", capacity, n, minShardCapacity)
		}
		if n < maxN && capacity/int64(2*n) >= minShardCapacity {
			t.Fatalf("capacity %d: only %d shards", capacity, n)
		}
		var sum int64
		for i := range c.shards {
			sum += c.shards[i].capacity
		}
		if sum != max(capacity, 0) {
			t.Fatalf("capacity %d: shard capacities sum to %d", capacity, sum)
		}
	}
}

// TestCapacityRespected sets blocks of random sizes (some larger than a
// shard) and checks after every Set that no shard is over its capacity.
func TestCapacityRespected(t *testing.T) {
	for _, shards := range []int{1, 4} {
		t.Run(fmt.Sprint("shards=", shards), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, uint64(shards)))
			const capacity = 256 << 10
			c := newCache(capacity, shards)
			shardCap := int64(capacity / shards)
			// model holds the last block set for each key: a Get must
			// return it or nil, never an older block or another key's.
			model := make(map[key][]byte)
			for i := range 20000 {
				k := key{1, base.FileNum(rng.IntN(3)), uint64(rng.IntN(500))}
				if rng.IntN(3) == 0 {
					got := c.Get(k.cacheID, k.fileNum, k.offset)
					if want := model[k]; got != nil && (len(got) != len(want) || &got[:1][0] != &want[:1][0]) {
						t.Fatalf("op %d: Get(%+v) returned a block that is not the last one set", i, k)
					}
					continue
				}
				n := 1 + rng.IntN(8<<10)
				if i%100 == 0 {
					n = int(shardCap) - EntryOverhead + rng.IntN(3) - 1 // around the largest that fits
				}
				b := make([]byte, n)
				b[0] = byte(i) // consecutive blocks of a key differ
				c.Set(k.cacheID, k.fileNum, k.offset, b)
				model[k] = b
				for s := range c.shards {
					if sh := &c.shards[s]; sh.size > sh.capacity {
						t.Fatalf("set %d: shard %d size %d > capacity %d", i, s, sh.size, sh.capacity)
					}
				}
				if m := c.Metrics(); m.Size > m.Capacity {
					t.Fatalf("set %d: Size %d > Capacity %d", i, m.Size, m.Capacity)
				}
				if i%1000 == 0 {
					mustCheck(t, c)
				}
			}
			if c.Metrics().Evictions == 0 {
				t.Fatal("no evictions: the test did not fill the cache")
			}
			mustCheck(t, c)
		})
	}
}

// TestTooLarge: a block whose charge exceeds its shard's capacity is not
// cached, and replacing a cached block with one too large drops it.
func TestTooLarge(t *testing.T) {
	const capacity = 64 << 10
	c := newCache(capacity, 1)
	fits := make([]byte, capacity-EntryOverhead)
	c.Set(1, 1, 0, fits)
	if c.Get(1, 1, 0) == nil {
		t.Fatal("a block exactly as large as the shard was not cached")
	}
	c.Set(1, 1, 1, make([]byte, capacity-EntryOverhead+1))
	if c.Get(1, 1, 1) != nil {
		t.Fatal("a block larger than the shard was cached")
	}
	if c.Get(1, 1, 0) == nil {
		t.Fatal("a block too large to cache evicted another")
	}
	c.Set(1, 1, 0, make([]byte, capacity))
	if c.Get(1, 1, 0) != nil {
		t.Fatal("replacing with a block too large kept the old block")
	}
	if m := c.Metrics(); m.Size != 0 || m.Count != 0 {
		t.Fatalf("metrics %+v, want empty", m)
	}
	mustCheck(t, c)
}

// TestEvictFile removes exactly the blocks of one file, across shards,
// and leaves the same file number of another cache ID alone.
func TestEvictFile(t *testing.T) {
	c := newCache(64<<20, 8)
	type fk struct {
		id uint64
		fn base.FileNum
	}
	files := []fk{{1, 1}, {1, 2}, {2, 1}, {2, 2}}
	const blocks = 200
	for _, f := range files {
		for off := uint64(0); off < blocks; off++ {
			c.Set(f.id, f.fn, off*4096, blockFor(f.id, f.fn, off*4096, 100))
		}
	}
	before := c.Metrics()
	c.EvictFile(1, 1)
	c.EvictFile(1, 1) // a second time is a no-op
	c.EvictFile(3, 1) // an unknown file is a no-op
	for _, f := range files {
		for off := uint64(0); off < blocks; off++ {
			got := c.Get(f.id, f.fn, off*4096)
			if (got == nil) != (f == fk{1, 1}) {
				t.Fatalf("after EvictFile(1, 1): Get(%d, %d, %d) = %v", f.id, f.fn, off*4096, got != nil)
			}
			if got != nil {
				checkBlock(t, got, f.id, f.fn, off*4096)
			}
		}
	}
	after := c.Metrics()
	if after.Count != before.Count-blocks || after.Size != before.Size-blocks*(100+EntryOverhead) {
		t.Fatalf("before %+v after %+v", before, after)
	}
	if after.Evictions != 0 {
		t.Fatalf("EvictFile counted as evictions: %d", after.Evictions)
	}
	for i := range c.shards {
		if n := len(c.shards[i].files.lists); n != 3 {
			t.Fatalf("shard %d indexes %d files, want 3", i, n)
		}
	}
	mustCheck(t, c)
}

func TestMetricsString(t *testing.T) {
	for _, tc := range []struct {
		m    Metrics
		want string
	}{
		{Metrics{}, "cache: 0 B / 0 B, 0 blocks, hit rate 0.0% (0 hits, 0 misses), 0 evictions"},
		{
			Metrics{Size: 3 << 19, Capacity: 8 << 20, Count: 384, Hits: 12000, Misses: 1000, Evictions: 51},
			"cache: 1.5 MiB / 8.0 MiB, 384 blocks, hit rate 92.3% (12000 hits, 1000 misses), 51 evictions",
		},
		{Metrics{Capacity: 3 << 40, Hits: 1}, "cache: 0 B / 3.0 TiB, 0 blocks, hit rate 100.0% (1 hits, 0 misses), 0 evictions"},
	} {
		if got := tc.m.String(); got != tc.want {
			t.Errorf("String() =\n%s\nwant\n%s", got, tc.want)
		}
	}
}

// TestConcurrent runs Get, Set and EvictFile from many goroutines (run it
// with -race) and checks every block returned and the structures after.
func TestConcurrent(t *testing.T) {
	c := newCache(2<<20, 4)
	const goroutines = 8
	ops := 20000
	if testing.Short() {
		ops = 2000
	}
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for range ops {
				id := uint64(rng.IntN(2) + 1)
				fn := base.FileNum(rng.IntN(10))
				off := uint64(rng.IntN(300))
				switch r := rng.IntN(100); {
				case r < 70:
					if b := c.Get(id, fn, off); b != nil {
						checkBlock(t, b, id, fn, off)
					}
				case r < 99:
					c.Set(id, fn, off, blockFor(id, fn, off, 24+rng.IntN(16<<10)))
				default:
					c.EvictFile(id, fn)
				}
				if rng.IntN(1000) == 0 {
					if m := c.Metrics(); m.Size > m.Capacity {
						t.Errorf("Size %d > Capacity %d", m.Size, m.Capacity)
					}
				}
			}
		}()
	}
	wg.Wait()
	mustCheck(t, c)
	m := c.Metrics()
	if m.Hits+m.Misses == 0 || m.Evictions == 0 {
		t.Fatalf("metrics %+v: the test did not exercise hits and evictions", m)
	}
}

// TestGetDuringRehash: while writers grow the tables (forcing rehashes)
// and EvictFile leaves tombstones, readers must find every block that was
// resident before they started and is never removed: the lock-free lookup
// may see an old table or a new one, but never loses an entry.
func TestGetDuringRehash(t *testing.T) {
	c := newCache(1<<40, 2) // large enough never to evict
	const stable = 2000
	for i := range stable {
		c.Set(1, 1, uint64(i), blockFor(1, 1, uint64(i), 24))
	}
	writes := 40000
	if raceEnabled || testing.Short() {
		writes = 4000
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range writes {
				fn := base.FileNum(2 + g)
				c.Set(1, fn, uint64(i), blockFor(1, fn, uint64(i), 24))
				if i%5000 == 4999 {
					c.EvictFile(1, fn)
				}
			}
		}()
	}
	var readers sync.WaitGroup
	for g := range 2 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for i := g; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				off := uint64(i % stable)
				b := c.Get(1, 1, off)
				if b == nil {
					t.Errorf("resident block %d not found", off)
					return
				}
				checkBlock(t, b, 1, 1, off)
			}
		}()
	}
	wg.Wait()
	close(done)
	readers.Wait()
	mustCheck(t, c)
}

// TestEntryOverhead measures the memory the cache spends per resident
// entry besides the block (entry, table slot, file index, ghost keys) in a
// full cache that has evicted many entries, and checks that EntryOverhead
// covers it.
func TestEntryOverhead(t *testing.T) {
	const entries = 20000
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := heap()
	c := newCache(entries*EntryOverhead, 1)
	for i := range 5 * entries {
		c.Set(1, base.FileNum(i%16), uint64(i), emptyBlock)
	}
	after := heap()
	m := c.Metrics()
	perEntry := float64(after-before) / float64(m.Count)
	t.Logf("%.0f bytes per entry (%d entries, %d ghost keys), EntryOverhead %d",
		perEntry, m.Count, c.shards[0].ghost.n, EntryOverhead)
	if m.Count < entries*9/10 {
		t.Fatalf("only %d entries resident", m.Count)
	}
	if perEntry > EntryOverhead {
		t.Fatalf("an entry costs %.0f bytes, more than EntryOverhead %d", perEntry, EntryOverhead)
	}
	runtime.KeepAlive(c)
}
