package bench

import (
	"math/bits"
	"time"
)

// histogram records latencies in log-linear buckets: 32 sub-buckets per
// power of two, so a reported percentile is within about 3% of the true
// value. Recording costs a few nanoseconds and never allocates. Not safe for
// concurrent use: each worker keeps its own and they are merged.
type histogram struct {
	counts [64 * subBuckets]uint64
	total  uint64
}

const subBits = 5
const subBuckets = 1 << subBits

func bucketOf(ns uint64) int {
	if ns < subBuckets {
		return int(ns)
	}
	e := bits.Len64(ns) - subBits // >= 1
	return e*subBuckets + int(ns>>(e-1))&(subBuckets-1)
}

// bucketLow is the smallest value of bucket b; bucketOf(bucketLow(b)) == b.
func bucketLow(b int) uint64 {
	e, s := b/subBuckets, uint64(b%subBuckets)
	if e == 0 {
		return s
	}
	return (subBuckets | s) << (e - 1)
}

func (h *histogram) record(d time.Duration) {
	ns := uint64(max(d, 0))
	h.counts[bucketOf(ns)]++
	h.total++
}

// buckets returns the non-empty buckets, ascending.
func (h *histogram) buckets() []LatencyBucket {
	var out []LatencyBucket
	for b, c := range h.counts {
		if c > 0 {
			out = append(out, LatencyBucket{Lower: time.Duration(bucketLow(b)), Upper: time.Duration(bucketLow(b + 1)), Count: int64(c)})
		}
	}
	return out
}

func (h *histogram) merge(o *histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.total += o.total
}

// percentile returns the latency below which p percent of the records fall
// (the middle of that record's bucket).
func (h *histogram) percentile(p float64) time.Duration {
	if h.total == 0 {
		return 0
	}
	rank := uint64(p / 100 * float64(h.total))
	if rank >= h.total {
		rank = h.total - 1
	}
	var seen uint64
	for b, c := range h.counts {
		seen += c
		if seen > rank {
			lo := bucketLow(b)
			hi := bucketLow(b + 1)
			if b+1 >= len(h.counts) {
				hi = lo
			}
			return time.Duration(lo + (hi-lo)/2)
		}
	}
	return 0
}
