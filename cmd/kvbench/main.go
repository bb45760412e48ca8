// Command kvbench runs one workload on Strata and its peers (Pebble, Pebble
// with value separation, Badger, RocksDB through db_bench) and reports them
// side by side: a table on the terminal, a JSON file and an HTML page of
// charts. With no flags it runs a short default comparison.
//
// Flags follow db_bench's names where db_bench has one.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/strata-db/strata/bench"
	_ "github.com/strata-db/strata/bench/peers"
	"github.com/strata-db/strata/bench/report"
	_ "github.com/strata-db/strata/bench/rocksdb"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "kvbench:", err)
		os.Exit(1)
	}
}

func run() error {
	d := bench.DefaultSpec()
	var (
		engines    = flag.String("engines", strings.Join(d.Engines, ","), "engines to compare: "+strings.Join(bench.EngineNames(), ","))
		benchmarks = flag.String("benchmarks", strings.Join(d.Benchmarks, ","), "benchmarks to run in order: "+strings.Join(bench.AllBenchmarks, ","))
		num        = flag.Int64("num", d.Num, "number of keys")
		reads      = flag.Int64("reads", 0, "operations per thread of read benchmarks and YCSB mixes (default: --num)")
		keySize    = flag.Int("key_size", d.KeySize, "key size in bytes")
		valueSize  = flag.Int("value_size", d.Value.Size, "value size in bytes (fixed distribution)")
		valueDist  = flag.String("value_size_distribution_type", "fixed", "value size distribution: fixed, uniform or normal")
		valueMin   = flag.Int("value_size_min", 100, "smallest value for uniform and normal distributions")
		valueMax   = flag.Int("value_size_max", 8192, "largest value for uniform and normal distributions")
		threads    = flag.Int("threads", d.Threads, "reader threads for read benchmarks and YCSB mixes")
		seekNexts  = flag.Int("seek_nexts", d.SeekNexts, "Next calls after each seek in seekrandom")
		zipf       = flag.Float64("zipf_theta", d.ZipfTheta, "zipfian skew of YCSB key choice")
		seed       = flag.Uint64("seed", d.Seed, "seed of key order and values")
		dir        = flag.String("db", "", "directory for the databases (default: a temporary directory)")
		keepDB     = flag.Bool("keep_db", false, "keep the databases after the run")
		threshold  = flag.Int("value_threshold", d.Config.ValueThreshold, "value separation threshold in bytes for engines that separate")
		memtable   = flag.Int64("write_buffer_size", d.Config.MemTableSize, "memtable size in bytes")
		cacheSize  = flag.Int64("cache_size", d.Config.CacheSize, "block cache size in bytes")
		compress   = flag.String("compression_type", d.Config.Compression, "block compression: none or snappy")
		disableWAL = flag.Bool("disable_wal", false, "turn the write-ahead log off in every engine")
		syncWrites = flag.Bool("sync", false, "sync every write")
		interval   = flag.Duration("report_interval", d.ReportInterval, "spacing of throughput-over-time samples")
		jsonOut    = flag.String("json", "kvbench-report.json", "write the JSON report here (empty: none)")
		htmlOut    = flag.String("html", "kvbench-report.html", "write the HTML report here (empty: none)")
	)
	flag.Parse()

	spec := bench.Spec{
		Engines:    splitList(*engines),
		Benchmarks: splitList(*benchmarks),
		Num:        *num,
		Reads:      *reads,
		KeySize:    *keySize,
		Value:      bench.ValueDist{Kind: *valueDist, Size: *valueSize, Min: *valueMin, Max: *valueMax},
		Threads:    *threads,
		SeekNexts:  *seekNexts,
		ZipfTheta:  *zipf,
		Seed:       *seed,
		Dir:        *dir,
		KeepDB:     *keepDB,

		ReportInterval: *interval,
		Config: bench.Config{
			ValueThreshold: *threshold,
			MemTableSize:   *memtable,
			CacheSize:      *cacheSize,
			Compression:    *compress,
			DisableWAL:     *disableWAL,
			Sync:           *syncWrites,
		},
	}
	if err := spec.Normalize(); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	progress := report.NewProgress(os.Stderr, report.IsTerminal(os.Stderr))
	start := time.Now()
	rep, err := bench.Run(ctx, spec, progress)
	if rep == nil {
		return err
	}
	if werr := report.WriteTable(os.Stdout, rep); werr != nil {
		return werr
	}
	for _, out := range []struct {
		path  string
		write func(f *os.File) error
	}{
		{*jsonOut, func(f *os.File) error { return report.WriteJSON(f, rep) }},
		{*htmlOut, func(f *os.File) error { return report.WriteHTML(f, rep) }},
	} {
		if out.path == "" {
			continue
		}
		f, ferr := os.Create(out.path)
		if ferr != nil {
			return ferr
		}
		if werr := out.write(f); werr != nil {
			f.Close()
			return werr
		}
		if cerr := f.Close(); cerr != nil {
			return cerr
		}
		fmt.Fprintf(os.Stderr, "wrote %s\n", out.path)
	}
	fmt.Fprintf(os.Stderr, "total time %s\n", time.Since(start).Round(time.Second))
	return err
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
