package bench

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestShiftingPhases runs the shifting phases on a fixed threshold and on
// the adaptive policy: every phase runs its operations, the read and scan
// phases read keys that exist, and the adaptive variant's threshold is on
// its timeline (and only on its).
func TestShiftingPhases(t *testing.T) {
	spec := DefaultSpec()
	spec.Engines = []string{"strata/t1k", "strata/adaptive"}
	spec.Benchmarks = ShiftBenchmarks
	spec.Num = 4000
	spec.ReportInterval = sampleTick
	spec.Dir = t.TempDir()
	rep, err := Run(context.Background(), spec, nil)
	require.NoError(t, err)
	require.Len(t, rep.Results, 2*len(ShiftBenchmarks))
	for _, r := range rep.Results {
		require.False(t, r.Skipped, "%s %s: %s", r.Engine, r.Benchmark, r.Note)
		require.Equal(t, int64(4000), r.Ops, "%s %s", r.Engine, r.Benchmark)
		switch r.Benchmark {
		case ShiftRead:
			require.Positive(t, r.Reads)
			require.Equal(t, r.Reads, r.Found, "reads only of written keys")
			require.Len(t, r.PerOp, 2)
		case ShiftScan:
			require.Positive(t, r.RowsPerSec)
		case ShiftSmall, ShiftLarge:
			require.Nil(t, r.PerOp)
			require.Positive(t, r.UserBytes)
		}
		if r.Benchmark == ShiftSmall {
			// Live bytes count each key's own value: small ones here.
			require.Less(t, r.LiveBytes, int64(4000*(16+300)))
			require.Positive(t, r.LiveBytes)
		}
		if r.Benchmark == ShiftLarge {
			require.Greater(t, r.LiveBytes, int64(4000/2*(4<<10)))
		}
		for _, s := range r.Timeline {
			if r.Engine == "strata/adaptive" {
				require.Positive(t, s.Threshold)
			} else {
				require.Zero(t, s.Threshold)
			}
		}
	}
}

func TestSeparationVariants(t *testing.T) {
	for _, name := range SeparationVariantNames {
		_, err := strataVariant(name)
		require.NoError(t, err, name)
	}
	_, err := strataVariant("t9")
	require.ErrorContains(t, err, "adaptive")
	// Only the adaptive variant reports a threshold, its policy's.
	for name, reports := range map[string]bool{"adaptive": true, "t1k": false} {
		info, err := strataVariant(name)
		require.NoError(t, err)
		eng, err := info.Open(t.TempDir(), DefaultSpec().Config)
		require.NoError(t, err)
		tr, ok := eng.(ThresholdReporter)
		require.Equal(t, reports, ok, name)
		if ok {
			require.Equal(t, 1024, tr.SeparationThreshold(), "AdaptiveOptions' initial threshold")
		}
		require.NoError(t, eng.Close())
	}
}
