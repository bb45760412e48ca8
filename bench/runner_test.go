package bench

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRunStrataSmall runs every benchmark on Strata at a tiny size and
// checks the counts the runner reports.
func TestRunStrataSmall(t *testing.T) {
	spec := DefaultSpec()
	spec.Engines = []string{"strata"}
	spec.Benchmarks = AllBenchmarks
	spec.Num = 3000
	spec.Reads = 2000
	spec.Threads = 2
	spec.Value = ValueDist{Kind: "uniform", Min: 50, Max: 3000}
	spec.Dir = t.TempDir()
	rep, err := Run(context.Background(), spec, nil)
	require.NoError(t, err)
	byName := map[string]Result{}
	for _, r := range rep.Results {
		require.False(t, r.Skipped, "%s: %s", r.Benchmark, r.Note)
		require.Equal(t, "strata", r.Engine)
		byName[r.Benchmark] = r
	}
	require.Len(t, byName, len(AllBenchmarks))
	fill := byName[FillRandom]
	require.Equal(t, int64(3000), fill.Ops)
	require.Positive(t, fill.OpsPerSec)
	require.Positive(t, fill.UserBytes)
	require.Positive(t, fill.DiskSize)
	// Exact sizes of uniform draws in [50, 3000]: near the mean of 1525.
	require.InEpsilon(t, 3000*(16+1525), fill.LiveBytes, 0.02)
	require.Positive(t, fill.P50)
	require.LessOrEqual(t, fill.P50, fill.P99)
	// After fillseq and fillrandom over the same keys every read finds its key.
	rr := byName[ReadRandom]
	require.Equal(t, int64(4000), rr.Ops)
	require.Equal(t, rr.Reads, rr.Found)
	seek := byName[SeekRandom]
	require.Equal(t, 2*SeekCount(&rep.Spec), seek.Ops)
	require.Positive(t, seek.RowsPerSec)
	require.Equal(t, int64(3000), byName[ReadSeq].Ops, "readseq reads every key once")
	// deleterandom removes about 1-1/e of the keys; later reads find fewer.
	del := byName[DeleteRandom]
	require.Less(t, del.LiveBytes, fill.LiveBytes*3/4)
	require.Less(t, byName[YCSBA].Found, byName[YCSBA].Reads)
	require.Equal(t, int64(4000), byName[YCSBF].Ops)
	require.Positive(t, byName[YCSBE].RowsPerSec)
	// A mix reports each kind of operation; the kinds add up to the ops
	// (a read-modify-write is one op of a read and a write).
	a := byName[YCSBA]
	require.Len(t, a.PerOp, 2)
	require.Equal(t, "read", a.PerOp[0].Op)
	require.Equal(t, "write", a.PerOp[1].Op)
	require.Equal(t, a.Ops, a.PerOp[0].Count+a.PerOp[1].Count)
	require.Equal(t, a.Reads, a.PerOp[0].Count)
	for _, o := range a.PerOp {
		require.Positive(t, o.P50)
		require.LessOrEqual(t, o.P50, o.P99)
		require.LessOrEqual(t, o.P99, o.P999)
	}
	e := byName[YCSBE]
	require.Equal(t, []string{"write", "scan"}, []string{e.PerOp[0].Op, e.PerOp[1].Op})
	require.Nil(t, fill.PerOp, "one kind of operation: no split")
	require.Nil(t, rr.PerOp)
	require.NotContains(t, rr.Note, noKeysNote, "fills ran before")
}

// TestRunNotesReadsOfNothing: a benchmark that reads existing keys, run
// before anything wrote one, says so; the same after a fill does not.
func TestRunNotesReadsOfNothing(t *testing.T) {
	for _, c := range []struct {
		benchmarks []string
		noted      string
	}{
		{[]string{YCSBE}, YCSBE},
		{[]string{ReadRandom, FillSeq, SeekRandom}, ReadRandom},
		{[]string{FillSeq, YCSBE}, ""},
	} {
		spec := DefaultSpec()
		spec.Engines = []string{"strata"}
		spec.Benchmarks = c.benchmarks
		spec.Num, spec.Reads = 500, 200
		spec.Dir = t.TempDir()
		rep, err := Run(context.Background(), spec, nil)
		require.NoError(t, err)
		require.Len(t, rep.Results, len(c.benchmarks))
		for _, r := range rep.Results {
			if r.Benchmark == c.noted {
				require.Contains(t, r.Note, noKeysNote, "%v: %s", c.benchmarks, r.Benchmark)
			} else {
				require.NotContains(t, r.Note, noKeysNote, "%v: %s", c.benchmarks, r.Benchmark)
			}
		}
	}
}

func TestSpecNormalize(t *testing.T) {
	s := Spec{Engines: []string{"strata", "nope"}, Benchmarks: []string{"fillrandom", "bogus"}, Num: 0,
		Value: ValueDist{Kind: "weird"}}
	err := s.Normalize()
	require.Error(t, err)
	for _, want := range []string{"num must be positive", `unknown benchmark "bogus"`, `unknown engine "nope"`, "value_size_distribution_type"} {
		require.ErrorContains(t, err, want)
	}
	ok := DefaultSpec()
	ok.Engines = []string{"strata"}
	require.NoError(t, ok.Normalize())
	require.Equal(t, ok.Num, ok.Reads)
}

// orderEngine is an external engine that records when it ran and reports
// its name and the call's number as its figures.
type orderEngine struct {
	name  string
	calls *[]string
}

func (e orderEngine) Run(ctx context.Context, spec *Spec, dir string, progress Progress) ([]Result, error) {
	*e.calls = append(*e.calls, e.name)
	var out []Result
	for _, b := range spec.Benchmarks {
		out = append(out, Result{Benchmark: b, Ops: int64(len(*e.calls)), OpsPerSec: float64(len(*e.calls))})
	}
	return out, nil
}

// TestRunRotatesEngines checks that each repetition starts one engine
// further down the list, and that the repetitions' results still line up
// by engine (Aggregate matches them by position).
func TestRunRotatesEngines(t *testing.T) {
	var calls []string
	names := []string{"order-a", "order-b", "order-c"}
	for _, n := range names {
		RegisterEngine(EngineInfo{Name: n, External: func() External { return orderEngine{n, &calls} }})
	}
	spec := DefaultSpec()
	spec.Engines = names
	spec.Benchmarks = []string{FillRandom, ReadRandom}
	spec.Num = 100
	spec.Repeat = 4
	spec.Dir = t.TempDir()
	rep, err := Run(context.Background(), spec, nil)
	require.NoError(t, err)
	require.Equal(t, []string{
		"order-a", "order-b", "order-c",
		"order-b", "order-c", "order-a",
		"order-c", "order-a", "order-b",
		"order-a", "order-b", "order-c",
	}, calls)
	require.Len(t, rep.Repeats, 4)
	for r, run := range rep.Repeats {
		require.Len(t, run, 6)
		for i, res := range run {
			require.Equal(t, names[i/2], res.Engine, "repetition %d, result %d", r+1, i)
			require.Equal(t, spec.Benchmarks[i%2], res.Benchmark)
			// The engine ran at the (e-r) mod 3 position of repetition r.
			want := 3*r + (i/2-r%3+3)%3 + 1
			require.EqualValues(t, want, res.Ops, "repetition %d, engine %s", r+1, res.Engine)
		}
	}
	require.Len(t, rep.Results, 6)
	for i, res := range rep.Results {
		require.Equal(t, names[i/2], res.Engine)
		require.Equal(t, 4, res.Runs)
	}
}

func TestInEngineOrder(t *testing.T) {
	a, b := []Result{{Engine: "a"}}, []Result{{Engine: "b"}, {Engine: "b"}}
	require.Equal(t, []Result{{Engine: "a"}}, inEngineOrder([][]Result{a, nil, b}))
	require.Equal(t, append(slices.Clone(a), b...), inEngineOrder([][]Result{a, b}))
	require.Equal(t, []Result{{Engine: "a"}}, inEngineOrder([][]Result{a, {}, nil}))
	require.Nil(t, inEngineOrder([][]Result{nil, b}))
}
