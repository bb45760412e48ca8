// Package cache is the engine's block cache: it keeps SSTable blocks (and
// values read from value-log files) in memory, keyed by (cache ID, file
// number, offset), within a capacity in bytes.
//
// It owns the blocks handed to Set, which are immutable from then on, their
// eviction, and the counters Metrics reports. It does not read, decode or
// verify blocks, and it does not track file lifetimes: the owner of a file
// calls EvictFile when the file is deleted. There is no pinning or
// reference counting: a block returned by Get stays valid while the caller
// holds it, because the garbage collector frees evicted blocks.
//
// # Capacity and shards
//
// Each block is charged len(block) + EntryOverhead bytes. The cache is split
// into shards by the xxHash of the key, each with an equal share of the
// capacity, which its Size never exceeds; a block larger than a shard's
// share is not cached. New chooses 4 x GOMAXPROCS shards, fewer for small
// caches (at least 1 MiB each).
//
// # Concurrency
//
// Get takes no lock. A shard's index is an open-addressing table whose
// slots are read atomically, entries never change once published, and a
// hit writes only the entry's small access counter (not at all once it is
// saturated) and a hit counter striped over cache lines, so readers on
// different cores do not serialise. Set, EvictFile and eviction hold the
// shard's mutex.
//
// # Policy: S3-FIFO
//
// Each shard runs S3-FIFO (Yang et al., "FIFO queues are all you need for
// cache eviction", SOSP 2023):
//
//   - A new block enters the small queue, which aims for 10% of the shard.
//   - A hit increments the block's access counter, which saturates at 3.
//   - When the small queue is over its share, its oldest block moves to the
//     main queue if it was hit at least twice; otherwise it is evicted and
//     its hash is remembered in the ghost queue (about as many keys as the
//     main queue holds).
//   - A Set of a remembered hash inserts straight into the main queue.
//   - The main queue evicts its oldest block that was not hit since it was
//     last examined; a block that was goes back to the tail with its
//     counter decremented (like CLOCK).
//
// A block read once (by a scan or a compaction) leaves through the small
// queue without displacing the blocks that are read repeatedly.
//
// The policy was chosen by measurement. The simulator in sim_test.go
// replays synthetic traces through LRU, CLOCK, S3-FIFO and W-TinyLFU
// (go test -run '^$' -bench PolicySimulation). Hit ratios of the point
// reads, 10,000 blocks cached, 2M accesses per trace:
//
//	policy        zipf-0.99  zipf-0.80  zipf+scan  zipf+scan2x  loop-1.1x  zipf-shift
//	LRU             61.2%      28.7%      57.2%      57.4%         0.0%      59.7%
//	CLOCK           62.2%      29.8%      57.4%      57.5%         0.0%      60.3%
//	S3-FIFO (t=1)   68.1%      38.9%      67.7%      57.5%        76.0%      58.1%
//	S3-FIFO (t=2)   68.0%      38.7%      66.8%      66.2%        82.3%      57.5%
//	W-TinyLFU       67.9%      38.7%      66.9%      63.1%        89.5%      55.3%
//
// S3-FIFO with a move threshold of two hits (t=2) ties W-TinyLFU on skewed
// reads, keeps its hit ratio through scans even when a scan reads each
// block twice (where t=1 falls to LRU's level), and gives up about two
// points to LRU when the working set keeps moving. Unlike W-TinyLFU, whose
// hits update a shared frequency sketch, its hits need no shared state,
// which is what lets Get run without a lock.
package cache
