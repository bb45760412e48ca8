package report

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/strata-db/strata/bench"
)

func TestWriteJSONRoundTrip(t *testing.T) {
	for _, r := range []*bench.Report{smallReport(), bigReport(), repeatedReport()} {
		var buf bytes.Buffer
		require.NoError(t, WriteJSON(&buf, r))
		assert.Contains(t, buf.String(), "\n  \"spec\": {", "indented")
		var back bench.Report
		require.NoError(t, json.Unmarshal(buf.Bytes(), &back))
		assert.Equal(t, r.Spec, back.Spec)
		assert.Equal(t, r.Machine, back.Machine)
		assert.True(t, r.Started.Equal(back.Started))
		assert.Equal(t, r.Results, back.Results)
		assert.Equal(t, r.Repeats, back.Repeats)
	}
}

// TestWriteJSONRepeated: a repeated run's JSON has each figure's spread,
// the runs it sums up, and each run's results.
func TestWriteJSONRepeated(t *testing.T) {
	r := repeatedReport()
	r.Results[0].Latency = []bench.LatencyBucket{{Lower: 1000, Upper: 1031, Count: 7}}
	var buf bytes.Buffer
	require.NoError(t, WriteJSON(&buf, r))
	out := buf.String()
	assert.Contains(t, out, `"runs": 3`)
	assert.Contains(t, out, `"ops_per_sec": {
          "min": 27900,
          "max": 34100
        }`)
	assert.Contains(t, out, `"latency_buckets": [
        {
          "lower_ns": 1000,
          "upper_ns": 1031,
          "count": 7
        }`)
	assert.Contains(t, out, `"repeats": [`)
	assert.Contains(t, out, `"engine_version": "devel"`)
}

func TestWriteJSONNonFinite(t *testing.T) {
	r := smallReport()
	r.Results[0].OpsPerSec = math.NaN()
	r.Results[0].Timeline[0].OpsPerSec = math.Inf(1)
	var buf bytes.Buffer
	require.NoError(t, WriteJSON(&buf, r))
	var back bench.Report
	require.NoError(t, json.Unmarshal(buf.Bytes(), &back))
	assert.Zero(t, back.Results[0].OpsPerSec)
	assert.Zero(t, back.Results[0].Timeline[0].OpsPerSec)
	assert.True(t, math.IsNaN(r.Results[0].OpsPerSec), "the report itself is unchanged")
	assert.True(t, math.IsInf(r.Results[0].Timeline[0].OpsPerSec, 1), "the report itself is unchanged")
}

func TestWriteJSONRounds(t *testing.T) {
	r := roundsReport()
	var buf bytes.Buffer
	require.NoError(t, WriteJSON(&buf, r))
	for _, field := range []string{`"rounds": [`, `"round": 3`, `"space_amp": 2`, `"space_amp_before_settle": `,
		`"disk_bytes": `, `"bytes_written": `, `"write_amp": `, `"engine_bytes_written": `, `"ops_per_sec": `,
		`"gc_policies": [`, `"overwrite_rounds": 3`} {
		assert.Contains(t, buf.String(), field)
	}
	var back bench.Report
	require.NoError(t, json.Unmarshal(buf.Bytes(), &back))
	assert.Equal(t, r.Spec, back.Spec)
	assert.Equal(t, r.Results, back.Results)
	assert.Equal(t, r.Rounds, back.Rounds)
	require.Len(t, back.Rounds, 6, "an entry per engine, rocksdb's empty")
	assert.Len(t, back.Rounds[0].Rounds, 3)
	assert.Empty(t, back.Rounds[5].Rounds)
	assert.Equal(t, "db_bench not found in PATH", back.Rounds[5].Note)

	r.Rounds[0].Rounds[1].SpaceAmp = math.NaN()
	r.Rounds[0].Timeline[0].OpsPerSec = math.Inf(1)
	buf.Reset()
	require.NoError(t, WriteJSON(&buf, r))
	require.NoError(t, json.Unmarshal(buf.Bytes(), &back))
	assert.Zero(t, back.Rounds[0].Rounds[1].SpaceAmp)
	assert.Zero(t, back.Rounds[0].Timeline[0].OpsPerSec)
	assert.True(t, math.IsNaN(r.Rounds[0].Rounds[1].SpaceAmp), "the report itself is unchanged")
}
