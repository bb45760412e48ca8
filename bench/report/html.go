package report

import (
	"fmt"
	"html/template"
	"io"
	"strconv"
	"strings"

	"github.com/strata-db/strata/bench"
)

// WriteHTML writes r as one self-contained HTML page: the spec and machine,
// a summary of Strata's throughput relative to each peer, and for every
// benchmark a throughput bar chart, a throughput-over-time line chart, bar
// charts of write and space amplification and a chart of latency
// percentiles, all inline SVG (with whiskers from min to max when the run
// was repeated); for
// overwrite rounds one section of per-round line charts (space
// amplification after and before settling, bytes written, throughput) and
// throughput over time through the rounds, with their numbers; then every
// number in a table. Engines keep one color throughout, Strata's the
// strongest. Missing data (skipped engines, no samples, nothing written)
// is drawn as a note rather than as a chart.
func WriteHTML(w io.Writer, r *bench.Report) error {
	if r == nil {
		return errNilReport
	}
	if err := pageTemplate.Execute(w, newPage(r)); err != nil {
		return fmt.Errorf("report: writing HTML: %w", err)
	}
	return nil
}

type page struct {
	Title      string
	Started    string
	Machine    string
	Spec       string
	Settings   string
	Versions   string
	Legend     []legendItem
	Peers      []string
	Summary    []summaryRow
	Benchmarks []section
	Rounds     *roundsSection
	State      []stateSection
	Table      []tableGroup
	Stats      []statsItem
}

// roundsSection is the overwrite rounds: their charts and numbers.
type roundsSection struct {
	Anchor, Lead                            string
	SpaceAmp, Written, Throughput, Timeline template.HTML
	Rows                                    []roundRow
	Notes                                   []string
}

type roundRow struct {
	Engine, Color string
	Strong        bool
	Skipped       string // why the engine has no rounds
	Cells         []string
	// Spread marks a row of min-max ranges under the round above it.
	Spread bool
}

// roundHeaders are the columns of the rounds table after the engine.
var roundHeaders = []string{"round", "ops/s", "time", "user MiB", "written MiB", "w-amp", "engine MiB", "engine w-amp",
	"disk MiB", "live MiB", "s-amp", "disk MiB before settle", "s-amp before settle", "settle"}

// roundsAnchor is the id of the rounds section.
const roundsAnchor = "rounds"

type legendItem struct {
	Name, Color string
	Strong      bool
}

type summaryRow struct {
	Benchmark, Anchor, Unit string
	Cells                   []summaryCell
	Best                    summaryCell
}

type summaryCell struct {
	Text, Color, Title string
}

type section struct {
	Name, Anchor, Unit, Lead string
	Throughput, Timeline     template.HTML
	WriteAmp, SpaceAmp       template.HTML
	Latency                  template.HTML
	// Runs is the number of repetitions the figures are medians of (0 or
	// 1: a single run).
	Runs int
}

type tableGroup struct {
	Benchmark, Anchor string
	Rows              []tableRow
}

type tableRow struct {
	Engine, Color string
	Strong        bool
	Skipped       string // the note of a skipped result
	Cells         []string
	// Spread, for a result of several runs, is each figure's min-max,
	// written in a row under Cells.
	Spread []string
}

type statsItem struct {
	Engine, Benchmark, Text string
}

// tableHeaders are the columns of the page's full table after the engine.
var tableHeaders = []string{"ops/s", "rows/s", "vs strata", "MB/s", "p50", "p95", "p99", "p99.9",
	"written MiB", "w-amp", "disk MiB", "s-amp", "user MiB", "live MiB", "found", "ops", "time"}

func newPage(r *bench.Report) *page {
	m := newModel(r)
	colors := palette(m.engines)
	p := &page{
		Title:    "Strata benchmark report",
		Machine:  machineLine(&r.Machine),
		Spec:     specLine(&r.Spec),
		Settings: settingsLine(&r.Spec.Config),
		Versions: versionsLine(m),
	}
	if !r.Started.IsZero() {
		p.Started = r.Started.Format("2006-01-02 15:04:05 MST")
	}
	for _, e := range m.engines {
		p.Legend = append(p.Legend, legendItem{Name: e, Color: colors[e], Strong: isStrata(e)})
		if !isStrata(e) {
			p.Peers = append(p.Peers, e)
		}
	}
	if m.hasRounds() {
		p.Rounds = roundsSectionOf(r, colors)
	}
	p.State = stateSectionsOf(r, colors)

	for i, g := range m.benchmarks {
		anchor := "b" + strconv.Itoa(i) + "-" + g.name
		if g.round > 0 {
			// Rounds have one section for all of them.
			anchor = roundsAnchor
		}
		p.Summary = append(p.Summary, summaryRowOf(g, anchor, p.Peers))
		if g.round == 0 {
			p.Benchmarks = append(p.Benchmarks, sectionOf(m, g, anchor, colors))
		}
		tg := tableGroup{Benchmark: g.name, Anchor: anchor}
		for _, res := range g.rows {
			tg.Rows = append(tg.Rows, tableRowOf(g, res, colors))
			if s := strings.TrimSpace(res.EngineStats); s != "" && !res.Skipped {
				p.Stats = append(p.Stats, statsItem{Engine: res.Engine, Benchmark: g.name, Text: s})
			}
		}
		p.Table = append(p.Table, tg)
	}
	return p
}

func summaryRowOf(g *group, anchor string, peers []string) summaryRow {
	row := summaryRow{Benchmark: g.name, Anchor: anchor, Unit: g.unit()}
	all, best := g.peers()
	byEngine := map[string]float64{}
	for _, pr := range all {
		byEngine[pr.engine] = pr.ratio
	}
	for _, e := range peers {
		ratio, ok := byEngine[e]
		if !ok {
			title := e + " did not run"
			for _, res := range g.tooShort() {
				if res.Engine == e {
					title = e + " too short to compare (" + shortText(res) + ")"
				}
			}
			switch {
			case g.strata == nil:
				title = g.noStrata()
			case g.strata.TooShort():
				title = g.strata.Engine + " too short to compare (" + shortText(g.strata) + ")"
			}
			row.Cells = append(row.Cells, summaryCell{Text: "-", Color: "#ffffff", Title: title})
			continue
		}
		row.Cells = append(row.Cells, summaryCell{
			Text:  fmtRatio(ratio),
			Color: ratioColor(ratio),
			Title: g.baseline() + "'s " + g.unit() + " over " + e + "'s",
		})
	}
	row.Best = summaryCell{Text: "-", Color: "#ffffff"}
	if best.engine != "" {
		row.Best = summaryCell{
			Text:  fmtRatio(best.ratio) + " " + best.engine,
			Color: ratioColor(best.ratio),
			Title: g.baseline() + "'s " + g.unit() + " over the fastest peer's",
		}
	}
	return row
}

func sectionOf(m *model, g *group, anchor string, colors map[string]string) section {
	sec := section{Name: g.name, Anchor: anchor, Unit: g.unit()}
	first := map[string]*bench.Result{}
	for _, res := range g.rows {
		if _, ok := first[res.Engine]; !ok {
			first[res.Engine] = res
		}
	}
	if all, best := g.peers(); best.engine != "" {
		sec.Lead = g.baseline() + " " + fmtRatio(best.ratio) + " the fastest peer (" + best.engine + ")"
		if len(all) == 1 {
			sec.Lead = g.baseline() + " " + fmtRatio(best.ratio) + " " + best.engine
		}
	} else if g.strata == nil {
		sec.Lead = g.noStrata()
	}

	var thr, wamp, samp []barItem
	var tl []series
	var lat []pctLine
	anyWrite, anySpace := false, false
	for _, e := range m.engines {
		res, ok := first[e]
		if !ok {
			continue
		}
		if res.Skipped {
			note := "skipped"
			if res.Note != "" {
				note += ": " + oneLine(res.Note)
			}
			it := barItem{engine: e, note: note}
			thr, wamp, samp = append(thr, it), append(wamp, it), append(samp, it)
			continue
		}
		rate := g.rate(res)
		it := barItem{engine: e, value: rate, label: fmtCompact(rate)}
		rateKey := "ops_per_sec"
		if g.rowsMetric {
			rateKey = "rows_per_sec"
		}
		it.lo, it.hi = spreadRange(res, rateKey)
		sec.Runs = max(sec.Runs, res.Runs)
		if rate <= 0 {
			it.label = "-"
		}
		if ratio, ok := g.vsStrata(res); ok && e != g.baseline() {
			it.aside = fmtRatio(ratio) + " " + g.baseline()
		}
		thr = append(thr, it)

		wa := finite(res.WriteAmp)
		anyWrite = anyWrite || wa > 0
		wi := barItem{engine: e, value: wa, label: fmtAmp(wa), aside: fmtMiB(res.DiskWritten) + " MiB written"}
		wi.lo, wi.hi = spreadRange(res, "write_amp")
		wamp = append(wamp, wi)
		sa := finite(res.SpaceAmp)
		anySpace = anySpace || sa > 0
		si := barItem{engine: e, value: sa, label: fmtAmp(sa), aside: fmtMiB(res.DiskSize) + " MiB on disk"}
		si.lo, si.hi = spreadRange(res, "space_amp")
		samp = append(samp, si)
		tl = append(tl, series{engine: e, points: res.Timeline})
		lat = append(lat, pctLineOf(res))
	}
	sec.Throughput = barChart(g.name+" throughput", thr, colors)
	sec.Timeline = lineChart(g.name+" throughput over time", "ops/s", tl, colors)
	sec.Latency = latencyChart(g.name+" latency percentiles", lat, colors)
	if anyWrite {
		sec.WriteAmp = barChart(g.name+" write amplification", wamp, colors)
	} else {
		sec.WriteAmp = placeholder("nothing written by the benchmark")
	}
	if anySpace {
		sec.SpaceAmp = barChart(g.name+" space amplification", samp, colors)
	} else {
		sec.SpaceAmp = placeholder("no disk size measured")
	}
	return sec
}

func tableRowOf(g *group, res *bench.Result, colors map[string]string) tableRow {
	row := tableRow{Engine: res.Engine, Color: colors[res.Engine], Strong: isStrata(res.Engine)}
	if res.Skipped {
		row.Skipped = "skipped"
		if res.Note != "" {
			row.Skipped += ": " + res.Note
		}
		return row
	}
	found := "-"
	if res.Reads > 0 {
		found = strconv.FormatFloat(100*float64(res.Found)/float64(res.Reads), 'f', 1, 64) + "%"
	}
	vs := "-"
	if ratio, ok := g.vsStrata(res); ok {
		vs = fmtRatio(ratio)
	}
	row.Cells = []string{
		fmtRate(res.OpsPerSec),
		fmtRate(res.RowsPerSec),
		vs,
		fmtMBps(res.MBPerSec),
		fmtLatency(res.P50),
		fmtLatency(res.P95),
		fmtLatency(res.P99),
		fmtLatency(res.P999),
		fmtMiB(res.DiskWritten),
		fmtAmp(res.WriteAmp),
		fmtMiB(res.DiskSize),
		fmtAmp(res.SpaceAmp),
		fmtMiB(res.UserBytes),
		fmtMiB(res.LiveBytes),
		found,
		groupDigits(res.Ops),
		fmtElapsed(res.Duration),
	}
	if res.Runs > 1 {
		ns := func(key string) string { return spreadOf(res, key, fmtNs) }
		row.Spread = []string{
			spreadOf(res, "ops_per_sec", fmtCompact), spreadOf(res, "rows_per_sec", fmtCompact), "",
			spreadOf(res, "mb_per_sec", fmtCompact),
			ns("p50_ns"), ns("p95_ns"), ns("p99_ns"), ns("p999_ns"),
			spreadOf(res, "disk_written", fmtMiBf), spreadOf(res, "write_amp", fmtAmp),
			spreadOf(res, "disk_size", fmtMiBf), spreadOf(res, "space_amp", fmtAmp),
			"", "", "", "", spreadOf(res, "duration_ns", fmtNsElapsed),
		}
	}
	return row
}

// spreadRange is a figure's minimum and maximum over repeated runs, 0, 0
// when the result has none.
func spreadRange(res *bench.Result, key string) (lo, hi float64) {
	r, ok := res.Spread[key]
	if !ok {
		return 0, 0
	}
	return finite(r.Min), finite(r.Max)
}

// pctLineOf is a result's latency percentiles for the latency chart.
func pctLineOf(res *bench.Result) pctLine {
	l := pctLine{engine: res.Engine, values: []float64{float64(res.P50), float64(res.P95), float64(res.P99), float64(res.P999)}}
	if res.Runs > 1 {
		for _, key := range []string{"p50_ns", "p95_ns", "p99_ns", "p999_ns"} {
			lo, hi := spreadRange(res, key)
			l.lo, l.hi = append(l.lo, lo), append(l.hi, hi)
		}
	}
	return l
}

// roundsOf is the report's rounds, built from its results when the report
// does not carry them.
func roundsOf(r *bench.Report) []bench.RoundSeries {
	if len(r.Rounds) > 0 {
		return r.Rounds
	}
	return bench.BuildRounds(&r.Spec, r.Results)
}

// roundsLead describes the rounds of a run.
func roundsLead(s *bench.Spec, rounds int) string {
	var before []string
	for i, b := range s.Benchmarks {
		if s.RoundOf(i) > 0 {
			break
		}
		before = append(before, b)
	}
	after := "on an empty database"
	if len(before) > 0 {
		after = "after " + strings.Join(before, ", ")
	}
	keys := s.KeyDist
	if keys == "" {
		keys = bench.KeyUniform
	}
	if keys == bench.KeyZipfian {
		keys += " " + strconv.FormatFloat(s.ZipfTheta, 'g', -1, 64)
	}
	return fmt.Sprintf("%d rounds of %s overwrites (%s keys), %s.", rounds, groupDigits(s.Num), keys, after)
}

func roundsSectionOf(r *bench.Report, colors map[string]string) *roundsSection {
	all := roundsOf(r)
	sec := &roundsSection{Anchor: roundsAnchor, Lead: roundsLead(&r.Spec, r.Spec.Rounds())}
	var samp, written, thr []roundLine
	var tl []series
	for _, se := range all {
		if se.Note != "" {
			sec.Notes = append(sec.Notes, se.Engine+": "+se.Note)
		}
		if len(se.Rounds) == 0 {
			skipped := "no rounds ran"
			if se.Note != "" {
				skipped += ": " + se.Note
			}
			sec.Rows = append(sec.Rows, roundRow{Engine: se.Engine, Color: colors[se.Engine], Strong: isStrata(se.Engine), Skipped: skipped})
			continue
		}
		after := roundLine{engine: se.Engine, what: "after settling"}
		before := roundLine{engine: se.Engine, dashed: true, what: "before settling"}
		proc := roundLine{engine: se.Engine, what: "I/O accounting"}
		own := roundLine{engine: se.Engine, dashed: true, what: "the engine's own count"}
		ops := roundLine{engine: se.Engine}
		for _, rd := range se.Rounds {
			sp, ok := rd.Spread["space_amp"]
			after.add(rd.Round, rd.SpaceAmp, sp, ok)
			if rd.SpaceAmpBeforeSettle > 0 {
				before.add(rd.Round, rd.SpaceAmpBeforeSettle, bench.Range{}, false)
			}
			w, ok := rd.Spread["disk_written"]
			proc.add(rd.Round, float64(rd.BytesWritten)/(1<<20), bench.Range{Min: w.Min / (1 << 20), Max: w.Max / (1 << 20)}, ok)
			if rd.EngineBytesWritten > 0 {
				own.add(rd.Round, float64(rd.EngineBytesWritten)/(1<<20), bench.Range{}, false)
			}
			o, ok := rd.Spread["ops_per_sec"]
			ops.add(rd.Round, rd.OpsPerSec, o, ok)
			sec.Rows = append(sec.Rows, roundRow{Engine: se.Engine, Color: colors[se.Engine], Strong: isStrata(se.Engine), Cells: []string{
				strconv.Itoa(rd.Round),
				fmtRate(rd.OpsPerSec),
				fmtElapsed(rd.Duration),
				fmtMiB(rd.UserBytes),
				fmtMiB(rd.BytesWritten),
				fmtAmp(rd.WriteAmp),
				fmtMiBOrDash(rd.EngineBytesWritten),
				fmtAmp(rd.EngineWriteAmp),
				fmtMiB(rd.DiskBytes),
				fmtMiB(rd.LiveBytes),
				fmtAmp(rd.SpaceAmp),
				fmtMiBOrDash(rd.DiskBytesBeforeSettle),
				fmtAmp(rd.SpaceAmpBeforeSettle),
				fmtSettle(rd.Settle),
			}})
			if len(rd.Spread) > 0 {
				sp := func(key string, f func(float64) string) string { return spreadIn(rd.Spread, key, f) }
				sec.Rows = append(sec.Rows, roundRow{Spread: true, Cells: []string{
					"min-max", sp("ops_per_sec", fmtCompact), sp("duration_ns", fmtNsElapsed), "",
					sp("disk_written", fmtMiBf), sp("write_amp", fmtAmp), sp("engine_written", fmtMiBf),
					sp("engine_write_amp", fmtAmp), sp("disk_size", fmtMiBf), "", sp("space_amp", fmtAmp),
					sp("disk_size_before_settle", fmtMiBf), sp("space_amp_before_settle", fmtAmp), sp("settle_ns", fmtNsSettle),
				}})
			}
		}
		samp = append(samp, after, before)
		written = append(written, proc, own)
		thr = append(thr, ops)
		tl = append(tl, series{engine: se.Engine, points: se.Timeline})
	}
	sec.SpaceAmp = roundChart("overwrite rounds: space amplification per round", "s-amp", samp, colors, fmtAmp)
	sec.Written = roundChart("overwrite rounds: bytes written per round", "MiB", written, colors,
		func(v float64) string { return fmtCompact(v) + " MiB" })
	sec.Throughput = roundChart("overwrite rounds: throughput per round", "ops/s", thr, colors,
		func(v float64) string { return fmtCompact(v) + " ops/s" })
	sec.Timeline = lineChart("overwrite rounds: throughput over time", "ops/s", tl, colors)
	return sec
}

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"headers":           func() []string { return tableHeaders },
	"span":              func() int { return len(tableHeaders) },
	"roundHeaders":      func() []string { return roundHeaders },
	"roundSpan":         func() int { return len(roundHeaders) },
	"stateHeaders":      func() []string { return stateHeaders },
	"stateStoreHeaders": func() []string { return stateStoreHeaders },
	"stateByRefHeaders": func() []string { return stateByRefHeaders },
	"stateOpenHeaders":  func() []string { return stateOpenHeaders },
	"stateReadHeaders":  func() []string { return stateReadHeaders },
	"stateReqHeaders":   func() []string { return stateRequestHeaders },
}).Parse(pageHTML))

const pageHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
:root { --fg: #18181b; --muted: #71717a; --line: #e4e4e7; --bg: #f4f4f5; --card: #ffffff; --strata: #e4491c; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 1200px; margin: 0 auto; padding: 24px 20px 48px; }
header h1 { margin: 0 0 6px; font-size: 24px; }
header h1 span { color: var(--strata); }
.meta { margin: 2px 0; color: #3f3f46; }
.meta b { display: inline-block; min-width: 5.5em; color: var(--muted); font-weight: 500; }
.legend-row { display: flex; flex-wrap: wrap; gap: 6px 16px; margin: 12px 0 0; }
.swatch { display: inline-block; width: 12px; height: 12px; border-radius: 2px; margin-right: 6px; vertical-align: -1px; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 16px 18px; margin: 18px 0; }
h2 { margin: 0 0 4px; font-size: 19px; }
h2 .unit { font-size: 13px; font-weight: 400; color: var(--muted); margin-left: 6px; }
.lead { margin: 0 0 10px; color: #3f3f46; }
nav { margin: 10px 0 0; font-size: 13px; }
nav a { margin-right: 12px; color: #3f6fb5; text-decoration: none; }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(480px, 1fr)); gap: 14px 22px; }
figure { margin: 0; min-width: 0; }
figcaption { font-size: 13px; font-weight: 600; color: #3f3f46; margin: 4px 0 4px; }
figcaption span { font-weight: 400; color: var(--muted); }
svg.chart { display: block; max-width: 100%; height: auto; font-family: inherit; }
svg .tick { font-size: 11px; fill: #52525b; }
svg .label, svg .value, svg .legend { font-size: 12px; fill: #27272a; }
svg .strong { font-weight: 700; fill: #000; }
svg .muted { font-size: 12px; fill: var(--muted); font-weight: 400; }
svg .italic { font-style: italic; }
table { border-collapse: collapse; width: 100%; font-size: 12px; }
th, td { padding: 3px 6px; border-bottom: 1px solid var(--line); white-space: nowrap; }
th { text-align: right; color: #3f3f46; font-weight: 600; background: #fafafa; }
th:first-child, td:first-child { text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.center { text-align: center; font-variant-numeric: tabular-nums; }
tr.strata td { font-weight: 600; }
tr.group td { background: #f4f4f5; font-weight: 700; padding-top: 8px; }
td a, tr.group a { color: inherit; text-decoration: none; }
td a:hover, nav a:hover { text-decoration: underline; }
td.skipped { color: var(--muted); font-style: italic; white-space: normal; }
.scroll { overflow-x: auto; }
details { margin: 6px 0; }
summary { cursor: pointer; }
pre { background: #fafafa; border: 1px solid var(--line); padding: 8px; overflow-x: auto; font-size: 12px; }
.note { color: var(--muted); font-size: 12.5px; margin: 8px 0 0; }
tr.spread td { color: var(--muted); font-size: 11px; border-bottom-style: dashed; padding-top: 0; }
tr.spread td:first-child { padding-left: 24px; }
</style>
</head>
<body>
<main>
<header>
<h1><span>Strata</span> benchmark report</h1>
{{if .Started}}<p class="meta"><b>started</b> {{.Started}}</p>{{end}}
<p class="meta"><b>machine</b> {{.Machine}}</p>
<p class="meta"><b>spec</b> {{.Spec}}</p>
<p class="meta"><b>settings</b> {{.Settings}} (every engine)</p>
{{if .Versions}}<p class="meta"><b>engines</b> {{.Versions}}</p>{{end}}
<div class="legend-row">{{range .Legend}}<span{{if .Strong}} style="font-weight:700"{{end}}><span class="swatch" style="background:{{.Color}}"></span>{{.Name}}</span>{{end}}</div>
<nav>{{range .Benchmarks}}<a href="#{{.Anchor}}">{{.Name}}</a>{{end}}{{if .Rounds}}<a href="#{{.Rounds.Anchor}}">overwrite rounds</a>{{end}}{{range .State}}<a href="#{{.Anchor}}">statebackend ({{.Engine}})</a>{{end}}<a href="#numbers">all numbers</a></nav>
</header>

<section class="card">
<h2>Strata vs peers</h2>
<p class="lead">Strata's throughput over each peer's in the same run: above 1.00x Strata is faster. Where Strata ran only as variants (strata/&lt;GC policy&gt;), the first of them stands for it.</p>
{{if .Peers}}<div class="scroll"><table>
<thead><tr><th>benchmark</th>{{range .Peers}}<th style="text-align:center">{{.}}</th>{{end}}<th style="text-align:center">vs fastest peer</th></tr></thead>
<tbody>{{range .Summary}}<tr><td><a href="#{{.Anchor}}">{{.Benchmark}}</a> <span style="color:#71717a">{{.Unit}}</span></td>{{range .Cells}}<td class="center" style="background:{{.Color}}" title="{{.Title}}">{{.Text}}</td>{{end}}<td class="center" style="background:{{.Best.Color}}" title="{{.Best.Title}}">{{.Best.Text}}</td></tr>
{{end}}</tbody></table></div>{{else}}<p class="note">No peers in this run.</p>{{end}}
</section>

{{range .Benchmarks}}<section class="card" id="{{.Anchor}}">
<h2>{{.Name}}<span class="unit">{{.Unit}}</span></h2>
{{if .Lead}}<p class="lead">{{.Lead}}</p>{{end}}
<div class="grid">
<figure><figcaption>Throughput <span>({{.Unit}}, ratio to strata)</span></figcaption>{{.Throughput}}</figure>
<figure><figcaption>Throughput over time <span>(ops/s per interval)</span></figcaption>{{.Timeline}}</figure>
<figure><figcaption>Write amplification <span>(bytes written to disk / user bytes)</span></figcaption>{{.WriteAmp}}</figure>
<figure><figcaption>Space amplification <span>(disk size / live bytes)</span></figcaption>{{.SpaceAmp}}</figure>
<figure><figcaption>Latency percentiles <span>(single operations{{if gt .Runs 1}}; median of {{.Runs}} runs, bars from min to max{{end}})</span></figcaption>{{.Latency}}</figure>
</div>
{{if gt .Runs 1}}<p class="note">Each figure is the median of {{.Runs}} runs, the engines taking turns in each; whiskers span the runs' minimum to maximum. Throughput over time is the run of median throughput.</p>{{end}}
</section>
{{end}}
{{with .Rounds}}<section class="card" id="{{.Anchor}}">
<h2>Overwrite rounds</h2>
<p class="lead">{{.Lead}} Space amplification is the size of the database directory over the live key and value bytes, measured after each round once the engine settled (solid lines; what is reported at the end) and right after the round's last write (dashed). Bytes written are the process's I/O accounting, the settle's writes included.</p>
<div class="grid">
<figure><figcaption>Space amplification per round <span>(disk / live; solid after settling, dashed before)</span></figcaption>{{.SpaceAmp}}</figure>
<figure><figcaption>Bytes written per round <span>(MiB; solid: I/O accounting, dashed: the engine's own count)</span></figcaption>{{.Written}}</figure>
<figure><figcaption>Throughput per round <span>(ops/s)</span></figcaption>{{.Throughput}}</figure>
<figure><figcaption>Throughput over time <span>(ops/s per interval, the rounds one after another)</span></figcaption>{{.Timeline}}</figure>
</div>
<div class="scroll" style="margin-top:12px"><table>
<thead><tr><th>engine</th>{{range roundHeaders}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>{{range .Rows}}{{if .Spread}}<tr class="spread"><td></td>{{range .Cells}}<td class="num">{{.}}</td>{{end}}</tr>
{{else}}<tr{{if .Strong}} class="strata"{{end}}><td><span class="swatch" style="background:{{.Color}}"></span>{{.Engine}}</td>{{if .Skipped}}<td class="skipped" colspan="{{roundSpan}}">{{.Skipped}}</td>{{else}}{{range .Cells}}<td class="num">{{.}}</td>{{end}}{{end}}</tr>
{{end}}{{end}}</tbody></table></div>
{{range .Notes}}<p class="note">{{.}}</p>
{{end}}</section>
{{end}}
{{range $st := .State}}<section class="card" id="{{.Anchor}}">
<h2>State backend: checkpoints, restore, rescale<span class="unit">{{.Engine}}</span></h2>
<p class="lead">{{.Lead}}</p>
<div class="grid">
<figure><figcaption>Uploaded per checkpoint <span>(MiB; solid: uploaded, dashed: key and value bytes written since the last checkpoint)</span></figcaption>{{.Uploaded}}</figure>
<figure><figcaption>Store space amplification <span>(bytes stored / bytes the retained checkpoints reference)</span></figcaption>{{.SpaceAmp}}</figure>
<figure><figcaption>Store objects <span>(solid: objects; dashed: tables and value logs the retained checkpoints reference, one object each without segments)</span></figcaption>{{.Objects}}</figure>
<figure><figcaption>Checkpoint time <span>(ms, every instance's one after the other)</span></figcaption>{{.Duration}}</figure>
</div>
<div class="scroll" style="margin-top:12px"><table>
<thead><tr><th></th><th>time</th><th>keys</th><th>MiB</th></tr></thead>
<tbody>{{range .Timings}}<tr>{{if eq (len .) 2}}<td>{{index . 0}}</td><td class="skipped" colspan="3">{{index . 1}}</td>{{else}}{{range .}}<td class="num">{{.}}</td>{{end}}{{end}}</tr>
{{end}}</tbody></table></div>
<div class="scroll" style="margin-top:12px"><table>
<thead><tr>{{range stateHeaders}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>{{range .Rows}}<tr>{{range .}}<td class="num">{{.}}</td>{{end}}</tr>
{{end}}</tbody></table></div>
<p class="note">Requests to the stores per step, summed over the stores: MiB up were sent to them, down read from them, copied by them from objects they held.</p>
<div class="scroll"><table>
<thead><tr>{{range stateStoreHeaders}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>{{range .Store}}<tr>{{range .}}<td class="num">{{.}}</td>{{end}}</tr>
{{end}}</tbody></table></div>
{{with .Shared}}<h2 style="margin-top:18px">State in the store: checkpoints by reference, open from the store<span class="unit">{{$st.Engine}}</span></h2>
<p class="lead">{{.Lead}}</p>
<p class="note">Checkpoints by reference: uploaded is everything a checkpoint sent; new the files the store did not hold (tables of the upper levels, value logs not shared yet); registry the registry that commits it (the manifests of the checkpoints it keeps); shared what the databases uploaded themselves, in the background, since the previous checkpoint.</p>
<div class="scroll"><table>
<thead><tr>{{range stateByRefHeaders}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>{{range .ByRef}}<tr>{{range .}}<td class="num">{{.}}</td>{{end}}</tr>
{{end}}</tbody></table></div>
{{if .Opens}}<div class="grid" style="margin-top:12px">
<figure><figcaption>Readrandom after opening from the store <span>(ops/s each second; cold rounds, with the warm-up, and the local copy)</span></figcaption>{{.Curves}}</figure>
<figure><figcaption>Zipfian reads, a tenth of the state cached <span>(ops/s each second, first round; the local copy for comparison)</span></figcaption>{{.Zipf}}</figure>
</div>
<p class="note">Opens from the store, each timed to OpenFromStore's return and then to its first Get; the requests are the instance's, from the call until the first Get returned. The full restore's time is per instance, its open included.</p>
<div class="scroll"><table>
<thead><tr>{{range stateOpenHeaders}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>{{range .Opens}}<tr>{{range .}}<td class="num">{{.}}</td>{{end}}</tr>
{{end}}</tbody></table></div>
<p class="note">Reads of the state opened from the store against the same state restored and opened from local files, round by round (the local copy first in each).</p>
<div class="scroll"><table>
<thead><tr>{{range stateReadHeaders}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>{{range .Reads}}<tr>{{range .}}<td class="num">{{.}}</td>{{end}}</tr>
{{end}}</tbody></table></div>
{{range .Requests}}<details><summary>{{.What}}</summary><div class="scroll"><table>
<thead><tr>{{range stateReqHeaders}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>{{range .Rows}}<tr>{{range .}}<td class="num">{{.}}</td>{{end}}</tr>
{{end}}</tbody></table></div></details>
{{end}}{{end}}{{end}}</section>
{{end}}
<section class="card" id="numbers">
<h2>All numbers</h2>
<p class="lead">Latencies are of single operations; MB is 10<sup>6</sup> bytes, MiB 2<sup>20</sup>; vs strata is the engine's throughput over Strata's.</p>
<div class="scroll"><table>
<thead><tr><th>engine</th>{{range headers}}<th>{{.}}</th>{{end}}</tr></thead>
{{range .Table}}<tbody>
<tr class="group"><td colspan="{{span}}"><a href="#{{.Anchor}}">{{.Benchmark}}</a></td><td></td></tr>
{{range .Rows}}<tr{{if .Strong}} class="strata"{{end}}><td><span class="swatch" style="background:{{.Color}}"></span>{{.Engine}}</td>{{if .Skipped}}<td class="skipped" colspan="{{span}}">{{.Skipped}}</td>{{else}}{{range .Cells}}<td class="num">{{.}}</td>{{end}}{{end}}</tr>
{{if .Spread}}<tr class="spread"><td>min-max</td>{{range .Spread}}<td class="num">{{.}}</td>{{end}}</tr>
{{end}}{{end}}</tbody>
{{end}}</table></div>
{{if .Stats}}<h2 style="margin-top:18px">Engine statistics</h2>
{{range .Stats}}<details><summary>{{.Engine}} after {{.Benchmark}}</summary><pre>{{.Text}}</pre></details>
{{end}}{{end}}
</section>
</main>
</body>
</html>
`
