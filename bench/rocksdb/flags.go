package rocksdb

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/strata-db/strata/bench"
)

// kind says what a benchmark's operations do, which decides the user bytes,
// the bytes moved (for MB/s) and how the live keys change.
type kind int

const (
	kindFill             kind = iota // writes Num distinct keys into a fresh database
	kindOverwrite                    // writes random keys
	kindDelete                       // deletes random keys
	kindRead                         // point reads
	kindReadWhileWriting             // point reads, with a writer in the background
	kindScan                         // one full scan
	kindSeek                         // seeks, each followed by reading rows
	kindMerge                        // merges (appends to lists) and reads of whole lists
)

// plan is how one benchmark of the spec runs under db_bench.
type plan struct {
	dbBench string   // db_bench's benchmark; "" when db_bench has none
	note    string   // why the benchmark is skipped, when dbBench is ""
	kind    kind     // what the operations do
	threads int      // --threads (readwhilewriting: readers; db_bench adds the writer)
	args    []string // the benchmark's own flags
	op      string   // the histogram to read: "Microseconds per <op>:"
	total   int64    // operations expected, for progress
	rowsPer int      // rows each seek reads (seekrandom)
}

// writes reports whether the benchmark writes, leaving flushes and
// compactions behind.
func (p plan) writes() bool {
	switch p.kind {
	case kindFill, kindOverwrite, kindDelete, kindReadWhileWriting, kindMerge:
		return true
	}
	return false
}

// planFor maps a spec benchmark to db_bench. It is the one place that says
// which db_bench benchmark and flags stand for which spec benchmark; the
// table in the package documentation mirrors it.
func planFor(spec *bench.Spec, name string) plan {
	num, reads, threads := spec.Num, spec.Reads, max(spec.Threads, 1)
	switch name {
	case bench.FillSeq:
		return plan{dbBench: "fillseq", kind: kindFill, threads: 1, op: "write", total: num}
	case bench.FillRandom:
		// db_bench's fillrandom draws keys with replacement (about 37% of
		// the keys would never be written); filluniquerandom writes every
		// key once in random order, as the spec's fillrandom does.
		return plan{dbBench: "filluniquerandom", kind: kindFill, threads: 1, op: "write", total: num}
	case bench.Overwrite:
		if spec.KeyDist == bench.KeyZipfian {
			// Its zipfian options (--key_dist_a/b and friends) belong to
			// the mixgraph benchmark; running uniform keys instead would
			// compare different workloads.
			return plan{note: "db_bench's overwrite draws keys uniformly only (--key_dist zipfian)"}
		}
		return plan{dbBench: "overwrite", kind: kindOverwrite, threads: 1, op: "write", total: num,
			args: []string{"--writes=" + itoa(num)}}
	case bench.ReadRandom:
		return plan{dbBench: "readrandom", kind: kindRead, threads: threads, op: "read", total: reads * int64(threads),
			args: []string{"--reads=" + itoa(reads)}}
	case bench.ReadSeq:
		return plan{dbBench: "readseq", kind: kindScan, threads: 1, op: "read", total: num,
			args: []string{"--reads=" + itoa(num)}}
	case bench.SeekRandom:
		seeks := bench.SeekCount(spec)
		return plan{dbBench: "seekrandom", kind: kindSeek, threads: threads, op: "seek", total: seeks * int64(threads),
			rowsPer: spec.SeekNexts + 1,
			args:    []string{"--reads=" + itoa(seeks), "--seek_nexts=" + strconv.Itoa(spec.SeekNexts+1)}}
	case bench.ReadWhileWriting:
		return plan{dbBench: "readwhilewriting", kind: kindReadWhileWriting, threads: threads, op: "read",
			total: reads * int64(threads), args: []string{"--reads=" + itoa(reads)}}
	case bench.DeleteRandom:
		return plan{dbBench: "deleterandom", kind: kindDelete, threads: 1, op: "delete", total: num,
			args: []string{"--deletes=" + itoa(num)}}
	case bench.YCSBA, bench.YCSBB, bench.YCSBC, bench.YCSBD, bench.YCSBE, bench.YCSBF:
		return plan{note: "db_bench has no YCSB workloads"}
	case bench.ListAppend:
		if spec.KeyDist == bench.KeyZipfian {
			return plan{note: "db_bench's readrandommergerandom picks keys uniformly only (--key_dist zipfian)"}
		}
		// Num operations on ListKeys keys, merges (stringappend: the
		// operands joined by ',') or, ListReadPercent of the time, gets.
		return plan{dbBench: "readrandommergerandom", kind: kindMerge, threads: 1, op: "merge", total: num,
			args: []string{"--reads=" + itoa(num), "--merge_keys=" + itoa(spec.ListKeys),
				"--mergereadpercent=" + strconv.Itoa(100-spec.ListReadPercent)}}
	case bench.TTLExpiry:
		return plan{note: "db_bench has no TTL workload"}
	}
	return plan{note: fmt.Sprintf("db_bench has no counterpart of %q", name)}
}

// Fixed settings, the same for every run.
const (
	// mergeOperator appends operands to a value, joined by ',': RocksDB's
	// list-append merge operator (utilities/merge_operators).
	mergeOperator = "stringappend"
	// maxBackgroundJobs: flushes and compactions run on the machine's two
	// cores, as Pebble gets up to two concurrent compactions and Badger two
	// compactors.
	maxBackgroundJobs = 2
	// maxWriteBufferNumber: writes stop when two memtables are full, the
	// same limit Pebble is given (MemTableStopWritesThreshold 2).
	maxWriteBufferNumber = 2
	// bloomBits: a 10-bit-per-key Bloom filter, Strata's default
	// (db_bench's own default is no filter at all).
	bloomBits = 10
)

// commonArgs are the flags every db_bench run gets, before the benchmark's
// own ones.
func commonArgs(spec *bench.Spec, blob bool) []string {
	cfg := spec.Config
	compression := "none"
	if cfg.Compression == "snappy" {
		compression = "snappy"
	}
	args := []string{
		"--key_size=" + strconv.Itoa(spec.KeySize),
	}
	args = append(args, valueArgs(spec.Value)...)
	args = append(args,
		"--num="+itoa(spec.Num),
		// Values are random bytes, incompressible like the in-process
		// engines' values; compression_ratio=1 makes db_bench's so.
		"--compression_type="+compression,
		"--compression_ratio=1",
		"--write_buffer_size="+itoa(cfg.MemTableSize),
		"--max_write_buffer_number="+strconv.Itoa(maxWriteBufferNumber),
		"--cache_size="+itoa(cfg.CacheSize),
		// Index and filter blocks live outside the block cache, db_bench's
		// default (Badger likewise keeps its indexes and filters in memory).
		"--cache_index_and_filter_blocks=false",
		"--bloom_bits="+strconv.Itoa(bloomBits),
		// Level sizes derived from the last level, as Pebble always does and
		// RocksDB does by default from 8.4 on.
		"--level_compaction_dynamic_level_bytes=true",
		"--max_background_jobs="+strconv.Itoa(maxBackgroundJobs),
		"--disable_wal="+strconv.FormatBool(cfg.DisableWAL),
		"--sync="+strconv.FormatBool(cfg.Sync),
		// Each benchmark reopens the database: replay the WAL into the
		// memtable instead of flushing it, as if the process had kept the
		// database open.
		"--avoid_flush_during_recovery=true",
		"--histogram=true",
		// RocksDB's statistics add counters and timers to every operation
		// (db_bench's default is also off).
		"--statistics=false",
		"--progress_reports=false",
		"--report_interval_seconds="+strconv.Itoa(reportSeconds(spec.ReportInterval)),
	)
	if slices.Contains(spec.Benchmarks, bench.ListAppend) {
		// Every run of the spec opens the database with the merge operator
		// listappend needs, so that later runs can read its lists.
		args = append(args, "--merge_operator="+mergeOperator)
	}
	if blob {
		args = append(args,
			"--enable_blob_files=true",
			"--min_blob_size="+strconv.Itoa(cfg.ValueThreshold),
			"--blob_compression_type="+compression,
			// Garbage collection relocates live blobs out of the oldest 25%
			// of blob files during compaction (RocksDB's default cutoff);
			// without it, overwritten values are never reclaimed. Blob files
			// keep RocksDB's default size limit (256 MiB; each flush
			// writes its own file).
			"--enable_blob_garbage_collection=true",
		)
	}
	return args
}

// valueArgs are the value-size flags. db_bench's uniform and normal
// distributions are the spec's (normal: mean (min+max)/2, sd (max-min)/6,
// clamped). --value_size is set to the mean as well, for any code path of
// db_bench that uses the fixed size.
func valueArgs(d bench.ValueDist) []string {
	switch d.Kind {
	case "uniform", "normal":
		return []string{
			"--value_size=" + strconv.Itoa(int(math.Round(d.Mean()))),
			"--value_size_distribution_type=" + d.Kind,
			"--value_size_min=" + strconv.Itoa(d.Min),
			"--value_size_max=" + strconv.Itoa(d.Max),
		}
	}
	return []string{"--value_size=" + strconv.Itoa(d.Size)}
}

// reportSeconds is the report interval in whole seconds (db_bench's unit),
// at least one.
func reportSeconds(d time.Duration) int {
	return max(1, int(math.Round(d.Seconds())))
}

// runSeed is db_bench's --seed for the benchmark at index i. Every run
// needs its own: with one seed, readrandom would read exactly the keys a
// preceding deleterandom deleted (both draw keys from the same sequence).
// db_bench's own multi-benchmark runs differ likewise, since its per-thread
// seeds keep counting across benchmarks. Zero would mean "from the clock".
func runSeed(spec *bench.Spec, i int) int64 {
	s := (spec.Seed*1_000_003 + uint64(i)*101 + 1) & math.MaxInt64
	if s == 0 {
		s = 1
	}
	return int64(s)
}

// runArgs is the whole argument list of one db_bench run (without the
// program name).
func runArgs(spec *bench.Spec, blob bool, p plan, dbDir, reportFile string, seed int64, fresh bool) []string {
	// Meta-benchmarks run after the benchmark (untimed, in the same
	// process). "stats" prints RocksDB's DB stats: the level table and the
	// write counts. After writes, "waitforcompaction" first lets running
	// and pending flushes and compactions finish: closing the database
	// would abort them, throw their output away and leave the work to be
	// redone by the next run (measured with 50,000 4 KiB values over
	// fillrandom, overwrite, readrandom, overwrite, readrandom: 2088 MiB
	// written in all instead of 1506 MiB), while the in-process engines
	// complete background work in progress when they close. It costs at
	// least 5 s of wall time per writing benchmark (db_bench sleeps before
	// it first looks), none of it timed.
	meta := ",stats"
	if p.writes() {
		meta = ",waitforcompaction,stats"
	}
	args := []string{
		"--benchmarks=" + p.dbBench + meta,
		"--db=" + dbDir,
		"--use_existing_db=" + strconv.FormatBool(!fresh),
		"--threads=" + strconv.Itoa(p.threads),
		"--seed=" + strconv.FormatInt(seed, 10),
	}
	args = append(args, commonArgs(spec, blob)...)
	args = append(args, "--report_file="+reportFile)
	return append(args, p.args...)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
