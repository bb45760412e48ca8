package bench

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-db/strata"
)

// stateSpec is a tiny spec of one stream-state benchmark on Strata, with a
// small memtable so that flushes and compactions happen.
func stateSpec(t *testing.T, benchmark string) Spec {
	t.Helper()
	spec := DefaultSpec()
	spec.Engines = []string{"strata"}
	spec.Benchmarks = []string{benchmark}
	spec.Num = 4000
	spec.Value = ValueDist{Kind: "uniform", Min: 50, Max: 3000}
	spec.Config.MemTableSize = 1 << 20
	spec.Config.CacheSize = 1 << 20
	require.NoError(t, spec.Normalize())
	return spec
}

// openFor opens engine name as the runner does for st's run.
func openFor(t *testing.T, name string, spec *Spec, st *keyState, dir string) Engine {
	t.Helper()
	info, err := ResolveEngine(name)
	require.NoError(t, err)
	cfg := spec.Config
	cfg.Clock = st.clock.now
	eng, err := info.Open(dir, cfg)
	require.NoError(t, err)
	return eng
}

// TestListAppendStrata runs listappend on Strata with its merge operator
// and by read-modify-write, with uniform and zipfian lists, and checks
// that every list holds what was appended to it, before and after a
// reopen.
func TestListAppendStrata(t *testing.T) {
	for _, name := range []string{"strata", "strata/rmw"} {
		for _, dist := range []string{KeyUniform, KeyZipfian} {
			t.Run(name+"/"+dist, func(t *testing.T) {
				spec := stateSpec(t, ListAppend)
				spec.KeyDist = dist
				require.Equal(t, int64(40), spec.ListKeys, "Num/100 by default")
				require.Equal(t, 5, spec.ListReadPercent)
				st := newKeyState(&spec)
				dir := t.TempDir()
				eng := openFor(t, name, &spec, st, dir)
				res, err := runBenchmark(context.Background(), &spec, name, eng, ListAppend, 0, st, NoProgress{})
				require.NoError(t, err)
				require.Equal(t, spec.Num, res.Ops)
				require.InDelta(t, spec.Num/20, res.Reads, float64(spec.Num/50), "about 5% reads")
				if name == "strata" {
					require.Contains(t, res.Note, "merge operator")
				} else {
					require.Contains(t, res.Note, "Get, then Put")
				}
				check := func() {
					var total int64
					for i := uint64(0); i < uint64(spec.ListKeys); i++ {
						v, found, err := eng.Get(ListKey(spec.KeySize, i), nil)
						require.NoError(t, err)
						want := st.listElems(i)
						require.Equal(t, want > 0, found, "list %d", i)
						elems, err := strata.DecodeList(v)
						require.NoError(t, err)
						require.Len(t, elems, int(want), "list %d", i)
						for _, e := range elems {
							require.GreaterOrEqual(t, len(e), 50)
							require.LessOrEqual(t, len(e), 3000)
						}
						total += want
					}
					require.Equal(t, res.Ops-res.Reads, total, "every append is in a list")
				}
				check()
				require.NoError(t, eng.Close())
				eng = openFor(t, name, &spec, st, dir)
				check()
				require.NoError(t, eng.Close())
				require.Positive(t, st.liveBytes())
			})
		}
	}
}

// TestTTLStrata runs the ttl workload on Strata: the first phases' keys
// are invisible once it ends, the last phase's are all there, live bytes
// count the last phase alone, and the compactions that dropped expired
// entries read no value log for it: with GC off (strata/off) none at
// all, with GC on only the live values GC relocated.
func TestTTLStrata(t *testing.T) {
	for _, name := range []string{"strata", "strata/off"} {
		t.Run(name, func(t *testing.T) { testTTLStrata(t, name) })
	}
}

func testTTLStrata(t *testing.T, name string) {
	spec := stateSpec(t, TTLExpiry)
	require.Equal(t, 10*time.Second, spec.TTL, "the default")
	spec.TTL = time.Hour // the clock jumps: nothing waits for it
	st := newKeyState(&spec)
	eng := openFor(t, name, &spec, st, t.TempDir())
	defer eng.Close()
	res, err := runBenchmark(context.Background(), &spec, name, eng, TTLExpiry, 0, st, NoProgress{})
	require.NoError(t, err)
	require.Equal(t, spec.Num, res.Ops)
	require.Less(t, res.Duration, 10*time.Minute, "no waiting for the real clock")
	require.Contains(t, res.Note, "clock moved")
	require.Equal(t, int64(spec.Num/ttlPhases), st.live.Load(), "the last phase is live")
	var found int64
	for i := uint64(0); i < uint64(spec.Num); i++ {
		_, ok, err := eng.Get(MakeKey(make([]byte, spec.KeySize), i), nil)
		require.NoError(t, err)
		require.Equal(t, st.isLive(i), ok, "key %d", i)
		if ok {
			found++
		}
	}
	require.Equal(t, spec.Num/ttlPhases, found)
	require.NoError(t, eng.(Settler).WaitForBackgroundWork(context.Background()))
	c := eng.(Counter).Counters()
	require.Positive(t, c["compact_expired"], "flushes and compactions dropped expired entries")
	require.LessOrEqual(t, c["compact_value_log_reads"], c["gc_relocated"], "compactions read only what GC relocated")
	if name == "strata/off" {
		require.Zero(t, c["compact_value_log_reads"])
	}
}

// TestRunStateWorkloads runs both workloads through the runner on Strata
// and its read-modify-write variant, followed by readrandom, which after
// ttl finds the last phase's keys only.
func TestRunStateWorkloads(t *testing.T) {
	spec := DefaultSpec()
	spec.Engines = []string{"strata", "strata/rmw"}
	spec.Benchmarks = []string{ListAppend, TTLExpiry, ReadRandom}
	spec.Num = 2000
	spec.Value = ValueDist{Kind: "fixed", Size: 2000}
	spec.TTL = time.Hour
	spec.Dir = t.TempDir()
	rep, err := Run(context.Background(), spec, nil)
	require.NoError(t, err)
	require.Len(t, rep.Results, 6)
	for _, r := range rep.Results {
		require.False(t, r.Skipped, "%s %s: %s", r.Engine, r.Benchmark, r.Note)
		switch r.Benchmark {
		case ListAppend:
			require.Equal(t, int64(2000), r.Ops)
			require.Positive(t, r.OpsPerSec)
			require.Positive(t, r.LiveBytes)
		case TTLExpiry:
			// Live: the last phase's 500 keys, and the lists.
			require.Greater(t, r.LiveBytes, int64(500*(16+2000)))
			require.LessOrEqual(t, r.Counters["compact_value_log_reads"], r.Counters["gc_relocated"])
		case ReadRandom:
			require.InDelta(t, 0.25, float64(r.Found)/float64(r.Reads), 0.05)
		}
	}
}
