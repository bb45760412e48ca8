package rangedel

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/strata-db/strata/internal/base"
	"github.com/stretchr/testify/require"
)

func ts(start, end string, seq base.SeqNum) base.RangeTombstone {
	return base.RangeTombstone{Start: []byte(start), End: []byte(end), Seq: seq}
}

func TestBuildFragments(t *testing.T) {
	s := Build([]base.RangeTombstone{ts("c", "g", 5), ts("a", "e", 9), ts("x", "x", 3)})
	var got []string
	for _, f := range s.Fragments() {
		got = append(got, fmt.Sprintf("[%s-%s)%v", f.Start, f.End, f.Seqs))
	}
	require.Equal(t, []string{"[a-c)[9]", "[c-e)[9 5]", "[e-g)[5]"}, got)
	require.Equal(t, base.SeqNum(9), s.MaxCovering([]byte("d"), 100))
	require.Equal(t, base.SeqNum(5), s.MaxCovering([]byte("d"), 8))
	require.Equal(t, base.SeqNum(0), s.MaxCovering([]byte("d"), 4))
	require.Equal(t, base.SeqNum(0), s.MaxCovering([]byte("g"), 100))
	require.Equal(t, base.SeqNum(9), s.MaxCovering([]byte("a"), 100))
	require.True(t, s.Covers([]byte("f"), 4, 5))
	require.False(t, s.Covers([]byte("f"), 5, 5))
	require.True(t, Build(nil).Empty())
	require.True(t, Build([]base.RangeTombstone{ts("b", "a", 1)}).Empty())
}

// TestMaxCoveringModel compares the fragmented set with a direct scan of
// the tombstones for random inputs.
func TestMaxCoveringModel(t *testing.T) {
	for seed := uint64(0); seed < 50; seed++ {
		rng := rand.New(rand.NewPCG(seed, 1))
		key := func() string { return string(rune('a' + rng.IntN(20))) }
		var list []base.RangeTombstone
		for i := 0; i < rng.IntN(30); i++ {
			list = append(list, ts(key(), key(), base.SeqNum(1+rng.IntN(50))))
		}
		s := Build(list)
		for q := 0; q < 200; q++ {
			k, snap := []byte(key()), base.SeqNum(rng.IntN(60))
			var want base.SeqNum
			for _, t := range list {
				if t.Seq <= snap && base.Compare(t.Start, k) <= 0 && base.Compare(k, t.End) < 0 && t.Seq > want {
					want = t.Seq
				}
			}
			require.Equal(t, want, s.MaxCovering(k, snap), "seed %d key %s snap %d", seed, k, snap)
		}
		// Re-fragmenting the emitted tombstones yields the same set.
		again := Build(s.Tombstones())
		require.Equal(t, s.Fragments(), again.Fragments())
	}
}
