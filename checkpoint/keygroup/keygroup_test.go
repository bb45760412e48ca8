package keygroup_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/strata-db/strata/checkpoint/keygroup"
	"github.com/stretchr/testify/require"
)

// TestOperatorRanges: for every parallelism the operators' ranges cover
// the groups exactly once, in order, agree with OperatorOf, and match
// Flink's assignment on known values.
func TestOperatorRanges(t *testing.T) {
	for _, maxP := range []int{1, 7, 128, 4096, 32768} {
		for _, p := range []int{1, 2, 3, 5, 7, 64} {
			if p > maxP {
				continue
			}
			next := 0
			for i := range p {
				first, last, err := keygroup.OperatorRange(maxP, p, i)
				require.NoError(t, err)
				require.Equal(t, next, int(first), "max %d p %d op %d", maxP, p, i)
				require.LessOrEqual(t, first, last)
				for _, g := range []uint16{first, last} {
					op, err := keygroup.OperatorOf(g, maxP, p)
					require.NoError(t, err)
					require.Equal(t, i, op, "group %d", g)
				}
				next = int(last) + 1
			}
			require.Equal(t, maxP, next)
		}
	}
	// Flink: KeyGroupRangeAssignment.computeKeyGroupRangeForOperatorIndex(128, 3, i).
	for i, want := range [][2]uint16{{0, 42}, {43, 85}, {86, 127}} {
		f, l, err := keygroup.OperatorRange(128, 3, i)
		require.NoError(t, err)
		require.Equal(t, want, [2]uint16{f, l})
	}
	_, _, err := keygroup.OperatorRange(0, 1, 0)
	require.Error(t, err)
	_, _, err = keygroup.OperatorRange(128, 129, 0)
	require.Error(t, err)
	_, _, err = keygroup.OperatorRange(128, 2, 2)
	require.Error(t, err)
}

// TestRangesHoldTheirKeys: a stored key lies in the range of its group,
// and in no other group's.
func TestRangesHoldTheirKeys(t *testing.T) {
	const maxP = 300
	in := func(k, start, end []byte) bool {
		return bytes.Compare(k, start) >= 0 && (end == nil || bytes.Compare(k, end) < 0)
	}
	for i := range 2000 {
		user := []byte(fmt.Sprintf("user-%d", i))
		g, err := keygroup.Of(user, maxP)
		require.NoError(t, err)
		require.Less(t, int(g), maxP)
		stored := keygroup.Key(nil, g, user)
		gg, uk, ok := keygroup.Split(stored)
		require.True(t, ok)
		require.Equal(t, g, gg)
		require.Equal(t, user, uk)
		start, end, err := keygroup.Range(g, g)
		require.NoError(t, err)
		require.True(t, in(stored, start, end))
		if g > 0 {
			s, e, _ := keygroup.Range(0, g-1)
			require.False(t, in(stored, s, e))
		}
	}
	s, e, err := keygroup.Range(10, keygroup.MaxGroups-1)
	require.NoError(t, err)
	require.Equal(t, []byte{0, 10}, s)
	require.Nil(t, e)
	_, _, err = keygroup.Range(5, 4)
	require.Error(t, err)
	_, _, ok := keygroup.Split([]byte{1})
	require.False(t, ok)
}
