package strata

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/vlog"
)

// TestHeldVlogs: the iterator's held value logs are found, every one
// added and no other, in the list and after they moved to a map, for
// numbers in a run (as files are numbered) and scattered, and each is
// visited once.
func TestHeldVlogs(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, scattered := range []bool{false, true} {
		var hs heldVlogs
		model := map[base.FileNum]*vlog.ReadAhead{}
		_, ok := hs.get(1)
		require.False(t, ok, "an empty table holds nothing")
		for i := 0; i < 1000; i++ {
			num := base.FileNum(i + 1)
			if scattered {
				num = base.FileNum(rng.Uint64N(1 << 40))
			}
			if _, ok := model[num]; ok {
				continue
			}
			ra := new(vlog.ReadAhead) // stands for the log, by its address
			hs.add(num, iterVlog{ra: ra})
			model[num] = ra
			if i%50 == 0 || i < 2*heldVlogsList {
				for n, want := range model {
					rv, ok := hs.get(n)
					require.True(t, ok, "log %d", n)
					require.Same(t, want, rv.ra, "log %d", n)
				}
				for k := 0; k < 100; k++ {
					n := base.FileNum(rng.Uint64N(1 << 41))
					_, held := model[n]
					_, ok := hs.get(n)
					require.Equal(t, held, ok, "log %d", n)
				}
			}
		}
		require.Equal(t, len(model), hs.len())
		require.NotNil(t, hs.byNum, "past the list's size")
		seen := map[*vlog.ReadAhead]int{}
		hs.each(func(rv iterVlog) { seen[rv.ra]++ })
		require.Len(t, seen, len(model))
		for _, c := range seen {
			require.Equal(t, 1, c)
		}
	}
}
