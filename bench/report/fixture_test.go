package report

import (
	"fmt"
	"math"
	"time"

	"github.com/strata-db/strata/bench"
)

// smallReport is two benchmarks on three engines, one of them skipped.
func smallReport() *bench.Report {
	spec := bench.DefaultSpec()
	spec.Engines = []string{"strata", "pebble", "rocksdb"}
	spec.Benchmarks = []string{bench.FillRandom, bench.SeekRandom}
	return &bench.Report{
		Spec: spec,
		Machine: bench.Machine{GoVersion: "go1.26.8", OS: "linux", Arch: "amd64", CPUs: 2,
			CPUModel: "Test CPU @ 2.0GHz", MemoryGiB: 8},
		Started: time.Date(2026, 3, 1, 12, 30, 0, 0, time.UTC),
		Results: []bench.Result{
			// Out of engine order on purpose: the report orders them.
			{Engine: "pebble", Benchmark: bench.FillRandom, Ops: 50_000, Duration: 1613 * time.Millisecond,
				OpsPerSec: 31_000, MBPerSec: 127.5, P50: 21_400 * time.Nanosecond, P99: 2_310 * time.Microsecond,
				UserBytes: 205_600_000, DiskWritten: 880 << 20, WriteAmp: 4.49, DiskSize: 260 << 20,
				LiveBytes: 205_600_000, SpaceAmp: 1.33,
				Timeline: []bench.Sample{{Elapsed: time.Second, OpsPerSec: 33_000}, {Elapsed: 1613 * time.Millisecond, OpsPerSec: 28_000}}},
			{Engine: "strata", Benchmark: bench.FillRandom, Ops: 50_000, Duration: time.Second,
				OpsPerSec: 50_000, MBPerSec: 205.6, P50: 12_340 * time.Nanosecond, P99: 1_234 * time.Microsecond,
				P95: 400 * time.Microsecond, P999: 5 * time.Millisecond,
				UserBytes: 205_600_000, DiskWritten: 300 << 20, WriteAmp: 1.53, DiskSize: 210 << 20,
				LiveBytes: 205_600_000, SpaceAmp: 1.07, EngineStats: "levels: L0 2 files",
				Timeline: []bench.Sample{{Elapsed: 500 * time.Millisecond, OpsPerSec: 52_000}, {Elapsed: time.Second, OpsPerSec: 48_000}}},
			{Engine: "rocksdb", Benchmark: bench.FillRandom, Skipped: true, Note: "db_bench not found in PATH"},
			{Engine: "strata", Benchmark: bench.SeekRandom, Ops: 50_000, Duration: 2 * time.Second,
				OpsPerSec: 25_000, RowsPerSec: 2_500_000, MBPerSec: 1_000, P50: 35 * time.Microsecond,
				P99: 90 * time.Microsecond, DiskSize: 210 << 20, LiveBytes: 205_600_000, SpaceAmp: 1.07,
				Timeline: []bench.Sample{{Elapsed: time.Second, OpsPerSec: 24_000}, {Elapsed: 2 * time.Second, OpsPerSec: 26_000}}},
			{Engine: "pebble", Benchmark: bench.SeekRandom, Ops: 50_000, Duration: 4 * time.Second,
				OpsPerSec: 12_500, RowsPerSec: 1_250_000, MBPerSec: 500, P50: 70 * time.Microsecond,
				P99: 180 * time.Microsecond, DiskWritten: 1 << 20, DiskSize: 260 << 20, LiveBytes: 205_600_000, SpaceAmp: 1.33},
			{Engine: "rocksdb", Benchmark: bench.SeekRandom, Skipped: true, Note: "db_bench not found in PATH"},
		},
	}
}

// bigReport is every benchmark on six engines with timelines, one engine
// skipped throughout and one benchmark Strata skipped.
func bigReport() *bench.Report {
	spec := bench.DefaultSpec()
	spec.Benchmarks = bench.AllBenchmarks
	r := &bench.Report{
		Spec:    spec,
		Machine: bench.Machine{GoVersion: "go1.26.8", OS: "linux", Arch: "amd64", CPUs: 2, MemoryGiB: 8},
		Started: time.Date(2026, 3, 1, 12, 30, 0, 0, time.UTC),
	}
	speed := map[string]float64{"strata": 1.3, "pebble": 0.8, "pebble-vs": 0.9, "badger": 1.1, "rocksdb": 1, "rocksdb-blob": 1.05}
	for bi, b := range spec.Benchmarks {
		for ei, e := range spec.Engines {
			if e == "rocksdb-blob" || (e == "strata" && b == bench.DeleteRandom) {
				r.Results = append(r.Results, bench.Result{Engine: e, Benchmark: b, Skipped: true,
					Note: "not available on this machine: the tool is not installed"})
				continue
			}
			base := 40_000 * speed[e] * (1 + 0.3*math.Sin(float64(bi+ei)))
			res := bench.Result{Engine: e, Benchmark: b, Ops: 50_000, OpsPerSec: base,
				Duration: time.Duration(50_000 / base * float64(time.Second)), MBPerSec: base * 4096 / 1e6,
				P50: time.Duration(1e9 / base), P99: time.Duration(8e9 / base),
				DiskSize: int64(200+40*ei) << 20, LiveBytes: 200 << 20}
			res.SpaceAmp = float64(res.DiskSize) / float64(res.LiveBytes)
			if isScan(b) {
				res.RowsPerSec = base * 100
			}
			if b == bench.FillRandom || b == bench.Overwrite || b == bench.FillSeq {
				res.UserBytes = 205_600_000
				res.DiskWritten = int64(float64(res.UserBytes) * (1.2 + float64(ei)*0.7))
				res.WriteAmp = float64(res.DiskWritten) / float64(res.UserBytes)
			}
			for s := 1; s <= int(res.Duration.Seconds())+1 && b != bench.ReadSeq; s++ {
				res.Timeline = append(res.Timeline, bench.Sample{Elapsed: time.Duration(s) * time.Second,
					OpsPerSec: base * (1 + 0.15*math.Sin(float64(s*(ei+1))))})
			}
			if e == "strata" {
				res.EngineStats = fmt.Sprintf("after %s: 3 levels, 12 tables", b)
			}
			r.Results = append(r.Results, res)
		}
	}
	return r
}

// roundsReport is a GC lab: a fill, then three overwrite rounds, on two
// Strata GC variants and three peers (rocksdb-blob without a disk size
// before settling, badger without a count of its own), and rocksdb
// skipped.
func roundsReport() *bench.Report {
	spec := bench.DefaultSpec()
	spec.Engines = []string{"strata/passive", "strata/reverse-lookup", "pebble-vs", "badger", "rocksdb-blob", "rocksdb"}
	spec.GCPolicies = []string{"passive", "reverse-lookup"}
	spec.Benchmarks = []string{bench.FillRandom, bench.Overwrite, bench.Overwrite, bench.Overwrite}
	spec.OverwriteRounds = 3
	spec.Num = 20_000
	r := &bench.Report{
		Spec:    spec,
		Machine: bench.Machine{GoVersion: "go1.26.8", OS: "linux", Arch: "amd64", CPUs: 2, MemoryGiB: 8},
		Started: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC),
	}
	const live = 20_000 * (16 + 4096)
	samp := map[string][]float64{
		"strata/passive":        {1.2, 1.6, 2.0},
		"strata/reverse-lookup": {1.2, 1.35, 1.4},
		"pebble-vs":             {1.3, 1.5, 1.55},
		"badger":                {1.4, 1.9, 2.3},
		"rocksdb-blob":          {1.2, 1.3, 1.35},
	}
	speed := map[string]float64{"strata/passive": 6_000, "strata/reverse-lookup": 5_400, "pebble-vs": 5_000,
		"badger": 4_000, "rocksdb-blob": 4_400}
	for ei, e := range spec.Engines {
		for i, b := range spec.Benchmarks {
			res := bench.Result{Engine: e, Benchmark: b, Round: spec.RoundOf(i)}
			if e == "rocksdb" {
				res.Skipped, res.Note = true, "db_bench not found in PATH"
				r.Results = append(r.Results, res)
				continue
			}
			rate := speed[e] * (1 - 0.05*float64(i))
			res.Ops, res.OpsPerSec = 20_000, rate
			res.Duration = time.Duration(20_000 / rate * float64(time.Second))
			res.MBPerSec = rate * (16 + 4096) / 1e6
			res.P50, res.P99 = time.Duration(1e9/rate), time.Duration(6e9/rate)
			res.UserBytes, res.LiveBytes = live, live
			res.DiskWritten = int64(float64(live) * (1.5 + 0.3*float64(ei) + 0.1*float64(i)))
			amp := 1.1
			if res.Round > 0 {
				amp = samp[e][res.Round-1]
			}
			res.DiskSize = int64(amp * live)
			if e != "rocksdb-blob" {
				res.DiskSizeBeforeSettle = int64((amp + 0.15) * live)
				res.Settle = time.Duration(200+100*i) * time.Millisecond
			} else if res.Round > 0 {
				res.Note = "disk size measured after db_bench's waitforcompaction only, not before settling"
			}
			if e != "badger" && e != "rocksdb-blob" {
				res.EngineWritten = int64(float64(live) * (0.4 + 0.1*float64(ei)))
			}
			for s := 1; s <= int(res.Duration.Seconds()); s++ {
				res.Timeline = append(res.Timeline, bench.Sample{Elapsed: time.Duration(s) * time.Second,
					OpsPerSec: rate * (1 + 0.1*math.Sin(float64(s+ei)))})
			}
			res.Finish(res.UserBytes)
			if res.Round > 0 && isStrata(e) {
				res.EngineStats = fmt.Sprintf("%s after round %d: value logs 3 files", e, res.Round)
			}
			r.Results = append(r.Results, res)
		}
	}
	r.Rounds = bench.BuildRounds(&r.Spec, r.Results)
	return r
}

// repeatedReport is smallReport run three times: the runs at 90%, 100%
// and 110% of its figures, summed up by bench.Aggregate.
func repeatedReport() *bench.Report { return repeated(smallReport()) }

// repeated is base run three times, at 90%, 100% and 110% of its figures.
func repeated(base *bench.Report) *bench.Report {
	var runs [][]bench.Result
	for _, f := range []float64{0.9, 1, 1.1} {
		var run []bench.Result
		for _, res := range base.Results {
			if !res.Skipped {
				res.OpsPerSec *= f
				res.RowsPerSec *= f
				res.MBPerSec *= f
				res.P50 = time.Duration(float64(res.P50) * f)
				res.P95 = time.Duration(float64(res.P95) * f)
				res.P99 = time.Duration(float64(res.P99) * f)
				res.P999 = time.Duration(float64(res.P999) * f)
				res.WriteAmp *= f
				res.SpaceAmp *= f
				res.DiskWritten = int64(float64(res.DiskWritten) * f)
				res.EngineVersion = map[string]string{"strata": "devel", "pebble": "v2.1.7"}[res.Engine]
			}
			run = append(run, res)
		}
		runs = append(runs, run)
	}
	base.Spec.Repeat = 3
	base.Results = bench.Aggregate(runs)
	base.Repeats = runs
	base.Rounds = bench.BuildRounds(&base.Spec, base.Results)
	return base
}
