package vlog

import (
	"math"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestThreshold(t *testing.T) {
	for _, tc := range []struct {
		t        Threshold
		valueLen int
		want     bool
	}{
		{1024, 1023, false},
		{1024, 1024, true},
		{1024, 1 << 20, true},
		{0, 0, true},
		{-1, 0, false},
		{-1, 1 << 30, false},
	} {
		require.Equal(t, tc.want, tc.t.Separate(nil, tc.valueLen), "%d, %d", tc.t, tc.valueLen)
	}
}

func TestBuckets(t *testing.T) {
	require.Equal(t, 0, bucketOf(-5))
	require.Equal(t, numBuckets-1, bucketOf(math.MaxUint32))
	require.Equal(t, numBuckets-1, bucketOf(math.MaxInt))
	for _, v := range []int{0, 1, 3, 4, 5, 7, 8, 9, 255, 256, 257, 1000, 1024, 1279, 1280, 4096, 65535, 65536, 1 << 31, math.MaxUint32 - 1} {
		b := bucketOf(v)
		require.LessOrEqual(t, bucketLow(b), v, "%d", v)
		if b+1 < numBuckets {
			require.Less(t, v, bucketLow(b+1), "%d", v)
		}
	}
	for i := 1; i < numBuckets; i++ {
		require.Less(t, bucketLow(i-1), bucketLow(i))
		require.Equal(t, i, bucketOf(bucketLow(i)))
		// Buckets are at most a quarter of their lower bound wide.
		if i >= 5 {
			require.LessOrEqual(t, 4*(bucketLow(i)-bucketLow(i-1)), bucketLow(i-1))
		}
	}
	require.Equal(t, 1280, bucketLow(bucketOf(1024)+1))
	require.Equal(t, 5120, bucketLow(bucketOf(4096)+1))
}

// sizeLoad is part of a synthetic workload: writes and point reads of
// values of one size.
type sizeLoad struct {
	size          int
	writes, reads int
}

// uniformSizes spreads writes and reads evenly over the sizes lo, lo+step,
// ..., hi.
func uniformSizes(lo, hi, step, writes, reads int) []sizeLoad {
	var l []sizeLoad
	for s := lo; s <= hi; s += step {
		l = append(l, sizeLoad{s, writes, reads})
	}
	return l
}

// TestAdaptiveThreshold reads as a table of decisions: a workload, and the
// threshold the rule picks for it with the default parameters. In bytes
// of background writes, separating a value of v bytes saves about
// 7.75·v − 108 per write; a point read costs 2048 and a scanned row 32.
func TestAdaptiveThreshold(t *testing.T) {
	for _, tc := range []struct {
		name     string
		loads    []sizeLoad
		scanRows int
		want     int
	}{
		{"no observations: Initial", nil, 0, 1024},
		{"too few writes: Initial", []sizeLoad{{4096, 1000, 0}}, 0, 1024},
		{"write-only 4 KiB: Min", []sizeLoad{{4096, 10000, 0}}, 0, 512},
		{"write-only 100 B (below Min): Min", []sizeLoad{{100, 10000, 0}}, 0, 512},
		{"4 KiB read 10x per write: still separated", []sizeLoad{{4096, 10000, 100000}}, 0, 512},
		{"4 KiB read 20x per write: kept, threshold just above", []sizeLoad{{4096, 10000, 200000}}, 0, 5120},
		{"hot 1 KiB reads, 16 KiB writes: 1 KiB kept",
			[]sizeLoad{{1024, 10000, 50000}, {16384, 10000, 0}}, 0, 1280},
		{"hot 1 KiB reads, few: 1 KiB separated",
			[]sizeLoad{{1024, 10000, 20000}, {16384, 10000, 0}}, 0, 512},
		{"4 KiB, 50 scanned rows per write", []sizeLoad{{4096, 10000, 0}}, 500000, 512},
		{"4 KiB, 200 scanned rows per write: still separated", []sizeLoad{{4096, 10000, 0}}, 2000000, 512},
		{"4 KiB, 2000 scanned rows per write", []sizeLoad{{4096, 10000, 0}}, 20000000, 5120},
		{"sizes 100..8000 read 8x: break-even near 2.1 KiB",
			uniformSizes(100, 8000, 10, 20, 160), 0, 2048},
		{"sizes 100..8000 write-only", uniformSizes(100, 8000, 10, 20, 0), 0, 512},
		{"32 KiB read 200x: kept", []sizeLoad{{32768, 10000, 2000000}}, 0, 40960},
		{"60 KiB read 1000x: capped at Max", []sizeLoad{{60000, 2000, 2000000}}, 0, 65536},
		{"values past Max do not move it", []sizeLoad{{1 << 20, 10000, 1000000}}, 0, 512},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := NewAdaptiveThreshold(AdaptiveOptions{})
			for _, l := range tc.loads {
				for range l.writes {
					a.ObserveWrite(16, l.size)
				}
				for range l.reads {
					a.ObserveRead(l.size, false)
				}
			}
			a.ObserveScan(tc.scanRows, 0)
			require.Equal(t, tc.want, a.Update())
			require.Equal(t, tc.want, a.Threshold())
			require.Equal(t, tc.want > 4096, !a.Separate(nil, 4096))
		})
	}
}

func TestAdaptiveOptions(t *testing.T) {
	a := NewAdaptiveThreshold(AdaptiveOptions{Initial: 10, Min: 100, Max: 50})
	require.Equal(t, 100, a.Threshold(), "Initial clamped into [Min, max(Min, Max)]")
	a = NewAdaptiveThreshold(AdaptiveOptions{Min: 1000, Max: 3000, MinWrites: 1})
	a.ObserveWrite(1, 2000)
	require.Equal(t, 1000, a.Update())
	for range 100 {
		a.ObserveRead(2000, true)
	}
	require.Equal(t, 2048, a.Update())
	for range 1000 {
		a.ObserveRead(2500, true)
	}
	require.Equal(t, 3000, a.Update(), "Max when nothing pays")
}

// TestAdaptiveFollowsWorkload: Separate recomputes the threshold on its
// own (here at every call), and halving the counters lets a new workload
// take over.
func TestAdaptiveFollowsWorkload(t *testing.T) {
	run := func(window uint64) (phase1, phase2 int) {
		a := NewAdaptiveThreshold(AdaptiveOptions{UpdateEvery: 1, Window: window})
		// Phase 1: a million writes of 4 KiB, no reads.
		for range 1000000 {
			a.ObserveWrite(16, 4096)
		}
		a.Separate(nil, 0)
		phase1 = a.Threshold()
		// Phase 2: the same values read 30 times per write.
		for range 15 {
			for range 10000 {
				a.ObserveWrite(16, 4096)
			}
			for range 300000 {
				a.ObserveRead(4096, true)
			}
			a.Separate(nil, 0)
		}
		return phase1, a.Threshold()
	}
	p1, p2 := run(20000)
	require.Equal(t, 512, p1)
	require.Equal(t, 5120, p2, "with a short window the reads take over")
	p1, p2 = run(1 << 40)
	require.Equal(t, 512, p1)
	require.Equal(t, 512, p2, "without decay the old writes still dominate")
}

func TestAdaptiveConcurrent(t *testing.T) {
	a := NewAdaptiveThreshold(AdaptiveOptions{UpdateEvery: 100, MinWrites: 100})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20000 {
				a.ObserveWrite(8, 512+g*1000+i%100)
				a.ObserveRead(512, false)
				a.ObserveScan(3, 1)
				a.Separate(nil, i)
			}
		}()
	}
	wg.Wait()
	th := a.Update()
	require.GreaterOrEqual(t, th, 256)
	require.LessOrEqual(t, th, 64<<10)
}

func TestObserveWriteDoesNotAllocate(t *testing.T) {
	a := NewAdaptiveThreshold(AdaptiveOptions{})
	require.Zero(t, testing.AllocsPerRun(1000, func() {
		a.ObserveWrite(16, 4096)
		a.ObserveRead(4096, true)
		_ = a.Separate(nil, 4096)
	}))
}
