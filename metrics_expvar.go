package strata

import (
	"encoding/json"
	"expvar"
	"math"
	"time"
)

// Expvar returns the DB's metrics as an expvar.Var: a JSON object of the
// Metrics fields, read afresh each time the variable is read. Publish it
// under a name of your choosing (expvar.Publish panics on a name already
// taken, so the DB does not publish itself):
//
//	expvar.Publish("strata", db.Expvar())
//
// and it appears in /debug/vars next to the runtime's figures. Durations
// are in nanoseconds, as time.Duration marshals; a latency histogram
// appears as its count, sum, mean and percentiles and its non-empty
// buckets.
func (d *DB) Expvar() expvar.Var {
	return expvar.Func(func() any {
		m := d.Metrics()
		m.sanitizeFloats()
		return m
	})
}

// sanitizeFloats replaces values JSON cannot carry (NaN, infinities) by 0,
// so the export never fails.
func (m *Metrics) sanitizeFloats() {
	for _, f := range []*float64{&m.WriteAmp, &m.SpaceAmp, &m.GC.WriteAmp} {
		if math.IsNaN(*f) || math.IsInf(*f, 0) {
			*f = 0
		}
	}
	for i := range m.Levels {
		if s := m.Levels[i].Score; math.IsNaN(s) || math.IsInf(s, 0) {
			m.Levels[i].Score = 0
		}
	}
}

// MarshalJSON writes the histogram with its percentiles, for exports:
// {"count", "sum", "mean", "p50", "p90", "p99", "p999" (nanoseconds), and
// "buckets": [[lower, upper, count], ...]}.
func (h LatencyHistogram) MarshalJSON() ([]byte, error) {
	buckets := make([][3]uint64, len(h.Buckets))
	for i, b := range h.Buckets {
		buckets[i] = [3]uint64{uint64(b.Lower), uint64(b.Upper), b.Count}
	}
	return json.Marshal(struct {
		Count   uint64        `json:"count"`
		Sum     time.Duration `json:"sum"`
		Mean    time.Duration `json:"mean"`
		P50     time.Duration `json:"p50"`
		P90     time.Duration `json:"p90"`
		P99     time.Duration `json:"p99"`
		P999    time.Duration `json:"p999"`
		Buckets [][3]uint64   `json:"buckets"`
	}{h.Count, h.Sum, h.Mean(), h.Percentile(0.5), h.Percentile(0.9), h.Percentile(0.99), h.Percentile(0.999), buckets})
}
