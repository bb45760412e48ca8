package bench

import (
	"cmp"
	"slices"
	"time"
)

// figure is one measured number of a Result, named by its JSON key.
type figure struct {
	key string
	get func(*Result) float64
	set func(*Result, float64)
}

func durationFigure(key string, f func(*Result) *time.Duration) figure {
	return figure{key,
		func(r *Result) float64 { return float64(*f(r)) },
		func(r *Result, v float64) { *f(r) = time.Duration(v) }}
}

func floatFigure(key string, f func(*Result) *float64) figure {
	return figure{key,
		func(r *Result) float64 { return *f(r) },
		func(r *Result, v float64) { *f(r) = v }}
}

func intFigure(key string, f func(*Result) *int64) figure {
	return figure{key,
		func(r *Result) float64 { return float64(*f(r)) },
		func(r *Result, v float64) { *f(r) = int64(v) }}
}

// figures are the numbers that vary from run to run, which Aggregate
// takes the median and spread of. The counts of the workload (ops, user
// and live bytes, reads) are the same in every run.
var figures = []figure{
	durationFigure("duration_ns", func(r *Result) *time.Duration { return &r.Duration }),
	floatFigure("ops_per_sec", func(r *Result) *float64 { return &r.OpsPerSec }),
	floatFigure("rows_per_sec", func(r *Result) *float64 { return &r.RowsPerSec }),
	floatFigure("mb_per_sec", func(r *Result) *float64 { return &r.MBPerSec }),
	durationFigure("p50_ns", func(r *Result) *time.Duration { return &r.P50 }),
	durationFigure("p95_ns", func(r *Result) *time.Duration { return &r.P95 }),
	durationFigure("p99_ns", func(r *Result) *time.Duration { return &r.P99 }),
	durationFigure("p999_ns", func(r *Result) *time.Duration { return &r.P999 }),
	intFigure("disk_written", func(r *Result) *int64 { return &r.DiskWritten }),
	floatFigure("write_amp", func(r *Result) *float64 { return &r.WriteAmp }),
	intFigure("engine_written", func(r *Result) *int64 { return &r.EngineWritten }),
	floatFigure("engine_write_amp", func(r *Result) *float64 { return &r.EngineWriteAmp }),
	intFigure("disk_size", func(r *Result) *int64 { return &r.DiskSize }),
	floatFigure("space_amp", func(r *Result) *float64 { return &r.SpaceAmp }),
	intFigure("disk_size_before_settle", func(r *Result) *int64 { return &r.DiskSizeBeforeSettle }),
	floatFigure("space_amp_before_settle", func(r *Result) *float64 { return &r.SpaceAmpBeforeSettle }),
	durationFigure("settle_ns", func(r *Result) *time.Duration { return &r.Settle }),
	durationFigure("open_settle_ns", func(r *Result) *time.Duration { return &r.OpenSettle }),
}

// Aggregate sums up the results of repeated runs of one spec: runs[i] are
// the results of repetition i, in the same order in every repetition (a
// repetition cut short has fewer). Each result is that of the run with the
// median throughput, its figures replaced by their medians over the runs
// that did not skip, with their minimum and maximum in Spread, and its
// latency buckets the sum of theirs. With one run the results are
// returned as they are.
func Aggregate(runs [][]Result) []Result {
	switch len(runs) {
	case 0:
		return nil
	case 1:
		return slices.Clone(runs[0])
	}
	n := 0
	for _, r := range runs {
		n = max(n, len(r))
	}
	out := make([]Result, n)
	for i := range out {
		var ran []*Result
		var first *Result
		for _, r := range runs {
			if i >= len(r) {
				continue
			}
			if first == nil {
				first = &r[i]
			}
			if !r[i].Skipped {
				ran = append(ran, &r[i])
			}
		}
		if len(ran) == 0 {
			out[i] = *first
			continue
		}
		out[i] = aggregateOne(ran)
	}
	return out
}

// aggregateOne sums up the runs of one benchmark on one engine.
func aggregateOne(ran []*Result) Result {
	rate := func(r *Result) float64 { return max(r.OpsPerSec, r.RowsPerSec) }
	byRate := slices.Clone(ran)
	slices.SortStableFunc(byRate, func(a, b *Result) int { return cmp.Compare(rate(a), rate(b)) })
	res := *byRate[(len(byRate)-1)/2] // the run of median throughput (the lower middle of an even count)
	res.Runs = len(ran)
	res.Spread = make(map[string]Range, len(figures))
	values := make([]float64, len(ran))
	for _, f := range figures {
		for j, r := range ran {
			values[j] = f.get(r)
		}
		slices.Sort(values)
		if values[0] == 0 && values[len(values)-1] == 0 {
			continue // not measured
		}
		f.set(&res, median(values))
		res.Spread[f.key] = Range{Min: values[0], Max: values[len(values)-1]}
	}
	res.Latency = mergeBuckets(ran)
	res.Counters = maxCounters(ran)
	return res
}

// median of sorted values.
func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// mergeBuckets adds up the runs' latency buckets (runs of one engine use
// the same bucket bounds).
func mergeBuckets(ran []*Result) []LatencyBucket {
	type bounds struct{ lo, hi time.Duration }
	counts := map[bounds]int64{}
	for _, r := range ran {
		for _, b := range r.Latency {
			counts[bounds{b.Lower, b.Upper}] += b.Count
		}
	}
	if len(counts) == 0 {
		return nil
	}
	out := make([]LatencyBucket, 0, len(counts))
	for b, c := range counts {
		out = append(out, LatencyBucket{Lower: b.lo, Upper: b.hi, Count: c})
	}
	slices.SortFunc(out, func(a, b LatencyBucket) int {
		return cmp.Or(cmp.Compare(a.Lower, b.Lower), cmp.Compare(a.Upper, b.Upper))
	})
	return out
}

// maxCounters is the largest of each engine count over the runs (nil when
// no run has any): for counts that should stay at zero, the worst run.
func maxCounters(ran []*Result) map[string]int64 {
	var out map[string]int64
	for _, r := range ran {
		for k, v := range r.Counters {
			if out == nil {
				out = map[string]int64{}
			}
			if old, ok := out[k]; !ok || v > old {
				out[k] = v
			}
		}
	}
	return out
}
