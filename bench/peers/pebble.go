package peers

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable"

	"github.com/strata-db/strata/bench"
)

// Value separation policy of pebble-vs (Options.Experimental.
// ValueSeparationPolicy). MinimumSize is Config.ValueThreshold; the others:
const (
	// pebbleMaxBlobReferenceDepth bounds how many overlapping blob files one
	// sstable may reference before a compaction rewrites the values into new
	// blob files (it must be > 0). 10 is what Pebble's own benchmark tool
	// (cmd/pebble) uses.
	pebbleMaxBlobReferenceDepth = 10
	// pebbleTargetGarbageRatio: once 20% of the bytes in blob files are
	// unreferenced, Pebble rewrites blob files to reclaim the space — the
	// counterpart of rocksdb-blob's --enable_blob_garbage_collection, and the
	// same 20% Pebble allows by default for obsolete sstable bytes
	// (Options.ObsoleteBytesMaxRatio). 1.0 would disable rewrites and let
	// space amplification grow without bound under overwrites.
	pebbleTargetGarbageRatio = 0.20
	// pebbleRewriteMinimumAge is how old a blob file must be before it may be
	// rewritten. Benchmarks run for seconds to minutes, so a production-like
	// age of minutes would mean no rewrite ever happens within a run; 10 s
	// still keeps freshly written files (whose garbage is still growing) out
	// of rewrites.
	pebbleRewriteMinimumAge = 10 * time.Second
)

// pebbleFormat is the format major version both Pebble engines use: the
// newest, so that pebble and pebble-vs write the same (columnar) sstable
// format and differ only in value separation. Value separation requires at
// least FormatValueSeparation (it writes TableFormatPebblev7 sstables);
// Pebble's default (FormatMinSupported) would silently never separate.
const (
	pebbleFormat     = pebble.FormatNewest
	pebbleFormatName = "newest"
)

// pebbleMaxCompactions is the upper bound of concurrent compactions
// (Options.CompactionConcurrencyRange): the machine's two cores, as Badger
// gets two compactors. Pebble's default upper bound is 1.
const pebbleMaxCompactions = 2

// pebbleReservedMemtables is how many memtables' worth of Pebble's block
// cache the memtables take. Pebble charges every memtable arena it
// allocates to the block cache (Cache.Reserve in DB.newMemTable) and keeps
// one retired memtable for reuse, so with a 64 MiB memtable a 64 MiB cache
// holds no blocks at all once the memtable reaches full size: the mutable
// memtable plus the recycled (or flushing) one reserve 128 MiB. The other
// engines keep memtables outside their block cache.
const pebbleReservedMemtables = 2

// pebbleCacheSize is the size Pebble's cache is created with: Config.CacheSize
// for blocks, plus the memtable reservation, so that Pebble gets the same
// block cache as the other engines.
func pebbleCacheSize(cfg bench.Config) int64 {
	return cfg.CacheSize + pebbleReservedMemtables*cfg.MemTableSize
}

// pebbleEngine adapts a *pebble.DB. Pebble's DB is safe for concurrent use.
type pebbleEngine struct {
	db     *pebble.DB
	wo     *pebble.WriteOptions
	closed atomic.Bool
}

// pebbleOptions translates cfg into Pebble options.
func pebbleOptions(cfg bench.Config, valueSeparation bool) (*pebble.Options, error) {
	if err := checkConfig(cfg); err != nil {
		return nil, err
	}
	opts := &pebble.Options{
		FormatMajorVersion: pebbleFormat,
		MemTableSize:       uint64(cfg.MemTableSize),
		// Writes stop when queued memtables reach 2 x MemTableSize (Pebble's
		// default, the same as RocksDB's max_write_buffer_number=2).
		MemTableStopWritesThreshold: 2,
		// The WAL is on unless the workload turns it off; whether a write
		// waits for fsync is chosen per write (pebble.Sync / pebble.NoSync).
		DisableWAL: cfg.DisableWAL,
		Logger:     quietPebbleLogger{},
		CompactionConcurrencyRange: func() (int, int) {
			return 1, pebbleMaxCompactions
		},
		// Merge operands are concatenated: a list is its appended
		// elements, each already length-prefixed by the workload.
		Merger: pebbleListMerger,
	}
	profile := sstable.NoCompression
	if cfg.Compression == "snappy" {
		profile = sstable.SnappyCompression
	}
	// Applies to sstable data blocks and to blob files (Pebble takes the
	// blob files' compression from the level options too).
	settings := pebble.UniformDBCompressionSettings(profile)
	opts.ApplyCompressionSettings(func() pebble.DBCompressionSettings { return settings })

	if valueSeparation {
		if cfg.ValueThreshold <= 0 {
			return nil, fmt.Errorf("pebble-vs: value threshold must be positive (Pebble requires MinimumSize > 0), got %d",
				cfg.ValueThreshold)
		}
		policy := pebble.ValueSeparationPolicy{
			Enabled:               true,
			MinimumSize:           cfg.ValueThreshold,
			MaxBlobReferenceDepth: pebbleMaxBlobReferenceDepth,
			RewriteMinimumAge:     pebbleRewriteMinimumAge,
			TargetGarbageRatio:    pebbleTargetGarbageRatio,
		}
		opts.Experimental.ValueSeparationPolicy = func() pebble.ValueSeparationPolicy { return policy }
		// Value separation is ignored unless columnar blocks are written
		// (the default once EnsureDefaults runs; set to be explicit).
		opts.Experimental.EnableColumnarBlocks = func() bool { return true }
	}
	return opts, nil
}

func openPebble(dir string, cfg bench.Config, valueSeparation bool) (bench.Engine, error) {
	name := "pebble"
	if valueSeparation {
		name = "pebble-vs"
	}
	opts, err := pebbleOptions(cfg, valueSeparation)
	if err != nil {
		return nil, err
	}
	cache := pebble.NewCache(pebbleCacheSize(cfg))
	// The DB takes its own reference to the cache; ours is released whether
	// or not Open succeeds.
	defer cache.Unref()
	opts.Cache = cache
	db, err := pebble.Open(dir, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: open %s: %w", name, dir, err)
	}
	wo := pebble.NoSync
	if cfg.Sync {
		wo = pebble.Sync
	}
	return &pebbleEngine{db: db, wo: wo}, nil
}

func (e *pebbleEngine) Put(key, value []byte) error {
	if e.closed.Load() {
		return errClosed
	}
	if err := e.db.Set(key, value, e.wo); err != nil {
		return fmt.Errorf("pebble: set: %w", err)
	}
	return nil
}

func (e *pebbleEngine) Get(key, buf []byte) ([]byte, bool, error) {
	if e.closed.Load() {
		return nil, false, errClosed
	}
	v, closer, err := e.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("pebble: get: %w", err)
	}
	out := append(buf[:0], v...)
	if err := closer.Close(); err != nil {
		return nil, false, fmt.Errorf("pebble: get: release value: %w", err)
	}
	return out, true, nil
}

func (e *pebbleEngine) Delete(key []byte) error {
	if e.closed.Load() {
		return errClosed
	}
	if err := e.db.Delete(key, e.wo); err != nil {
		return fmt.Errorf("pebble: delete: %w", err)
	}
	return nil
}

// Merge appends operand to key's value with a concatenating merge operator
// (pebbleListMerger). Pebble has no TTL: the ttl workload deletes its expired keys.
func (e *pebbleEngine) Merge(key, operand []byte) error {
	if e.closed.Load() {
		return errClosed
	}
	if err := e.db.Merge(key, operand, e.wo); err != nil {
		return fmt.Errorf("pebble: merge: %w", err)
	}
	return nil
}

func (e *pebbleEngine) Scan(start []byte, n int) (rows int, nbytes int64, err error) {
	var sum uint64
	rows, nbytes, err = e.scan(start, n, func(k, v []byte) { sum += bench.Touch(k) + bench.Touch(v) })
	bench.Consume(sum)
	return rows, nbytes, err
}

// scan positions at the first key >= start and passes up to n entries to
// fn, in order. The slices are valid only during the call.
func (e *pebbleEngine) scan(start []byte, n int, fn func(k, v []byte)) (rows int, nbytes int64, err error) {
	if e.closed.Load() {
		return 0, 0, errClosed
	}
	if n <= 0 {
		return 0, 0, nil
	}
	it, err := e.db.NewIter(nil)
	if err != nil {
		return 0, 0, fmt.Errorf("pebble: new iterator: %w", err)
	}
	for valid := it.SeekGE(start); valid && rows < n; valid = it.Next() {
		k := it.Key()
		// ValueAndErr fetches a separated value from its blob file.
		v, verr := it.ValueAndErr()
		if verr != nil {
			err = fmt.Errorf("pebble: scan: read value: %w", verr)
			break
		}
		fn(k, v)
		rows++
		nbytes += int64(len(k) + len(v))
	}
	if err == nil {
		if ierr := it.Error(); ierr != nil {
			err = fmt.Errorf("pebble: scan: %w", ierr)
		}
	}
	if cerr := it.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("pebble: scan: close iterator: %w", cerr)
	}
	return rows, nbytes, err
}

// settlePoll and settleTimeout bound WaitForBackgroundWork.
const (
	settlePoll       = 50 * time.Millisecond
	settleQuietPolls = 3
	settleTimeout    = 10 * time.Minute
)

// WaitForBackgroundWork waits until Pebble has nothing left that it would
// compact: no flush or compaction running and every level's compaction score
// below 1, seen on several polls in a row (a finishing compaction can start
// the next). This is what db_bench's waitforcompaction waits for in RocksDB.
// Pebble's EstimatedDebt is not used: it can stay above zero while Pebble
// has decided nothing needs compacting.
func (e *pebbleEngine) WaitForBackgroundWork(ctx context.Context) error {
	deadline := time.Now().Add(settleTimeout)
	quiet := 0
	for quiet < settleQuietPolls {
		m := e.db.Metrics()
		busy := m.Compact.NumInProgress > 0 || m.Flush.NumInProgress > 0
		// The bottom level can score 1 or more (when it is also the base
		// level) with nowhere to compact to; it does not count.
		for _, l := range m.Levels[:len(m.Levels)-1] {
			busy = busy || l.Score >= 1
		}
		if busy {
			quiet = 0
		} else {
			quiet++
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pebble: compactions still pending after %s", settleTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(settlePoll):
		}
	}
	return nil
}

// BytesWritten is what Pebble's metrics count as written since Open: the
// WAL, and the sstables and blob files written by flushes and compactions.
// Blob-file rewrites (how pebble-vs collects garbage) are not in Pebble's
// level metrics, so they are not counted; the process's I/O accounting has
// them.
func (e *pebbleEngine) BytesWritten() int64 {
	if e.closed.Load() {
		return 0
	}
	m := e.db.Metrics()
	n := m.WAL.BytesWritten
	for _, l := range m.Levels {
		n += l.TableBytesFlushed + l.TableBytesCompacted + l.BlobBytesFlushed + l.BlobBytesCompacted
	}
	return int64(n)
}

func (e *pebbleEngine) Close() error {
	if e.closed.Swap(true) {
		return nil
	}
	if err := e.db.Close(); err != nil {
		return fmt.Errorf("pebble: close: %w", err)
	}
	return nil
}

// Stats returns Pebble's metrics table (levels, compactions, blob files,
// caches).
func (e *pebbleEngine) Stats() string {
	if e.closed.Load() {
		return ""
	}
	return e.db.Metrics().String()
}

// quietPebbleLogger drops Pebble's informational and error log lines
// (background errors still surface through the operations that hit them).
// Fatalf keeps Pebble's default behaviour — log and exit — because Pebble
// calls it only for unrecoverable states and does not expect it to return.
type quietPebbleLogger struct{}

func (quietPebbleLogger) Infof(string, ...interface{})  {}
func (quietPebbleLogger) Errorf(string, ...interface{}) {}
func (quietPebbleLogger) Fatalf(format string, args ...interface{}) {
	pebble.DefaultLogger.Fatalf(format, args...)
}
