package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAggregate: each figure is the median of the runs that ran, with its
// minimum and maximum; the rest of the result (timeline, notes) is the
// median-throughput run's; skipped runs are left out; latency buckets add
// up; a repetition cut short leaves the results it did not reach to the
// others.
func TestAggregate(t *testing.T) {
	run := func(ops float64, p99 time.Duration, disk int64, tag string) Result {
		return Result{Engine: "strata", Benchmark: "fillrandom", Ops: 1000, OpsPerSec: ops, P99: p99, DiskSize: disk,
			Timeline: []Sample{{Elapsed: time.Second, OpsPerSec: ops}}, Note: tag,
			Latency: []LatencyBucket{{Lower: 100, Upper: 110, Count: 600}, {Lower: 200, Upper: 220, Count: 400}}}
	}
	runs := [][]Result{
		{run(300, 9*time.Microsecond, 10, "a"), {Engine: "pebble", Benchmark: "fillrandom", Skipped: true, Note: "failed"}},
		{run(100, 5*time.Microsecond, 30, "b"), {Engine: "pebble", Benchmark: "fillrandom", OpsPerSec: 50}},
		{run(200, 7*time.Microsecond, 20, "c")},
	}
	got := Aggregate(runs)
	require.Len(t, got, 2)
	s := got[0]
	require.Equal(t, 3, s.Runs)
	require.Equal(t, 200.0, s.OpsPerSec)
	require.Equal(t, Range{Min: 100, Max: 300}, s.Spread["ops_per_sec"])
	require.Equal(t, 7*time.Microsecond, s.P99)
	require.Equal(t, Range{Min: float64(5 * time.Microsecond), Max: float64(9 * time.Microsecond)}, s.Spread["p99_ns"])
	require.Equal(t, int64(20), s.DiskSize)
	require.Equal(t, "c", s.Note, "the median run's own fields")
	require.Equal(t, int64(1000), s.Ops)
	require.NotContains(t, s.Spread, "space_amp", "figures no run measured have no spread")
	require.Equal(t, []LatencyBucket{{Lower: 100, Upper: 110, Count: 1800}, {Lower: 200, Upper: 220, Count: 1200}}, s.Latency)

	p := got[1]
	require.False(t, p.Skipped, "one run of pebble ran")
	require.Equal(t, 1, p.Runs)
	require.Equal(t, 50.0, p.OpsPerSec)

	// An even count: the median is the mean of the middle two.
	got = Aggregate(runs[:2])
	require.Equal(t, 200.0, got[0].OpsPerSec)
	// One run: as it is.
	require.Equal(t, runs[0], Aggregate(runs[:1]))
	require.Nil(t, Aggregate(nil))
	// Everything skipped: the first run's result.
	skipped := [][]Result{{{Engine: "x", Skipped: true, Note: "n1"}}, {{Engine: "x", Skipped: true, Note: "n2"}}}
	require.Equal(t, "n1", Aggregate(skipped)[0].Note)
}
