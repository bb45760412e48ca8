package strata

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestOpenPrefaults: a database reopened on the OS's filesystem opens its
// value logs and tables in the background before any read (their mappings
// populated, see vfs.Populate), and reads them correctly; with
// DisablePrefault it opens none; Close right after Open does not wait on
// it or fail.
func TestOpenPrefaults(t *testing.T) {
	dir := t.TempDir()
	opts := func(disable bool) *Options {
		return &Options{ValueThreshold: 64, ValueLogFileSize: 256 << 10, MemTableSize: 256 << 10, DisablePrefault: disable}
	}
	db, err := Open(dir, opts(false))
	require.NoError(t, err)
	val := func(i int) []byte { return []byte(fmt.Sprintf("%01000d", i)) }
	const n = 2000
	for i := 0; i < n; i++ {
		require.NoError(t, db.Set([]byte(fmt.Sprintf("k%05d", i)), val(i), nil))
	}
	// Everything in the bottom level: no compaction runs after a reopen
	// to open tables by itself.
	require.NoError(t, db.Compact(nil, nil))
	m := db.Metrics()
	vlogs := m.ValueLogs.Files
	require.Greater(t, vlogs, 3)
	require.NoError(t, db.Close())

	db, err = Open(dir, opts(true))
	require.NoError(t, err)
	time.Sleep(200 * time.Millisecond)
	m = db.Metrics()
	require.Zero(t, m.ValueLogs.Open, "value logs opened with DisablePrefault")
	require.Zero(t, m.TablesOpen, "tables opened with DisablePrefault")
	require.NoError(t, db.Close())

	db, err = Open(dir, opts(false))
	require.NoError(t, err)
	require.NoError(t, db.Close(), "Close right after Open")

	db, err = Open(dir, opts(false))
	require.NoError(t, err)
	defer db.Close()
	start := time.Now()
	deadline := start.Add(30 * time.Second)
	for {
		m = db.Metrics()
		if m.ValueLogs.Open >= vlogs && m.TablesOpen > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s, %d of %d value logs and %d tables are open", m.ValueLogs.Open, vlogs, m.TablesOpen)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("value logs and tables open %v after Open", time.Since(start))
	require.Zero(t, m.ValueLogs.Reads)
	for i := 0; i < n; i++ {
		v, err := db.Get([]byte(fmt.Sprintf("k%05d", i)))
		require.NoError(t, err)
		require.Equal(t, val(i), v)
	}
}
