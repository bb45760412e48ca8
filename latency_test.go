package strata

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestLatencyBuckets: every duration falls in the bucket whose bounds hold
// it, buckets tile the range without gaps, and a bucket is at most 12.5%
// of its lower bound wide.
func TestLatencyBuckets(t *testing.T) {
	var prevHi uint64
	for i := 0; i < latencyBuckets; i++ {
		lo, hi := latencyBucketBounds(i)
		require.Equal(t, prevHi, lo, "bucket %d does not start where %d ends", i, i-1)
		require.Less(t, lo, hi)
		if lo >= latencySub {
			require.LessOrEqual(t, float64(hi-lo)/float64(lo), 0.125, "bucket %d", i)
		}
		require.Equal(t, i, latencyBucket(lo))
		require.Equal(t, i, latencyBucket(hi-1))
		prevHi = hi
	}
	require.Equal(t, latencyBuckets-1, latencyBucket(1<<62), "beyond the range: the last bucket")
	rng := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		ns := rng.Uint64N(1 << latencyMaxBits)
		lo, hi := latencyBucketBounds(latencyBucket(ns))
		require.True(t, lo <= ns && ns < hi, "%d not in [%d, %d)", ns, lo, hi)
	}
}

// TestLatencyPercentiles: percentiles of a known distribution are within
// a bucket's width of the exact ones.
func TestLatencyPercentiles(t *testing.T) {
	var r latencyRecorder
	h0 := r.snapshot()
	require.Zero(t, h0.Percentile(0.5))
	require.Equal(t, "-", h0.String())
	rng := rand.New(rand.NewPCG(3, 4))
	var all []time.Duration
	for range 100000 {
		d := time.Duration(rng.ExpFloat64() * float64(20*time.Microsecond))
		all = append(all, d)
		r.record(d)
	}
	slices.Sort(all)
	h := r.snapshot()
	require.Equal(t, uint64(len(all)), h.Count)
	for _, p := range []float64{0.1, 0.5, 0.9, 0.99, 0.999} {
		exact := all[int(p*float64(len(all)))-1]
		require.InEpsilon(t, float64(exact), float64(h.Percentile(p)), 0.125, "p%v", p*100)
	}
	require.InEpsilon(t, float64(20*time.Microsecond), float64(h.Mean()), 0.05)
	require.Equal(t, all[len(all)-1] < h.Buckets[len(h.Buckets)-1].Upper, true)
}

// TestLatencyRecordAllocs: recording allocates nothing.
func TestLatencyRecordAllocs(t *testing.T) {
	var r latencyRecorder
	require.Zero(t, testing.AllocsPerRun(1000, func() { r.since(latencyNow()) }))
}

// BenchmarkLatencyRecord is what the hot paths pay per operation: a clock
// read on entry and the deferred record (another clock read, three
// atomic adds).
func BenchmarkLatencyRecord(b *testing.B) {
	var r latencyRecorder
	b.ReportAllocs()
	for b.Loop() {
		func() { defer r.since(latencyNow()) }()
	}
}

// BenchmarkLatencyRecordParallel: the same from every core at once, on
// shared counters.
func BenchmarkLatencyRecordParallel(b *testing.B) {
	var r latencyRecorder
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			func() { defer r.since(latencyNow()) }()
		}
	})
}
