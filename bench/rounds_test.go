package bench_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-db/strata/bench"
	_ "github.com/strata-db/strata/bench/peers"
)

// TestRunRounds runs overwrite rounds on Strata with two GC policies and on
// pebble-vs at a tiny size, and checks that each policy is an engine of its
// own and that every engine gets a measured point per round.
func TestRunRounds(t *testing.T) {
	spec := bench.DefaultSpec()
	spec.Engines = []string{"strata", "pebble-vs"}
	spec.GCPolicies = []string{"passive", "reverse-lookup"}
	spec.Benchmarks = []string{bench.FillRandom}
	spec.OverwriteRounds = 3
	spec.Num = 2000
	spec.Value = bench.ValueDist{Kind: "fixed", Size: 1024}
	spec.Config.MemTableSize = 1 << 20 // so that rounds flush
	spec.Dir = t.TempDir()
	rep, err := bench.Run(context.Background(), spec, nil)
	require.NoError(t, err)

	engines := []string{"strata/passive", "strata/reverse-lookup", "pebble-vs"}
	require.Equal(t, engines, rep.Spec.Engines)
	require.Equal(t, []string{bench.FillRandom, bench.Overwrite, bench.Overwrite, bench.Overwrite}, rep.Spec.Benchmarks)
	require.Len(t, rep.Results, len(engines)*4)
	for i, r := range rep.Results {
		require.False(t, r.Skipped, "%s %s: %s", r.Engine, r.Benchmark, r.Note)
		require.Equal(t, engines[i/4], r.Engine)
		require.Equal(t, i%4, r.Round, "rounds numbered from 1 after the fill")
	}

	entry := int64(16 + 1024)
	require.Len(t, rep.Rounds, len(engines))
	for i, se := range rep.Rounds {
		require.Equal(t, engines[i], se.Engine)
		require.Len(t, se.Rounds, 3, se.Engine)
		for j, r := range se.Rounds {
			require.Equal(t, j+1, r.Round)
			require.Positive(t, r.OpsPerSec)
			require.Equal(t, 2000*entry, r.UserBytes)
			require.Equal(t, 2000*entry, r.LiveBytes, "every key was filled")
			require.Positive(t, r.DiskBytes)
			require.Positive(t, r.SpaceAmp, "%s round %d", se.Engine, r.Round)
			require.InDelta(t, float64(r.DiskBytes)/float64(r.LiveBytes), r.SpaceAmp, 1e-9)
			require.Positive(t, r.DiskBytesBeforeSettle)
			require.Positive(t, r.SpaceAmpBeforeSettle)
			require.GreaterOrEqual(t, r.BytesWritten, int64(0))
			require.Positive(t, r.EngineBytesWritten, "strata and pebble count their own writes")
			require.InDelta(t, float64(r.EngineBytesWritten)/float64(r.UserBytes), r.EngineWriteAmp, 1e-9)
		}
	}
}

// TestRunRoundsRepeatedBenchmark: overwrite repeated in the benchmarks is
// rounds too, numbered across whatever runs between them, with zipfian
// keys.
func TestRunRoundsRepeatedBenchmark(t *testing.T) {
	spec := bench.DefaultSpec()
	spec.Engines = []string{"strata/rewrite"}
	spec.Benchmarks = []string{bench.FillRandom, bench.Overwrite, bench.ReadRandom, bench.Overwrite}
	spec.KeyDist = bench.KeyZipfian
	spec.Num = 1000
	spec.Value = bench.ValueDist{Kind: "fixed", Size: 2000}
	spec.Dir = t.TempDir()
	rep, err := bench.Run(context.Background(), spec, nil)
	require.NoError(t, err)
	require.Equal(t, []int{0, 1, 0, 2}, []int{rep.Results[0].Round, rep.Results[1].Round, rep.Results[2].Round, rep.Results[3].Round})
	require.Len(t, rep.Rounds, 1)
	require.Len(t, rep.Rounds[0].Rounds, 2)
	require.Equal(t, rep.Results[3].Round, rep.Rounds[0].Rounds[1].Round)
	require.Equal(t, rep.Results[3].DiskSize, rep.Rounds[0].Rounds[1].DiskBytes)
	require.Zero(t, rep.Results[2].DiskSizeBeforeSettle, "reads leave nothing to settle")
}

// TestBuildRounds checks the series of results by hand, skipped rounds and
// the timeline across rounds included.
func TestBuildRounds(t *testing.T) {
	spec := bench.DefaultSpec()
	spec.Engines = []string{"a", "b"}
	spec.Benchmarks = []string{bench.FillRandom, bench.Overwrite, bench.Overwrite}
	sample := func(sec int, ops float64) bench.Sample {
		return bench.Sample{Elapsed: secs(sec), OpsPerSec: ops}
	}
	results := []bench.Result{
		{Engine: "b", Benchmark: bench.FillRandom},
		{Engine: "b", Benchmark: bench.Overwrite, Round: 1, Skipped: true, Note: "no zipfian here"},
		{Engine: "b", Benchmark: bench.Overwrite, Round: 2, Skipped: true, Note: "no zipfian here"},
		{Engine: "a", Benchmark: bench.FillRandom},
		{Engine: "a", Benchmark: bench.Overwrite, Round: 2, OpsPerSec: 20, DiskSize: 300, SpaceAmp: 1.5, Duration: secs(3),
			Timeline: []bench.Sample{sample(1, 21), sample(2, 19)}},
		{Engine: "a", Benchmark: bench.Overwrite, Round: 1, OpsPerSec: 10, DiskSize: 200, SpaceAmp: 1.0, Duration: secs(2),
			Timeline: []bench.Sample{sample(1, 11), sample(2, 9)}},
	}
	got := bench.BuildRounds(&spec, results)
	require.Len(t, got, 2)
	require.Equal(t, "a", got[0].Engine)
	require.Equal(t, []int{1, 2}, []int{got[0].Rounds[0].Round, got[0].Rounds[1].Round})
	require.Equal(t, 1.5, got[0].Rounds[1].SpaceAmp)
	require.Equal(t, []bench.Sample{sample(1, 11), sample(2, 9), sample(3, 21), sample(4, 19)}, got[0].Timeline,
		"round 2's samples follow round 1's two seconds")
	require.Equal(t, "b", got[1].Engine)
	require.Empty(t, got[1].Rounds)
	require.Equal(t, "no zipfian here", got[1].Note)

	spec.Benchmarks = []string{bench.FillRandom, bench.Overwrite}
	require.Nil(t, bench.BuildRounds(&spec, results[3:4]), "a lone overwrite is no rounds")
}

func secs(n int) time.Duration { return time.Duration(n) * time.Second }
