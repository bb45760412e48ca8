package report

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/strata-db/strata/bench"
)

// WriteJSON writes r as indented JSON: the spec, the machine, every result
// (with its latency histogram's buckets, "latency_buckets"; for a repeated
// run, "runs" and each figure's "spread" {"min", "max"}, and the runs'
// own results in "repeats"),
// and the overwrite rounds as one series per engine ("rounds": each with
// "engine", "rounds" of {"round", "ops_per_sec", "duration_ns",
// "user_bytes", "bytes_written", "write_amp", "engine_bytes_written",
// "engine_write_amp", "disk_bytes", "live_bytes", "space_amp",
// "disk_bytes_before_settle", "space_amp_before_settle", "settle_ns"},
// "timeline" and "note"; see bench.RoundSeries). Numbers JSON cannot carry
// (NaN and infinities) are written as 0; r itself is not changed.
func WriteJSON(w io.Writer, r *bench.Report) error {
	if r == nil {
		return errNilReport
	}
	out := *r
	out.Results = finiteResults(r.Results)
	if r.Repeats != nil {
		out.Repeats = make([][]bench.Result, len(r.Repeats))
		for i, run := range r.Repeats {
			out.Repeats[i] = finiteResults(run)
		}
	}
	if r.Rounds != nil {
		out.Rounds = make([]bench.RoundSeries, len(r.Rounds))
		for i, se := range r.Rounds {
			rounds := make([]bench.Round, len(se.Rounds))
			for j, rd := range se.Rounds {
				rd.OpsPerSec = finite(rd.OpsPerSec)
				rd.WriteAmp = finite(rd.WriteAmp)
				rd.EngineWriteAmp = finite(rd.EngineWriteAmp)
				rd.SpaceAmp = finite(rd.SpaceAmp)
				rd.SpaceAmpBeforeSettle = finite(rd.SpaceAmpBeforeSettle)
				rounds[j] = rd
			}
			se.Rounds = rounds
			se.Timeline = finiteSamples(se.Timeline)
			out.Rounds[i] = se
		}
	}
	out.Spec.ZipfTheta = finite(out.Spec.ZipfTheta)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&out); err != nil {
		return fmt.Errorf("report: writing JSON: %w", err)
	}
	return nil
}

// finiteResults returns a copy of results with non-finite figures as 0.
func finiteResults(results []bench.Result) []bench.Result {
	out := make([]bench.Result, len(results))
	for i, res := range results {
		res.OpsPerSec = finite(res.OpsPerSec)
		res.RowsPerSec = finite(res.RowsPerSec)
		res.MBPerSec = finite(res.MBPerSec)
		res.WriteAmp = finite(res.WriteAmp)
		res.EngineWriteAmp = finite(res.EngineWriteAmp)
		res.SpaceAmp = finite(res.SpaceAmp)
		res.SpaceAmpBeforeSettle = finite(res.SpaceAmpBeforeSettle)
		res.Timeline = finiteSamples(res.Timeline)
		if res.Spread != nil {
			spread := make(map[string]bench.Range, len(res.Spread))
			for k, v := range res.Spread {
				spread[k] = bench.Range{Min: finite(v.Min), Max: finite(v.Max)}
			}
			res.Spread = spread
		}
		out[i] = res
	}
	return out
}

// finiteSamples returns a copy of samples with non-finite rates as 0.
func finiteSamples(samples []bench.Sample) []bench.Sample {
	if len(samples) == 0 {
		return samples
	}
	out := make([]bench.Sample, len(samples))
	for i, s := range samples {
		s.OpsPerSec = finite(s.OpsPerSec)
		out[i] = s
	}
	return out
}
