// Package rocksdb registers the "rocksdb" and "rocksdb-blob" engines, which
// run a bench.Spec through RocksDB's own benchmark tool, db_bench (found in
// PATH; on Debian it is in the package rocksdb-tools). Importing the package
// registers them; when db_bench is missing they are skipped with a note.
//
// "rocksdb" is RocksDB with leveled compaction and no value separation;
// "rocksdb-blob" adds the integrated BlobDB: values of at least
// Config.ValueThreshold bytes go to blob files, with blob garbage
// collection on.
//
// # One db_bench run per benchmark
//
// Each benchmark of the spec is one db_bench process on the same --db
// directory, so that every benchmark gets its own I/O accounting (the
// child's block-output count from wait4, see childWriteBytes) and its own
// report file. The first run creates the database; later runs pass
// --use_existing_db=true, except fills, which db_bench always runs on a
// fresh database (it aborts a fill given --use_existing_db). Like the
// in-process engines, which the runner opens and closes around each
// benchmark, the database is opened and closed around each benchmark;
// --avoid_flush_during_recovery=true keeps the reopen from flushing the
// previous run's memtable, so the memtable carries over as it would in one
// process. After a benchmark that writes, the run waits for flushes and
// compactions to finish (db_bench's "waitforcompaction", untimed) before it
// closes the database, because RocksDB's close aborts them and throws their
// output away, where the in-process engines finish the background work in
// progress when they close; see runArgs.
//
// # Benchmarks (see planFor)
//
//	spec benchmark    db_bench benchmark   flags of its own
//	fillseq           fillseq              --threads=1 (fresh database)
//	fillrandom        filluniquerandom     --threads=1 (fresh database; distinct keys in random order)
//	overwrite         overwrite            --threads=1 --writes=Num (skipped with --key_dist zipfian:
//	                                       db_bench's overwrite draws keys uniformly only)
//	readrandom        readrandom           --threads=Threads --reads=Reads (per thread)
//	readseq           readseq              --threads=1 --reads=Num (one full scan)
//	seekrandom        seekrandom           --threads=Threads --reads=seeks --seek_nexts=SeekNexts+1
//	readwhilewriting  readwhilewriting     --threads=Threads --reads=Reads (db_bench adds the writer)
//	deleterandom      deleterandom         --threads=1 --deletes=Num
//	ycsb-a ... ycsb-f (none)               skipped: db_bench has no YCSB workloads
//	listappend        readrandommergerandom --threads=1 --reads=Num --merge_keys=ListKeys
//	                                       --mergereadpercent=100-ListReadPercent (skipped with
//	                                       --key_dist zipfian: it picks keys uniformly only)
//	ttl               (none)               skipped: db_bench has no TTL workload
//
// listappend's lists are merged with the stringappend merge operator (the
// operands joined by ','), which every run of a spec holding listappend
// opens the database with, so later runs can read the lists. Its list keys
// are db_bench's keys 0 to ListKeys-1, the first keys of an earlier fill
// where there was one (the in-process engines keep lists apart from the
// other benchmarks' keys), so a list may start from a filled value.
//
// Overwrite rounds (bench.Spec.Rounds) are overwrite repeated, so each
// round is a db_bench run of its own and gets its own I/O accounting and
// disk size, measured between runs. The disk size is taken after the run's
// waitforcompaction, as for every writing benchmark: the size right after
// the last write, which the in-process engines also report, is not
// available (the rounds' results say so in their note).
//
// seekrandom follows the core's semantics: each thread does
// max(1, ceil(Reads/(SeekNexts+1))) seeks, and each seek reads SeekNexts+1
// rows (the row it lands on and SeekNexts more). db_bench's --seek_nexts=n
// reads n rows per seek (it reads the value under the iterator, then steps),
// hence SeekNexts+1. Ops counts seeks; RowsPerSec counts rows.
//
// The flags every run gets, and why, are in commonArgs.
//
// # What is measured, and from where
//
//   - Ops, Duration, OpsPerSec: db_bench's result line ("name : x micros/op
//     y ops/sec z seconds n operations; ..."). The wall time is n / (ops/sec)
//     or the printed seconds, whichever is more precise.
//   - P50, P99, P99.9: the "Percentiles:" line of db_bench's histogram
//     (--histogram); P95, which it does not print, is interpolated from the
//     bucket table exactly the way RocksDB computes the printed ones. For
//     readseq they are per row (the in-process engines time the scan as a
//     whole and report none).
//   - Found, Reads: the "(found of tried found)" message. db_bench keeps the
//     message of one thread only, so with several threads the found ratio
//     is applied to all reads.
//   - Timeline: the --report_file CSV (secs_elapsed, ops in the interval),
//     at whole seconds (Spec.ReportInterval rounded, at least 1 s). For
//     readwhilewriting it counts the writer too and is scaled by the
//     readers' share of all operations.
//   - DiskWritten: the child's ru_oublock (512-byte blocks) from wait4.
//   - DiskSize: the files in the database directory (blob files included,
//     RocksDB's info logs not: the in-process engines write none).
//   - UserBytes, MB/s, LiveBytes: computed from the spec the same way the
//     core computes them for in-process engines; db_bench chooses random
//     keys with its own generator, so live keys after overwrites and
//     deletes are an expectation (see liveModel), and so are the rows a
//     seek reads.
//   - readwhilewriting's writer: the "Cumulative writes: ... keys" line of
//     the "stats" meta-benchmark run after each benchmark.
//   - EngineStats: the level table, blob files and compaction totals from
//     the same "stats" output, preceded by a warning when db_bench says it
//     was built with assertions enabled (Debian's 7.8.3 build is), which
//     makes it slower than a release build.
//
// db_bench's own choice of random keys cannot follow the core's generator,
// so the keys of random benchmarks are the same distribution, not the same
// sequence, as the in-process engines get.
package rocksdb
