package report

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/strata-db/strata/bench"
)

// chartsPerBenchmark: throughput, throughput over time, write and space
// amplification, latency percentiles.
const chartsPerBenchmark = 5

// checkHTML renders r and checks what every page must satisfy: one SVG per
// chart, each well-formed XML, no non-finite numbers, no values the template
// refused, and every engine named.
func checkHTML(t *testing.T, r *bench.Report, benchmarks int) string {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, WriteHTML(&buf, r))
	out := buf.String()
	require.True(t, strings.HasPrefix(out, "<!DOCTYPE html>"))
	charts := chartsPerBenchmark * benchmarks
	if newModel(r).hasRounds() {
		// The rounds count as one benchmark, with four charts.
		charts += 4 - chartsPerBenchmark
	}
	for _, res := range stateResults(r) {
		charts += 4 // a statebackend section each
		if sb := res.StateBackend; sb.SharedCache > 0 && sb.Open != nil {
			charts += 2 // and the reads after opening from the store
		}
	}
	assert.Equal(t, charts, strings.Count(out, "<svg"))
	assert.Equal(t, strings.Count(out, "<svg"), strings.Count(out, "</svg>"))
	for _, bad := range []string{"NaN", "Inf", "ZgotmplZ", "<script src", "http://", "https://"} {
		if bad == "http://" {
			// The SVG namespace is the only URL allowed.
			assert.Equal(t, strings.Count(out, "<svg"), strings.Count(out, bad), "only the SVG namespace may be a URL")
			continue
		}
		assert.NotContains(t, out, bad)
	}
	for _, e := range r.Spec.Engines {
		assert.Contains(t, out, ">"+e+"<", "engine %s named", e)
	}
	// Each SVG must be well-formed XML on its own.
	rest := out
	for {
		i := strings.Index(rest, "<svg")
		if i < 0 {
			break
		}
		j := strings.Index(rest[i:], "</svg>")
		require.Positive(t, j)
		chart := rest[i : i+j+len("</svg>")]
		dec := xml.NewDecoder(strings.NewReader(chart))
		for {
			_, err := dec.Token()
			if err == io.EOF {
				break
			}
			require.NoError(t, err, "chart is not well-formed: %s", chart)
		}
		rest = rest[i+j:]
	}
	// The page as a whole: balanced main structure.
	for _, tag := range []string{"html", "body", "main", "table", "section"} {
		assert.Equal(t, strings.Count(out, "<"+tag+">")+strings.Count(out, "<"+tag+" "),
			strings.Count(out, "</"+tag+">"), "balanced <%s>", tag)
	}
	return out
}

// emptyReport is smallReport with nothing measured: no timelines, zero and
// non-finite values.
func emptyReport() *bench.Report {
	r := smallReport()
	for i := range r.Results {
		res := &r.Results[i]
		res.Timeline = nil
		res.OpsPerSec, res.RowsPerSec, res.MBPerSec = 0, 0, math.NaN()
		res.WriteAmp, res.SpaceAmp = math.Inf(1), 0
		res.P50, res.P99 = 0, 0
	}
	return r
}

func TestWriteHTML(t *testing.T) {
	out := checkHTML(t, smallReport(), 2)
	assert.Contains(t, out, "db_bench not found in PATH")
	assert.Contains(t, out, "0.62x strata")       // pebble's bar, fillrandom
	assert.Contains(t, out, "1.61x")              // summary cell
	assert.Contains(t, out, "rows/s")             // seekrandom's unit
	assert.Contains(t, out, "#e4491c")            // strata's color
	assert.Contains(t, out, "levels: L0 2 files") // engine stats
	assert.Contains(t, out, "Test CPU @ 2.0GHz")  // machine
	assert.Contains(t, out, "num 200,000")        // spec
	assert.Contains(t, out, "no sync")            // settings
	assert.Contains(t, out, "<title>strata at 1.0s: 48k ops/s</title>")
	assert.Contains(t, out, "<title>strata p99.9: 5.00ms</title>") // latency chart
	assert.Contains(t, out, "<title>pebble p99: 2.31ms</title>")
	assert.NotContains(t, out, "min-max", "a single run has no spread")
}

// TestWriteHTMLRepeated: a report of several runs says so, draws whiskers
// and writes each figure's range under it.
func TestWriteHTMLRepeated(t *testing.T) {
	r := repeatedReport()
	out := checkHTML(t, r, 2)
	assert.Contains(t, out, "median of 3 runs")
	assert.Contains(t, out, `<tr class="spread"><td>min-max</td><td class="num">45-55k</td>`)
	assert.Contains(t, out, "<title>strata p99: 1.23ms (runs: 1.11ms-1.36ms)</title>")
	assert.Contains(t, out, "strata devel, pebble v2.1.7") // versions
	// Whiskers: three lines (the span and its two caps) per bar with a spread.
	assert.Contains(t, out, `stroke="#18181b" stroke-width="1.25"`)
	if d := os.Getenv("STRATA_REPORT_EXAMPLE"); d != "" {
		writeExample(t, d, "repeated.html", r)
	}
}

func writeExample(t *testing.T, dir, name string, r *bench.Report) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, name))
	require.NoError(t, err)
	require.NoError(t, WriteHTML(f, r))
	require.NoError(t, f.Close())
}

func TestWriteHTMLEmpty(t *testing.T) {
	// No timelines, zero and non-finite values, Strata absent, one engine.
	r := emptyReport()
	checkHTML(t, r, 2)

	r.Results = r.Results[:0]
	out := checkHTML(t, r, 2)
	assert.Contains(t, out, "no results")

	r = &bench.Report{Spec: bench.Spec{Engines: []string{"strata"}, Benchmarks: []string{bench.FillRandom}}}
	r.Results = []bench.Result{{Engine: "strata", Benchmark: bench.FillRandom, Ops: 10, OpsPerSec: 10,
		Timeline: []bench.Sample{{OpsPerSec: 10}}}}
	out = checkHTML(t, r, 1)
	assert.Contains(t, out, "No peers in this run")

	// An engine and a benchmark the spec does not list, and a note that
	// needs escaping.
	r.Results = append(r.Results, bench.Result{Engine: "other<x>", Benchmark: "custom", Skipped: true, Note: `a "quoted" <note> & more`})
	out = checkHTML(t, r, 2)
	assert.Contains(t, out, "other&lt;x&gt;")
	assert.NotContains(t, out, "<note>")
}

func TestWriteHTMLBig(t *testing.T) {
	r := bigReport()
	out := checkHTML(t, r, len(bench.AllBenchmarks))

	// Colors are fixed per engine and the same in every chart.
	colors := palette(r.Spec.Engines)
	assert.Len(t, colors, len(r.Spec.Engines))
	seen := map[string]bool{}
	for _, c := range colors {
		assert.False(t, seen[c], "colors are distinct")
		seen[c] = true
		assert.Contains(t, out, c)
	}

	// An example page to look at: STRATA_REPORT_EXAMPLE names a directory to
	// keep it in, for instance to render it with a headless browser.
	dir := t.TempDir()
	if d := os.Getenv("STRATA_REPORT_EXAMPLE"); d != "" {
		dir = d
	}
	for name, rep := range map[string]*bench.Report{"big.html": r, "small.html": smallReport(), "empty.html": emptyReport()} {
		f, err := os.Create(filepath.Join(dir, name))
		require.NoError(t, err)
		require.NoError(t, WriteHTML(f, rep))
		require.NoError(t, f.Close())
	}
}

func TestPalette(t *testing.T) {
	p := palette([]string{"zeta", "strata", "alpha", "pebble"})
	assert.Equal(t, engineColors["strata"], p["strata"])
	assert.Equal(t, engineColors["pebble"], p["pebble"])
	assert.NotEqual(t, p["zeta"], p["alpha"])
	assert.Equal(t, p, palette([]string{"zeta", "strata", "alpha", "pebble"}), "deterministic")

	all := []string{"strata", "pebble", "pebble-vs", "badger", "rocksdb", "rocksdb-blob", "other"}
	for _, v := range bench.GCPolicyNames {
		all = append(all, "strata/"+v)
		assert.Contains(t, engineColors, "strata/"+v, "every GC variant has a color of its own")
	}
	seen := map[string]string{}
	for e, c := range palette(all) {
		assert.Empty(t, seen[c], "%s and %s share %s", e, seen[c], c)
		seen[c] = e
	}
}

func TestNiceTicks(t *testing.T) {
	for _, c := range []struct {
		hi   float64
		top  float64
		step float64
	}{
		{48_812, 50_000, 10_000},
		{1.57, 2, 0.5},
		{0, 1, 0.2},
		{math.NaN(), 1, 0.2},
		{math.Inf(1), 1, 0.2},
		{-3, 1, 0.2},
		{1, 1, 0.2},
		{7, 8, 2},
		{2_500_000, 2_500_000, 500_000},
		{2_600_000, 3_000_000, 1_000_000},
	} {
		top, ticks := niceTicks(c.hi, 5)
		assert.Equal(t, c.top, top, "top for %v", c.hi)
		require.GreaterOrEqual(t, len(ticks), 2)
		assert.Equal(t, 0.0, ticks[0])
		assert.InDelta(t, c.step, ticks[1], 1e-12, "step for %v", c.hi)
		assert.Equal(t, top, ticks[len(ticks)-1])
	}
	assert.Equal(t, "0", num(math.NaN()))
	assert.Equal(t, "0", num(math.Inf(-1)))
	assert.Equal(t, "0", num(-0.001))
	assert.Equal(t, "12.35", num(12.345678))
}

func TestWriteHTMLRounds(t *testing.T) {
	r := roundsReport()
	// The fill's section, and one section of four charts for all rounds.
	out := checkHTML(t, r, 2)
	for _, title := range []string{
		"overwrite rounds: space amplification per round",
		"overwrite rounds: bytes written per round",
		"overwrite rounds: throughput per round",
		"overwrite rounds: throughput over time",
	} {
		assert.Contains(t, out, `aria-label="`+title+`"`)
	}
	assert.Equal(t, 1, strings.Count(out, `id="rounds"`))
	assert.Contains(t, out, `<a href="#rounds">overwrite rounds</a>`)
	assert.NotContains(t, out, `id="b1-overwrite round 1"`, "no section per round")
	assert.Contains(t, out, "3 rounds of 20,000 overwrites (uniform keys), after fillrandom.")
	// Solid after settling, dashed before; tooltips say which.
	assert.Contains(t, out, "stroke-dasharray")
	assert.Contains(t, out, "<title>strata/passive round 3: 2.00 (after settling)</title>")
	assert.Contains(t, out, "<title>strata/passive round 3: 2.15 (before settling)</title>")
	assert.Contains(t, out, "<title>badger round 2: 1.90 (after settling)</title>")
	assert.NotContains(t, out, "rocksdb-blob round 1: 1.20 (before settling)", "not measured, not drawn")
	// The rounds table, notes, the summary per round, every number per round.
	assert.Contains(t, out, "disk MiB before settle")
	assert.Contains(t, out, "rocksdb-blob: disk size measured after db_bench&#39;s waitforcompaction only")
	assert.Contains(t, out, "no rounds ran: db_bench not found in PATH")
	assert.Contains(t, out, `<a href="#rounds">overwrite round 2</a>`)
	assert.Contains(t, out, "strata/passive after round 2: value logs 3 files")
	// Strata's variants are Strata: highlighted, not peers, the first the baseline.
	assert.Contains(t, out, "strata/passive 1.20x the fastest peer (pebble-vs)")
	assert.NotContains(t, out, `<th style="text-align:center">strata/reverse-lookup</th>`)
	assert.Contains(t, out, `font-weight:700"><span class="swatch" style="background:`+engineColors["strata/reverse-lookup"])

	// An example page to look at (see TestWriteHTMLBig).
	dir := t.TempDir()
	if d := os.Getenv("STRATA_REPORT_EXAMPLE"); d != "" {
		dir = d
	}
	f, err := os.Create(filepath.Join(dir, "rounds.html"))
	require.NoError(t, err)
	require.NoError(t, WriteHTML(f, r))
	require.NoError(t, f.Close())
}

// TestWriteHTMLRoundsEmpty: rounds where nothing was measured draw notes,
// not charts; rounds missing from the report are built from its results.
func TestWriteHTMLRoundsEmpty(t *testing.T) {
	r := roundsReport()
	r.Rounds = nil
	out := checkHTML(t, r, 2)
	assert.Contains(t, out, `aria-label="overwrite rounds: space amplification per round"`)

	for i := range r.Results {
		if r.Results[i].Round > 0 {
			r.Results[i] = bench.Result{Engine: r.Results[i].Engine, Benchmark: bench.Overwrite,
				Round: r.Results[i].Round, Skipped: true, Note: "failed"}
		}
	}
	r.Rounds = bench.BuildRounds(&r.Spec, r.Results)
	out = checkHTML(t, r, 2)
	assert.Contains(t, out, "no rounds measured")
	assert.Contains(t, out, "no throughput samples")
}

// TestWriteHTMLRoundsRepeated: repeated rounds get whiskers in the round
// charts and a min-max row under each round.
func TestWriteHTMLRoundsRepeated(t *testing.T) {
	r := repeated(roundsReport())
	out := checkHTML(t, r, 2)
	assert.Contains(t, out, "; runs ")
	assert.Contains(t, out, `<tr class="spread"><td></td><td class="num">min-max</td>`)
	if d := os.Getenv("STRATA_REPORT_EXAMPLE"); d != "" {
		writeExample(t, d, "rounds-repeated.html", r)
	}
	var buf bytes.Buffer
	require.NoError(t, WriteTable(&buf, r))
	lineWith(t, buf.String(), "min-max", "-")
}
