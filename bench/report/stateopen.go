package report

import (
	"fmt"
	"html/template"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/strata-db/strata/bench"
)

// The statebackend workload in shared mode: its checkpoints by reference
// and its open-from-store step (bench.StateOpen).

// stateSharedSection is what a statebackend section shows in shared mode.
type stateSharedSection struct {
	Lead string
	// ByRef are the checkpoints by reference; Opens the opens to the
	// first Get, with the full restore for comparison; Reads the reads
	// compared with the local copies.
	ByRef, Opens, Reads [][]string
	// Curves charts readrandom after the opens, Zipf the zipfian reads.
	Curves, Zipf template.HTML
	// Requests are the first cold round's requests until each
	// instance's first Get.
	Requests []stateRequests
}

// stateRequests are one open's requests until its first Get.
type stateRequests struct {
	What string
	Rows [][]string
}

// stateByRefHeaders are the columns of the checkpoints-by-reference table.
var stateByRefHeaders = []string{"checkpoint", "time", "uploaded MiB", "new MiB", "registry MiB", "uploaded / (new + registry)",
	"shared by the DBs MiB", "their PUTs", "their DELETEs"}

// stateByRefShortHeaders are stateByRefHeaders for the terminal.
var stateByRefShortHeaders = []string{"ckpt", "time", "uploaded", "new", "registry", "up/(new+reg)", "shared", "PUTs", "DELETEs"}

// stateOpenHeaders are the columns of the opens table.
var stateOpenHeaders = []string{"open", "instance", "Open", "first Get", "Open + first Get", "GET", "PUT", "LIST", "DELETE", "MiB down"}

// stateReadHeaders are the columns of the reads table.
var stateReadHeaders = []string{"reads", "readers", "cache MiB", "round", "local files ops/s", "from the store ops/s", "store / local"}

// stateRequestHeaders are the columns of a requests table.
var stateRequestHeaders = []string{"start", "took", "request", "object", "offset", "length"}

// curveColors are the colors of the read phases' lines.
func curveColors(curves []bench.StateCurve) map[string]string {
	cold := []string{"#e4491c", "#f4a259", "#b8290f", "#e0b000", "#d6336c", "#7b4b2a"}
	out := map[string]string{}
	n := 0
	for _, c := range curves {
		switch {
		case c.Name == bench.CurveLocal, c.Name == bench.CurveZipfLocal:
			out[c.Name] = "#3f6fb5"
		case c.Name == bench.CurveWarmup:
			out[c.Name] = "#3d9a50"
		case c.Name == bench.CurveZipfShared:
			out[c.Name] = "#e4491c"
		default:
			out[c.Name] = cold[n%len(cold)]
			n++
		}
	}
	return out
}

// fmtMs writes a duration in milliseconds.
func fmtMs(d time.Duration) string {
	ms := d.Seconds() * 1000
	if ms < 10 {
		return strconv.FormatFloat(ms, 'f', 1, 64) + " ms"
	}
	return groupDigits(int64(ms+0.5)) + " ms"
}

// median returns the median of vs (the mean of the middle two for an
// even count); 0 for none.
func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// stateSharedLead describes the shared mode of sb.
func stateSharedLead(sb *bench.StateBackendResult) string {
	so := sb.Open
	lead := fmt.Sprintf("The instances kept their lower levels and finished value logs in their stores (SharedStore, a cache of %s) and checkpointed by reference. ",
		fmtSize(sb.SharedCache))
	if so == nil {
		return lead
	}
	lead += fmt.Sprintf("Then every instance's latest checkpoint (%s MiB in all) was opened from its store without downloading it "+
		"(OpenFromStore into an empty directory, a cache of %s), in %d cold rounds, each timed to Open's return and to its first Get; "+
		"after each round, readrandom (readers: %d) for %s over the instances. ",
		fmtMiB(so.StateBytes), fmtSize(so.CacheSize), countRounds(so), so.Readers, so.ReadTime)
	warmCache := "no bound on the cache"
	if so.WarmCache >= 0 {
		warmCache = "a cache of " + fmtSize(so.WarmCache)
	}
	if so.SkipLocal {
		return lead + fmt.Sprintf("Once more with a warm-up of %s MiB/s and %s (it ended after %s, %s MiB cached); "+
			"then zipfian reads (readers: %d) with each instance's cache a tenth of its state. No local copy of the state "+
			"(--open_skip_local): nothing compared with one.",
			fmtMiB(so.Warmup), warmCache, fmtElapsed(so.WarmupTime), fmtMiB(so.WarmedBytes), zipfReaders(so))
	}
	return lead + fmt.Sprintf("Once more with a warm-up of %s MiB/s and %s, and once it ended "+
		"(%s, %s MiB cached), readrandom against a local copy of the same state (restored in full and opened from local files), "+
		"round by round; then zipfian reads (readers: %d) with each instance's cache a tenth of its state, against the local copy.",
		fmtMiB(so.Warmup), warmCache, fmtElapsed(so.WarmupTime), fmtMiB(so.WarmedBytes), zipfReaders(so))
}

func countRounds(so *bench.StateOpen) int {
	n := 0
	for _, o := range so.Opens {
		n = max(n, o.Round)
	}
	return n
}

func zipfReaders(so *bench.StateOpen) int {
	for _, r := range so.Reads {
		if r.Name == bench.ReadsZipfSmall {
			return r.Readers
		}
	}
	return 0
}

// stateByRefRows are the checkpoints of sb as checkpoints by reference.
func stateByRefRows(sb *bench.StateBackendResult) [][]string {
	var rows [][]string
	for _, c := range sb.Checkpoints {
		ratio := "-"
		if d := c.NewBytes + c.RegistryBytes; d > 0 {
			ratio = strconv.FormatFloat(float64(c.UploadedBytes)/float64(d), 'f', 3, 64)
		}
		rows = append(rows, []string{strconv.Itoa(c.Index + 1), fmtMs(c.Duration), fmtMiB(c.UploadedBytes), fmtMiB(c.NewBytes),
			fmtMiB(c.RegistryBytes), ratio, fmtMiB(c.Shared.PutBytes), groupDigits(c.Shared.Puts), groupDigits(c.Shared.Deletes)})
	}
	return rows
}

// stateOpenRows are the opens of so, then the full restore of sb for
// comparison.
func stateOpenRows(sb *bench.StateBackendResult) [][]string {
	var rows [][]string
	for _, o := range sb.Open.Opens {
		what := "cold " + strconv.Itoa(o.Round)
		if o.Warmup {
			what = "with warm-up"
		}
		rows = append(rows, []string{what, strconv.Itoa(o.Instance), fmtMs(o.Open), fmtMs(o.FirstGet), fmtMs(o.Total()),
			groupDigits(o.Store.Gets), groupDigits(o.Store.Puts), groupDigits(o.Store.Lists), groupDigits(o.Store.Deletes), fmtMiB(o.Store.GetBytes)})
	}
	if r := sb.Restore; r.Duration > 0 && sb.OldInstances > 0 {
		per := r.Duration / time.Duration(sb.OldInstances)
		rows = append(rows, []string{"full restore, then Open", "each (mean)", "", "", fmtMs(per), groupDigits(r.Store.Gets / int64(sb.OldInstances)),
			"", "", "", fmtMiB(r.Store.GetBytes / int64(sb.OldInstances))})
	}
	return rows
}

// stateReadRows are the reads of so compared, round by round, each with
// a last row of medians.
func stateReadRows(so *bench.StateOpen) [][]string {
	var rows [][]string
	for _, r := range so.Reads {
		var ratios []float64
		cache := "no bound"
		if r.CacheSize >= 0 {
			cache = fmtMiB(r.CacheSize)
		}
		for i := range r.Shared {
			local, ratio := "-", "-"
			if i < len(r.Local) && r.Local[i] > 0 {
				q := r.Shared[i] / r.Local[i]
				ratios = append(ratios, q)
				local, ratio = fmtRate(r.Local[i]), fmtRatio(q)
			}
			rows = append(rows, []string{r.Name, strconv.Itoa(r.Readers), cache, strconv.Itoa(i + 1), local, fmtRate(r.Shared[i]), ratio})
		}
		if len(r.Shared) > 1 {
			local, ratio := "-", "-"
			if len(ratios) > 0 {
				local, ratio = fmtRate(median(r.Local)), fmtRatio(median(ratios))
			}
			rows = append(rows, []string{r.Name, strconv.Itoa(r.Readers), cache, "median", local, fmtRate(median(r.Shared)), ratio})
		}
	}
	return rows
}

// stateRequestsOf are the requests of the first cold round's opens.
func stateRequestsOf(so *bench.StateOpen) []stateRequests {
	var out []stateRequests
	for _, o := range so.Opens {
		if o.Round != 1 {
			continue
		}
		sr := stateRequests{What: fmt.Sprintf("instance %d, cold 1: %d requests until the first Get returned (%s)", o.Instance, len(o.Requests), fmtMs(o.Total()))}
		for _, q := range o.Requests {
			off, length := "", ""
			if q.Op == "GET" {
				off, length = groupDigits(q.Offset), groupDigits(q.Length)
				if q.Length < 0 {
					length = "to the end"
				}
			}
			sr.Rows = append(sr.Rows, []string{fmtMs(q.Start), fmtMs(q.Duration), q.Op, q.Object, off, length})
		}
		out = append(out, sr)
	}
	return out
}

// requestSummary sums the requests of an open up by kind of object:
// "GET registry 2, PUT refs/ 24, GET data/ 3".
func requestSummary(reqs []bench.StoreRequest) string {
	type key struct{ op, kind string }
	var order []key
	n := map[key]int{}
	for _, q := range reqs {
		kind := q.Object
		if i := strings.IndexByte(kind, '/'); i >= 0 {
			kind = kind[:i+1]
		}
		k := key{q.Op, kind}
		if n[k] == 0 {
			order = append(order, k)
		}
		n[k]++
	}
	var parts []string
	for _, k := range order {
		parts = append(parts, fmt.Sprintf("%s %s %d", k.op, k.kind, n[k]))
	}
	return strings.Join(parts, ", ")
}

// stateSharedOf builds the shared-mode part of a statebackend section;
// nil when sb did not run in shared mode.
func stateSharedOf(sb *bench.StateBackendResult) *stateSharedSection {
	if sb.SharedCache <= 0 {
		return nil
	}
	sec := &stateSharedSection{Lead: stateSharedLead(sb), ByRef: stateByRefRows(sb)}
	so := sb.Open
	if so == nil {
		return sec
	}
	sec.Opens = stateOpenRows(sb)
	sec.Reads = stateReadRows(so)
	sec.Requests = stateRequestsOf(so)
	colors := curveColors(so.Curves)
	var uniform, zipf []series
	for _, c := range so.Curves {
		se := series{engine: c.Name, points: c.Samples}
		if c.Name == bench.CurveZipfLocal || c.Name == bench.CurveZipfShared {
			zipf = append(zipf, se)
		} else {
			uniform = append(uniform, se)
		}
	}
	sec.Curves = lineChart("statebackend: readrandom after opening from the store", "ops/s", uniform, colors)
	sec.Zipf = lineChart("statebackend: zipfian reads, a tenth of the state cached", "ops/s", zipf, colors)
	return sec
}

// writeStateShared writes the shared-mode figures of sb for the terminal.
func writeStateShared(b *strings.Builder, indent, gap string, sb *bench.StateBackendResult) {
	sec := stateSharedOf(sb)
	if sec == nil {
		return
	}
	b.WriteString(wrap(indent+sec.Lead, tableWidth, indent+"  "))
	b.WriteString(indent + "checkpoints by reference (MiB; shared: what the databases uploaded themselves since the previous checkpoint):\n")
	writeAligned(b, indent, gap, append([][]string{stateByRefShortHeaders}, sec.ByRef...))
	so := sb.Open
	if so == nil {
		return
	}
	b.WriteString(indent + "opens from the store (requests until the first Get returned):\n")
	writeAligned(b, indent, gap, append([][]string{stateOpenHeaders}, sec.Opens...))
	for _, o := range so.Opens {
		if o.Round == 1 {
			b.WriteString(wrap(fmt.Sprintf("%sinstance %d, cold 1: %s", indent, o.Instance, requestSummary(o.Requests)), tableWidth, indent+"  "))
		}
	}
	b.WriteString(indent + "reads after opening (ops/s over the whole phase):\n")
	var curves [][]string
	for _, c := range so.Curves {
		var per []string
		for _, s := range c.Samples {
			per = append(per, fmtCompact(s.OpsPerSec))
		}
		curves = append(curves, []string{c.Name, fmtRate(c.OpsPerSec), groupDigits(c.Gets), groupDigits(c.Compactions), strings.Join(per, " ")})
	}
	writeAligned(b, indent, gap, append([][]string{{"phase", "ops/s", "GETs", "compactions", "ops/s each second"}}, curves...))
	b.WriteString(indent + "reads compared with the local copy:\n")
	writeAligned(b, indent, gap, append([][]string{stateReadHeaders}, sec.Reads...))
}
