package report

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/strata-db/strata/bench"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stateReport is the statebackend workload on Strata, a peer skipped.
func stateReport() *bench.Report {
	spec := bench.DefaultSpec()
	spec.Engines = []string{"strata", "pebble"}
	spec.Benchmarks = []string{bench.StateBackend}
	spec.CheckpointEvery = 1000
	sb := &bench.StateBackendResult{MaxParallelism: 128, OldInstances: 2, NewInstances: 3, CheckpointEvery: 1000, Note: bench.StateBackendNote,
		StoreLatency: 20 * time.Millisecond, StoreBandwidth: 100 << 20,
		Restore: bench.StateTiming{Duration: 1500 * time.Millisecond, Keys: 3000, Bytes: 12 << 20,
			Store: bench.StoreStats{Gets: 29, GetBytes: 12 << 20}},
		Rescale: []bench.StateTiming{
			{Method: bench.RescaleReference, Duration: 400 * time.Millisecond, FirstGet: 190 * time.Millisecond, Keys: 3000,
				Store: bench.StoreStats{Gets: 31, Puts: 3}},
			{Method: bench.RescaleReference, From: 3, To: 2, Duration: 300 * time.Millisecond, FirstGet: 170 * time.Millisecond, Keys: 3000,
				FileBytes: 2 << 20, Store: bench.StoreStats{Gets: 27, Puts: 2}},
			{Method: bench.RescaleRestore, Duration: 2 * time.Second, Keys: 3000, Bytes: 20 << 20,
				Store: bench.StoreStats{Gets: 1234, GetBytes: 24 << 20}},
			{Method: bench.RescaleCopy, Duration: 5 * time.Second, Keys: 3000, Bytes: 13 << 20},
			{Method: bench.RescaleIngest, Skipped: true, Note: "failed: an example of a method that did not run"},
		}}
	for i := range 4 {
		sb.Checkpoints = append(sb.Checkpoints, bench.StateCheckpoint{Index: i, Ops: int64(i * 1000), Duration: time.Duration(100+i) * time.Millisecond,
			WrittenBytes: 4 << 20, UploadedBytes: int64(5+i) << 20, NewBytes: 4 << 20, ReuploadedBytes: int64(i) << 20,
			StoreBytes: int64(30+i) << 20, ReferencedBytes: 25 << 20, SpaceAmp: float64(30+i) / 25, Objects: 6 + i, ReferencedFiles: 40, Files: 30,
			Store: bench.StoreStats{Gets: 2, Puts: int64(4 - i%2), Lists: 4, Deletes: int64(i), Composes: int64(i % 2), PutBytes: int64(5+i) << 20,
				GetBytes: 16 << 10, CopiedBytes: int64(i) << 20}})
	}
	return &bench.Report{
		Spec:    spec,
		Machine: bench.Machine{GoVersion: "go1.26.8", OS: "linux", Arch: "amd64", CPUs: 2},
		Started: time.Date(2026, 3, 1, 12, 30, 0, 0, time.UTC),
		Results: []bench.Result{
			{Engine: "strata", Benchmark: bench.StateBackend, Ops: 3000, Duration: time.Second, OpsPerSec: 3000,
				UserBytes: 12 << 20, DiskSize: 14 << 20, LiveBytes: 12 << 20, SpaceAmp: 1.17, StateBackend: sb},
			{Engine: "pebble", Benchmark: bench.StateBackend, Skipped: true, Note: bench.StateBackendNote},
		},
	}
}

// TestWriteStateBackend: the table lists the checkpoints, the restore and
// every rescale method; the page charts the checkpoints; JSON keeps it all.
func TestWriteStateBackend(t *testing.T) {
	r := stateReport()
	var buf bytes.Buffer
	require.NoError(t, WriteTable(&buf, r))
	table := buf.String()
	lineWith(t, table, "pebble", "skipped: statebackend runs on Strata only")
	lineWith(t, table, "ckpt", "uploaded", "s-amp", "objects", "refd files")
	lineWith(t, table, "4", "3,000", "8.0", "1.32", "9", "40")
	lineWith(t, table, "full restore (2 instances)", "1.5s", "3,000")
	lineWith(t, table, "rescale 2 -> 3 by reference (first Get by 0.2s; tables and value logs written 0 MiB)", "0.4s", "3,000")
	lineWith(t, table, "rescale 3 -> 2 by reference (first Get by 0.2s; tables and value logs written 2.0 MiB)", "0.3s", "3,000")
	lineWith(t, table, "rescale 2 -> 3 by restore", "2.0s")
	lineWith(t, table, "rescale 2 -> 3 by copy", "5.0s")
	lineWith(t, table, "rescale 2 -> 3 by ingest", "skipped: failed: an example of a method that did not run")
	lineWith(t, table, "20ms added to every")
	lineWith(t, table, "100 MiB/s shared")
	lineWith(t, table, "GET", "PUT", "LIST", "DELETE", "COMPOSE", "up", "down", "copied")
	for _, want := range []string{
		"checkpoint 4 2 3 4 3 1 8.0 0.0 3.0",
		"full restore (2 instances) 29 0 0 0 0 0 12 0",
		"rescale 2 -> 3 by restore 1,234 0 0 0 0 0 24 0",
		"rescale 2 -> 3 by copy 0 0 0 0 0 0 0 0",
	} {
		found := false
		for _, l := range strings.Split(table, "\n") {
			found = found || strings.Join(strings.Fields(l), " ") == want
		}
		require.True(t, found, "no line reads %q in:\n%s", want, table)
	}

	out := checkHTML(t, r, 1)
	assert.Contains(t, out, `id="statebackend-0"`)
	assert.Contains(t, out, `aria-label="statebackend: uploaded bytes per checkpoint"`)
	assert.Contains(t, out, `aria-label="statebackend: store space amplification"`)
	assert.Contains(t, out, `aria-label="statebackend: store objects"`)
	assert.Contains(t, out, `aria-label="statebackend: checkpoint time"`)
	assert.Contains(t, out, "strata checkpoint 4: 1.32")
	assert.Contains(t, out, "rescale 2 -&gt; 3 by ingest")
	assert.Contains(t, out, "<th>COMPOSE</th>")
	assert.Contains(t, out, `<td class="num">checkpoint 4</td>`)
	if d := os.Getenv("STRATA_REPORT_EXAMPLE"); d != "" {
		writeExample(t, d, "statebackend.html", r)
	}

	buf.Reset()
	require.NoError(t, WriteJSON(&buf, r))
	var back bench.Report
	require.NoError(t, json.Unmarshal(buf.Bytes(), &back))
	require.Equal(t, r.Results[0].StateBackend, back.Results[0].StateBackend)
}

// TestStepChartLastLabel: with many steps, the last step's label does
// not crowd the one before it.
func TestStepChartLastLabel(t *testing.T) {
	l := roundLine{engine: "strata"}
	for i := 1; i <= 101; i++ {
		l.add(i, 1, bench.Range{}, false) // no y tick reads 100
	}
	out := string(stepChart("t", "u", "checkpoint", []roundLine{l}, map[string]string{"strata": "#e4491c"}, fmtCompact))
	assert.Contains(t, out, ">101</text>")
	assert.Contains(t, out, ">91</text>")
	assert.NotContains(t, out, ">100</text>")
}

// stateSharedReport is stateReport in shared mode, with its
// open-from-store step.
func stateSharedReport() *bench.Report {
	r := stateReport()
	sb := r.Results[0].StateBackend
	r.Spec.Config.SharedCache = 1 << 30
	sb.SharedCache = 1 << 30
	for i := range sb.Checkpoints {
		c := &sb.Checkpoints[i]
		c.UploadedBytes, c.NewBytes, c.RegistryBytes = 3<<20, 2<<20, 1<<20
		c.Shared = bench.StoreStats{Puts: 7, Deletes: 2, PutBytes: 40 << 20}
	}
	curve := func(name string, base float64) bench.StateCurve {
		c := bench.StateCurve{Name: name, Readers: 1, Ops: 1000, Duration: 3 * time.Second, OpsPerSec: base, Gets: 12}
		for s := 1; s <= 3; s++ {
			c.Samples = append(c.Samples, bench.Sample{Elapsed: time.Duration(s) * time.Second, OpsPerSec: base * float64(s)})
		}
		return c
	}
	sb.Open = &bench.StateOpen{StateBytes: 900 << 20, CacheSize: 1 << 30, Warmup: 256 << 20, WarmCache: -1, ReadTime: 3 * time.Second, Readers: 1,
		WarmupTime: 4 * time.Second, WarmedBytes: 900 << 20,
		Curves: []bench.StateCurve{curve(bench.CurveLocal, 30000), curve(bench.CurveCold+" 1", 200), curve(bench.CurveWarmup, 500),
			curve(bench.CurveZipfLocal, 90000), curve(bench.CurveZipfShared, 60000)},
		Reads: []bench.StateReads{
			{Name: bench.ReadsWarm, Readers: 1, CacheSize: -1, Local: []float64{30000, 31000, 32000}, Shared: []float64{29000, 28000, 33000}},
			{Name: bench.ReadsZipfSmall, Readers: 16, CacheSize: 45 << 20, Local: []float64{90000, 95000}, Shared: []float64{60000, 50000}},
		}}
	for i := range 2 {
		sb.Open.Opens = append(sb.Open.Opens, bench.StateOpenTiming{Round: 1, Instance: i, Open: 120 * time.Millisecond, FirstGet: 61 * time.Millisecond,
			Store: bench.StoreStats{Gets: 5, Puts: 24, GetBytes: 3 << 20},
			Requests: []bench.StoreRequest{{Op: "GET", Object: "registry", Length: -1, Duration: 20 * time.Millisecond},
				{Op: "PUT", Object: "refs/shared/0000000000000001/000004.vlog/i-2", Start: 21 * time.Millisecond, Duration: 20 * time.Millisecond},
				{Op: "GET", Object: "shared/0000000000000001/000007.sst", Offset: 1 << 20, Length: 1 << 20, Start: 130 * time.Millisecond, Duration: 21 * time.Millisecond}}})
	}
	sb.Open.Opens = append(sb.Open.Opens, bench.StateOpenTiming{Warmup: true, Open: 130 * time.Millisecond, FirstGet: 70 * time.Millisecond})
	return r
}

// TestWriteStateShared: in shared mode the table and the page show the
// checkpoints by reference, the opens with the full restore beside them,
// the reads compared round by round with their medians, and the requests
// before the first Get; the page charts the reads after the opens.
func TestWriteStateShared(t *testing.T) {
	r := stateSharedReport()
	var buf bytes.Buffer
	require.NoError(t, WriteTable(&buf, r))
	table := buf.String()
	lineWith(t, table, "checkpoints by reference")
	lineWith(t, table, "4", "101 ms", "3.0", "2.0", "1.0", "1.000", "40", "7", "2")
	lineWith(t, table, "cold 1", "1", "120 ms", "61 ms", "181 ms", "5", "24")
	lineWith(t, table, "with warm-up", "200 ms")
	lineWith(t, table, "full restore, then Open", "750 ms")
	lineWith(t, table, "instance 0, cold 1: GET registry 1, PUT refs/ 1, GET shared/ 1")
	lineWith(t, table, bench.CurveCold+" 1", "200", "12", "200 400 600")
	lineWith(t, table, bench.ReadsWarm, "no bound", "median", "31,000", "29,000", "0.97x")
	lineWith(t, table, "a warm-up of 256 MiB/s and no bound on the cache")
	lineWith(t, table, bench.ReadsZipfSmall, "16", "45", "2", "95,000", "50,000", "0.53x")
	lineWith(t, table, bench.ReadsZipfSmall, "median", "0.60x")
	lineWith(t, table, "zipfian reads (readers: 16)")

	out := checkHTML(t, r, 1)
	assert.Contains(t, out, `aria-label="statebackend: readrandom after opening from the store"`)
	assert.Contains(t, out, `aria-label="statebackend: zipfian reads, a tenth of the state cached"`)
	assert.Contains(t, out, "<th>first Get</th>")
	assert.Contains(t, out, "instance 1, cold 1: 3 requests until the first Get returned (181 ms)")
	assert.Contains(t, out, "shared/0000000000000001/000007.sst")
	assert.Contains(t, out, "shared-file cache 1 GiB")
	if d := os.Getenv("STRATA_REPORT_EXAMPLE"); d != "" {
		writeExample(t, d, "statebackend-shared.html", r)
	}

	// Without local copies: the store's figures alone.
	so := r.Results[0].StateBackend.Open
	so.SkipLocal, so.WarmCache = true, 1<<30
	so.Reads = []bench.StateReads{{Name: bench.ReadsZipfSmall, Readers: 16, CacheSize: 45 << 20, Shared: []float64{60000, 50000}}}
	buf.Reset()
	require.NoError(t, WriteTable(&buf, r))
	table = buf.String()
	lineWith(t, table, "a warm-up of 256 MiB/s and a cache of 1 GiB")
	assert.Contains(t, strings.Join(strings.Fields(table), " "), "No local copy of the state (--open_skip_local): nothing compared with one.")
	lineWith(t, table, bench.ReadsZipfSmall, "16", "45", "2", "-", "50,000", "-")
	lineWith(t, table, bench.ReadsZipfSmall, "median", "-", "55,000", "-")
	checkHTML(t, r, 1)

	// Without shared mode, none of it.
	buf.Reset()
	require.NoError(t, WriteTable(&buf, stateReport()))
	assert.NotContains(t, buf.String(), "checkpoints by reference")
}
