package bench

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestHistogramBuckets(t *testing.T) {
	for b := 0; b < 58*subBuckets; b++ { // values up to 2^62 ns
		require.Equal(t, b, bucketOf(bucketLow(b)), "bucket %d", b)
		require.Equal(t, b, bucketOf(bucketLow(b+1)-1), "bucket %d upper edge", b)
	}
}

// TestHistogramPercentiles compares with exact percentiles of a
// log-normal-ish sample.
func TestHistogramPercentiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	var h histogram
	var all []time.Duration
	for i := 0; i < 100_000; i++ {
		d := time.Duration(float64(time.Microsecond) * (1 + 50*rng.ExpFloat64()*rng.Float64()))
		h.record(d)
		all = append(all, d)
	}
	slices.Sort(all)
	for _, p := range []float64{50, 95, 99, 99.9} {
		exact := all[int(p/100*float64(len(all)))]
		require.InEpsilon(t, float64(exact), float64(h.percentile(p)), 0.04, "p%v", p)
	}
	var other histogram
	other.record(time.Second)
	h.merge(&other)
	require.Equal(t, uint64(100_001), h.total)
	require.InEpsilon(t, float64(time.Second), float64(h.percentile(100)), 0.04)
}
