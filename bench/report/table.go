package report

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/strata-db/strata/bench"
)

// tableWidth is the width the table keeps within, in terminal cells.
const tableWidth = 110

// tableColumns are the headers of the per-benchmark tables; the second is
// replaced by the benchmark's throughput unit.
var tableColumns = []string{"engine", "ops/s", "MB/s", "p50", "p99", "written MiB", "w-amp", "disk MiB", "s-amp", "vs strata"}

// WriteTable writes r as plain-text tables, one per benchmark with a row per
// engine (and one for all overwrite rounds, with a row per engine and
// round), followed by a summary of Strata's throughput relative to each peer
// and the machine and spec the run used.
//
// Throughput is in operations per second, or in rows per second for
// seekrandom and ycsb-e when every engine reported rows. "vs strata" is an
// engine's throughput over Strata's in the same benchmark ("-" when Strata did
// not run it); the summary gives the inverse, Strata's over each peer's.
func WriteTable(w io.Writer, r *bench.Report) error {
	if r == nil {
		return errNilReport
	}
	m := newModel(r)
	var b strings.Builder

	// Cells for every row, so all tables share column widths.
	type row struct {
		cells []string
		note  string // for skipped results: replaces every cell but the engine
		// spread, for a result of several runs: each figure's minimum and
		// maximum, written under it.
		spread []string
	}
	rows := make([][]row, len(m.benchmarks))
	widths := make([]int, len(tableColumns))
	for i, h := range tableColumns {
		widths[i] = width(h)
	}
	widths[1] = max(widths[1], width("rows/s"))
	for gi, g := range m.benchmarks {
		for _, res := range g.rows {
			var rw row
			if res.Skipped {
				rw = row{cells: []string{res.Engine}, note: "skipped"}
				if res.Note != "" {
					rw.note += ": " + oneLine(res.Note)
				}
			} else {
				vs := "-"
				if ratio, ok := g.vsStrata(res); ok {
					vs = fmtRatio(ratio)
				} else if res.TooShort() {
					vs = "too short"
				}
				rw = row{cells: []string{
					res.Engine,
					fmtRate(g.rate(res)),
					fmtMBps(res.MBPerSec),
					fmtLatency(res.P50),
					fmtLatency(res.P99),
					fmtMiB(res.DiskWritten),
					fmtAmp(res.WriteAmp),
					fmtMiB(res.DiskSize),
					fmtAmp(res.SpaceAmp),
					vs,
				}}
				if res.Runs > 1 {
					rateKey := "ops_per_sec"
					if g.rowsMetric {
						rateKey = "rows_per_sec"
					}
					rw.spread = []string{
						"  min-max",
						spreadOf(res, rateKey, fmtCompact),
						spreadOf(res, "mb_per_sec", fmtCompact),
						spreadOf(res, "p50_ns", fmtNs),
						spreadOf(res, "p99_ns", fmtNs),
						spreadOf(res, "disk_written", fmtMiBf),
						spreadOf(res, "write_amp", fmtAmp),
						spreadOf(res, "disk_size", fmtMiBf),
						spreadOf(res, "space_amp", fmtAmp),
						"",
					}
				}
			}
			for i, c := range rw.cells {
				widths[i] = max(widths[i], width(c))
			}
			for i, c := range rw.spread {
				widths[i] = max(widths[i], width(c))
			}
			rows[gi] = append(rows[gi], rw)
		}
	}

	const indent, gap = "  ", "  "
	line := func(cells []string) {
		var l strings.Builder
		l.WriteString(indent)
		for i, c := range cells {
			if i > 0 {
				l.WriteString(gap)
			}
			pad := strings.Repeat(" ", max(widths[i]-width(c), 0))
			if i == 0 {
				l.WriteString(c)
				if i < len(cells)-1 {
					l.WriteString(pad)
				}
			} else {
				l.WriteString(pad + c)
			}
		}
		// Rows whose last cells are empty (ranges) end without padding.
		b.WriteString(strings.TrimRight(l.String(), " ") + "\n")
	}

	roundsDone := false
	for gi, g := range m.benchmarks {
		if gi > 0 && !(g.round > 0 && roundsDone) {
			b.WriteByte('\n')
		}
		if g.round > 0 {
			// One table for all rounds, where the first one ran.
			if !roundsDone {
				writeRounds(&b, r)
				roundsDone = true
			}
			continue
		}
		b.WriteString(g.name + "\n")
		header := append([]string(nil), tableColumns...)
		header[1] = g.unit()
		line(header)
		if len(rows[gi]) == 0 {
			b.WriteString(indent + "no results\n")
		}
		for _, rw := range rows[gi] {
			if rw.note == "" {
				line(rw.cells)
				if rw.spread != nil {
					line(rw.spread)
				}
				continue
			}
			lead := indent + rw.cells[0] + strings.Repeat(" ", max(widths[0]-width(rw.cells[0]), 0)) + gap
			b.WriteString(lead + truncate(rw.note, tableWidth-width(lead)) + "\n")
		}
		if short := g.tooShort(); len(short) > 0 {
			b.WriteString(wrap(indent+"note: too short to compare (under "+floorText()+"): "+shortList(short)+
				": shown, but left out of the ratios", tableWidth, indent+"  "))
		}
		writePerOp(&b, g.rows, widths[0])
		if g.name == bench.StateBackend {
			writeStateBackend(&b, r, g.rows)
		}
		for _, res := range g.rows {
			if l := ranNote(res); l != "" {
				b.WriteString(wrap(indent+"note: "+res.Engine+": "+l, tableWidth, indent+"  "))
			}
		}
	}

	b.WriteString("\n" + wrap("Strata vs peers (Strata's throughput over each peer's; above 1.00x Strata is faster; "+
		"in parentheses the runs each ratio rests on and the spread of their own ratios; phases under "+floorText()+
		" are too short and left out)", tableWidth, ""))
	for _, g := range m.benchmarks {
		if g.baseline() != strataName {
			b.WriteString(wrap(indent+"(where Strata ran only as variants, the first of them stands for it)", tableWidth, indent))
			break
		}
	}
	for _, g := range m.benchmarks {
		b.WriteString(wrap(indent+g.name+": "+summary(m, g), tableWidth, indent+"    "))
	}
	b.WriteByte('\n')
	machine := "machine: " + machineLine(&r.Machine)
	if !r.Started.IsZero() {
		machine += "; started " + r.Started.Format("2006-01-02 15:04:05 MST")
	}
	b.WriteString(wrap(machine, tableWidth, "    "))
	b.WriteString(wrap("spec: "+specLine(&r.Spec), tableWidth, "    "))
	if v := versionsLine(m); v != "" {
		b.WriteString(wrap("engines: "+v, tableWidth, "    "))
	}
	b.WriteString(wrap("engine settings: "+settingsLine(&r.Spec.Config), tableWidth, "    "))

	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("report: writing table: %w", err)
	}
	return nil
}

// ranNote is what a result that ran has to add below its benchmark's
// table: its note and the engine's counts, if any.
func ranNote(res *bench.Result) string {
	if res.Skipped {
		return ""
	}
	var parts []string
	if res.Note != "" {
		parts = append(parts, oneLine(res.Note))
	}
	if len(res.Counters) > 0 {
		names := slices.Sorted(maps.Keys(res.Counters))
		counts := make([]string, len(names))
		for i, n := range names {
			counts[i] = n + " " + strconv.FormatInt(res.Counters[n], 10)
		}
		parts = append(parts, strings.Join(counts, ", "))
	}
	return strings.Join(parts, "; ")
}

// summary says how Strata compares with each peer in one benchmark: each
// ratio with the runs it rests on and, over several, their spread; the
// results too short to compare are named instead.
func summary(m *model, g *group) string {
	if g.strata == nil {
		return g.noStrata()
	}
	if g.strata.TooShort() {
		return g.strata.Engine + " too short to compare (" + shortText(g.strata) + "; the floor is " + floorText() + ")"
	}
	all, best := g.peers()
	var short []*bench.Result
	for _, res := range g.tooShort() {
		if !isStrata(res.Engine) {
			short = append(short, res)
		}
	}
	if len(all) == 0 && len(short) == 0 {
		return "no peer ran"
	}
	parts := make([]string, len(all))
	single := true
	for i, p := range all {
		parts[i] = fmtRatio(p.ratio) + " " + p.engine
		switch n, lo, hi := m.ratioRuns(g, p.engine); {
		case n > 1:
			parts[i] += fmt.Sprintf(" (%d runs: %s-%s)", n, fmtRatio(lo), fmtRatio(hi))
			single = false
		case n == 1 && len(m.report.Repeats) > 0:
			parts[i] += " (1 run)"
		}
	}
	s := strings.Join(parts, ", ")
	if g.baseline() != strataName && s != "" {
		s = g.baseline() + " " + s
	}
	if len(all) > 1 {
		s += "; vs best (" + best.engine + "): " + fmtRatio(best.ratio)
	}
	if len(all) > 0 && single && len(m.report.Repeats) == 0 {
		s += "; 1 run each, no spread (--repeat)"
	}
	if len(short) > 0 {
		if s != "" {
			s += "; "
		}
		s += "too short to compare: " + shortList(short)
	}
	return s
}

// fmtSeconds writes a phase's duration in seconds: "0.02 s", "1 s", "12.5 s".
func fmtSeconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'g', 3, 64) + " s"
}

// floorText says what a too short phase is under.
func floorText() string {
	return fmt.Sprintf("%s or %s operations", fmtSeconds(bench.MinPhaseDuration), groupDigits(bench.MinPhaseOps))
}

// shortText says how short a result was.
func shortText(res *bench.Result) string {
	return fmt.Sprintf("%s ops in %s", groupDigits(res.Ops), fmtSeconds(res.Duration))
}

// shortList names results too short, each with how short.
func shortList(short []*bench.Result) string {
	parts := make([]string, len(short))
	for i, res := range short {
		parts[i] = res.Engine + " (" + shortText(res) + ")"
	}
	return strings.Join(parts, ", ")
}

// wrap breaks s at spaces into lines of at most n cells, continuing with
// indent, and ends every line with a newline. Leading spaces of s are kept.
func wrap(s string, n int, indent string) string {
	var b strings.Builder
	trimmed := strings.TrimLeft(s, " ")
	lead := s[:len(s)-len(trimmed)]
	cur := ""
	for _, wd := range strings.Fields(trimmed) {
		switch {
		case cur == "":
			cur = lead + wd
		case width(cur)+1+width(wd) <= n:
			cur += " " + wd
		default:
			b.WriteString(cur + "\n")
			cur = indent + wd
		}
	}
	b.WriteString(cur + "\n")
	return b.String()
}

// oneLine folds a possibly multi-line note into one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// roundColumns are the headers of the rounds table.
var roundColumns = []string{"engine", "round", "ops/s", "written MiB", "w-amp", "eng MiB", "disk MiB", "s-amp",
	"s-amp before", "settle"}

// writeRounds writes the overwrite rounds as one table: a row per engine
// and round, the engine named on its first row.
func writeRounds(b *strings.Builder, r *bench.Report) {
	const indent, gap = "  ", "  "
	all := roundsOf(r)
	b.WriteString(wrap("overwrite rounds: "+roundsLead(&r.Spec, r.Spec.Rounds()), tableWidth, indent))
	b.WriteString(wrap(indent+"s-amp = disk / live bytes once the engine settled after the round; s-amp before: right "+
		"after the round's last write; written: the process's I/O accounting, settle included; eng MiB: the "+
		"engine's own count", tableWidth, indent+"  "))
	type row struct {
		cells []string
		note  string
	}
	var rows []row
	widths := make([]int, len(roundColumns))
	for i, h := range roundColumns {
		widths[i] = width(h)
	}
	for _, se := range all {
		if len(se.Rounds) == 0 {
			note := "no rounds ran"
			if se.Note != "" {
				note += ": " + oneLine(se.Note)
			}
			rows = append(rows, row{cells: []string{se.Engine}, note: note})
			widths[0] = max(widths[0], width(se.Engine))
			continue
		}
		for i, rd := range se.Rounds {
			name := ""
			if i == 0 {
				name = se.Engine
			}
			cells := []string{
				name,
				strconv.Itoa(rd.Round),
				fmtRate(rd.OpsPerSec),
				fmtMiB(rd.BytesWritten),
				fmtAmp(rd.WriteAmp),
				fmtMiBOrDash(rd.EngineBytesWritten),
				fmtMiB(rd.DiskBytes),
				fmtAmp(rd.SpaceAmp),
				fmtAmp(rd.SpaceAmpBeforeSettle),
				fmtSettle(rd.Settle),
			}
			for j, c := range cells {
				widths[j] = max(widths[j], width(c))
			}
			rows = append(rows, row{cells: cells})
			if len(rd.Spread) > 0 {
				sp := func(key string, f func(float64) string) string { return spreadIn(rd.Spread, key, f) }
				cells := []string{"", "min-max", sp("ops_per_sec", fmtCompact), sp("disk_written", fmtMiBf),
					sp("write_amp", fmtAmp), sp("engine_written", fmtMiBf), sp("disk_size", fmtMiBf),
					sp("space_amp", fmtAmp), sp("space_amp_before_settle", fmtAmp), sp("settle_ns", fmtNsSettle)}
				for j, c := range cells {
					widths[j] = max(widths[j], width(c))
				}
				rows = append(rows, row{cells: cells})
			}
		}
	}
	line := func(cells []string) {
		var l strings.Builder
		l.WriteString(indent)
		for i, c := range cells {
			if i > 0 {
				l.WriteString(gap)
			}
			pad := strings.Repeat(" ", max(widths[i]-width(c), 0))
			if i == 0 {
				l.WriteString(c)
				if i < len(cells)-1 {
					l.WriteString(pad)
				}
			} else {
				l.WriteString(pad + c)
			}
		}
		b.WriteString(strings.TrimRight(l.String(), " ") + "\n")
	}
	line(roundColumns)
	if len(rows) == 0 {
		b.WriteString(indent + "no results\n")
	}
	for _, rw := range rows {
		if rw.note == "" {
			line(rw.cells)
			continue
		}
		lead := indent + rw.cells[0] + strings.Repeat(" ", max(widths[0]-width(rw.cells[0]), 0)) + gap
		b.WriteString(lead + truncate(rw.note, tableWidth-width(lead)) + "\n")
	}
	for _, se := range all {
		if se.Note != "" && len(se.Rounds) > 0 {
			b.WriteString(wrap(indent+"note: "+se.Engine+": "+oneLine(se.Note), tableWidth, indent+"  "))
		}
	}
}

// writePerOp writes, under a mix's table, each engine's latency by kind of
// operation (YCSB's reads and writes): the overall percentiles of a mix
// hide a slow kind behind a fast one.
func writePerOp(b *strings.Builder, rows []*bench.Result, engineWidth int) {
	header := false
	for _, res := range rows {
		if res.Skipped || len(res.PerOp) == 0 {
			continue
		}
		if !header {
			b.WriteString("  latency by operation (p50 / p99 / p99.9)\n")
			header = true
		}
		parts := make([]string, len(res.PerOp))
		for i, o := range res.PerOp {
			parts[i] = fmt.Sprintf("%s %s / %s / %s", o.Op, fmtLatency(o.P50), fmtLatency(o.P99), fmtLatency(o.P999))
		}
		pad := strings.Repeat(" ", max(engineWidth-width(res.Engine), 0))
		b.WriteString("  " + res.Engine + pad + "  " + strings.Join(parts, "   ") + "\n")
	}
}
