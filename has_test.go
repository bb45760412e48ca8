package strata

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// TestHasReadsNoValueLog: Has on separated keys, in the memtable (values
// separated at commit) and in tables, answers without a single value-log
// read, which Get of the same key does make.
func TestHasReadsNoValueLog(t *testing.T) {
	for _, flush := range []bool{false, true} {
		t.Run(fmt.Sprintf("flush=%v", flush), func(t *testing.T) {
			db, err := Open("db", &Options{FS: vfs.NewMem(), ValueThreshold: 64})
			require.NoError(t, err)
			defer db.Close()
			big := bytes.Repeat([]byte("v"), 1000)
			for i := 0; i < 100; i++ {
				require.NoError(t, db.Set([]byte(fmt.Sprintf("k%03d", i)), big, NoSync))
			}
			if flush {
				require.NoError(t, db.Flush())
				require.Positive(t, db.Metrics().ValueLogs.Files)
			}
			before := db.Metrics().ValueLogs.Reads
			for i := 0; i < 100; i++ {
				ok, err := db.Has([]byte(fmt.Sprintf("k%03d", i)))
				require.NoError(t, err)
				require.True(t, ok)
				ok, err = db.Has([]byte(fmt.Sprintf("x%03d", i)))
				require.NoError(t, err)
				require.False(t, ok)
			}
			m := db.Metrics()
			require.Equal(t, before, m.ValueLogs.Reads, "Has read a value log")
			require.Equal(t, uint64(200), m.Latency.Has.Count)
			_, err = db.Get([]byte("k007"))
			require.NoError(t, err)
			require.Equal(t, before+1, db.Metrics().ValueLogs.Reads, "Get of a separated key reads its value log")
		})
	}
}

// TestHasSemantics: deletions, range deletions, expiry, merge operands and
// snapshots decide Has as they decide Get.
func TestHasSemantics(t *testing.T) {
	clock := newTestClock(time.Unix(1_000_000, 0))
	db, err := Open("db", &Options{FS: vfs.NewMem(), ValueThreshold: 64, Merger: Counter, Clock: clock.Now})
	require.NoError(t, err)
	big := bytes.Repeat([]byte("v"), 500)
	require.NoError(t, db.Set([]byte("a"), big, NoSync))
	require.NoError(t, db.Set([]byte("b"), []byte("small"), NoSync))
	require.NoError(t, db.SetWithTTL([]byte("ttl"), big, time.Minute, NoSync))
	require.NoError(t, db.Merge([]byte("m"), CounterDelta(3), NoSync))
	require.NoError(t, db.Set([]byte("r1"), big, NoSync))
	require.NoError(t, db.Set([]byte("r2"), big, NoSync))
	snap := db.NewSnapshot()
	require.NoError(t, db.Delete([]byte("a"), NoSync))
	require.NoError(t, db.DeleteRange([]byte("r1"), []byte("r3"), NoSync))
	require.NoError(t, db.Merge([]byte("m2"), CounterDelta(1), NoSync))

	check := func(when string) {
		t.Helper()
		want := map[string]bool{"a": false, "b": true, "ttl": true, "m": true, "m2": true, "r1": false, "r2": false, "none": false}
		for k, w := range want {
			got, err := db.Has([]byte(k))
			require.NoError(t, err)
			require.Equal(t, w, got, "%s: Has(%q)", when, k)
			_, gerr := db.Get([]byte(k))
			require.Equal(t, w, gerr == nil, "%s: Get(%q) disagrees: %v", when, k, gerr)
		}
		snapWant := map[string]bool{"a": true, "b": true, "ttl": true, "m": true, "m2": false, "r1": true, "r2": true}
		for k, w := range snapWant {
			got, err := snap.Has([]byte(k))
			require.NoError(t, err)
			require.Equal(t, w, got, "%s: snapshot Has(%q)", when, k)
		}
	}
	check("memtable")
	require.NoError(t, db.Flush())
	check("flushed")
	require.NoError(t, db.Compact(nil, nil))
	check("compacted")

	clock.Advance(2 * time.Minute)
	ok, err := db.Has([]byte("ttl"))
	require.NoError(t, err)
	require.False(t, ok, "an expired key is not present")

	require.NoError(t, snap.Close())
	_, err = snap.Has([]byte("b"))
	require.True(t, errors.Is(err, ErrClosed))
	require.NoError(t, db.Close())
	_, err = db.Has([]byte("b"))
	require.True(t, errors.Is(err, ErrClosed))
}
