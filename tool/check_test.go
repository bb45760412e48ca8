package tool

import (
	"testing"

	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

func TestCheckHealthy(t *testing.T) {
	for _, crash := range []bool{false, true} {
		dir := t.TempDir() + "/db"
		want := makeDB(t, vfs.Default, dir, crash)
		code, out := run(t, vfs.Default, "check", dir)
		t.Log(out)
		require.Equal(t, 0, code, out)
		require.Contains(t, out, "OK")
		_ = want
	}
}
