package bench

import (
	"slices"
	"strings"
	"time"
)

// RoundSeries is one engine's overwrite rounds (see Spec.Rounds): how space
// and write amplification evolve as the same keys are overwritten again
// and again, which is what value-log garbage collection is judged by.
type RoundSeries struct {
	Engine string `json:"engine"`
	// Rounds has one entry per round that ran, in order.
	Rounds []Round `json:"rounds"`
	// Timeline is throughput over time through all the rounds: each
	// round's samples, offset by the durations of the rounds before it
	// (the untimed settles between rounds leave no gap).
	Timeline []Sample `json:"timeline,omitempty"`
	// Note says why rounds are missing (skipped), or what an engine could
	// not measure.
	Note string `json:"note,omitempty"`
}

// Round is what one overwrite round measured; every field is the round's
// Result's, named for the series.
type Round struct {
	Round     int           `json:"round"`
	OpsPerSec float64       `json:"ops_per_sec"`
	Duration  time.Duration `json:"duration_ns"`
	// UserBytes is the key and value bytes the round wrote; BytesWritten
	// what the process wrote to storage during it and its settle (its I/O
	// accounting), and WriteAmp their ratio.
	UserBytes    int64   `json:"user_bytes"`
	BytesWritten int64   `json:"bytes_written"`
	WriteAmp     float64 `json:"write_amp"`
	// EngineBytesWritten is the engine's own count, where it keeps one
	// (Result.EngineWritten).
	EngineBytesWritten int64   `json:"engine_bytes_written,omitempty"`
	EngineWriteAmp     float64 `json:"engine_write_amp,omitempty"`
	// DiskBytes is the size of the database directory after the round,
	// once the engine settled; LiveBytes the key and value bytes of the
	// live keys; SpaceAmp their ratio.
	DiskBytes int64   `json:"disk_bytes"`
	LiveBytes int64   `json:"live_bytes"`
	SpaceAmp  float64 `json:"space_amp"`
	// DiskBytesBeforeSettle and SpaceAmpBeforeSettle are measured right
	// after the round's last write (0: not measured).
	DiskBytesBeforeSettle int64   `json:"disk_bytes_before_settle,omitempty"`
	SpaceAmpBeforeSettle  float64 `json:"space_amp_before_settle,omitempty"`
	// Settle is how long the engine's background work took after the
	// round.
	Settle time.Duration `json:"settle_ns,omitempty"`
	// Spread is the round's Result.Spread: with repeated runs, each
	// figure's minimum and maximum, keyed by the Result's JSON names
	// ("ops_per_sec", "disk_written", "space_amp", ...).
	Spread map[string]Range `json:"spread,omitempty"`
}

// BuildRounds gathers the rounds of results into one series per engine, in
// the spec's engine order (then engines only results name). It returns nil
// when the spec has no rounds.
func BuildRounds(spec *Spec, results []Result) []RoundSeries {
	if spec.Rounds() == 0 {
		return nil
	}
	var engines []string
	for _, e := range spec.Engines {
		if !slices.Contains(engines, e) {
			engines = append(engines, e)
		}
	}
	for _, r := range results {
		if r.Round > 0 && !slices.Contains(engines, r.Engine) {
			engines = append(engines, r.Engine)
		}
	}
	var out []RoundSeries
	for _, e := range engines {
		se := RoundSeries{Engine: e, Rounds: []Round{}}
		var notes []string
		var offset time.Duration
		var rounds []Result
		for _, r := range results {
			if r.Engine == e && r.Round > 0 {
				rounds = append(rounds, r)
			}
		}
		if len(rounds) == 0 {
			continue
		}
		slices.SortStableFunc(rounds, func(a, b Result) int { return a.Round - b.Round })
		for _, r := range rounds {
			if n := strings.TrimSpace(r.Note); n != "" && !slices.Contains(notes, n) {
				notes = append(notes, n)
			}
			if r.Skipped {
				continue
			}
			se.Rounds = append(se.Rounds, Round{
				Round:                 r.Round,
				OpsPerSec:             r.OpsPerSec,
				Duration:              r.Duration,
				UserBytes:             r.UserBytes,
				BytesWritten:          r.DiskWritten,
				WriteAmp:              r.WriteAmp,
				EngineBytesWritten:    r.EngineWritten,
				EngineWriteAmp:        r.EngineWriteAmp,
				DiskBytes:             r.DiskSize,
				LiveBytes:             r.LiveBytes,
				SpaceAmp:              r.SpaceAmp,
				DiskBytesBeforeSettle: r.DiskSizeBeforeSettle,
				SpaceAmpBeforeSettle:  r.SpaceAmpBeforeSettle,
				Settle:                r.Settle,
				Spread:                r.Spread,
			})
			for _, s := range r.Timeline {
				s.Elapsed += offset
				se.Timeline = append(se.Timeline, s)
			}
			offset += r.Duration
		}
		se.Note = strings.Join(notes, "; ")
		out = append(out, se)
	}
	return out
}
