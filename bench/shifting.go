package bench

import (
	"context"
)

// The shifting benchmarks are the phases of one workload whose value sizes
// and mix change midway, as a stream processor's state does over a job's
// life (list state grows, windows fill, a dashboard starts reading): run
// in order on one database, each phase is a benchmark of its own, so every
// phase gets its own row (throughput, bytes written, latency) and the
// threshold a separation policy chose is sampled on the timeline (see
// ThresholdReporter). They compare fixed thresholds with an adaptive one:
// kvbench --engines strata/t256,strata/t1k,strata/t4k,strata/inline,
// strata/adaptive --benchmarks shift-small,shift-large,shift-read,shift-scan.
//
// Every phase makes Num operations on the keys [0, Num) (a shift phase
// fills keys it has not seen yet before reading them, so no phase reads
// a key that does not exist).
const (
	ShiftSmall = "shift-small" // writes of 100-300 B values
	ShiftLarge = "shift-large" // writes of 4-12 KiB values
	ShiftRead  = "shift-read"  // 1-2 KiB values, 10% writes, 90% point reads
	ShiftScan  = "shift-scan"  // 1-3 KiB values, 10% writes, 90% scans of 20 rows
)

// ShiftBenchmarks are the shifting phases in their intended order.
var ShiftBenchmarks = []string{ShiftSmall, ShiftLarge, ShiftRead, ShiftScan}

// shiftPhase describes one phase.
type shiftPhase struct {
	value    ValueDist
	writePct int // the share of writes; the rest reads (or scans)
	scans    bool
}

var shiftPhases = map[string]shiftPhase{
	ShiftSmall: {ValueDist{Kind: "uniform", Min: 100, Max: 300}, 100, false},
	ShiftLarge: {ValueDist{Kind: "uniform", Min: 4 << 10, Max: 12 << 10}, 100, false},
	ShiftRead:  {ValueDist{Kind: "uniform", Min: 1 << 10, Max: 2 << 10}, 10, false},
	ShiftScan:  {ValueDist{Kind: "uniform", Min: 1 << 10, Max: 3 << 10}, 10, true},
}

// shiftScanRows is the length of a shift-scan scan.
const shiftScanRows = 20

// isShift reports whether name is a shifting phase.
func isShift(name string) bool {
	_, ok := shiftPhases[name]
	return ok
}

// planShift plans a shifting phase: one thread, Num operations over the
// keys [0, Num), uniform; reads and scans start at keys already written.
func planShift(spec *Spec, name string, st *keyState) workload {
	ph := shiftPhases[name]
	num := spec.Num
	return workload{threads: 1, total: num, run: func(ctx context.Context, eng Engine, t *thread) error {
		t.values = newValueSource(ph.value, spec.Seed^uint64(len(name))*0x9e37)
		return loop(ctx, num, func(int64) error {
			k := t.rng.Uint64N(uint64(num))
			if t.rng.IntN(100) < ph.writePct || !st.isLive(k) {
				return t.put(eng, st, k)
			}
			if ph.scans {
				return t.scan(eng, k, shiftScanRows)
			}
			return t.get(eng, k)
		})
	}}
}

// ThresholdReporter is implemented by engines whose separation threshold
// moves (Strata with an adaptive policy): the runner samples it on the
// timeline.
type ThresholdReporter interface {
	// SeparationThreshold returns the value size from which values are
	// separated now, in bytes (0: every value; -1: none).
	SeparationThreshold() int
}
