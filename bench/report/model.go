package report

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/strata-db/strata/bench"
)

// strataName is the engine every other engine is compared with. Its
// variants ("strata/passive": Strata with one value-log GC policy) are
// Strata too: highlighted like it, and the first of them that ran is the
// baseline when plain "strata" did not run.
const strataName = "strata"

// isStrata reports whether an engine is Strata or one of its variants.
func isStrata(engine string) bool {
	return engine == strataName || strings.HasPrefix(engine, strataName+"/")
}

var errNilReport = errors.New("report: nil report")

// model is a report grouped for rendering: benchmarks in spec order, and in
// each the results in engine order.
type model struct {
	report     *bench.Report
	engines    []string
	benchmarks []*group
}

// group is the results of one benchmark, or of one overwrite round.
type group struct {
	// name is the benchmark's, with the round for a round ("overwrite
	// round 2"); benchmark is the benchmark's alone.
	name      string
	benchmark string
	// round is the overwrite round (from 1), 0 for other benchmarks.
	round int
	// rows are the results in engine order (several for one engine keep
	// the order they appear in the report).
	rows []*bench.Result
	// rowsMetric says throughput is counted in rows read rather than in
	// operations (scans, when every engine that ran reported rows).
	rowsMetric bool
	// strata is the result the others are compared with: Strata's, or
	// the first Strata variant's in engine order, that ran with a positive
	// throughput.
	strata *bench.Result
}

// groupName names the group of a benchmark or round.
func groupName(benchmark string, round int) string {
	if round > 0 {
		return fmt.Sprintf("%s round %d", benchmark, round)
	}
	return benchmark
}

// newModel groups r's results. Benchmarks and engines that appear in results
// but not in the spec follow those in the spec, in order of appearance.
func newModel(r *bench.Report) *model {
	m := &model{report: r}
	m.engines = mergeOrder(r.Spec.Engines, r.Results, func(res *bench.Result) string { return res.Engine })
	specGroups := make([]string, len(r.Spec.Benchmarks))
	for i, b := range r.Spec.Benchmarks {
		specGroups[i] = groupName(b, r.Spec.RoundOf(i))
	}
	names := mergeOrder(specGroups, r.Results, func(res *bench.Result) string { return groupName(res.Benchmark, res.Round) })
	engineRank := make(map[string]int, len(m.engines))
	for i, e := range m.engines {
		engineRank[e] = i
	}
	byName := make(map[string]*group, len(names))
	for _, n := range names {
		g := &group{name: n, benchmark: n}
		byName[n] = g
		m.benchmarks = append(m.benchmarks, g)
	}
	for i := range r.Results {
		res := &r.Results[i]
		g := byName[groupName(res.Benchmark, res.Round)]
		g.benchmark, g.round = res.Benchmark, res.Round
		g.rows = append(g.rows, res)
	}
	for i, b := range r.Spec.Benchmarks {
		if g := byName[specGroups[i]]; len(g.rows) == 0 {
			g.benchmark, g.round = b, r.Spec.RoundOf(i)
		}
	}
	for _, g := range m.benchmarks {
		slices.SortStableFunc(g.rows, func(a, b *bench.Result) int {
			return engineRank[a.Engine] - engineRank[b.Engine]
		})
		g.rowsMetric = isScan(g.benchmark)
		ran := 0
		for _, res := range g.rows {
			if res.Skipped {
				continue
			}
			ran++
			if finite(res.RowsPerSec) <= 0 {
				g.rowsMetric = false
			}
		}
		if ran == 0 {
			g.rowsMetric = false
		}
		for _, res := range g.rows {
			if isStrata(res.Engine) && !res.Skipped && g.rate(res) > 0 {
				g.strata = res
				break
			}
		}
	}
	return m
}

// hasRounds reports whether the model has overwrite rounds.
func (m *model) hasRounds() bool {
	for _, g := range m.benchmarks {
		if g.round > 0 {
			return true
		}
	}
	return false
}

// baseline names the engine the group's ratios are to.
func (g *group) baseline() string {
	if g.strata == nil {
		return strataName
	}
	return g.strata.Engine
}

// mergeOrder returns first, without duplicates, followed by the names results
// carry that first lacks, in order of appearance.
func mergeOrder(first []string, results []bench.Result, name func(*bench.Result) string) []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range first {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for i := range results {
		if n := name(&results[i]); !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// isScan says whether a benchmark's throughput is better read in rows.
func isScan(benchmark string) bool {
	return benchmark == bench.SeekRandom || benchmark == bench.YCSBE
}

// unit is the name of the group's throughput unit.
func (g *group) unit() string {
	if g.rowsMetric {
		return "rows/s"
	}
	return "ops/s"
}

// rate is a result's throughput in the group's unit; 0 for skipped results.
func (g *group) rate(res *bench.Result) float64 {
	if res == nil || res.Skipped {
		return 0
	}
	if g.rowsMetric {
		return finite(res.RowsPerSec)
	}
	return finite(res.OpsPerSec)
}

// comparable reports whether res may enter a ratio: it ran, measured a
// throughput, and was not too short (bench.Result.TooShort).
func (g *group) comparable(res *bench.Result) bool {
	return g.rate(res) > 0 && !res.TooShort()
}

// vsStrata is res's throughput over Strata's, ok false when either is
// missing or too short.
func (g *group) vsStrata(res *bench.Result) (ratio float64, ok bool) {
	if g.strata == nil || !g.comparable(g.strata) || !g.comparable(res) {
		return 0, false
	}
	return g.rate(res) / g.rate(g.strata), true
}

// tooShort returns the group's results that ran but were too short, in
// engine order.
func (g *group) tooShort() []*bench.Result {
	var out []*bench.Result
	for _, res := range g.rows {
		if res.TooShort() {
			out = append(out, res)
		}
	}
	return out
}

// ratioRuns returns the repetitions a ratio of the baseline's throughput
// over peer's rests on (those where both ran and neither was too short)
// and the smallest and largest of the ratios of those runs alone. A run
// without repetitions rests on its one run.
func (m *model) ratioRuns(g *group, peer string) (n int, lo, hi float64) {
	if g.strata == nil {
		return 0, 0, 0
	}
	runs := m.report.Repeats
	if len(runs) == 0 {
		runs = [][]bench.Result{m.report.Results}
	}
	find := func(run []bench.Result, engine string) *bench.Result {
		for i := range run {
			if r := &run[i]; r.Engine == engine && r.Benchmark == g.benchmark && r.Round == g.round {
				return r
			}
		}
		return nil
	}
	for _, run := range runs {
		s, p := find(run, g.strata.Engine), find(run, peer)
		if s == nil || p == nil || !g.comparable(s) || !g.comparable(p) {
			continue
		}
		ratio := g.rate(s) / g.rate(p)
		if n == 0 || ratio < lo {
			lo = ratio
		}
		if n == 0 || ratio > hi {
			hi = ratio
		}
		n++
	}
	return n, lo, hi
}

// noStrata says why the group has no Strata throughput to compare with.
func (g *group) noStrata() string {
	for _, res := range g.rows {
		if isStrata(res.Engine) && !res.Skipped {
			return "strata measured no throughput"
		}
	}
	return "strata did not run"
}

// peerRatio is Strata's throughput over one peer's.
type peerRatio struct {
	engine string
	ratio  float64
}

// peers returns Strata's ratio to each peer that ran, in engine order, and to
// the fastest of them (best.engine empty when no peer ran).
//
// Results too short to compare (bench.Result.TooShort) are left out: a
// Strata result too short leaves no ratio at all.
func (g *group) peers() (all []peerRatio, best peerRatio) {
	if g.strata == nil || g.strata.TooShort() {
		return nil, peerRatio{}
	}
	s := g.rate(g.strata)
	bestRate := 0.0
	seen := map[string]bool{}
	for _, res := range g.rows {
		v := g.rate(res)
		if isStrata(res.Engine) || !g.comparable(res) || seen[res.Engine] {
			continue
		}
		seen[res.Engine] = true
		all = append(all, peerRatio{engine: res.Engine, ratio: s / v})
		if v > bestRate {
			bestRate = v
			best = peerRatio{engine: res.Engine, ratio: s / v}
		}
	}
	return all, best
}

// finite maps NaN and infinities to 0, so nothing downstream prints them.
func finite(f float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return f
}

// version is an engine's version as its first result that names one says,
// "" when none does.
func (m *model) version(engine string) string {
	for i := range m.report.Results {
		if res := &m.report.Results[i]; res.Engine == engine && res.EngineVersion != "" {
			return res.EngineVersion
		}
	}
	return ""
}
