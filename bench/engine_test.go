package bench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestStrataVariants(t *testing.T) {
	for _, p := range GCPolicyNames {
		name := "strata/" + p
		e, err := ResolveEngine(name)
		require.NoError(t, err, name)
		require.Equal(t, name, e.Name)
		require.NotNil(t, e.Open)
		require.Contains(t, e.Description, p)
		_, ok := LookupEngine(name)
		require.True(t, ok)
	}
	for name, want := range map[string]string{
		"strata/bogus": `engine "strata/bogus": gc: unknown policy "bogus"`,
		"strata/":      "no variant after the slash",
		"nope/passive": `unknown engine "nope/passive"`,
		"strata-x":     `unknown engine "strata-x"`,
	} {
		_, err := ResolveEngine(name)
		require.ErrorContains(t, err, want, name)
		_, ok := LookupEngine(name)
		require.False(t, ok, name)
	}
	require.NotContains(t, EngineNames(), "strata/passive", "variants are derived, not registered")
	require.Equal(t, "strata-reverse-lookup", DirName("strata/reverse-lookup"))
}

// TestStrataVariantsOpen opens every variant: each policy is accepted by
// the engine.
func TestStrataVariantsOpen(t *testing.T) {
	cfg := DefaultSpec().Config
	cfg.MemTableSize = 1 << 20
	cfg.CacheSize = 1 << 20
	cfg.GCBudget = 1.5
	for _, p := range GCPolicyNames {
		e, err := ResolveEngine("strata/" + p)
		require.NoError(t, err)
		eng, err := e.Open(t.TempDir(), cfg)
		require.NoError(t, err, p)
		require.NoError(t, eng.Put([]byte("k"), make([]byte, 2000)))
		require.NoError(t, eng.Close())
	}
}

func TestSpecGCPolicies(t *testing.T) {
	s := DefaultSpec()
	s.Engines = []string{"strata"}
	s.GCPolicies = []string{"passive", "reverse-lookup", "cost"}
	require.NoError(t, s.Normalize())
	require.Equal(t, []string{"strata/passive", "strata/reverse-lookup", "strata/cost"}, s.Engines)
	require.Equal(t, 1.3, s.Config.GCBudget, "the cost policy's default budget")
	require.NoError(t, s.Normalize(), "normalizing twice changes nothing")
	require.Equal(t, []string{"strata/passive", "strata/reverse-lookup", "strata/cost"}, s.Engines)

	for _, c := range []struct {
		engines, policies []string
		want              string
	}{
		{[]string{"strata"}, []string{"passive", "passive"}, `gc policy "passive" is listed twice`},
		{[]string{"strata"}, []string{"sometimes"}, `engine "strata/sometimes": gc: unknown policy "sometimes"`},
		{[]string{"strata/passive"}, []string{"rewrite"}, "strata is not among the engines"},
		{[]string{"strata", "strata/passive"}, []string{"passive"}, `engine "strata/passive" is listed twice`},
	} {
		s := DefaultSpec()
		s.Engines, s.GCPolicies = c.engines, c.policies
		require.ErrorContains(t, s.Normalize(), c.want, "%v %v", c.engines, c.policies)
	}
	s = DefaultSpec()
	s.Engines = []string{"strata"}
	s.Config.GCBudget = 0.5
	require.ErrorContains(t, s.Normalize(), "gc_budget")
}

func TestSpecRounds(t *testing.T) {
	norm := func(benchmarks []string, rounds int) Spec {
		t.Helper()
		s := DefaultSpec()
		s.Engines = []string{"strata"}
		s.Benchmarks, s.OverwriteRounds = benchmarks, rounds
		require.NoError(t, s.Normalize())
		again := s
		again.Benchmarks = append([]string(nil), s.Benchmarks...)
		require.NoError(t, again.Normalize())
		require.Equal(t, s.Benchmarks, again.Benchmarks, "normalizing twice changes nothing")
		return s
	}
	s := norm([]string{FillRandom}, 3)
	require.Equal(t, []string{FillRandom, Overwrite, Overwrite, Overwrite}, s.Benchmarks)
	require.Equal(t, 3, s.Rounds())
	require.Equal(t, []int{0, 1, 2, 3}, []int{s.RoundOf(0), s.RoundOf(1), s.RoundOf(2), s.RoundOf(3)})
	require.Equal(t, "overwrite 2/3", s.Label(2))
	require.Equal(t, FillRandom, s.Label(0))

	s = norm([]string{FillRandom, Overwrite, ReadRandom}, 2)
	require.Equal(t, []string{FillRandom, Overwrite, Overwrite, ReadRandom}, s.Benchmarks)
	require.Equal(t, 0, s.RoundOf(3))

	// Repeating overwrite makes rounds without the flag.
	s = norm([]string{FillRandom, Overwrite, Overwrite, Overwrite}, 0)
	require.Equal(t, 3, s.Rounds())
	require.Equal(t, 3, s.RoundOf(3))
	s = norm([]string{FillRandom, Overwrite, Overwrite}, 2)
	require.Equal(t, 2, s.Rounds())

	// A lone overwrite is a benchmark, not a round, unless asked for.
	s = norm([]string{FillRandom, Overwrite}, 0)
	require.Zero(t, s.Rounds())
	require.Zero(t, s.RoundOf(1))
	require.Equal(t, Overwrite, s.Label(1))
	s = norm([]string{FillRandom, Overwrite}, 1)
	require.Equal(t, 1, s.Rounds())
	require.Equal(t, "overwrite 1/1", s.Label(1))

	for _, c := range []struct {
		benchmarks []string
		rounds     int
		want       string
	}{
		{[]string{FillRandom, Overwrite, Overwrite}, 3, "overwrite_rounds 3 conflicts with the 2 overwrites"},
		{[]string{FillRandom}, -1, "overwrite_rounds must not be negative"},
	} {
		s := DefaultSpec()
		s.Engines = []string{"strata"}
		s.Benchmarks, s.OverwriteRounds = c.benchmarks, c.rounds
		require.ErrorContains(t, s.Normalize(), c.want)
	}
}

func TestSpecKeyDist(t *testing.T) {
	s := DefaultSpec()
	s.Engines = []string{"strata"}
	s.KeyDist = ""
	require.NoError(t, s.Normalize())
	require.Equal(t, KeyUniform, s.KeyDist)
	s.KeyDist = KeyZipfian
	require.NoError(t, s.Normalize())
	s.KeyDist = "latest"
	require.ErrorContains(t, s.Normalize(), `key_dist "latest" is not uniform or zipfian`)
}

// keyCounter is an Engine that counts the writes of each key.
type keyCounter struct{ puts map[uint64]int }

func (k *keyCounter) Put(key, _ []byte) error                 { k.puts[KeyIndex(key)]++; return nil }
func (k *keyCounter) Get(_, buf []byte) ([]byte, bool, error) { return buf[:0], false, nil }
func (k *keyCounter) Delete([]byte) error                     { return nil }
func (k *keyCounter) Scan([]byte, int) (int, int64, error)    { return 0, 0, nil }
func (k *keyCounter) Close() error                            { return nil }

// TestOverwriteKeyDist checks that zipfian overwrites concentrate on a few
// keys, spread over the key space, and uniform ones do not.
func TestOverwriteKeyDist(t *testing.T) {
	for _, dist := range []string{KeyUniform, KeyZipfian} {
		spec := DefaultSpec()
		spec.Engines = []string{"strata"}
		spec.Benchmarks = []string{Overwrite}
		spec.Num = 10_000
		spec.KeyDist = dist
		require.NoError(t, spec.Normalize())
		eng := &keyCounter{puts: map[uint64]int{}}
		res, err := runBenchmark(context.Background(), &spec, "count", eng, Overwrite, 0, newKeyState(&spec), NoProgress{})
		require.NoError(t, err)
		require.Equal(t, spec.Num, res.Ops)
		top, hottest := 0, uint64(0)
		for k, n := range eng.puts {
			require.Less(t, k, uint64(spec.Num))
			if n > top {
				top, hottest = n, k
			}
		}
		if dist == KeyUniform {
			require.Less(t, top, 20, "no key is much hotter than 1 write in 10,000")
			require.Greater(t, len(eng.puts), 6000, "about 1-1/e of the keys are written")
			continue
		}
		// The most popular of 10,000 items has probability 1/zeta(10000, 0.99), about 10%.
		require.Greater(t, top, 700)
		require.Less(t, len(eng.puts), 5000)
		require.NotZero(t, hottest, "scrambled: the hottest key is not the first")
	}
}

// TestStrataMappedScan: strata/mapped scans return what strata's do, values
// of finished (mapped) value logs included.
func TestStrataMappedScan(t *testing.T) {
	cfg := DefaultSpec().Config
	cfg.MemTableSize = 1 << 20
	cfg.CacheSize = 1 << 20
	open := func(name, dir string) Engine {
		info, err := ResolveEngine(name)
		require.NoError(t, err)
		e, err := info.Open(dir, cfg)
		require.NoError(t, err)
		return e
	}
	dir := t.TempDir()
	e := open("strata", dir)
	key := make([]byte, 16)
	for i := 0; i < 3000; i++ {
		require.NoError(t, e.Put(MakeKey(key, uint64(i)), make([]byte, 4096)))
	}
	require.NoError(t, e.Close())
	for _, name := range []string{"strata", "strata/mapped"} {
		e := open(name, dir)
		rows, n, err := e.Scan(MakeKey(key, 100), 2000)
		require.NoError(t, err, name)
		require.Equal(t, 2000, rows, name)
		require.Equal(t, int64(2000*(16+4096)), n, name)
		require.NoError(t, e.Close())
	}
}

// TestStrataShared: strata/shared runs the ordinary benchmarks with its
// lower levels in a store beside its directory, which it reads back after
// each reopen; the run removes the store with the database.
func TestStrataShared(t *testing.T) {
	spec := DefaultSpec()
	spec.Engines = []string{"strata", "strata/shared"}
	spec.Benchmarks = []string{FillRandom, ReadRandom, Overwrite}
	spec.Num = 4000
	spec.Config.MemTableSize = 1 << 20
	spec.StoreLatency = time.Millisecond
	spec.Dir = t.TempDir()
	rep, err := Run(context.Background(), spec, nil)
	require.NoError(t, err)
	require.Len(t, rep.Results, 6)
	for _, r := range rep.Results {
		require.False(t, r.Skipped, "%s %s: %s", r.Engine, r.Benchmark, r.Note)
		if r.Benchmark == ReadRandom {
			require.Equal(t, r.Reads, r.Found, "%s: reads that found nothing", r.Engine)
		}
		_, shared := r.Counters["shared_files"]
		require.Equal(t, r.Engine == "strata/shared", shared, "%s %s: %v", r.Engine, r.Benchmark, r.Counters)
	}
	entries, err := os.ReadDir(spec.Dir)
	require.NoError(t, err)
	require.Empty(t, entries, "the run left directories behind")

	// With the store under another directory: it is there (kept with
	// the databases), and not beside the database.
	spec.Engines = []string{"strata/shared"}
	spec.Benchmarks = []string{FillRandom}
	spec.Config.SharedStoreDir = t.TempDir()
	spec.KeepDB = true
	rep, err = Run(context.Background(), spec, nil)
	require.NoError(t, err)
	require.False(t, rep.Results[0].Skipped, rep.Results[0].Note)
	stores, err := os.ReadDir(spec.Config.SharedStoreDir)
	require.NoError(t, err)
	require.Len(t, stores, 1)
	require.True(t, strings.HasSuffix(stores[0].Name(), "-store"), stores[0].Name())
	objects, err := os.ReadDir(filepath.Join(spec.Config.SharedStoreDir, stores[0].Name()))
	require.NoError(t, err)
	require.NotEmpty(t, objects)
	entries, err = os.ReadDir(spec.Dir)
	require.NoError(t, err)
	for _, e := range entries {
		require.False(t, strings.HasSuffix(e.Name(), "-store"), "a store beside the database: %s", e.Name())
	}
}
