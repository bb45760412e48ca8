package rocksdb

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-db/strata/bench"
)

// recorder is a bench.Progress that remembers what it was told.
type recorder struct {
	mu     sync.Mutex
	starts []string
	totals []int64
	added  map[string]int64
	open   string
	dones  int
}

func (r *recorder) Start(engine, benchmark string, total int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.added == nil {
		r.added = map[string]int64{}
	}
	r.starts = append(r.starts, engine+"/"+benchmark)
	r.totals = append(r.totals, total)
	r.open = benchmark
}

func (r *recorder) Add(n int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.added[r.open] += n
}

func (r *recorder) Done() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dones++
}

func tinySpec() *bench.Spec {
	spec := sampleSpec()
	spec.Benchmarks = []string{bench.FillRandom, bench.ReadRandom, bench.SeekRandom, bench.Overwrite, bench.YCSBA}
	spec.Num = 2000
	spec.Reads = 2000
	spec.Value = bench.ValueDist{Kind: "fixed", Size: 200}
	return spec
}

func needDBBench(t *testing.T) {
	t.Helper()
	if err := available(); err != nil {
		t.Skip(err)
	}
}

// TestRunDBBench runs the real db_bench on a tiny spec.
func TestRunDBBench(t *testing.T) {
	t.Parallel() // each writing benchmark waits 5 s for compactions
	needDBBench(t)
	info, ok := bench.LookupEngine("rocksdb")
	require.True(t, ok)
	require.Nil(t, info.Open)
	require.NoError(t, info.Available())
	spec := tinySpec()
	dir := t.TempDir()
	progress := &recorder{}
	results, err := info.External().Run(context.Background(), spec, dir, progress)
	require.NoError(t, err)
	require.Len(t, results, 5)
	byName := map[string]bench.Result{}
	for i, r := range results {
		require.Equal(t, spec.Benchmarks[i], r.Benchmark)
		require.Equal(t, "rocksdb", r.Engine)
		byName[r.Benchmark] = r
	}
	entry := int64(16 + 200)

	fill := byName[bench.FillRandom]
	require.False(t, fill.Skipped)
	require.Equal(t, int64(2000), fill.Ops)
	require.Positive(t, fill.Duration)
	require.Positive(t, fill.OpsPerSec)
	require.Positive(t, fill.MBPerSec)
	require.Equal(t, 2000*entry, fill.UserBytes)
	require.Equal(t, 2000*entry, fill.LiveBytes)
	require.Positive(t, fill.DiskSize, "the WAL holds the writes")
	require.Positive(t, fill.P50)
	require.LessOrEqual(t, fill.P50, fill.P95)
	require.LessOrEqual(t, fill.P95, fill.P99)
	require.LessOrEqual(t, fill.P99, fill.P999)
	require.NotEmpty(t, fill.EngineStats)

	rr := byName[bench.ReadRandom]
	require.Equal(t, int64(2000), rr.Ops)
	require.Equal(t, rr.Ops, rr.Reads)
	require.Equal(t, rr.Reads, rr.Found, "every key was filled")
	require.Zero(t, rr.UserBytes)
	require.Positive(t, rr.DiskSize)
	require.Equal(t, 2000*entry, rr.LiveBytes)

	seek := byName[bench.SeekRandom]
	require.Equal(t, int64(20), seek.Ops, "ceil(2000/101) seeks")
	require.Positive(t, seek.RowsPerSec)
	require.Greater(t, seek.RowsPerSec, seek.OpsPerSec)

	ow := byName[bench.Overwrite]
	require.Equal(t, int64(2000), ow.Ops)
	require.Equal(t, 2000*entry, ow.UserBytes)
	require.Positive(t, ow.DiskSize)
	require.Equal(t, 2000*entry, ow.LiveBytes)
	require.InDelta(t, float64(ow.DiskWritten)/float64(ow.UserBytes), ow.WriteAmp, 1e-9)

	ycsb := byName[bench.YCSBA]
	require.True(t, ycsb.Skipped)
	require.Equal(t, "db_bench has no YCSB workloads", ycsb.Note)

	require.Equal(t, []string{"rocksdb/fillrandom", "rocksdb/readrandom", "rocksdb/seekrandom", "rocksdb/overwrite"}, progress.starts)
	require.Equal(t, 4, progress.dones)
	for _, r := range results[:4] {
		require.Equal(t, r.Ops, progress.added[r.Benchmark], r.Benchmark)
	}
	_, err = os.Stat(filepath.Join(dir, "reports", "01-readrandom.csv"))
	require.NoError(t, err)
}

// TestRunDBBenchBlob runs rocksdb-blob with small memtables, so that flushes
// write blob files, then deletes and reads what is left.
func TestRunDBBenchBlob(t *testing.T) {
	t.Parallel() // each writing benchmark waits 5 s for compactions
	needDBBench(t)
	info, ok := bench.LookupEngine("rocksdb-blob")
	require.True(t, ok)
	spec := tinySpec()
	spec.Benchmarks = []string{bench.FillSeq, bench.DeleteRandom, bench.ReadRandom, bench.ReadSeq}
	spec.Value = bench.ValueDist{Kind: "uniform", Min: 100, Max: 300}
	spec.Config.ValueThreshold = 150
	spec.Config.MemTableSize = 128 << 10
	dir := t.TempDir()
	results, err := info.External().Run(context.Background(), spec, dir, nil)
	require.NoError(t, err)
	require.Len(t, results, 4)
	blobs, err := filepath.Glob(filepath.Join(dir, "db", "*.blob"))
	require.NoError(t, err)
	require.NotEmpty(t, blobs, "values of 150 bytes and more go to blob files")

	fill, del, rr, scan := results[0], results[1], results[2], results[3]
	require.Equal(t, int64(2000), fill.Ops)
	require.Positive(t, fill.DiskWritten)
	require.Equal(t, int64(2000*16), del.UserBytes)
	// 2000 random deletes of 2000 keys leave about 2000/e.
	require.InDelta(t, 2000*math.Pow(1-1.0/2000, 2000)*(16+200), float64(del.LiveBytes), 1)
	require.Equal(t, int64(2000), rr.Reads)
	require.Less(t, rr.Found, rr.Reads*3/5)
	require.Greater(t, rr.Found, rr.Reads/5)
	require.Less(t, scan.Ops, int64(2000), "readseq reads the keys left")
	require.Positive(t, scan.RowsPerSec)
}

// fakeDBBench writes a shell script standing in for db_bench.
func fakeDBBench(t *testing.T, body string) string {
	t.Helper()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	path := filepath.Join(t.TempDir(), "db_bench")
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755))
	return path
}

func TestRunFailureShowsStderr(t *testing.T) {
	bin := fakeDBBench(t, `echo "RocksDB:    version 7.8.3" >&2
echo "open error: IO error: While lock file: LOCK: Resource temporarily unavailable" >&2
exit 1`)
	e := &engine{name: "rocksdb", bin: bin}
	spec := tinySpec()
	results, err := e.Run(context.Background(), spec, t.TempDir(), nil)
	require.Empty(t, results)
	require.ErrorContains(t, err, "rocksdb: fillrandom: db_bench --benchmarks=filluniquerandom,waitforcompaction,stats")
	require.ErrorContains(t, err, "exit status 1")
	require.ErrorContains(t, err, "open error: IO error: While lock file")
}

func TestRunMissingResultLine(t *testing.T) {
	bin := fakeDBBench(t, `echo "fillseq      : skipped (--use_existing_db is true)"`)
	e := &engine{name: "rocksdb", bin: bin}
	spec := tinySpec()
	spec.Benchmarks = []string{bench.YCSBB, bench.FillSeq}
	results, err := e.Run(context.Background(), spec, t.TempDir(), nil)
	require.Len(t, results, 1, "the skipped ycsb-b")
	require.True(t, results[0].Skipped)
	require.ErrorContains(t, err, "no result line for fillseq")
	require.ErrorContains(t, err, "skipped (--use_existing_db is true)")
}

func TestRunCancelKillsDBBench(t *testing.T) {
	bin := fakeDBBench(t, "exec sleep 30")
	e := &engine{name: "rocksdb", bin: bin}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	_, err := e.Run(ctx, tinySpec(), t.TempDir(), nil)
	require.ErrorIs(t, err, context.Canceled)
	require.Less(t, time.Since(start), 10*time.Second)
}

func TestRunRejectsBadSpec(t *testing.T) {
	e := &engine{name: "rocksdb-blob", blob: true, bin: "unused"}
	spec := tinySpec()
	spec.Config.ValueThreshold = 0
	_, err := e.Run(context.Background(), spec, t.TempDir(), nil)
	require.ErrorContains(t, err, "value threshold must be positive")
}

// TestBuildResultReadWhileWriting checks the numbers derived from a
// captured readwhilewriting run with two readers.
func TestBuildResultReadWhileWriting(t *testing.T) {
	spec := tinySpec()
	spec.Threads = 2
	spec.Reads = 1_000_000
	p := planFor(spec, bench.ReadWhileWriting)
	r := &run{stdout: readTestdata(t, "readwhilewriting.out"), written: 1 << 20}
	var err error
	r.timeline, err = parseReport(readTestdata(t, "readwhilewriting.csv"), 1)
	require.NoError(t, err)
	live := liveModel{num: 2000, keys: 2000}
	res, err := buildResult(spec, p, bench.ReadWhileWriting, r, &live)
	require.NoError(t, err)
	res.Finish(r.moved)
	require.Equal(t, int64(2_000_000), res.Ops)
	require.Equal(t, int64(2_000_000), res.Reads)
	require.Equal(t, int64(2_000_000), res.Found)
	require.InDelta(t, 2_000_000/625997.0, res.Duration.Seconds(), 1e-6)
	require.InDelta(t, 625997, res.OpsPerSec, 0.01)
	require.Equal(t, int64(223_500*216), res.UserBytes)
	require.InDelta(t, float64(1<<20)/float64(223_500*216), res.WriteAmp, 1e-9)
	require.Equal(t, int64(2000*216), res.LiveBytes)
	require.Equal(t, micros(1.36), res.P50)
	require.Equal(t, micros(5.6), res.P99)
	require.Equal(t, micros(48.65), res.P999)
	// The report file counts readers and writer: 819122 operations in the
	// first second, of which the readers' share is 2000000/2223500.
	require.Len(t, res.Timeline, 3)
	require.InDelta(t, 819122*2_000_000/2_223_500.0, res.Timeline[0].OpsPerSec, 0.01)
	require.Contains(t, res.Note, "about 223500 writes")
	require.InDelta(t, 2_000_000*216/res.Duration.Seconds()/1e6, res.MBPerSec, 1e-6)
}

func TestBuildResultSeek(t *testing.T) {
	spec := tinySpec()
	p := planFor(spec, bench.SeekRandom)
	r := &run{stdout: readTestdata(t, "seekrandom.out")}
	live := liveModel{num: 2000, keys: 2000}
	res, err := buildResult(spec, p, bench.SeekRandom, r, &live)
	require.NoError(t, err)
	require.Equal(t, int64(20), res.Ops)
	require.Zero(t, res.Found, "a seek has no found count in the core's terms")
	rows := 20 * live.expectedRows(101)
	require.InDelta(t, rows/res.Duration.Seconds(), res.RowsPerSec, 1e-6)
	require.Equal(t, micros(22), res.P50)
	require.Equal(t, "db_bench built with assertions enabled (slower than a release build); "+
		"no sstables; compactions since open: 0.00 GB written, 0.00 GB read", res.EngineStats)
}

func TestLiveModel(t *testing.T) {
	m := liveModel{num: 1000}
	require.Zero(t, m.expectedRows(10), "empty database")
	m.write(1000)
	require.InDelta(t, 1000*(1-math.Pow(0.999, 1000)), m.keys, 1e-6)
	m.fill()
	require.Equal(t, 1000.0, m.keys)
	m.write(5000)
	require.Equal(t, 1000.0, m.keys, "writes to a full database")
	m.remove(1000)
	require.InDelta(t, 1000*math.Pow(0.999, 1000), m.keys, 1e-6)

	// Full database: the average of min(n, m) over m = 1..num.
	full := liveModel{num: 1000, keys: 1000}
	var sum float64
	for m := 1; m <= 1000; m++ {
		sum += math.Min(101, float64(m))
	}
	require.InDelta(t, sum/1000, full.expectedRows(101), 1e-9)
	// Half the keys: min(n, m/2).
	half := liveModel{num: 1000, keys: 500}
	sum = 0
	for m := 1; m <= 1000; m++ {
		sum += math.Min(101, float64(m)/2)
	}
	require.InDelta(t, sum/1000, half.expectedRows(101), 1e-9)
	// More rows asked than keys: every seek reads to the end.
	require.InDelta(t, 1001/2.0, full.expectedRows(5000), 1e-9)

	one := liveModel{num: 1}
	one.write(1)
	require.Equal(t, 1.0, one.keys)
	one.remove(1)
	require.Zero(t, one.keys)
}

func TestDBSizeSkipsInfoLogs(t *testing.T) {
	dir := t.TempDir()
	for name, size := range map[string]int{"000004.log": 100, "000005.sst": 50, "000006.blob": 25, "LOG": 1000, "LOG.old.123": 1000, "MANIFEST-000001": 5} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), make([]byte, size), 0o644))
	}
	require.Equal(t, int64(180), dbSize(dir))
	require.Zero(t, dbSize(filepath.Join(dir, "missing")))
}

func TestLastLines(t *testing.T) {
	require.Equal(t, []string{"b", "c"}, lastLines("a\n... finished 100 ops   \rb\n\nc\n", 2))
	require.Empty(t, lastLines("", 3))
	tb := &tailBuffer{limit: 4}
	_, _ = tb.Write([]byte("abcdef"))
	_, _ = tb.Write([]byte("gh"))
	require.Equal(t, "efgh", tb.String())
}

// TestRunRounds: overwrite rounds are one db_bench run each, so each gets
// its own disk size, measured between runs, and a note that the size
// before settling is not available. The stand-in db_bench grows the
// database by 100,000 bytes per run.
func TestRunRounds(t *testing.T) {
	bin := fakeDBBench(t, `for a in "$@"; do
	case $a in
	--db=*) db=${a#--db=} ;;
	--benchmarks=*) b=${a#--benchmarks=} ;;
	esac
done
mkdir -p "$db"
head -c 100000 /dev/zero >> "$db/data"
echo "${b%%,*} : 10.000 micros/op 100000 ops/sec 0.020 seconds 2000 operations; 21.6 MB/s"`)
	e := &engine{name: "rocksdb-blob", blob: true, bin: bin}
	spec := tinySpec()
	spec.Benchmarks = []string{bench.FillRandom, bench.Overwrite, bench.Overwrite, bench.Overwrite}
	progress := &recorder{}
	results, err := e.Run(context.Background(), spec, t.TempDir(), progress)
	require.NoError(t, err)
	require.Len(t, results, 4)
	require.Equal(t, []string{"rocksdb-blob/fillrandom", "rocksdb-blob/overwrite 1/3", "rocksdb-blob/overwrite 2/3",
		"rocksdb-blob/overwrite 3/3"}, progress.starts)
	for i, r := range results {
		require.False(t, r.Skipped)
		require.Equal(t, int64(100_000*(i+1)), r.DiskSize, "measured after each run")
		require.Zero(t, r.DiskSizeBeforeSettle)
		if i > 0 {
			require.Equal(t, noteRounds, r.Note)
			require.Equal(t, int64(2000), r.Ops)
			require.Positive(t, r.SpaceAmp)
		}
	}
	series := bench.BuildRounds(spec, withRounds(spec, results))
	require.Len(t, series, 1)
	require.Len(t, series[0].Rounds, 3)
	require.Equal(t, noteRounds, series[0].Note)

	// Zipfian overwrites are skipped: db_bench's overwrite has uniform keys only.
	spec.KeyDist = bench.KeyZipfian
	progress = &recorder{}
	results, err = e.Run(context.Background(), spec, t.TempDir(), progress)
	require.NoError(t, err)
	require.Len(t, results, 4)
	require.False(t, results[0].Skipped)
	for _, r := range results[1:] {
		require.True(t, r.Skipped)
		require.Contains(t, r.Note, "uniformly only")
	}
	series = bench.BuildRounds(spec, withRounds(spec, results))
	require.Empty(t, series[0].Rounds)
	require.Contains(t, series[0].Note, "uniformly only")
}

// withRounds numbers the rounds of results as the runner does.
func withRounds(spec *bench.Spec, results []bench.Result) []bench.Result {
	out := append([]bench.Result(nil), results...)
	for i := range out {
		out[i].Engine = "rocksdb-blob"
		out[i].Round = spec.RoundOf(i)
	}
	return out
}

// TestRunDBBenchListAppend runs listappend through db_bench's
// readrandommergerandom after a fill, then readrandom, which reads list
// keys through the merge operator every run is opened with; ttl is skipped
// with a note, and so is a zipfian listappend.
func TestRunDBBenchListAppend(t *testing.T) {
	t.Parallel() // each writing benchmark waits 5 s for compactions
	needDBBench(t)
	spec := tinySpec()
	spec.Benchmarks = []string{bench.FillRandom, bench.ListAppend, bench.ReadRandom, bench.TTLExpiry}
	spec.ListKeys = 20
	spec.ListReadPercent = 5
	results, err := (&engine{name: "rocksdb"}).Run(context.Background(), spec, t.TempDir(), nil)
	require.NoError(t, err)
	require.Len(t, results, 4)
	la := results[1]
	require.False(t, la.Skipped, la.Note)
	require.Equal(t, int64(2000), la.Ops)
	require.InDelta(t, 100, la.Reads, 50, "about 5% reads")
	require.Positive(t, la.Found)
	require.Contains(t, la.Note, "stringappend")
	require.Greater(t, la.LiveBytes, results[0].LiveBytes, "the lists grew")
	rr := results[2]
	require.False(t, rr.Skipped, rr.Note)
	require.Equal(t, rr.Reads, rr.Found)
	require.True(t, results[3].Skipped)
	require.Equal(t, "db_bench has no TTL workload", results[3].Note)

	spec.KeyDist = bench.KeyZipfian
	p := planFor(spec, bench.ListAppend)
	require.Empty(t, p.dbBench)
	require.Contains(t, p.note, "uniformly only")
}
