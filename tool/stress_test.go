package tool

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/checkpoint"
	"github.com/strata-db/strata/remote"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// TestMain lets the test binary act as the strata command, for the stress
// children crashtest starts.
func TestMain(m *testing.M) {
	if os.Getenv("STRATA_TOOL_TEST_CHILD") == "1" {
		os.Exit(New().Run(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// TestKeyStateAccepts pins which reads after a crash each key state
// allows.
func TestKeyStateAccepts(t *testing.T) {
	absent := keyState{flags: flagDurableDel | flagLatestDel}
	synced := absent.begin(1, false).acked(true, 1, 0)
	require.True(t, synced.accepts(true, 1, 0))
	require.False(t, synced.accepts(false, 0, 0), "a Sync write was lost")
	require.False(t, synced.accepts(true, 2, 0), "a value never written")

	// In flight: either outcome.
	pending := synced.begin(2, true)
	require.True(t, pending.accepts(true, 1, 0))
	require.True(t, pending.accepts(false, 0, 0))
	require.False(t, pending.accepts(true, 2, 0), "write 2 is a deletion")

	// NoSync writes 2 (set), 3 (delete), 4 (set) after the durable 1:
	// acknowledged as 10, 11, 12.
	lossy := synced.begin(2, false).acked(false, 10, 0).begin(3, true).acked(false, 11, 0).begin(4, false).acked(false, 12, 0)
	for _, id := range []uint32{1, 2, 4} {
		require.True(t, lossy.accepts(true, id, 9), "id %d", id)
	}
	require.True(t, lossy.accepts(false, 0, 9), "the deletion 3 may be the last write to survive")
	require.False(t, lossy.accepts(true, 5, 9))
	// Once a later sync covers ack 12, only write 4 is right.
	require.True(t, lossy.accepts(true, 4, 12))
	require.False(t, lossy.accepts(true, 2, 12))
	require.False(t, lossy.accepts(false, 0, 12))
	// A NoSync write after the lossy ones became durable starts anew.
	again := lossy.begin(5, false).acked(false, 20, 12)
	require.True(t, again.accepts(true, 4, 13))
	require.True(t, again.accepts(true, 5, 13))
	require.False(t, again.accepts(true, 2, 13))
	require.False(t, again.accepts(false, 0, 13))
	// A Sync write ends the lossy range.
	done := again.begin(6, true).acked(true, 21, 13)
	require.True(t, done.accepts(false, 0, 13))
	require.False(t, done.accepts(true, 5, 13))
}

func TestStressValues(t *testing.T) {
	for i := 0; i < 50; i++ {
		for id := uint32(1); id < 50; id++ {
			v := stressValue(i, id)
			got, ok := parseStressValue(i, v)
			require.True(t, ok)
			require.Equal(t, id, got)
			_, ok = parseStressValue(i+1, v)
			require.False(t, ok)
			v[len(v)-1] ^= 1
			_, ok = parseStressValue(i, v)
			require.False(t, ok)
		}
	}
}

// TestStress runs stress twice on one database: the second run verifies
// every key against the expected state the first left.
func TestStress(t *testing.T) {
	dir := t.TempDir()
	c := StressConfig{Dir: filepath.Join(dir, "db"), Keys: 500, Threads: 3, Ops: 3000, Seed: 7}
	var out bytes.Buffer
	c.Out = &out
	st, err := Stress(vfs.Default, c)
	require.NoError(t, err, out.String())
	require.Positive(t, st.Writes)
	require.Positive(t, st.Reads)
	c.Seed, c.Events, c.SlowIO = 8, true, true
	st, err = Stress(vfs.Default, c)
	require.NoError(t, err, out.String())
	require.Equal(t, 500, st.Verified)
	contains(t, out.String(), "event flush-begin")
	contains(t, out.String(), "ready: ")

	// A value the expected state does not allow fails the next run.
	db, err := strata.Open(c.Dir, nil)
	require.NoError(t, err)
	require.NoError(t, db.Set(stressKey(3), stressValue(3, 1000), strata.Sync))
	require.NoError(t, db.Close())
	_, err = Stress(vfs.Default, c)
	require.ErrorIs(t, err, errStressFailed)
	contains(t, out.String(), "FAIL: key k0000003: found write 1000")
}

// TestCrashtest runs a few kill cycles with this test binary as the
// stress child.
func TestCrashtest(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	t.Setenv("STRATA_TOOL_TEST_CHILD", "1")
	var out bytes.Buffer
	st, err := Crashtest(CrashConfig{
		Dir:        t.TempDir(),
		Cycles:     6,
		Seed:       11,
		Keys:       1000,
		Threads:    3,
		StressArgs: []string{os.Args[0]},
		Out:        &out,
	})
	var rep strings.Builder
	st.write(&rep)
	require.NoError(t, err, rep.String())
	require.Equal(t, 6, st.Cycles)
	require.Empty(t, st.Failures)
	require.Equal(t, int64(6000), st.KeysVerified)
	require.Positive(t, st.Writes, rep.String())
}

// TestCrashtestShared runs kill cycles of a shared database (its files in
// a local store, every kill followed by the store's audit) and the check
// that the store is clean at the end; then a stray hold, such as an
// instance that is gone for good would leave, fails that check.
func TestCrashtestShared(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	t.Setenv("STRATA_TOOL_TEST_CHILD", "1")
	var out bytes.Buffer
	c := CrashConfig{
		Dir:        t.TempDir(),
		Cycles:     6,
		Seed:       12,
		Keys:       1000,
		Threads:    3,
		Shared:     true,
		StressArgs: []string{os.Args[0]},
		Out:        &out,
	}
	st, err := Crashtest(c)
	var rep strings.Builder
	st.write(&rep)
	require.NoError(t, err, rep.String())
	require.Equal(t, 6, st.Cycles)
	require.Empty(t, st.Failures)
	require.Positive(t, st.Writes, rep.String())

	store, err := checkpoint.NewLocalStore(filepath.Join(c.Dir, "store"))
	require.NoError(t, err)
	objs, err := store.List(t.Context(), "shared/")
	require.NoError(t, err)
	require.NotEmpty(t, objs, "nothing was shared")
	require.NoError(t, remote.PutHold(t.Context(), store, remote.InstanceHolder(remote.NewInstanceID()), []string{objs[0].Name}))
	problems := checkStoreClean(filepath.Join(c.Dir, "db"), filepath.Join(c.Dir, "store"))
	require.NotEmpty(t, problems)
	contains(t, problems[0], "not clean")
}
