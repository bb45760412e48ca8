package cache

import (
	"runtime"
	"sync/atomic"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/internal/stripe"
)

// EntryOverhead is the fixed number of bytes charged for each cached block
// in addition to len(block). It covers what the cache spends on an entry
// besides the block: the entry record (96 bytes), its share of the shard's
// hash table (2.5 to 4 slots of 16 bytes) and the ghost-queue key it leaves
// behind when evicted (45 to 60 bytes; the ghost queue remembers about as
// many keys as the main queue holds). Measured in a full cache: 175 to 195
// bytes per entry; TestEntryOverhead checks that it stays below this.
const EntryOverhead = 224

// minShardCapacity is the smallest shard New creates, in bytes: a small
// cache gets fewer shards rather than shards too small to hold a useful
// number of blocks (or any block at all).
const minShardCapacity = 1 << 20

// maxShards bounds the shard count New derives from GOMAXPROCS.
const maxShards = 256

// Cache is a sharded, scan-resistant cache of immutable blocks, keyed by
// (cacheID, file number, offset). All methods are safe for concurrent use,
// and all of them accept a nil *Cache, which behaves as a cache of capacity
// zero.
type Cache struct {
	shards   []shard
	mask     uint64
	capacity int64
	counters [counterStripes]counterStripe
}

// counterStripes is the number of cache lines the hit and miss counters are
// spread over, so that cores counting at once rarely write the same line.
const (
	counterStripeBits = 5
	counterStripes    = 1 << counterStripeBits
)

type counterStripe struct {
	hits, misses atomic.Uint64
	_            [48]byte
}

// stripe returns the counter stripe of the calling goroutine (see
// stripe.Of): goroutines running at once mostly pick different stripes,
// even when they read the same hot block (which a stripe chosen by key
// would not spread).
func (c *Cache) stripe() *counterStripe {
	return &c.counters[stripe.Of(counterStripeBits)]
}

// idSeq hands out cache IDs. It is shared by all caches, so an ID is unique
// within the process, whichever cache it is used with.
var idSeq atomic.Uint64

// New returns a cache that holds at most capacity bytes of charged entries
// (see EntryOverhead). A capacity of 0 or less gives a cache that stores
// nothing: Set does nothing and Get always misses.
//
// The cache is split into shards, each with its own lock and an equal share
// of the capacity: 4 x GOMAXPROCS rounded up to a power of two (at most
// 256), halved until each shard holds at least 1 MiB, and at least one.
// A block whose charge exceeds its shard's share is not cached.
func New(capacity int64) *Cache {
	n := 1
	for n < 4*runtime.GOMAXPROCS(0) && n < maxShards {
		n *= 2
	}
	for n > 1 && capacity/int64(n) < minShardCapacity {
		n /= 2
	}
	return newCache(capacity, n)
}

// newCache returns a cache with exactly shards shards, a power of two.
func newCache(capacity int64, shards int) *Cache {
	capacity = max(capacity, 0)
	c := &Cache{
		shards:   make([]shard, shards),
		mask:     uint64(shards - 1),
		capacity: capacity,
	}
	per, extra := capacity/int64(shards), capacity%int64(shards)
	for i := range c.shards {
		sc := per
		if int64(i) < extra {
			sc++
		}
		c.shards[i].init(sc)
	}
	return c
}

// NewID returns a fresh cache ID, never 0. Give each DB (or each namespace
// of file numbers) its own, so that blocks of different owners sharing the
// cache never collide.
func (c *Cache) NewID() uint64 { return idSeq.Add(1) }

// Capacity returns the capacity the cache was created with, in bytes (0 for
// a cache created with a capacity of 0 or less).
func (c *Cache) Capacity() int64 {
	if c == nil {
		return 0
	}
	return c.capacity
}

// Get returns the block cached for (cacheID, fileNum, offset), or nil when
// there is none. The caller must not modify the returned slice. Get takes
// no lock and does not allocate.
func (c *Cache) Get(cacheID uint64, fileNum base.FileNum, offset uint64) []byte {
	if c == nil {
		return nil
	}
	h := hashKey(cacheID, fileNum, offset)
	e := c.shards[h&c.mask].get(h, key{cacheID, fileNum, offset})
	if e == nil {
		c.stripe().misses.Add(1)
		return nil
	}
	e.touch()
	c.stripe().hits.Add(1)
	return e.block
}

// Set caches block under (cacheID, fileNum, offset) and evicts other blocks
// as needed to stay within capacity. The cache keeps block, so the caller
// must not modify it afterwards.
//
// If a block is already cached under the key, Set counts an access to it;
// it keeps the cached block when the two hold the same bytes (as two reads
// of an immutable file do) and replaces it otherwise. A block whose charge
// (len(block) + EntryOverhead) exceeds the capacity of its shard is not
// cached, and any block cached under the key is dropped.
func (c *Cache) Set(cacheID uint64, fileNum base.FileNum, offset uint64, block []byte) {
	if c == nil {
		return
	}
	if block == nil {
		block = emptyBlock
	}
	h := hashKey(cacheID, fileNum, offset)
	c.shards[h&c.mask].set(h, key{cacheID, fileNum, offset}, block)
}

// emptyBlock is stored for a nil block, so that Get of a cached empty block
// returns a non-nil slice and is not mistaken for a miss.
var emptyBlock = []byte{}

// EvictFile drops every block of the file (cacheID, fileNum), for example
// once the file is deleted. It visits every shard and costs, in each, time
// proportional to the number of the file's blocks there.
func (c *Cache) EvictFile(cacheID uint64, fileNum base.FileNum) {
	if c == nil {
		return
	}
	fk := fileKey{cacheID, fileNum}
	for i := range c.shards {
		c.shards[i].evictFile(fk)
	}
}

// Metrics returns the cache's current figures. Each shard is read
// consistently, but the shards are read one after another.
func (c *Cache) Metrics() Metrics {
	var m Metrics
	if c == nil {
		return m
	}
	m.Capacity = c.capacity
	for i := range c.shards {
		c.shards[i].metrics(&m)
	}
	for i := range c.counters {
		m.Hits += c.counters[i].hits.Load()
		m.Misses += c.counters[i].misses.Load()
	}
	return m
}
