package peers

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/bench"
)

// TestListAppendEngines runs listappend on Strata (merge operator and
// read-modify-write), Pebble (merge operator) and Badger (read-modify-write
// in a transaction), then opens each database again and reads every list:
// each engine ran the same operations, so each list must hold the same
// number of elements everywhere, all the appends in all.
func TestListAppendEngines(t *testing.T) {
	engines := []string{"strata", "strata/rmw", "pebble", "pebble-vs", "badger"}
	spec := bench.DefaultSpec()
	spec.Engines = engines
	spec.Benchmarks = []string{bench.ListAppend}
	spec.Num = 3000
	spec.ListKeys = 30
	spec.KeyDist = bench.KeyZipfian
	spec.Value = bench.ValueDist{Kind: "uniform", Min: 20, Max: 400}
	spec.Config = testConfig()
	spec.Dir = t.TempDir()
	spec.KeepDB = true
	rep, err := bench.Run(context.Background(), spec, nil)
	require.NoError(t, err)
	require.Len(t, rep.Results, len(engines))
	modes := map[string]string{
		"strata":     "merge operator",
		"strata/rmw": "Get, then Put",
		"pebble":     "merge operator",
		"pebble-vs":  "merge operator",
		"badger":     "in a transaction",
	}
	var want []int
	for _, r := range rep.Results {
		require.False(t, r.Skipped, "%s: %s", r.Engine, r.Note)
		require.Equal(t, spec.Num, r.Ops, r.Engine)
		require.Contains(t, r.Note, modes[r.Engine])
		info, ok := bench.LookupEngine(r.Engine)
		require.True(t, ok)
		e, err := info.Open(filepath.Join(spec.Dir, bench.DirName(r.Engine)), spec.Config)
		require.NoError(t, err)
		var counts []int
		total := 0
		for i := uint64(0); i < uint64(spec.ListKeys); i++ {
			v, _, err := e.Get(bench.ListKey(spec.KeySize, i), nil)
			require.NoError(t, err)
			elems, err := strata.DecodeList(v)
			require.NoError(t, err, "%s: list %d", r.Engine, i)
			for _, el := range elems {
				require.GreaterOrEqual(t, len(el), 20)
				require.LessOrEqual(t, len(el), 400)
			}
			counts = append(counts, len(elems))
			total += len(elems)
		}
		require.NoError(t, e.Close())
		require.EqualValues(t, r.Ops-r.Reads, total, "%s: every append is in a list", r.Engine)
		if want == nil {
			want = counts
			continue
		}
		require.Equal(t, want, counts, "%s: the same lists as %s", r.Engine, engines[0])
	}
}

// TestTTLEngines runs ttl, then readrandom, on Pebble (no TTL: explicit
// deletes) and Badger (TTLs on the real clock): once the run is over, the
// expired phases are invisible, so readrandom finds at most the last
// phase's quarter of the keys (exactly that on Pebble; on Badger the last
// phase may be expiring by then too).
func TestTTLEngines(t *testing.T) {
	spec := bench.DefaultSpec()
	spec.Engines = []string{"pebble", "badger"}
	spec.Benchmarks = []string{bench.TTLExpiry, bench.ReadRandom}
	spec.Num = 2000
	spec.TTL = time.Second
	spec.Value = bench.ValueDist{Kind: "fixed", Size: 2000}
	spec.Config = testConfig()
	rep, err := bench.Run(context.Background(), spec, nil)
	require.NoError(t, err)
	for _, r := range rep.Results {
		require.False(t, r.Skipped, "%s %s: %s", r.Engine, r.Benchmark, r.Note)
		if r.Benchmark == bench.TTLExpiry {
			require.Equal(t, spec.Num, r.Ops)
			require.EqualValues(t, 500*(16+2000), r.LiveBytes, "live: the last phase")
			if r.Engine == "pebble" {
				require.Contains(t, r.Note, "1500 expired keys deleted explicitly")
			} else {
				require.Contains(t, r.Note, "waited")
				require.Less(t, r.Duration, 6*time.Second, "the waits are not timed")
			}
			continue
		}
		found := float64(r.Found) / float64(r.Reads)
		require.LessOrEqual(t, found, 0.30, r.Engine)
		if r.Engine == "pebble" {
			require.InDelta(t, 0.25, found, 0.05)
		}
	}
}

// TestPebbleListMerger: operands come out oldest first whichever way
// Pebble feeds them, as DefaultMerger concatenates them.
func TestPebbleListMerger(t *testing.T) {
	ops := [][]byte{[]byte("a"), []byte("bc"), nil, []byte("def"), []byte("g")}
	want := "abcdefg"
	// Reads: the newest operand first, then older ones.
	m, err := pebbleListMerger.Merge(nil, ops[4])
	require.NoError(t, err)
	for i := 3; i >= 0; i-- {
		require.NoError(t, m.MergeOlder(ops[i]))
	}
	v, closer, err := m.Finish(true)
	require.NoError(t, err)
	require.Nil(t, closer)
	require.Equal(t, want, string(v))
	// Oldest first, then newer ones.
	m, err = pebbleListMerger.Merge(nil, ops[0])
	require.NoError(t, err)
	for _, op := range ops[1:] {
		require.NoError(t, m.MergeNewer(op))
	}
	v, _, err = m.Finish(false)
	require.NoError(t, err)
	require.Equal(t, want, string(v))
	// The caller keeps its buffers: changing them changes nothing.
	buf := []byte("xy")
	m, _ = pebbleListMerger.Merge(nil, []byte("z"))
	require.NoError(t, m.MergeOlder(buf))
	buf[0] = '!'
	v, _, _ = m.Finish(true)
	require.Equal(t, "xyz", string(v))
}
