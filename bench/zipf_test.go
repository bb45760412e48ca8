package bench

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestZipfianDistribution checks the generator against the distribution it
// claims: the observed frequency of each of the most popular ranks is within
// a few percent of 1/((i+1)^theta * zeta(n)), and every draw is in range.
func TestZipfianDistribution(t *testing.T) {
	const n, draws = 10_000, 2_000_000
	for _, theta := range []float64{0.99, 0.8, 0.5} {
		z := newZipfian(n, theta)
		rng := rand.New(rand.NewPCG(1, 2))
		counts := make([]int, n)
		for i := 0; i < draws; i++ {
			v := z.next(rng)
			require.Less(t, v, uint64(n))
			counts[v]++
		}
		zn := zeta(0, n, theta, 0)
		for rank := 0; rank < 10; rank++ {
			want := draws / (math.Pow(float64(rank+1), theta) * zn)
			got := float64(counts[rank])
			// Ranks 0 and 1 are exact; the rest come from the method's
			// continuous approximation, which YCSB shares: allow 25%.
			tol := 0.25
			if rank < 2 {
				tol = 0.02
			}
			require.InEpsilon(t, want, got, tol, "theta %v rank %d", theta, rank)
		}
		// Frequency falls off as rank^-theta: the log-log slope over ranks
		// 10..1000 (pooled in rank bands to tame noise) is close to -theta.
		var xs, ys []float64
		for lo := 10; lo < 1000; lo *= 2 {
			sum := 0
			for _, c := range counts[lo : 2*lo] {
				sum += c
			}
			xs = append(xs, math.Log(float64(lo)*1.5))
			ys = append(ys, math.Log(float64(sum)/float64(lo)))
		}
		require.InDelta(t, -theta, slope(xs, ys), 0.1, "theta %v slope", theta)
		// The head is heavy: the top 1% of items take a large share.
		top := 0
		for _, c := range counts[:n/100] {
			top += c
		}
		wantTop := 0.0
		for i := 1; i <= n/100; i++ {
			wantTop += 1 / math.Pow(float64(i), theta)
		}
		require.InEpsilon(t, wantTop/zn, float64(top)/draws, 0.05, "theta %v top 1%% share", theta)
	}
}

func TestZipfianGrow(t *testing.T) {
	a := newZipfian(1000, 0.99)
	a.grow(5000)
	b := newZipfian(5000, 0.99)
	require.InDelta(t, b.zetan, a.zetan, 1e-9)
	require.InDelta(t, b.eta, a.eta, 1e-12)
}

func TestScrambleSpreadsKeys(t *testing.T) {
	// The 100 most popular ranks land all over a 1M key space.
	var lo, hi int
	for i := uint64(0); i < 100; i++ {
		if fnv64(i)%1_000_000 < 500_000 {
			lo++
		} else {
			hi++
		}
	}
	require.Greater(t, lo, 30)
	require.Greater(t, hi, 30)
}

func TestKeysSortByIndex(t *testing.T) {
	a, b := make([]byte, 16), make([]byte, 16)
	for i := uint64(0); i < 1000; i += 7 {
		MakeKey(a, i)
		MakeKey(b, i+1)
		require.Negative(t, string2cmp(a, b))
		require.Equal(t, i, KeyIndex(a))
	}
	require.Equal(t, "00000000", string(MakeKey(make([]byte, 16), 0)[8:]))
}

func string2cmp(a, b []byte) int {
	switch {
	case string(a) < string(b):
		return -1
	case string(a) > string(b):
		return 1
	}
	return 0
}

func TestValueSizes(t *testing.T) {
	for _, d := range []ValueDist{{Kind: "fixed", Size: 100}, {Kind: "uniform", Min: 10, Max: 20}, {Kind: "normal", Min: 100, Max: 400}} {
		vs := newValueSource(d, 1)
		sum := 0
		for i := 0; i < 10000; i++ {
			v := vs.next()
			if d.Kind == "fixed" {
				require.Len(t, v, d.Size)
			} else {
				require.GreaterOrEqual(t, len(v), d.Min)
				require.LessOrEqual(t, len(v), d.Max)
			}
			sum += len(v)
		}
		require.InEpsilon(t, d.Mean(), float64(sum)/10000, 0.03, "%v", d)
	}
}

// slope is the least-squares slope of ys over xs.
func slope(xs, ys []float64) float64 {
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx /= float64(len(xs))
	my /= float64(len(ys))
	var num, den float64
	for i := range xs {
		num += (xs[i] - mx) * (ys[i] - my)
		den += (xs[i] - mx) * (xs[i] - mx)
	}
	return num / den
}
