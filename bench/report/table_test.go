package report

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/strata-db/strata/bench"
)

// lineWith returns the first line of out containing all of parts.
func lineWith(t *testing.T, out string, parts ...string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(l, p)
		}
		if ok {
			return l
		}
	}
	t.Fatalf("no line contains %q in:\n%s", parts, out)
	return ""
}

func TestWriteTable(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, WriteTable(&buf, smallReport()))
	out := buf.String()
	t.Logf("\n%s", out)

	// Benchmarks in spec order, with their units.
	fill := strings.Index(out, "fillrandom\n")
	seek := strings.Index(out, "seekrandom\n")
	require.True(t, fill >= 0 && seek > fill, "benchmark headings in spec order")
	assert.Contains(t, out[fill:seek], "ops/s")
	assert.Contains(t, out[seek:], "rows/s")

	// Engines in spec order within a table, whatever the result order.
	section := out[fill:seek]
	assert.Less(t, strings.Index(section, "strata"), strings.Index(section, "pebble"))
	assert.Less(t, strings.Index(section, "pebble"), strings.Index(section, "rocksdb"))

	// Key cells.
	s := lineWith(t, out, "  strata", "50,000")
	for _, cell := range []string{"205.6", "12.3µs", "1.23ms", "300", "1.53", "210", "1.07", "1.00x"} {
		assert.Contains(t, s, cell)
	}
	p := lineWith(t, out, "  pebble", "31,000")
	for _, cell := range []string{"127.5", "21.4µs", "2.31ms", "880", "4.49", "260", "1.33", "0.62x"} {
		assert.Contains(t, p, cell)
	}
	assert.Contains(t, lineWith(t, out, "  strata", "2,500,000"), "1.00x")
	assert.Contains(t, lineWith(t, out, "  pebble", "1,250,000"), "0.50x")
	assert.Contains(t, lineWith(t, out, "  rocksdb"), "skipped: db_bench not found in PATH")

	// Summary, machine and spec.
	assert.Contains(t, out, "Strata vs peers")
	assert.Contains(t, lineWith(t, out, "fillrandom: "), "1.61x pebble")
	assert.Contains(t, lineWith(t, out, "seekrandom: "), "2.00x pebble")
	assert.Contains(t, out, "machine: linux/amd64, 2 CPUs (Test CPU @ 2.0GHz), 8 GiB RAM, go1.26.8")
	assert.Contains(t, out, "spec: num 200,000, key 16 B, value 4096 B, threads 1")
	assert.Contains(t, out, "memtable 64 MiB, cache 64 MiB, compression none, WAL on, no sync")

	for _, l := range strings.Split(out, "\n") {
		assert.LessOrEqual(t, width(l), tableWidth, "line too wide: %q", l)
	}
}

func TestWriteTableWithoutStrata(t *testing.T) {
	r := smallReport()
	var kept []bench.Result
	for _, res := range r.Results {
		if res.Engine != "strata" {
			kept = append(kept, res)
		}
	}
	r.Results = kept
	r.Results[0].Note = strings.Repeat("a very long note ", 20)
	r.Results[0].Skipped = true
	var buf bytes.Buffer
	require.NoError(t, WriteTable(&buf, r))
	out := buf.String()
	assert.Contains(t, lineWith(t, out, "  pebble", "1,250,000"), " -")
	assert.Contains(t, lineWith(t, out, "fillrandom: "), "strata did not run")
	assert.Contains(t, out, "...")
	for _, l := range strings.Split(out, "\n") {
		assert.LessOrEqual(t, width(l), tableWidth, "line too wide: %q", l)
	}
}

func TestWriteTableBig(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, WriteTable(&buf, bigReport()))
	for _, l := range strings.Split(buf.String(), "\n") {
		assert.LessOrEqual(t, width(l), tableWidth, "line too wide: %q", l)
	}
	assert.NotContains(t, buf.String(), "NaN")
}

func TestNilReport(t *testing.T) {
	var buf bytes.Buffer
	assert.Error(t, WriteTable(&buf, nil))
	assert.Error(t, WriteJSON(&buf, nil))
	assert.Error(t, WriteHTML(&buf, nil))
}

func TestFormat(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{groupDigits(0), "0"},
		{groupDigits(999), "999"},
		{groupDigits(1000), "1,000"},
		{groupDigits(1234567), "1,234,567"},
		{fmtCompact(950), "950"},
		{fmtCompact(48_812), "48.8k"},
		{fmtCompact(1_230_000), "1.23M"},
		{fmtCompact(100_000), "100k"},
		{fmtCompact(0.5), "0.5"},
		{fmtLatency(850), "850ns"},
		{fmtLatency(12_340), "12.3µs"},
		{fmtLatency(456_000), "456µs"},
		{fmtLatency(1_234_000), "1.23ms"},
		{fmtLatency(2_500_000_000), "2.50s"},
		{fmtLatency(0), "-"},
		{fmtRatio(1.615), "1.61x"},
		{fmtRatio(12.34), "12.3x"},
		{fmtSize(64 << 20), "64 MiB"},
		{fmtSize(1000), "1000 B"},
		{fmtElapsed(4100 * 1e6), "4.1s"},
		{fmtElapsed(187 * 1e9), "3m07s"},
		{fmtRate(math.Inf(1)), "-"},
		{fmtRate(math.NaN()), "-"},
	} {
		assert.Equal(t, c.want, c.got)
	}
}

func TestWriteTableRounds(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, WriteTable(&buf, roundsReport()))
	out := buf.String()
	t.Logf("\n%s", out)

	// The fill's table, then one table for the rounds instead of one per round.
	fill := strings.Index(out, "fillrandom\n")
	rounds := strings.Index(out, "overwrite rounds: 3 rounds of 20,000 overwrites (uniform keys), after fillrandom.")
	require.True(t, fill >= 0 && rounds > fill)
	assert.NotContains(t, out, "overwrite round 1\n")
	header := lineWith(t, out, "  engine", "round", "s-amp before", "settle")
	assert.Contains(t, header, "written MiB")

	// A row per engine and round, the engine named on its first.
	first := lineWith(t, out, "  strata/passive", "5,700")
	for _, cell := range []string{"1.20", "1.35", "0.3s"} {
		assert.Contains(t, first, cell)
	}
	third := lineWith(t, out, "3", "2.00", "2.15")
	assert.NotContains(t, third, "strata/passive")
	assert.Contains(t, lineWith(t, out, "  badger", "1.40", "1.55"), " - ", "no count of its own")
	assert.Contains(t, lineWith(t, out, "no rounds ran"), "  rocksdb  ")
	assert.Contains(t, out, "note: rocksdb-blob: disk size measured after db_bench's waitforcompaction only")

	// The summary per round, against the first Strata variant.
	assert.Contains(t, out, "where Strata ran only as variants")
	assert.Contains(t, lineWith(t, out, "overwrite round 2: "), "strata/passive ")
	assert.Contains(t, out, "3 overwrite rounds")
	assert.Contains(t, strings.Join(strings.Fields(out), " "), "strata gc policies passive reverse-lookup")

	for _, l := range strings.Split(out, "\n") {
		assert.LessOrEqual(t, width(l), tableWidth, "line too wide: %q", l)
	}
}

// TestWriteTableRepeated: a repeated run writes each figure's range under
// it, says the figures are medians, and names the engines' versions.
func TestWriteTableRepeated(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, WriteTable(&buf, repeatedReport()))
	out := buf.String()
	t.Log("\n" + out)
	lineWith(t, out, "strata", "50,000", "12.3µs", "1.23ms", "1.53", "1.00x")
	lineWith(t, out, "min-max", "45-55k", "11.1-13.6µs", "1.11-1.36ms", "1.38-1.68", "0.96-1.18")
	lineWith(t, out, "min-max", "2.25-2.75M", "900-1.1k")
	assert.Contains(t, out, "seed 1, median of 3 runs\n")
	assert.Contains(t, out, "engines: strata devel, pebble v2.1.7")
	for _, l := range strings.Split(out, "\n") {
		assert.False(t, strings.HasSuffix(l, " "), "trailing blanks: %q", l)
	}
}

// TestWriteTableNotesOfRuns: a result that ran shows its note and the
// engine's counts under its benchmark's table.
func TestWriteTableNotesOfRuns(t *testing.T) {
	r := smallReport()
	r.Results[0].Note = "appends by merge operator"
	r.Results[0].Counters = map[string]int64{"compact_value_log_reads": 0, "compact_expired": 12}
	var buf bytes.Buffer
	require.NoError(t, WriteTable(&buf, r))
	line := lineWith(t, buf.String(), "note: "+r.Results[0].Engine)
	assert.Contains(t, line, "appends by merge operator; compact_expired 12, compact_value_log_reads 0")
}

// TestWriteTablePerOp: a mix's table is followed by each engine's latency
// by kind of operation.
func TestWriteTablePerOp(t *testing.T) {
	r := smallReport()
	r.Spec.Benchmarks = append(r.Spec.Benchmarks, bench.YCSBA)
	r.Results = append(r.Results, bench.Result{Engine: "strata", Benchmark: bench.YCSBA, Ops: 1000, Duration: time.Second,
		OpsPerSec: 1000, P50: 2 * time.Microsecond, P99: 40 * time.Microsecond,
		PerOp: []bench.OpLatency{
			{Op: "read", Count: 500, P50: 3 * time.Microsecond, P99: 30 * time.Microsecond, P999: 90 * time.Microsecond},
			{Op: "write", Count: 500, P50: time.Microsecond, P99: 45 * time.Microsecond, P999: 1200 * time.Microsecond},
		}})
	var buf bytes.Buffer
	require.NoError(t, WriteTable(&buf, r))
	out := buf.String()
	t.Logf("\n%s", out)
	ycsb := strings.Index(out, "ycsb-a\n")
	require.Positive(t, ycsb)
	assert.Contains(t, out[ycsb:], "latency by operation (p50 / p99 / p99.9)")
	l := lineWith(t, out[ycsb:], "  strata", "read 3.00µs / 30.0µs / 90.0µs")
	assert.Contains(t, l, "write 1.00µs / 45.0µs / 1.20ms")
	assert.NotContains(t, out[:ycsb], "latency by operation", "benchmarks of one kind have no split")
}

// TestWriteTableTooShort: a phase under the floor (1 s or 1,000
// operations) is marked in its table and named in the summary instead of
// a ratio; a too short Strata result leaves its benchmark no ratio at all.
func TestWriteTableTooShort(t *testing.T) {
	r := smallReport()
	for i := range r.Results {
		res := &r.Results[i]
		switch {
		case res.Engine == "strata" && res.Benchmark == bench.SeekRandom:
			// The case that printed "seekrandom: 14.3x pebble".
			res.Ops, res.Duration = 199, 20*time.Millisecond
		case res.Engine == "pebble" && res.Benchmark == bench.FillRandom:
			res.Ops = 500
		}
	}
	var buf bytes.Buffer
	require.NoError(t, WriteTable(&buf, r))
	out := buf.String()
	t.Logf("\n%s", out)

	assert.Contains(t, lineWith(t, out, "  pebble", "31,000"), "too short")
	assert.Contains(t, lineWith(t, out, "  strata", "2,500,000"), "too short")
	assert.Contains(t, lineWith(t, out, "  pebble", "1,250,000"), "-")
	assert.NotContains(t, lineWith(t, out, "  pebble", "1,250,000"), "0.50x")
	assert.Contains(t, out, "note: too short to compare (under 1 s or 1,000 operations): pebble (500 ops in 1.61 s)")

	fill := lineWith(t, out, "  fillrandom: ")
	assert.NotContains(t, fill, "x pebble")
	assert.Contains(t, fill, "too short to compare: pebble (500 ops in 1.61 s)")
	seek := lineWith(t, out, "  seekrandom: ")
	assert.Contains(t, seek, "strata too short to compare (199 ops in 0.02 s; the floor is 1 s or 1,000 operations)")
	assert.NotContains(t, seek, "x pebble")
	for _, l := range strings.Split(out, "\n") {
		assert.LessOrEqual(t, width(l), tableWidth, "line too wide: %q", l)
	}

	// The HTML summary leaves them out too.
	var html bytes.Buffer
	require.NoError(t, WriteHTML(&html, r))
	assert.Contains(t, html.String(), "strata too short to compare (199 ops in 0.02 s)")
}

// TestWriteTableRatioRuns: each ratio of the summary says how many
// repetitions it rests on and the spread of their own ratios, leaving out
// a repetition in which either side was too short; one run says it has no
// spread.
func TestWriteTableRatioRuns(t *testing.T) {
	base := smallReport()
	var runs [][]bench.Result
	for i, f := range []float64{0.8, 1, 1.25, 1} {
		var run []bench.Result
		for _, res := range base.Results {
			if res.Engine == "strata" && !res.Skipped {
				res.OpsPerSec *= f
				res.RowsPerSec *= f
			}
			if i == 3 && res.Engine == "pebble" && res.Benchmark == bench.SeekRandom {
				res.Duration = 10 * time.Millisecond // one repetition too short
			}
			run = append(run, res)
		}
		runs = append(runs, run)
	}
	r := base
	r.Spec.Repeat = 4
	r.Results = bench.Aggregate(runs)
	r.Repeats = runs
	var buf bytes.Buffer
	require.NoError(t, WriteTable(&buf, r))
	out := buf.String()
	t.Logf("\n%s", out)
	// fillrandom: strata 50,000 x 0.8..1.25 over pebble's 31,000.
	assert.Contains(t, lineWith(t, out, "  fillrandom: "), "1.61x pebble (4 runs: 1.29x-2.02x)")
	assert.Contains(t, lineWith(t, out, "  seekrandom: "), "pebble (3 runs: 1.60x-2.50x)")

	var one bytes.Buffer
	require.NoError(t, WriteTable(&one, smallReport()))
	assert.Contains(t, lineWith(t, one.String(), "  fillrandom: "), "1.61x pebble; 1 run each, no spread (--repeat)")
}
