// Command kvbench runs one workload on Strata and its peers (Pebble, Pebble
// with value separation, Badger, RocksDB through db_bench) and reports them
// side by side: a table on the terminal, a JSON file and an HTML page of
// charts. With no flags it runs a default comparison of a few minutes.
//
// Flags follow db_bench's names where db_bench has one.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	"github.com/strata-db/strata/bench"
	_ "github.com/strata-db/strata/bench/peers"
	"github.com/strata-db/strata/bench/report"
	_ "github.com/strata-db/strata/bench/rocksdb"
	"github.com/strata-db/strata/gc"
)

func main() {
	err := run(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kvbench:", err)
		os.Exit(1)
	}
}

// options is what the command line asks for.
type options struct {
	spec    bench.Spec
	jsonOut string
	htmlOut string
}

// usageHead is what --help prints before the flags: what the tool does,
// and three runs to start from.
var usageHead = fmt.Sprintf(`kvbench runs the same key-value workloads (db_bench-style, YCSB, stream
state) on Strata and its peers (Pebble, Pebble with value separation,
Badger, RocksDB through db_bench) and prints them side by side, each
peer's throughput as a ratio to Strata's, then writes the figures to
kvbench-report.json and charts to kvbench-report.html. A phase that
takes under %g s or %d operations is marked too short and left out of
the ratios; --repeat N runs everything N times, and each ratio comes
with the runs it rests on and their spread.

Examples:
  # the default comparison: a few minutes, in a temporary directory
  kvbench
  # reads and writes of 4 KiB values, three times over
  kvbench --engines strata,pebble,badger --benchmarks fillrandom,readrandom,seekrandom \
      --num 200000 --value_size 4096 --repeat 3
  # space amplification under five overwrite rounds, by GC policy
  kvbench --engines strata,pebble-vs,badger --gc_policy passive,cost \
      --benchmarks fillrandom --overwrite_rounds 5 --value_size 4096

Flags (named as db_bench's where it has them):
`, bench.MinPhaseDuration.Seconds(), bench.MinPhaseOps)

// defaultComparisonReads is --reads in the default comparison (see
// parseFlags).
const defaultComparisonReads = 2_000_000

// parseFlags reads the command line into a normalized spec, writing usage
// and flag errors to output.
func parseFlags(args []string, output io.Writer) (*options, error) {
	d := bench.DefaultSpec()
	fs := flag.NewFlagSet("kvbench", flag.ContinueOnError)
	fs.SetOutput(output)
	fs.Usage = func() {
		fmt.Fprint(output, usageHead)
		fs.PrintDefaults()
	}
	var (
		engines    = fs.String("engines", strings.Join(d.Engines, ","), "engines to compare: "+strings.Join(bench.EngineNames(), ",")+", strata/<gc policy>, and strata/rmw (lists by read-modify-write)")
		benchmarks = fs.String("benchmarks", strings.Join(d.Benchmarks, ","), "benchmarks to run in order: "+strings.Join(bench.AllBenchmarks, ",")+" (overwrite repeated: overwrite rounds)")
		num        = fs.Int64("num", d.Num, "number of keys")
		reads      = fs.Int64("reads", 0, "operations per thread of read benchmarks and YCSB mixes (default: --num; in the default comparison, with neither --num nor --benchmarks, 2,000,000)")
		keySize    = fs.Int("key_size", d.KeySize, "key size in bytes")
		valueSize  = fs.Int("value_size", d.Value.Size, "value size in bytes (fixed distribution)")
		valueDist  = fs.String("value_size_distribution_type", "fixed", "value size distribution: fixed, uniform or normal")
		valueMin   = fs.Int("value_size_min", 100, "smallest value for uniform and normal distributions")
		valueMax   = fs.Int("value_size_max", 8192, "largest value for uniform and normal distributions")
		threads    = fs.Int("threads", d.Threads, "reader threads for read benchmarks and YCSB mixes")
		seekNexts  = fs.Int("seek_nexts", d.SeekNexts, "Next calls after each seek in seekrandom")
		zipf       = fs.Float64("zipf_theta", d.ZipfTheta, "zipfian skew of YCSB key choice (and of overwrite's with --key_dist zipfian)")
		seed       = fs.Uint64("seed", d.Seed, "seed of key order and values")
		dir        = fs.String("db", "", "directory for the databases (default: a temporary directory)")
		keepDB     = fs.Bool("keep_db", false, "keep the databases after the run")
		threshold  = fs.Int("value_threshold", d.Config.ValueThreshold, "value separation threshold in bytes for engines that separate")
		memtable   = fs.Int64("write_buffer_size", d.Config.MemTableSize, "memtable size in bytes")
		cacheSize  = fs.Int64("cache_size", d.Config.CacheSize, "block cache size in bytes")
		compress   = fs.String("compression_type", d.Config.Compression, "block compression: none or snappy")
		disableWAL = fs.Bool("disable_wal", false, "turn the write-ahead log off in every engine")
		syncWrites = fs.Bool("sync", false, "sync every write")
		interval   = fs.Duration("report_interval", d.ReportInterval, "spacing of throughput-over-time samples (0: chosen per benchmark, about 25 samples, at least 100ms apart; db_bench's are whole seconds)")
		gcPolicies = fs.String("gc_policy", "", "value-log GC policies to run Strata with, each as an engine of its own "+
			"(strata/<policy>): "+strings.Join(bench.GCPolicyNames, ",")+" (default: Strata's default policy, as engine strata)")
		gcBudget  = fs.Float64("gc_budget", gc.DefaultBudget, "space-amplification budget of the cost GC policy")
		rounds    = fs.Int("overwrite_rounds", 0, "run overwrite this many times in a row, measuring space and write amplification after each round (0: off)")
		keyDist   = fs.String("key_dist", bench.KeyUniform, "keys overwrite writes, lists listappend appends to: uniform or zipfian (--zipf_theta)")
		listKeys  = fs.Int64("list_keys", 0, "lists listappend appends to (default: --num/100)")
		listRead  = fs.Int("list_read_percent", 0, "share of listappend's operations that read a whole list, in percent (default 5)")
		ttl       = fs.Duration("ttl", 0, "time to live of the ttl workload's writes (default 10s; engines on the real clock wait for it)")
		ckptEvery = fs.Int64("checkpoint_every", 0, "overwrites between the statebackend workload's checkpoints (Strata only; default --num/10)")
		storeLat  = fs.Duration("store_latency", 0, "latency added to every request of the statebackend workload to its stores, as an object store's (S3: 10-100ms; 0: none)")
		storeS3   = fs.String("store_s3", "", "put the statebackend workload's stores in this S3 bucket, as http(s)://host:port/bucket (credentials from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), not in local directories")
		storeBW   = fs.Int64("store_bandwidth", 0, "bytes per second each of the statebackend workload's stores moves, its requests sharing them (0: unlimited)")
		shCache   = fs.Int64("shared_cache", 0, "bytes of local cache of shared files: the statebackend workload's databases keep their lower levels in its stores (SharedStore), "+
			"checkpoint by reference and are opened from the store (0: every file local); strata/shared's cache (0: no bound)")
		shPart   = fs.Int64("shared_part_size", 0, "bytes of each ranged GET that reads a shared file, and unit of its cache (Options.SharedPartSize; 0: 1 MiB)")
		shStore  = fs.String("shared_store_dir", "", "directory under which strata/shared keeps its store (default: beside its database); one on another device, a tmpfs say, keeps the store's writes off the database's disk, as an object store's network would")
		shWarmup = fs.Int64("shared_warmup", 0, "bytes per second the statebackend workload's warm open from the store downloads in the background (default 256 MiB/s; with --shared_cache)")
		openTime = fs.Duration("open_read_time", 0, "how long each read phase after the statebackend workload's opens from the store runs (default 10s; with --shared_cache)")
		openReps = fs.Int("open_repeats", 0, "cold opens from the store of the statebackend workload, and rounds of each read comparison with a local copy (default 3; with --shared_cache)")
		rescSkip = fs.String("rescale_skip", "", "comma-separated rescale methods of the statebackend workload to leave out ("+strings.Join(bench.RescaleMethods, ", ")+"; \"all\": every one)")
		openSkip = fs.Bool("open_skip_local", false, "leave out the statebackend workload's local copy of the state and the reads compared with it (a copy and a warm copy of the state on disk at once; with --shared_cache)")
		repeat   = fs.Int("repeat", 1, "run everything this many times, the engines in turn each time, and report each figure's median with its min and max")
		cpuProf  = fs.String("cpuprofile", "", "write a CPU profile of Strata's benchmarks (its first run) to this file")
		memProf  = fs.String("memprofile", "", "write a heap profile at the end of Strata's last benchmark to this file")
		jsonOut  = fs.String("json", "kvbench-report.json", "write the JSON report here (empty: none)")
		htmlOut  = fs.String("html", "kvbench-report.html", "write the HTML report here (empty: none)")
	)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["reads"] && !set["num"] && !set["benchmarks"] {
		// The default comparison's reads of 200,000 keys took Strata
		// under a second (readrandom 0.34 s, seekrandom 0.19 s), too
		// short a phase to compare: it reads 2,000,000 times.
		*reads = defaultComparisonReads
	}

	spec := bench.Spec{
		Engines:         splitList(*engines),
		Benchmarks:      splitList(*benchmarks),
		GCPolicies:      splitList(*gcPolicies),
		Num:             *num,
		Reads:           *reads,
		KeySize:         *keySize,
		Value:           bench.ValueDist{Kind: *valueDist, Size: *valueSize, Min: *valueMin, Max: *valueMax},
		Threads:         *threads,
		SeekNexts:       *seekNexts,
		ZipfTheta:       *zipf,
		OverwriteRounds: *rounds,
		KeyDist:         *keyDist,
		ListKeys:        *listKeys,
		ListReadPercent: *listRead,
		TTL:             *ttl,
		CheckpointEvery: *ckptEvery,
		StoreLatency:    *storeLat,
		StoreS3:         *storeS3,
		StoreBandwidth:  *storeBW,
		SharedWarmup:    *shWarmup,
		OpenReadTime:    *openTime,
		OpenRepeats:     *openReps,
		OpenSkipLocal:   *openSkip,
		RescaleSkip:     rescaleSkip(*rescSkip),
		Seed:            *seed,
		Dir:             *dir,
		KeepDB:          *keepDB,
		Repeat:          *repeat,
		CPUProfile:      *cpuProf,
		MemProfile:      *memProf,

		ReportInterval: *interval,
		Config: bench.Config{
			ValueThreshold: *threshold,
			MemTableSize:   *memtable,
			CacheSize:      *cacheSize,
			Compression:    *compress,
			DisableWAL:     *disableWAL,
			Sync:           *syncWrites,
			GCBudget:       *gcBudget,
			SharedCache:    *shCache,
			SharedPartSize: *shPart,
			SharedStoreDir: *shStore,
		},
	}
	if err := spec.Normalize(); err != nil {
		return nil, err
	}
	return &options{spec: spec, jsonOut: *jsonOut, htmlOut: *htmlOut}, nil
}

func run(args []string) error {
	opts, err := parseFlags(args, os.Stderr)
	if err != nil {
		return err
	}
	spec := opts.spec

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
		{opts.jsonOut, func(f *os.File) error { return report.WriteJSON(f, rep) }},
		{opts.htmlOut, func(f *os.File) error { return report.WriteHTML(f, rep) }},
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

// rescaleSkip parses --rescale_skip: a comma-separated list, or "all".
func rescaleSkip(s string) []string {
	if s == "all" {
		return slices.Clone(bench.RescaleMethods)
	}
	var out []string
	for _, m := range strings.Split(s, ",") {
		if m = strings.TrimSpace(m); m != "" {
			out = append(out, m)
		}
	}
	return out
}
