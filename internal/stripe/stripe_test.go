package stripe

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOfInRange(t *testing.T) {
	for bits := uint(1); bits <= 8; bits++ {
		var wg sync.WaitGroup
		seen := make([]map[int]bool, 16)
		for g := range seen {
			seen[g] = map[int]bool{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 100 {
					s := Of(bits)
					require.GreaterOrEqual(t, s, 0)
					require.Less(t, s, 1<<bits)
					seen[g][s] = true
				}
			}()
		}
		wg.Wait()
		// Goroutines with disjoint stacks spread over the stripes: 16 of
		// them all on one stripe would make striping useless.
		all := map[int]bool{}
		for _, m := range seen {
			for s := range m {
				all[s] = true
			}
		}
		require.Greater(t, len(all), 1, "bits %d", bits)
	}
}

func TestCounterSumsConcurrentAdds(t *testing.T) {
	var c Counter
	var wg sync.WaitGroup
	const goroutines, adds = 8, 10000
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range adds {
				c.Add(uint64(g + 1))
			}
		}()
	}
	wg.Wait()
	require.Equal(t, uint64(adds*goroutines*(goroutines+1)/2), c.Load())
}

// BenchmarkCounterParallel compares a striped counter with one atomic
// shared by every goroutine.
func BenchmarkCounterParallel(b *testing.B) {
	b.Run("striped", func(b *testing.B) {
		var c Counter
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				c.Add(1)
			}
		})
	})
	b.Run("shared", func(b *testing.B) {
		var c paddedUint64
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				c.v.Add(1)
			}
		})
	})
}

// TestRefsLastOnce: users borrow and give back from many goroutines while
// the owner drops; exactly one call (a Release or the Drop) reports the
// last reference, and only after the drop and every borrow returned.
func TestRefsLastOnce(t *testing.T) {
	for round := range 200 {
		var r Refs
		var lasts, held atomic.Int32
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 50 {
					s := r.Acquire()
					if r.Dropped() {
						if r.Release(s) {
							lasts.Add(1)
						}
						return
					}
					held.Add(1)
					if (i+g+round)%7 == 0 {
						runtime.Gosched()
					}
					held.Add(-1)
					if r.Release(s) {
						lasts.Add(1)
					}
				}
			}()
		}
		if round%2 == 0 {
			runtime.Gosched()
		}
		if r.Drop() {
			require.Zero(t, held.Load(), "round %d: last reported while a reference was held", round)
			lasts.Add(1)
		}
		wg.Wait()
		require.EqualValues(t, 1, lasts.Load(), "round %d: the last reference reported %d times", round, lasts.Load())
	}
}
