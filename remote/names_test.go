package remote

import (
	"testing"

	"github.com/strata-db/strata/internal/base"
	"github.com/stretchr/testify/require"
)

func TestWrittenBy(t *testing.T) {
	const a, b = "00000000000000aa", "00000000000000ab"
	name := ObjectName(a, base.FileTypeVlog, 7)
	require.True(t, WrittenBy(name, a))
	require.False(t, WrittenBy(name, b))
	// An id that is a prefix of another's does not match it.
	require.False(t, WrittenBy(ObjectName(a+"0", base.FileTypeVlog, 7), a))
	require.False(t, WrittenBy("data/x/00000000000000000007-0000-0b3e6fc4", a))
	require.False(t, WrittenBy(name, ""), "a database without an id wrote no object")
}
