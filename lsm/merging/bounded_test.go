package merging

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/strata-db/strata/internal/base"
)

// TestBoundedIterModel: a bounded iterator positions exactly as a slice
// of the entries within its bounds does, for random bounds (either may be
// absent) and random operations in both directions.
func TestBoundedIterModel(t *testing.T) {
	for seed := uint64(0); seed < 60; seed++ {
		rng := rand.New(rand.NewPCG(seed, 11))
		var seq base.SeqNum
		keys := randomKeys(rng, rng.IntN(60), &seq)
		var lower, upper []byte
		if rng.IntN(4) > 0 {
			lower = []byte(fmt.Sprintf("k%03d", rng.IntN(62)))
		}
		if rng.IntN(4) > 0 {
			upper = []byte(fmt.Sprintf("k%03d", rng.IntN(62)))
		}
		var model []base.InternalKey
		for _, k := range keys {
			if (lower == nil || base.Compare(k.UserKey, lower) >= 0) && (upper == nil || base.Compare(k.UserKey, upper) < 0) {
				model = append(model, k)
			}
		}
		t.Run(fmt.Sprintf("seed=%d[%s,%s)", seed, lower, upper), func(t *testing.T) {
			checkAgainstModel(t, rng, NewBoundedIter(newSliceIter(keys), lower, upper), model)
		})
	}
}
