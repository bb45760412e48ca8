package strata

import (
	"fmt"
	"math/bits"
	"sync/atomic"
	"time"

	"github.com/strata-db/strata/internal/stripe"
)

// Latency histograms: fixed log-linear buckets of nanoseconds, counted
// with atomic adds, so that recording one (on the write and read paths)
// costs two monotonic clock reads and three atomic adds, and never
// allocates. The adds go to the calling goroutine's stripe of the
// histogram (see internal/stripe), so that readers on different
// processors do not move the count's cache line between them on every
// read; a snapshot sums the stripes.
//
// Bucket layout (latencySubBits = 3: 8 buckets per power of two, so a
// bucket spans at most 12.5% of its lower bound):
//
//	index 0..7:   exactly 0..7 ns
//	index i >= 8: shift = i/8 - 1, m = 8 + i%8;
//	              nanoseconds in [m << shift, (m+1) << shift)
//
// The last bucket also takes everything above its upper bound (about 137
// seconds).

const (
	latencySubBits = 3
	latencySub     = 1 << latencySubBits
	// latencyMaxBits: durations of up to 2^latencyMaxBits ns are bucketed
	// exactly; longer ones go to the last bucket.
	latencyMaxBits = 37
	latencyBuckets = (latencyMaxBits - latencySubBits + 1) * latencySub
)

// latencyBucket returns the bucket of a duration of ns nanoseconds.
func latencyBucket(ns uint64) int {
	if ns < latencySub {
		return int(ns)
	}
	shift := bits.Len64(ns) - latencySubBits - 1
	i := shift<<latencySubBits + int(ns>>uint(shift))
	return min(i, latencyBuckets-1)
}

// latencyBucketBounds returns bucket i's range of nanoseconds, [lo, hi).
func latencyBucketBounds(i int) (lo, hi uint64) {
	if i < latencySub {
		return uint64(i), uint64(i) + 1
	}
	shift := uint(i/latencySub - 1)
	m := uint64(latencySub + i%latencySub)
	return m << shift, (m + 1) << shift
}

// latencyRecorder is the live histogram the DB records into, in stripes.
type latencyRecorder struct {
	stripes [1 << latencyStripeBits]latencyStripe
}

// latencyStripeBits: 8 stripes of 2.3 KB each per histogram, six
// histograms per DB (110 KB, less than the 256 KiB an idle memtable holds).
// With fewer, two readers share a stripe too often: at 4, one run in four
// of a two-reader benchmark.
const latencyStripeBits = stripe.Bits

type latencyStripe struct {
	count   atomic.Uint64
	sumNs   atomic.Uint64
	buckets [latencyBuckets]atomic.Uint64
	// The next stripe's count and sum are hot; this stripe's last
	// buckets (over a minute) are not, but keep them a line apart anyway.
	_ [64]byte
}

// record adds one duration.
func (r *latencyRecorder) record(d time.Duration) {
	ns := uint64(max(d, 0))
	st := &r.stripes[stripe.Of(latencyStripeBits)]
	st.buckets[latencyBucket(ns)].Add(1)
	st.sumNs.Add(ns)
	st.count.Add(1)
}

// since records the time since start, a latencyNow reading (for
// defer r.since(latencyNow())).
func (r *latencyRecorder) since(start int64) { r.record(time.Duration(latencyNow() - start)) }

// latencyEpoch anchors latencyNow's readings.
var latencyEpoch = time.Now()

// latencyNow reads the monotonic clock, in nanoseconds since latencyEpoch.
// It is what the hot paths time with: time.Now reads the wall clock too,
// which a duration does not need and which costs a second clock read.
func latencyNow() int64 { return int64(time.Since(latencyEpoch)) }

// snapshot copies the recorder into a LatencyHistogram. Concurrent
// recording can make Count differ from the buckets' sum by the records in
// flight; the buckets are what the percentiles use.
func (r *latencyRecorder) snapshot() LatencyHistogram {
	var h LatencyHistogram
	for j := range r.stripes {
		h.Count += r.stripes[j].count.Load()
		h.Sum += time.Duration(r.stripes[j].sumNs.Load())
	}
	for i := range latencyBuckets {
		var n uint64
		for j := range r.stripes {
			n += r.stripes[j].buckets[i].Load()
		}
		if n > 0 {
			lo, hi := latencyBucketBounds(i)
			h.Buckets = append(h.Buckets, LatencyBucket{Lower: time.Duration(lo), Upper: time.Duration(hi), Count: n})
		}
	}
	return h
}

// LatencyHistogram is a distribution of durations since Open. Its buckets
// are log-linear (8 per power of two: each spans at most 12.5% of its lower
// bound), so a percentile is exact to that much.
type LatencyHistogram struct {
	Count uint64        // operations recorded
	Sum   time.Duration // their total duration
	// Buckets are the non-empty buckets, in ascending order; each counts
	// the durations in [Lower, Upper).
	Buckets []LatencyBucket
}

// LatencyBucket is one bucket of a LatencyHistogram.
type LatencyBucket struct {
	Lower, Upper time.Duration
	Count        uint64
}

// Mean returns the mean duration, or 0 when nothing was recorded.
func (h *LatencyHistogram) Mean() time.Duration {
	if h.Count == 0 {
		return 0
	}
	return h.Sum / time.Duration(h.Count)
}

// Percentile returns the duration below which a fraction p (0 to 1) of the
// recorded durations fall, interpolated within its bucket; 0 when nothing
// was recorded.
func (h *LatencyHistogram) Percentile(p float64) time.Duration {
	var total uint64
	for _, b := range h.Buckets {
		total += b.Count
	}
	if total == 0 {
		return 0
	}
	p = min(max(p, 0), 1)
	rank := p * float64(total)
	var seen float64
	for _, b := range h.Buckets {
		next := seen + float64(b.Count)
		if rank <= next {
			frac := (rank - seen) / float64(b.Count)
			return b.Lower + time.Duration(frac*float64(b.Upper-b.Lower))
		}
		seen = next
	}
	return h.Buckets[len(h.Buckets)-1].Upper
}

// String summarizes the histogram: count, mean and percentiles.
func (h *LatencyHistogram) String() string {
	if h.Count == 0 {
		return "-"
	}
	return fmt.Sprintf("%d ops, mean %s, p50 %s, p99 %s, p99.9 %s, max<%s", h.Count, fmtLatency(h.Mean()),
		fmtLatency(h.Percentile(0.5)), fmtLatency(h.Percentile(0.99)), fmtLatency(h.Percentile(0.999)),
		fmtLatency(h.Buckets[len(h.Buckets)-1].Upper))
}

// fmtLatency rounds d to three significant digits.
func fmtLatency(d time.Duration) string {
	unit := time.Duration(1)
	for v := d; v >= 1000; v /= 10 {
		unit *= 10
	}
	return d.Round(unit).String()
}

// latencyStats are the DB's latency recorders.
type latencyStats struct {
	commit     latencyRecorder
	commitWait latencyRecorder
	walSync    latencyRecorder
	get        latencyRecorder
	has        latencyRecorder
	iterSeek   latencyRecorder
}
