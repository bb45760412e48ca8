package report

import (
	"fmt"
	"html/template"
	"strconv"
	"strings"

	"github.com/strata-db/strata/bench"
)

// stateSection is the statebackend workload of one Strata engine:
// checkpoints over time, restore and rescale times.
type stateSection struct {
	Anchor, Engine, Lead                  string
	Uploaded, SpaceAmp, Objects, Duration template.HTML
	Rows                                  [][]string
	Timings                               [][]string
	Store                                 [][]string
	Note                                  string
	// Shared is the shared mode's part (nil without it).
	Shared *stateSharedSection
}

// stateHeaders are the columns of the checkpoints table.
var stateHeaders = []string{"checkpoint", "overwrites", "written MiB", "uploaded MiB", "new MiB", "moved MiB", "moved in the store MiB",
	"store MiB", "referenced MiB", "s-amp", "objects", "referenced files", "files", "time"}

// stateShortHeaders are stateHeaders for the terminal.
var stateShortHeaders = []string{"ckpt", "ops", "written", "uploaded", "new", "moved", "in store", "store", "refd", "s-amp", "objects", "refd files", "files", "time"}

// stateStoreHeaders are the columns of the store requests table.
var stateStoreHeaders = []string{"", "GET", "PUT", "LIST", "DELETE", "COMPOSE", "MiB up", "MiB down", "MiB copied"}

// stateStoreShortHeaders are stateStoreHeaders for the terminal.
var stateStoreShortHeaders = []string{"", "GET", "PUT", "LIST", "DELETE", "COMPOSE", "up", "down", "copied"}

// stateResults returns the statebackend results that ran, in report order.
func stateResults(r *bench.Report) []*bench.Result {
	var out []*bench.Result
	for i := range r.Results {
		if res := &r.Results[i]; res.StateBackend != nil && !res.Skipped {
			out = append(out, res)
		}
	}
	return out
}

// stateLead describes the workload of sb.
func stateLead(spec *bench.Spec, sb *bench.StateBackendResult) string {
	return fmt.Sprintf("%s keys of %s in %d key groups over %d instances, %s overwrites, every instance checkpointed into a registry of its own "+
		"in one store, through a link of its own%s, "+
		"after the load and every %s overwrites (figures summed over the links); then a full restore of each instance's last checkpoint, "+
		"and a rescale from %d to %d instances by each method (by reference, and back). %s.",
		groupDigits(spec.Num), spec.Value.String(), sb.MaxParallelism, sb.OldInstances, groupDigits(spec.Num), stateStoreSpeed(sb),
		groupDigits(sb.CheckpointEvery), sb.OldInstances, sb.NewInstances, sb.Note)
}

// stateStoreSpeed says how slow the stores of sb were made, if they were.
func stateStoreSpeed(sb *bench.StateBackendResult) string {
	var what []string
	if sb.StoreS3 {
		what = append(what, "an S3 server")
	}
	if sb.StoreLatency > 0 {
		what = append(what, sb.StoreLatency.String()+" added to every request")
	}
	if sb.StoreBandwidth > 0 {
		what = append(what, fmtMiB(sb.StoreBandwidth)+" MiB/s shared by its requests")
	}
	if len(what) == 0 {
		return ""
	}
	return " (" + strings.Join(what, ", ") + ")"
}

// stateRows are the checkpoints of sb as table cells.
func stateRows(sb *bench.StateBackendResult) [][]string {
	var rows [][]string
	for _, c := range sb.Checkpoints {
		rows = append(rows, []string{
			strconv.Itoa(c.Index + 1), groupDigits(c.Ops), fmtMiB(c.WrittenBytes), fmtMiB(c.UploadedBytes), fmtMiB(c.NewBytes),
			fmtMiB(c.ReuploadedBytes), fmtMiB(c.ComposedBytes), fmtMiB(c.StoreBytes), fmtMiB(c.ReferencedBytes), fmtAmp(c.SpaceAmp),
			strconv.Itoa(c.Objects), strconv.Itoa(c.ReferencedFiles), strconv.Itoa(c.Files), fmtElapsed(c.Duration),
		})
	}
	return rows
}

// stateTimings are the restore and the rescales of sb: what, time, keys,
// MiB, or a note for a method that did not run.
func stateTimings(sb *bench.StateBackendResult) [][]string {
	row := func(what string, t bench.StateTiming) []string {
		if t.Skipped {
			return []string{what, "skipped: " + t.Note}
		}
		return []string{what, fmtElapsed(t.Duration), groupDigits(t.Keys), fmtMiB(t.Bytes)}
	}
	rows := [][]string{row(fmt.Sprintf("full restore (%d instances)", sb.OldInstances), sb.Restore)}
	for _, t := range sb.Rescale {
		rows = append(rows, row(rescaleName(sb, t), t))
	}
	return rows
}

// rescaleName names a rescale of sb: its instances and method, and for one
// by reference its slowest first Get and the table bytes it wrote.
func rescaleName(sb *bench.StateBackendResult, t bench.StateTiming) string {
	from, to := sb.OldInstances, sb.NewInstances
	if t.From > 0 {
		from, to = t.From, t.To
	}
	name := fmt.Sprintf("rescale %d -> %d by %s", from, to, t.Method)
	if t.FirstGet > 0 {
		name += fmt.Sprintf(" (first Get by %s; tables and value logs written %s MiB)", fmtElapsed(t.FirstGet), fmtMiB(t.FileBytes))
	}
	return name
}

// stateStoreRows are the requests each step of sb made of the stores:
// the checkpoints, the restore and the rescales that ran.
func stateStoreRows(sb *bench.StateBackendResult) [][]string {
	row := func(what string, st bench.StoreStats) []string {
		return []string{what, groupDigits(st.Gets), groupDigits(st.Puts), groupDigits(st.Lists), groupDigits(st.Deletes),
			groupDigits(st.Composes), fmtMiB(st.PutBytes), fmtMiB(st.GetBytes), fmtMiB(st.CopiedBytes)}
	}
	var rows [][]string
	for _, c := range sb.Checkpoints {
		rows = append(rows, row(fmt.Sprintf("checkpoint %d", c.Index+1), c.Store))
	}
	rows = append(rows, row(fmt.Sprintf("full restore (%d instances)", sb.OldInstances), sb.Restore.Store))
	for _, t := range sb.Rescale {
		if !t.Skipped {
			rows = append(rows, row(rescaleName(sb, t), t.Store))
		}
	}
	return rows
}

// stateSectionsOf builds the page's statebackend sections.
func stateSectionsOf(r *bench.Report, colors map[string]string) []stateSection {
	var out []stateSection
	for i, res := range stateResults(r) {
		sb := res.StateBackend
		sec := stateSection{Anchor: "statebackend-" + strconv.Itoa(i), Engine: res.Engine, Lead: stateLead(&r.Spec, sb),
			Rows: stateRows(sb), Timings: stateTimings(sb), Store: stateStoreRows(sb), Shared: stateSharedOf(sb)}
		up := roundLine{engine: res.Engine, what: "uploaded"}
		nw := roundLine{engine: res.Engine, dashed: true, what: "written since the last checkpoint"}
		amp := roundLine{engine: res.Engine}
		objs := roundLine{engine: res.Engine, what: "objects"}
		files := roundLine{engine: res.Engine, dashed: true, what: "files the retained checkpoints reference"}
		dur := roundLine{engine: res.Engine}
		for _, c := range sb.Checkpoints {
			x := c.Index + 1
			up.add(x, float64(c.UploadedBytes)/(1<<20), bench.Range{}, false)
			nw.add(x, float64(c.WrittenBytes)/(1<<20), bench.Range{}, false)
			amp.add(x, c.SpaceAmp, bench.Range{}, false)
			objs.add(x, float64(c.Objects), bench.Range{}, false)
			files.add(x, float64(c.ReferencedFiles), bench.Range{}, false)
			dur.add(x, c.Duration.Seconds()*1000, bench.Range{}, false)
		}
		mib := func(v float64) string { return fmtCompact(v) + " MiB" }
		sec.Uploaded = stepChart("statebackend: uploaded bytes per checkpoint", "MiB", "checkpoint", []roundLine{up, nw}, colors, mib)
		sec.SpaceAmp = stepChart("statebackend: store space amplification", "s-amp", "checkpoint", []roundLine{amp}, colors, fmtAmp)
		sec.Objects = stepChart("statebackend: store objects", "objects", "checkpoint", []roundLine{objs, files}, colors, fmtCompact)
		sec.Duration = stepChart("statebackend: checkpoint time", "ms", "checkpoint", []roundLine{dur}, colors,
			func(v float64) string { return fmtCompact(v) + " ms" })
		out = append(out, sec)
	}
	return out
}

// writeStateBackend writes the statebackend figures of the results that
// have them under their benchmark's table.
func writeStateBackend(b *strings.Builder, r *bench.Report, rows []*bench.Result) {
	const indent, gap = "  ", "  "
	for _, res := range rows {
		sb := res.StateBackend
		if sb == nil || res.Skipped {
			continue
		}
		b.WriteString(wrap(indent+res.Engine+": "+stateLead(&r.Spec, sb), tableWidth, indent+"  "))
		b.WriteString(indent + "checkpoints (sizes in MiB; refd: referenced by the retained checkpoints):\n")
		cells := append([][]string{stateShortHeaders}, stateRows(sb)...)
		writeAligned(b, indent, gap, cells)
		writeAligned(b, indent, gap, append([][]string{{"", "time", "keys", "MiB"}}, stateTimings(sb)...))
		b.WriteString(wrap(indent+"store requests per step (summed over the stores; MiB up: sent to them, down: read from them, "+
			"copied: by them from objects they held):", tableWidth, indent+"  "))
		writeAligned(b, indent, gap, append([][]string{stateStoreShortHeaders}, stateStoreRows(sb)...))
		writeStateShared(b, indent, gap, sb)
	}
}

// writeAligned writes rows of cells, the first left-aligned, the others
// right-aligned in columns as wide as their widest cell; a row of two
// cells whose second is a note is written as it is.
func writeAligned(b *strings.Builder, indent, gap string, rows [][]string) {
	var widths []int
	for _, row := range rows {
		if len(row) == 2 && strings.HasPrefix(row[1], "skipped") {
			continue
		}
		for i, c := range row {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], width(c))
		}
	}
	for _, row := range rows {
		var l strings.Builder
		l.WriteString(indent)
		for i, c := range row {
			pad := ""
			if i < len(widths) {
				pad = strings.Repeat(" ", max(widths[i]-width(c), 0))
			}
			switch {
			case i == 0:
				l.WriteString(c + pad)
			case len(row) == 2 && strings.HasPrefix(c, "skipped"):
				l.WriteString(gap + c)
			default:
				l.WriteString(gap + pad + c)
			}
		}
		b.WriteString(strings.TrimRight(l.String(), " ") + "\n")
	}
}
