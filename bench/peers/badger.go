package peers

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"

	"github.com/strata-db/strata/bench"
)

// badgerMaxValueThreshold is the largest ValueThreshold Badger v4 accepts
// (its unexported maxValueThreshold, 1 MiB; Open fails above it).
const badgerMaxValueThreshold = 1 << 20

// badgerNumMemtables is Options.NumMemtables: how many immutable memtables
// may wait for flushing before writes stall. Badger's default of 5 would let
// it buffer 6 x 64 MiB in memory where Pebble and RocksDB stop at 2
// memtables; 2 matches them.
const badgerNumMemtables = 2

// badgerNumCompactors is Options.NumCompactors: one per core on the 2-core
// machines the benchmarks run on (Badger's default is 4; it rejects 1).
const badgerNumCompactors = 2

// badgerThreshold returns the ValueThreshold Badger is opened with:
// cfg.ValueThreshold, clamped to what Badger accepts. Besides the 1 MiB
// cap, Badger requires ValueThreshold <= 15% of MemTableSize (its maximum
// batch size), about 9.6 MiB for a 64 MiB memtable. Values at or above the
// threshold go to the value log, as for the other separating engines. A
// threshold of 0 or less asks for no separation: Badger then keeps values
// inline up to the largest threshold it accepts.
func badgerThreshold(cfg bench.Config) int64 {
	t := int64(cfg.ValueThreshold)
	if t <= 0 {
		t = badgerMaxValueThreshold
	}
	t = min(t, badgerMaxValueThreshold)
	t = min(t, 15*cfg.MemTableSize/100)
	return max(t, 0)
}

// badgerOptions translates cfg into Badger options.
//
// Write-ahead logging: Badger v4 appends every write to the current
// memtable's log file (<id>.mem: keys with small values inline, pointers for
// separated values) and writes separated values to the value log; neither
// can be turned off for an on-disk DB, so Config.DisableWAL changes nothing
// for Badger. Config.Sync maps to SyncWrites, which syncs both on every
// commit.
func badgerOptions(dir string, cfg bench.Config) (badger.Options, error) {
	if err := checkConfig(cfg); err != nil {
		return badger.Options{}, err
	}
	compression := options.None
	if cfg.Compression == "snappy" {
		compression = options.Snappy
	}
	opts := badger.DefaultOptions(dir).
		WithLogger(nil).
		WithSyncWrites(cfg.Sync).
		WithMemTableSize(cfg.MemTableSize).
		WithNumMemtables(badgerNumMemtables).
		WithValueThreshold(badgerThreshold(cfg)).
		// Block cache of the same size as the other engines'. Badger
		// reads sstables through mmap, so the cache holds decoded blocks.
		WithBlockCacheSize(cfg.CacheSize).
		// 0 keeps every table index and bloom filter in memory (Badger's
		// default); they are small here since large values live in the
		// value log, and a bounded index cache would make reads reload
		// them. RocksDB's db_bench likewise keeps index and filter blocks
		// outside its block cache by default.
		WithIndexCacheSize(0).
		WithCompression(compression).
		WithNumCompactors(badgerNumCompactors).
		// One writer and read-only readers cannot conflict; the other
		// engines do no conflict tracking either.
		WithDetectConflicts(false)
	return opts, nil
}

// badgerGCDiscardRatio is the discardRatio the settle passes to
// DB.RunValueLogGC: a value-log file is rewritten once at least half of it
// is garbage, the ratio Badger's documentation recommends (a lifetime
// value-log write amplification of about 2).
const badgerGCDiscardRatio = 0.5

// badgerEngine adapts a *badger.DB. Badger's DB is safe for concurrent use;
// every operation runs in its own transaction.
type badgerEngine struct {
	db     *badger.DB
	dir    string
	closed atomic.Bool
	// prefetch is the iterator's PrefetchSize with PrefetchValues on, or
	// 0 for iterators that read each value when its row is reached (see
	// Scan and badgerVariant).
	prefetch int
	// gcRewrites counts the value-log files the settle rewrote.
	gcRewrites atomic.Int64
}

func openBadger(dir string, cfg bench.Config) (bench.Engine, error) {
	return openBadgerWith(dir, cfg, 0, false)
}

// openBadgerWith opens Badger with scans that prefetch values (prefetch
// > 0: the iterators' PrefetchSize) and with value checksums verified on
// every value-log read (verify: Badger's VerifyValueChecksum).
func openBadgerWith(dir string, cfg bench.Config, prefetch int, verify bool) (bench.Engine, error) {
	opts, err := badgerOptions(dir, cfg)
	if err != nil {
		return nil, err
	}
	db, err := badger.Open(opts.WithVerifyValueChecksum(verify))
	if err != nil {
		return nil, fmt.Errorf("badger: open %s: %w", dir, err)
	}
	return &badgerEngine{db: db, dir: dir, prefetch: prefetch}, nil
}

// badgerDefaultPrefetch is Badger's default IteratorOptions.PrefetchSize.
const badgerDefaultPrefetch = 100

// badgerVariant derives "badger/prefetch" (iterators with PrefetchValues
// and Badger's default PrefetchSize of 100), "badger/prefetch<N>" (a
// PrefetchSize of N >= 2), which differ from "badger" only in scans, and
// "badger/verify", which verifies the checksum of every value it reads
// from the value log (VerifyValueChecksum, off by default), as Strata
// always does.
func badgerVariant(variant string) (bench.EngineInfo, error) {
	if variant == "verify" {
		return bench.EngineInfo{
			Description: badgerDescription + "; value checksums verified on every value-log read (VerifyValueChecksum)",
			Open: func(dir string, cfg bench.Config) (bench.Engine, error) {
				return openBadgerWith(dir, cfg, 0, true)
			},
		}, nil
	}
	size, ok := 0, false
	if rest, found := strings.CutPrefix(variant, "prefetch"); found {
		if rest == "" {
			size, ok = badgerDefaultPrefetch, true
		} else if n, err := strconv.Atoi(rest); err == nil && n >= 2 {
			size, ok = n, true
		}
	}
	if !ok {
		return bench.EngineInfo{}, fmt.Errorf("unknown Badger variant %q (known: prefetch, prefetch<N> with N >= 2, verify)", variant)
	}
	return bench.EngineInfo{
		Description: fmt.Sprintf("%s; scans with PrefetchValues, PrefetchSize %d (one goroutine per value, up to %d values ahead of the cursor)",
			badgerDescription, size, size-1),
		Open: func(dir string, cfg bench.Config) (bench.Engine, error) {
			return openBadgerWith(dir, cfg, size, false)
		},
	}, nil
}

// Put commits one transaction per write, as the other engines make one
// write per operation (no WriteBatch).
func (e *badgerEngine) Put(key, value []byte) error {
	if e.closed.Load() {
		return errClosed
	}
	err := e.db.Update(func(txn *badger.Txn) error { return txn.Set(key, value) })
	if err != nil {
		return fmt.Errorf("badger: set: %w", err)
	}
	return nil
}

func (e *badgerEngine) Get(key, buf []byte) ([]byte, bool, error) {
	if e.closed.Load() {
		return nil, false, errClosed
	}
	var out []byte
	err := e.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(key)
		if err != nil {
			return err
		}
		out, err = item.ValueCopy(buf[:0])
		return err
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("badger: get: %w", err)
	}
	if out == nil {
		// An empty value: found, with no bytes.
		out = buf[:0]
	}
	return out, true, nil
}

func (e *badgerEngine) Delete(key []byte) error {
	if e.closed.Load() {
		return errClosed
	}
	err := e.db.Update(func(txn *badger.Txn) error { return txn.Delete(key) })
	if err != nil {
		return fmt.Errorf("badger: delete: %w", err)
	}
	return nil
}

// Update reads key's value and writes what fn makes of it in one
// transaction: Badger has no merge operator (its MergeOperator helper
// folds appends by reading and rewriting the value from a background
// goroutine, which is the same work, later), so listappend appends by
// read-modify-write. fn gets the value in place, without a copy.
func (e *badgerEngine) Update(key []byte, fn func(old []byte) ([]byte, error)) error {
	if e.closed.Load() {
		return errClosed
	}
	err := e.db.Update(func(txn *badger.Txn) error {
		var v []byte
		item, err := txn.Get(key)
		switch {
		case errors.Is(err, badger.ErrKeyNotFound):
			if v, err = fn(nil); err != nil {
				return err
			}
		case err != nil:
			return err
		default:
			err = item.Value(func(old []byte) error {
				var ferr error
				v, ferr = fn(old)
				return ferr
			})
			if err != nil {
				return err
			}
		}
		return txn.Set(key, v)
	})
	if err != nil {
		return fmt.Errorf("badger: update: %w", err)
	}
	return nil
}

// PutTTL writes an entry with Badger's TTL (its ExpiresAt, kept with the
// key in the LSM, in whole seconds of the real clock).
func (e *badgerEngine) PutTTL(key, value []byte, ttl time.Duration) error {
	if e.closed.Load() {
		return errClosed
	}
	err := e.db.Update(func(txn *badger.Txn) error {
		return txn.SetEntry(badger.NewEntry(key, value).WithTTL(ttl))
	})
	if err != nil {
		return fmt.Errorf("badger: set with TTL: %w", err)
	}
	return nil
}

// FollowsClock is false: Badger decides expiry by the real clock.
func (e *badgerEngine) FollowsClock() bool { return false }

// Scan reads values synchronously, one after another, as the other
// engines' iterators do, unless the engine is a prefetch variant. Badger's
// PrefetchValues starts one goroutine per item and keeps PrefetchSize items
// ahead of the cursor, each value copied into the item, so a scan of n rows
// fetches up to n+PrefetchSize-1 values (the extra ones for rows the scan
// never returns). Without prefetch a value is a slice of Badger's mapped
// value log, not verified (Badger's VerifyValueChecksum is off by default)
// and not read until Touch reads it.
func (e *badgerEngine) Scan(start []byte, n int) (rows int, nbytes int64, err error) {
	var sum uint64
	rows, nbytes, err = e.scan(start, n, func(k, v []byte) { sum += bench.Touch(k) + bench.Touch(v) })
	bench.Consume(sum)
	return rows, nbytes, err
}

// scan positions at the first key >= start and passes up to n entries to
// fn, in order. The slices are valid only during the call.
func (e *badgerEngine) scan(start []byte, n int, fn func(k, v []byte)) (rows int, nbytes int64, err error) {
	if e.closed.Load() {
		return 0, 0, errClosed
	}
	if n <= 0 {
		return 0, 0, nil
	}
	txn := e.db.NewTransaction(false)
	defer txn.Discard()
	it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: e.prefetch > 0, PrefetchSize: e.prefetch})
	defer it.Close()
	// The loop stops at the n-th row without a further Next, which would
	// position on (and decode) a row the scan does not return.
	for it.Seek(start); it.Valid(); it.Next() {
		item := it.Item()
		k := item.Key()
		var vlen int
		verr := item.Value(func(v []byte) error {
			fn(k, v)
			vlen = len(v)
			return nil
		})
		if verr != nil {
			return rows, nbytes, fmt.Errorf("badger: scan: read value: %w", verr)
		}
		rows++
		nbytes += int64(len(k) + vlen)
		if rows == n {
			break
		}
	}
	return rows, nbytes, nil
}

// WaitForBackgroundWork garbage-collects Badger's value log, which Badger
// never does by itself: its users call DB.RunValueLogGC, typically from a
// ticker, and each call rewrites at most one value-log file (the one with
// the most garbage by the discard statistics Badger's compactions keep,
// once at least badgerGCDiscardRatio of it is garbage; never the file being
// written) or returns ErrNoRewrite. The runner settles after every writing
// benchmark, and this settle calls RunValueLogGC until ErrNoRewrite, which
// is how Badger users reclaim space; so Badger's disk space after a
// benchmark is measured after the collection it can do, as pebble-vs's
// blob-file rewrites and rocksdb-blob's blob GC run inside those engines.
// The rewrites' writes are charged to the benchmark. Badger's LSM
// compactions run by themselves and offer nothing to wait for.
//
// Every open starts a new value-log file, and the runner opens Badger for
// each benchmark, so each benchmark's values are in files of their own,
// which later settles can collect.
func (e *badgerEngine) WaitForBackgroundWork(ctx context.Context) error {
	deadline := time.Now().Add(settleTimeout)
	for {
		if e.closed.Load() {
			return errClosed
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		err := e.db.RunValueLogGC(badgerGCDiscardRatio)
		if errors.Is(err, badger.ErrNoRewrite) {
			return nil
		}
		if err != nil {
			// ErrRejected too: nothing else runs GC on this DB.
			return fmt.Errorf("badger: value log GC: %w", err)
		}
		e.gcRewrites.Add(1)
		if time.Now().After(deadline) {
			return fmt.Errorf("badger: value log GC still rewriting after %s", settleTimeout)
		}
	}
}

func (e *badgerEngine) Close() error {
	if e.closed.Swap(true) {
		return nil
	}
	if err := e.db.Close(); err != nil {
		return fmt.Errorf("badger: close: %w", err)
	}
	return nil
}

// Stats describes the LSM levels (tables and bytes) and the files on disk
// by kind: sstables, value log, memtable logs.
func (e *badgerEngine) Stats() string {
	if e.closed.Load() {
		return ""
	}
	var b strings.Builder
	for _, l := range e.db.Levels() {
		if l.NumTables == 0 {
			continue
		}
		fmt.Fprintf(&b, "L%d: %d tables, %s; ", l.Level, l.NumTables, mib(l.Size))
	}
	var sst, vlog, mem int64
	var nvlog int
	// Sizes are taken from the files rather than db.Size(), which Badger
	// refreshes only once a minute, and are allocated sizes: Badger
	// preallocates value-log files (2 x ValueLogFileSize) and memtable
	// logs (2 x MemTableSize) as sparse files, so while they are open
	// their apparent size says little about the space they use.
	walkErr := filepath.WalkDir(e.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			// The file was removed by a compaction or GC under our feet.
			return nil
		}
		switch filepath.Ext(path) {
		case ".sst":
			sst += bench.FileDiskSize(info)
		case ".vlog":
			vlog += bench.FileDiskSize(info)
			nvlog++
		case ".mem":
			mem += bench.FileDiskSize(info)
		}
		return nil
	})
	fmt.Fprintf(&b, "sst %s, value log %s in %d files, memtable logs %s on disk; value-log GC rewrote %d files",
		mib(sst), mib(vlog), nvlog, mib(mem), e.gcRewrites.Load())
	if walkErr != nil {
		fmt.Fprintf(&b, "; listing %s: %v", e.dir, walkErr)
	}
	return b.String()
}

// mib formats a byte count in MiB.
func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
