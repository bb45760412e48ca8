package stripe

import (
	"sync"
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
