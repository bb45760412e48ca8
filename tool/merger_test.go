package tool

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// TestRecordedMerger: without --merger, the commands that open a database
// use the built-in merger it records; --merger naming another is refused
// by Open.
func TestRecordedMerger(t *testing.T) {
	fs := vfs.NewMem()
	db, err := strata.Open("db", &strata.Options{FS: fs, Merger: strata.Counter})
	require.NoError(t, err)
	require.NoError(t, db.Merge([]byte("c"), strata.CounterDelta(2), nil))
	require.NoError(t, db.Merge([]byte("c"), strata.CounterDelta(3), nil))
	require.NoError(t, db.Close())

	runArgs := func(args ...string) (int, string) {
		var out bytes.Buffer
		tl := &Tool{FS: fs, Stdout: &out, Stderr: &out}
		return tl.Run(args), out.String()
	}
	code, out := runArgs("get", "--hex", "db", fmt.Sprintf("%x", "c"))
	require.Equal(t, 0, code, out)
	require.Equal(t, fmt.Sprintf("%x\n", strata.CounterDelta(5)), out)
	code, out = runArgs("scan", "db")
	require.Equal(t, 0, code, out)
	code, out = runArgs("check", "db")
	require.Equal(t, 0, code, out)

	code, out = runArgs("--merger", "list", "get", "db", "c")
	require.Equal(t, 1, code, out)
	contains(t, out, "is not the merger the database records")
}
