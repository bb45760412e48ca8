package tool

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStressMerger: the newest operand wins; operands out of order, or
// below a newer value, or never written, fail Merge, and PartialMerge
// declines them.
func TestStressMerger(t *testing.T) {
	m := stressMerger{}
	k := stressKey(7)
	v := func(id uint32) []byte { return stressValue(7, id) }
	got, err := m.Merge(k, v(1), [][]byte{v(2), v(5)})
	require.NoError(t, err)
	require.Equal(t, v(5), got)
	got, err = m.Merge(k, nil, [][]byte{v(3)})
	require.NoError(t, err)
	require.Equal(t, v(3), got)
	op, ok := m.PartialMerge(k, [][]byte{v(2), v(4)})
	require.True(t, ok)
	require.Equal(t, v(4), op)

	for _, c := range []struct {
		existing []byte
		operands [][]byte
		want     string
	}{
		{nil, [][]byte{v(4), v(2)}, "write 2 merged after write 4"},
		{v(6), [][]byte{v(5)}, "write 5 merged after write 6"},
		{nil, [][]byte{stressValue(8, 3)}, "never written"},
		{[]byte("junk"), [][]byte{v(3)}, "never written"},
		{nil, nil, "no operand"},
	} {
		_, err := m.Merge(k, c.existing, c.operands)
		require.ErrorContains(t, err, c.want)
	}
	_, ok = m.PartialMerge(k, [][]byte{v(4), v(2)})
	require.False(t, ok)
}
