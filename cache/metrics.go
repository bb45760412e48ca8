package cache

import "fmt"

// Metrics describes the state and the history of a cache.
type Metrics struct {
	// Size is the sum of the charges of the cached blocks, in bytes
	// (len(block) + EntryOverhead each).
	Size int64
	// Capacity is the capacity of the cache, in bytes.
	Capacity int64
	// Count is the number of cached blocks.
	Count int64
	// Hits and Misses count the calls of Get that found a block and that
	// did not.
	Hits, Misses uint64
	// Evictions counts the blocks the policy evicted to make room. Blocks
	// dropped by EvictFile or replaced by Set are not counted.
	Evictions uint64
}

// HitRate returns Hits / (Hits + Misses), or 0 before the first Get.
func (m Metrics) HitRate() float64 {
	total := m.Hits + m.Misses
	if total == 0 {
		return 0
	}
	return float64(m.Hits) / float64(total)
}

// String formats the metrics on one line, for example
// "cache: 1.5 MiB / 8.0 MiB, 384 blocks, hit rate 92.3% (12000 hits, 1000 misses), 51 evictions".
func (m Metrics) String() string {
	return fmt.Sprintf("cache: %s / %s, %d blocks, hit rate %.1f%% (%d hits, %d misses), %d evictions",
		formatBytes(m.Size), formatBytes(m.Capacity), m.Count,
		100*m.HitRate(), m.Hits, m.Misses, m.Evictions)
}

// formatBytes prints n with a binary unit.
func formatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, suffix := float64(n), ""
	for _, s := range []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"} {
		v /= unit
		suffix = s
		if v < unit {
			break
		}
	}
	return fmt.Sprintf("%.1f %s", v, suffix)
}
