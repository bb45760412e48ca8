// Package bench is the benchmark library behind cmd/kvbench: it runs the
// same workload on Strata and on its peers (Pebble, Pebble with value
// separation, Badger, and RocksDB through its own db_bench) and reports
// them side by side.
//
// The parts:
//
//   - Spec (spec.go): what to run — benchmarks in db_bench's names, key and
//     value sizes, counts, threads, engine settings.
//   - Engines (engine.go): an in-process Engine interface the runner drives
//     operation by operation, and the External interface for engines that
//     run a whole workload themselves (RocksDB's db_bench). Engines register
//     by name; one that is not installed is skipped with a note. An engine
//     may derive variants named "base/variant": "strata/<policy>" is Strata
//     with one value-log GC policy (strata.go, Spec.GCPolicies).
//   - Workloads (workload.go, keys.go, zipf.go): key order, value sizes,
//     the YCSB mixes and the zipfian generator. The stream-state workloads
//     (state.go): listappend, appends to lists with whole-list reads, by
//     merge operator where an engine has one (Merger) and by
//     read-modify-write otherwise (Updater, or Get then Put; "strata/rmw"
//     is Strata without its merge operator); and ttl, writes with a TTL in
//     phases that expire one after another, on the runner's clock
//     (Config.Clock) where an engine takes one (TTLWriter), the real clock
//     otherwise, and by explicit deletes where an engine has no TTL.
//   - Runner (runner.go): runs every benchmark on every engine, measuring
//     throughput, latency percentiles, throughput over time, bytes written
//     to disk (the process's own I/O accounting, and the engine's own count
//     where it keeps one, and counts of its own: Counter), and disk space
//     before and after the engine settles.
//   - Repetitions (aggregate.go, Spec.Repeat): the whole spec run several
//     times, the engines in turn each time; each figure becomes the median
//     of the runs, with its min and max (Result.Spread).
//   - Versions and profiles (buildinfo.go, profile.go): each engine's
//     version from the binary's build information; CPU and heap profiles
//     of Strata's runs.
//   - Overwrite rounds (rounds.go, Spec.OverwriteRounds): overwrite run
//     again and again, measured after each round, gathered into one series
//     per engine (Report.Rounds): the GC lab.
//   - Reports (package bench/report): a terminal table, JSON, an HTML page
//     with SVG charts, and the progress bar. The peers' adapters live in
//     bench/peers (Pebble, Badger) and bench/rocksdb (db_bench).
//
// Fair settings (see BENCH.md in the project): 64 MiB memtable, 64 MiB block
// cache, no compression, WAL on without fsync unless a workload says
// otherwise, the same keys in the same order and the same value sizes.
//
// Fair reads: every in-process engine's Scan reads one byte of every
// 64-byte cache line of each key and value it returns (Touch), so that
// seekrandom and the scans of the YCSB mixes measure values delivered to
// the caller, whether an engine copies them out (Strata, Pebble, Badger
// with prefetch), checksums them (Strata) or hands out slices of a mapped
// file without reading them (Badger without prefetch, whose value
// checksums are off by default). Badger's scans run without value
// prefetch by default; "badger/prefetch" (PrefetchSize 100, Badger's
// default) and "badger/prefetch<N>" run them with it, and "badger/verify"
// verifies value checksums as Strata does. RocksDB's db_bench
// reads values its own way (it copies the first 256 bytes of each; a blob
// value is read whole from its blob file first).
package bench
