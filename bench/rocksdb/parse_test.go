package rocksdb

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-db/strata/bench"
)

// The files in testdata are db_bench 7.8.3's stdout and report files,
// captured with the flags this package passes, in sequence on one database
// (num 2000, 16-byte keys, 200-byte values; readwhilewriting with two
// readers of 1,000,000 reads each; the blob fill on its own database: num
// 50000, 2000-byte values, 8 MiB memtables, min_blob_size 1024).
// readrandom.csv is the report file of a longer readrandom run (1,000,000
// reads). Only the database path was replaced.

func readTestdata(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return string(data)
}

func TestParseOutput(t *testing.T) {
	cases := []struct {
		file, bench, op string
		ops             int64
		opsPerSec       float64
		seconds         float64
		p50, p99, p999  float64
		found, tried    int64 // 0, 0: no found message
		writes          int64
		levels          string
	}{
		{file: "fillrandom.out", bench: "filluniquerandom", op: "write", ops: 2000, opsPerSec: 82925, seconds: 0.024,
			p50: 5, p99: 22, p999: 71, writes: 2000,
			levels: "no sstables; compactions since open: 0.00 GB written, 0.00 GB read"},
		{file: "readrandom.out", bench: "readrandom", op: "read", ops: 2000, opsPerSec: 1033057, seconds: 0.002,
			p50: 0.52, p99: 1.94, p999: 76, found: 2000, tried: 2000,
			levels: "no sstables; compactions since open: 0.00 GB written, 0.00 GB read"},
		{file: "seekrandom.out", bench: "seekrandom", op: "seek", ops: 20, opsPerSec: 26212, seconds: 0.001,
			p50: 22, p99: 903, p999: 903, found: 20, tried: 20,
			levels: "no sstables; compactions since open: 0.00 GB written, 0.00 GB read"},
		{file: "overwrite.out", bench: "overwrite", op: "write", ops: 2000, opsPerSec: 59324, seconds: 0.034,
			p50: 5.2, p99: 101.19, p999: 250, writes: 2000,
			levels: "no sstables; compactions since open: 0.00 GB written, 0.00 GB read"},
		// Two readers: the found message is one reader's; the writer wrote
		// "223K" keys (223000 to 223999).
		{file: "readwhilewriting.out", bench: "readwhilewriting", op: "read", ops: 2_000_000, opsPerSec: 625997, seconds: 3.195,
			p50: 1.36, p99: 5.6, p999: 48.65, found: 1_000_000, tried: 1_000_000, writes: 223_500,
			levels: "no sstables; compactions since open: 0.00 GB written, 0.00 GB read"},
		// The L0 row lists no file (it had flushes): left out.
		{file: "fillrandom-blob.out", bench: "filluniquerandom", op: "write", ops: 50000, opsPerSec: 74881, seconds: 0.668,
			p50: 8.6, p99: 60.42, p999: 330, writes: 50500,
			levels: "L6: 1 files, 1.40 MB; " +
				"Blob file count: 10, total size: 0.1 GB, garbage size: 0.0 GB, space amp: 1.0; " +
				"compactions since open: 0.13 GB written, 0.04 GB read"},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			out, err := parseOutput(readTestdata(t, c.file), c.bench)
			require.NoError(t, err)
			require.Equal(t, c.ops, out.ops)
			require.Equal(t, c.opsPerSec, out.opsPerSec)
			require.Equal(t, c.seconds, out.seconds)
			require.Len(t, out.hists, 1)
			h := out.hists[c.op]
			require.NotNil(t, h, "histogram of %s", c.op)
			require.Equal(t, c.ops, h.count)
			require.Equal(t, c.p50, h.get("P50", 50))
			require.Equal(t, c.p99, h.get("P99", 99))
			require.Equal(t, c.p999, h.get("P99.9", 99.9))
			require.Equal(t, c.tried > 0, out.hasFound)
			require.Equal(t, c.found, out.found)
			require.Equal(t, c.tried, out.tried)
			require.True(t, out.hasWrites)
			if c.writes > 0 {
				require.Equal(t, c.writes, out.writes)
			}
			require.Equal(t, c.levels, out.levels)
			require.True(t, out.assertions, "the Debian build warns about its assertions")

			// The interpolation reproduces every percentile db_bench
			// printed (to its two decimals), so P95 is computed alike.
			for name, p := range map[string]float64{"P50": 50, "P75": 75, "P99": 99, "P99.9": 99.9, "P99.99": 99.99} {
				require.InDelta(t, h.percentiles[name], h.percentile(p), 0.0051, "%s", name)
			}
			p95 := h.percentile(95)
			require.GreaterOrEqual(t, p95, h.percentiles["P75"])
			require.LessOrEqual(t, p95, h.percentiles["P99"])
		})
	}
}

// TestPercentileByHand checks P95 of the fillrandom histogram against a hand
// computation: of 2000 writes, the 1900th falls in (15, 22], where the
// running count goes from 1883 to 1980, so P95 = 15 + 7*(1900-1883)/97.
func TestPercentileByHand(t *testing.T) {
	out, err := parseOutput(readTestdata(t, "fillrandom.out"), "filluniquerandom")
	require.NoError(t, err)
	h := out.hists["write"]
	want := 15 + 7*float64(1900-1883)/97
	require.InDelta(t, want, h.percentile(95), 1e-9)
	require.Equal(t, micros(want), micros(h.get("P95", 95)))
	require.Equal(t, 16227*time.Nanosecond, micros(h.get("P95", 95))) // 16.2268 µs
}

func TestParseOutputErrors(t *testing.T) {
	_, err := parseOutput("", "readrandom")
	require.ErrorContains(t, err, "no result line for readrandom")
	// A result line of another benchmark does not count.
	_, err = parseOutput(readTestdata(t, "readrandom.out"), "overwrite")
	require.ErrorContains(t, err, "no result line for overwrite")
	bad := "Microseconds per read:\nCount: 1 Average: 1.0  StdDev: 0.00\nMin: 1  Median: 1.0000  Max: 1\n" +
		"Percentiles: P50: 1.00 P75: 1.00 P99: 1.00 P99.9: 1.00 P99.99: 1.00\n----\ngarbage here\n\n"
	_, err = parseOutput(bad, "readrandom")
	require.ErrorContains(t, err, `unexpected line "garbage here"`)
}

func TestWall(t *testing.T) {
	// Short run: seconds printed as 0.001, the rate is far more precise.
	o := &output{ops: 20, opsPerSec: 22446, seconds: 0.001}
	require.InDelta(t, float64(20)/22446, o.wall().Seconds(), 1e-9)
	// Long, slow run: the printed seconds are the more precise.
	o = &output{ops: 500, opsPerSec: 5, seconds: 100.123}
	require.Equal(t, 100123*time.Millisecond, o.wall())
	// No rate at all.
	o = &output{ops: 0, opsPerSec: 0, seconds: 2.5}
	require.Equal(t, 2500*time.Millisecond, o.wall())
}

func TestParseHuman(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "9999": 9999, "32K": 32500, "214K": 214500, "12M": 12_500_000, "3G": 3_500_000_000} {
		got, err := parseHuman(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	_, err := parseHuman("x1K")
	require.Error(t, err)
}

func TestParseReport(t *testing.T) {
	samples, err := parseReport(readTestdata(t, "readrandom.csv"), 1)
	require.NoError(t, err)
	require.Equal(t, []bench.Sample{
		{Elapsed: 1 * time.Second, OpsPerSec: 339549},
		{Elapsed: 2 * time.Second, OpsPerSec: 293200},
		{Elapsed: 3 * time.Second, OpsPerSec: 320517},
	}, samples)
	require.Equal(t, int64(339549+293200+320517), reportOps(samples, 1))

	// A 2-second interval: the column is a count, not a rate.
	samples, err = parseReport("secs_elapsed,interval_qps\n2,1000\n4,3000\n", 2)
	require.NoError(t, err)
	require.Equal(t, []float64{500, 1500}, []float64{samples[0].OpsPerSec, samples[1].OpsPerSec})
	require.Equal(t, int64(4000), reportOps(samples, 2))

	// Being written: the unfinished last line is left for later.
	samples, err = parseReport("secs_elapsed,interval_qps\n1,100\n2,3", 1)
	require.NoError(t, err)
	require.Len(t, samples, 1)
	samples, err = parseReport("secs_elapsed,interv", 1)
	require.NoError(t, err)
	require.Empty(t, samples)

	_, err = parseReport("1,100\n", 1)
	require.ErrorContains(t, err, "not its header")
	_, err = parseReport("secs_elapsed,interval_qps\n1;100\n", 1)
	require.ErrorContains(t, err, "no comma")
}

func TestLevelSummary(t *testing.T) {
	table := []string{
		"Level    Files   Size     Score Read(GB)  Rn(GB) Rnp1(GB) Write(GB)",
		"--------------------------------------------------------------------",
		"  L0      0/0    0.00 KB   0.0      0.0     0.0      0.0       0.2",
		"  L6      4/1   198.28 MB   0.0      0.2     0.0      0.2       0.3",
		" Sum      4/1   198.28 MB   0.0      0.2     0.0      0.2       0.5",
		" Int      0/0    0.00 KB   0.0      0.0     0.0      0.0       0.0",
		"",
		"  L1      9/0    1.00 GB   not part of this table",
	}
	require.Equal(t, "L6: 4 files, 198.28 MB", levelSummary(table))
	require.Equal(t, "no sstables", levelSummary(table[:2]))
}
