package strata

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/strata-db/strata/cache"
	"github.com/strata-db/strata/checkpoint"
	"github.com/strata-db/strata/compaction"
	"github.com/strata-db/strata/gc"
	"github.com/strata-db/strata/index/learned"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/lsm/sstable"
	"github.com/strata-db/strata/vfs"
	"github.com/strata-db/strata/vlog"
)

// Options configure a DB. The zero value (or nil) gives the defaults;
// defaults are filled in by EnsureDefaults, in one place.
type Options struct {
	// FS is the filesystem all files go through. Default: vfs.Default (the
	// operating system's).
	FS vfs.FS

	// MemTableSize is the size in bytes of a memtable before it is frozen and
	// flushed. Default: 64 MiB. A single batch larger than this gets a
	// memtable of its own.
	MemTableSize int64

	// MaxImmutableMemTables bounds the frozen memtables waiting for flush.
	// When the bound is reached, writers wait (they do not fail) until a
	// flush finishes. Default: 2.
	MaxImmutableMemTables int

	// ValueThreshold: values of at least this many bytes are stored in value
	// logs instead of the tree (separated when their memtable is flushed), so
	// compaction moves small pointers instead of the values. 0 means the
	// default (1024 bytes); a negative value turns separation off.
	ValueThreshold int
	// SeparationPolicy, if set, decides instead of ValueThreshold which
	// values leave the tree (see vlog.Policy; an adaptive policy that also
	// implements vlog.Observer is told what the workload does).
	SeparationPolicy vlog.Policy
	// SeparationTime says when values leave the tree: SeparateAtCommit
	// (written once, to a value log, when committed: the WAL and memtable
	// hold pointers), or SeparateAtFlush (kept in the WAL and memtable,
	// moved out when the memtable is flushed). Default (SeparateDefault):
	// at commit with the WAL on, at flush with it off, where values
	// overwritten in the memtable then never reach the disk.
	SeparationTime SeparationTime
	// ValueLogFileSize is the size in bytes past which a flush (or the
	// commit pipeline) starts a new value log. Default: 128 MiB.
	ValueLogFileSize int64
	// ValueLogReadAhead is the largest window in bytes a forward scan reads
	// from a value log at once when successive values are adjacent.
	// Default: 1 MiB.
	ValueLogReadAhead int

	// GCPolicy decides how value logs' garbage is collected (see package
	// gc). Default: gc.ReverseLookup(gc.DefaultRatio): value logs with no
	// live bytes are deleted, and the tables that point into value logs past
	// 90% garbage (or, while space amplification is above 1.5, the most
	// garbage-laden ones) are rewritten in place, moving the live values
	// out. gc.Passive() only deletes; gc.Rewrite() and gc.Cost(budget) are
	// the alternatives. A policy that panics decides nothing in that pass
	// (the panic is logged), and its deletions are carried out only where
	// the ledger agrees the value log is dead.
	GCPolicy gc.Policy
	// DisableGC turns value-log garbage collection off entirely: no value
	// log is ever deleted (for measuring what collection saves).
	DisableGC bool

	// CompactionFilter, if set, is asked during flushes and compactions
	// about the newest version of each key that no open snapshot can see
	// (so a snapshot's view never changes); returning true deletes the key.
	// value is the inline value, or nil when the value is in a value log
	// (separated is then true: the filter decides without reading it). It
	// must be safe for concurrent use and must not retain value. A panic
	// in it keeps the key, and is logged. Default: none.
	CompactionFilter CompactionFilter

	// Merger combines the operands DB.Merge writes with a key's value (see
	// Merger; ListAppend and Counter are built in). The database records
	// its Name when it is first opened with one, and Open refuses a
	// Merger of another name (ErrMergerMismatch). Default: nil, and Merge
	// fails with ErrNoMerger.
	Merger Merger

	// Clock is the time TTL expiry is decided by. Background work calls it
	// too, so it must be safe for concurrent use. Default: time.Now.
	Clock func() time.Time
	// DefaultTTL, if positive, makes every Set (and Batch.Set applied by
	// DB.Apply) expire that long after it is written, as SetWithTTL does.
	// Default: 0, no expiry.
	DefaultTTL time.Duration

	// DisableWAL turns the write-ahead log off. Writes are then durable only
	// once flushed (Flush, DB.Sync, Close, or a full memtable); a write's
	// Sync has no effect, and a crash loses an acknowledged Sync write that
	// was not flushed. Stream processors that make their own checkpoints
	// use this.
	DisableWAL bool

	// BlockSize is the target uncompressed size in bytes of SSTable data
	// blocks. Default: 4096.
	BlockSize int
	// BlockRestartInterval is the number of keys between restart points in a
	// data block. Default: 16.
	BlockRestartInterval int
	// BloomBitsPerKey sizes the per-table Bloom filter. Default: 10 (about 1%
	// false positives); negative disables filters.
	BloomBitsPerKey int
	// PrefixExtractor, when set, adds every key's prefix to the Bloom
	// filters of the tables written from then on (besides the key), so
	// that an iterator with IterOptions.Prefix skips the tables that hold
	// no key of its prefix without reading them. Default nil: filters of
	// whole keys, which serve point reads only. See PrefixExtractor.
	PrefixExtractor *PrefixExtractor
	// Compression of SSTable blocks: "none", "snappy", "s2" or "zstd".
	// Blocks that compress by less than 12.5% are stored raw. Default:
	// "snappy".
	Compression string
	// LearnedIndex configures the learned index written with every table:
	// a piecewise-linear model from key to position, within ErrorBound
	// positions, that point reads use instead of binary-searching the
	// table's index (see package learned and lsm/sstable). A table whose
	// keys the model does not fit well, or whose model would take more
	// than MaxShare of it, records why and is read through its index.
	// Default: nil, learned's defaults (error bound 8 positions, at least
	// 64 keys and 32 keys per segment, at most 1% of the table).
	LearnedIndex *learned.Options
	// DisableLearnedIndex writes tables without a learned index and reads
	// every table, old or new, through its index alone. Default: false.
	DisableLearnedIndex bool

	// TargetFileSize is the size in bytes past which compaction starts a new
	// output table. Default: 32 MiB.
	TargetFileSize int64

	// L0CompactionThreshold is the number of L0 tables that starts a
	// compaction into the base level. Default: 4.
	L0CompactionThreshold int
	// L0SlowdownWritesThreshold is the number of L0 tables at which writes
	// are slowed to SlowdownWriteRate. Default: 20.
	L0SlowdownWritesThreshold int
	// L0StopWritesThreshold is the number of L0 tables at which writers wait
	// for compaction when the memtable fills. Default: 36.
	L0StopWritesThreshold int
	// LBaseMaxBytes is the target size in bytes of the base level, the level
	// L0 compacts into; deeper levels grow by LevelMultiplier, sized from
	// the data down (RocksDB's dynamic level sizing). Default: 256 MiB, about
	// what L0 holds when it reaches L0CompactionThreshold memtables, so an
	// L0 compaction does not overfill the base level at once.
	LBaseMaxBytes int64
	// LevelMultiplier is the size ratio between adjacent levels. Default: 10.
	LevelMultiplier int
	// MaxConcurrentCompactions is the number of automatic compactions that
	// may run at once (flushes run besides them). Default: 1.
	MaxConcurrentCompactions int
	// DisableAutomaticCompactions leaves compaction to Compact.
	DisableAutomaticCompactions bool
	// SoftPendingCompactionBytes: once compaction is estimated to be this
	// many bytes behind, writes are slowed to SlowdownWriteRate. Default: 64
	// GiB.
	SoftPendingCompactionBytes int64
	// HardPendingCompactionBytes: once compaction is this many bytes behind,
	// writers wait for it when the memtable fills. Default: 256 GiB.
	HardPendingCompactionBytes int64
	// SlowdownWriteRate is the rate in bytes per second writes are held to
	// while slowed. Default: 32 MiB/s.
	SlowdownWriteRate int64
	// MaxOpenFiles bounds the files kept open for reading, tables and value
	// logs together; files in use by a read or an iterator stay open past
	// it until released. Default: 1000. On the OS's filesystem, open tables
	// and finished value logs are mapped read-only into memory: the
	// mappings take address space, not memory (their pages are the page
	// cache's, which the kernel reclaims as it needs), so the process's
	// resident set counts the pages of open files recently read.
	MaxOpenFiles int
	// DisablePrefault leaves the files of a database just opened closed
	// until reads reach them, and their pages unmapped until reads touch
	// them. By default Open opens, in the background, the current value
	// logs and then tables (local files only, up to half of MaxOpenFiles),
	// and every reader of a table or value log maps, in the background,
	// the pages of its file that the page cache holds (see vfs.Populate):
	// the first reads after a restart then run nearly
	// as fast as later ones instead of opening files and faulting on
	// pages (measured: 200,000 random reads of 4 KiB values right after a
	// reopen, a first pass 0.62-0.96x of the second before, 0.97-1.15x
	// with it). The cost is background CPU proportional to the cached
	// bytes: up to 0.4 ms per MiB on the project's virtual machine, for
	// value logs written a synced write at a time.
	DisablePrefault bool

	// EventListener receives notifications of flushes, compactions, stalls
	// and background errors. Optional.
	EventListener *EventListener
	// Logger receives the DB's log: background errors (Error), write
	// stalls and torn WAL tails (Warn), recovery and garbage-collection
	// decisions (Info), flushes and compactions (Debug). Default: nil,
	// which discards everything.
	Logger *slog.Logger

	// CacheSize is the capacity in bytes of the block cache the DB creates
	// when Cache is nil. Default: 64 MiB. Negative: no block cache.
	CacheSize int64
	// Cache is a block cache to share between DBs (cache.New(bytes)): the
	// DBs of a process can point at one cache, which then bounds their
	// block and value caching together. Default: a new cache of CacheSize
	// bytes for this DB alone.
	Cache *cache.Cache
	// MemoryBudget bounds the memtable memory of every DB pointing at it
	// (NewWriteBudget): when their total nears the budget, the largest
	// memtable among them is flushed, and writes wait while it is reached.
	// Default: nil, each DB bounded by its own MemTableSize and
	// MaxImmutableMemTables only. Ignored by read-only DBs.
	MemoryBudget *WriteBudget

	// MaxManifestFileSize is the manifest size in bytes past which a new
	// manifest is started. Default: 64 MiB.
	MaxManifestFileSize int64

	// ErrorIfExists makes Open fail when the database already exists.
	ErrorIfExists bool
	// ErrorIfNotExists makes Open fail when the database does not exist
	// (by default Open creates it).
	ErrorIfNotExists bool

	// ReadOnly opens an existing database without writing anything: no
	// LOCK is taken (several read-only DBs and one writer, in any
	// processes, may share the directory), the WALs are replayed into
	// memory only, value logs written at commit that the manifest does not
	// list yet are adopted in memory, nothing is flushed, compacted,
	// collected or deleted, and no background goroutine runs. Every write
	// (Set, SetWithTTL, Merge, Delete, DeleteRange, Apply, Flush, Compact,
	// Checkpoint) fails with an error matching ErrReadOnly. The DB sees the database as it
	// was when Open read it; a writer elsewhere may later delete files it
	// has not opened yet (reads of them then fail): for a stable view of a
	// database in use, open a checkpoint of it. Default: false.
	ReadOnly bool

	// SharedStore keeps the primary copy of the database's lower levels in
	// an object store (see package remote): tables written to
	// SharedFromLevel or deeper and every finished value log are uploaded
	// once, in the background, and from then on their local copies are a
	// cache bounded by SharedCacheSize; reads of a part not cached fetch
	// it with a ranged GET. The WAL, the memtables and the upper levels
	// stay local. A database that has shared files must be opened with
	// its store. Default: nil, every file local.
	SharedStore checkpoint.Store
	// SharedFromLevel is the level from which tables are shared. Default
	// (0): the two bottom levels (L5 and L6); L0 is never shared.
	SharedFromLevel int
	// SharedCacheSize bounds the local bytes of shared files (whole copies
	// and fetched parts). Default (0): 1 GiB; negative: no bound.
	SharedCacheSize int64
	// SharedPartSize is the unit in which reads of shared files without a
	// whole local copy fetch and cache them: one ranged GET each (default
	// 1 MiB, remote.DefaultPartSize). Smaller parts move fewer bytes per
	// miss and cache finer, which suits point reads of a state many times
	// the cache; larger ones take fewer requests for scans.
	SharedPartSize int64
	// SharedWarmup, in bytes per second, downloads the shared files not
	// cached locally in the background after Open, until the cache is
	// full. Default (0): none.
	SharedWarmup int64
}

// Defaults of the Options fields. Those that shape the tree are the
// compaction package's, so that the picker and the engine cannot disagree.
const (
	DefaultMemTableSize               = 64 << 20
	DefaultMaxImmutableMemTables      = 2
	DefaultValueThreshold             = 1024
	DefaultBlockSize                  = 4096
	DefaultBlockRestartInterval       = 16
	DefaultBloomBitsPerKey            = 10
	DefaultCompression                = "snappy"
	DefaultTargetFileSize             = compaction.DefaultTargetFileSize
	DefaultL0CompactionThreshold      = compaction.DefaultL0CompactionThreshold
	DefaultL0SlowdownWritesThreshold  = 20
	DefaultL0StopWritesThreshold      = 36
	DefaultLBaseMaxBytes              = compaction.DefaultLBaseMaxBytes
	DefaultLevelMultiplier            = compaction.DefaultLevelMultiplier
	DefaultMaxConcurrentCompactions   = 1
	DefaultSoftPendingCompactionBytes = 64 << 30
	DefaultHardPendingCompactionBytes = 256 << 30
	DefaultSlowdownWriteRate          = 32 << 20
	DefaultMaxOpenFiles               = 1000
	DefaultValueLogReadAhead          = 1 << 20
	DefaultValueLogFileSize           = 128 << 20
	DefaultCacheSize                  = 64 << 20
	DefaultMaxManifestFileSize        = 64 << 20
)

// EnsureDefaults returns a copy of o (nil allowed) with every unset field
// given its default.
func (o *Options) EnsureDefaults() *Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.FS == nil {
		c.FS = vfs.Default
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.MemTableSize == 0 {
		c.MemTableSize = DefaultMemTableSize
	}
	if c.MaxImmutableMemTables == 0 {
		c.MaxImmutableMemTables = DefaultMaxImmutableMemTables
	}
	if c.ValueThreshold == 0 {
		c.ValueThreshold = DefaultValueThreshold
	}
	if c.SeparationPolicy == nil {
		c.SeparationPolicy = vlog.Threshold(c.ValueThreshold)
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.GCPolicy == nil {
		c.GCPolicy = gc.ReverseLookup(gc.DefaultRatio)
	}
	if c.ValueLogReadAhead == 0 {
		c.ValueLogReadAhead = DefaultValueLogReadAhead
	}
	if c.ValueLogFileSize == 0 {
		c.ValueLogFileSize = DefaultValueLogFileSize
	}
	if c.BlockSize == 0 {
		c.BlockSize = DefaultBlockSize
	}
	if c.BlockRestartInterval == 0 {
		c.BlockRestartInterval = DefaultBlockRestartInterval
	}
	if c.BloomBitsPerKey == 0 {
		c.BloomBitsPerKey = DefaultBloomBitsPerKey
	}
	if c.Compression == "" {
		c.Compression = DefaultCompression
	}
	if c.TargetFileSize == 0 {
		c.TargetFileSize = DefaultTargetFileSize
	}
	if c.L0CompactionThreshold == 0 {
		c.L0CompactionThreshold = DefaultL0CompactionThreshold
	}
	if c.L0SlowdownWritesThreshold == 0 {
		c.L0SlowdownWritesThreshold = DefaultL0SlowdownWritesThreshold
	}
	if c.L0StopWritesThreshold == 0 {
		c.L0StopWritesThreshold = DefaultL0StopWritesThreshold
	}
	if c.LBaseMaxBytes == 0 {
		c.LBaseMaxBytes = DefaultLBaseMaxBytes
	}
	if c.LevelMultiplier == 0 {
		c.LevelMultiplier = DefaultLevelMultiplier
	}
	if c.MaxConcurrentCompactions == 0 {
		c.MaxConcurrentCompactions = DefaultMaxConcurrentCompactions
	}
	if c.SoftPendingCompactionBytes == 0 {
		c.SoftPendingCompactionBytes = DefaultSoftPendingCompactionBytes
	}
	if c.HardPendingCompactionBytes == 0 {
		c.HardPendingCompactionBytes = DefaultHardPendingCompactionBytes
	}
	if c.SlowdownWriteRate == 0 {
		c.SlowdownWriteRate = DefaultSlowdownWriteRate
	}
	if c.MaxOpenFiles == 0 {
		c.MaxOpenFiles = DefaultMaxOpenFiles
	}
	if c.CacheSize == 0 {
		c.CacheSize = DefaultCacheSize
	}
	if c.MaxManifestFileSize == 0 {
		c.MaxManifestFileSize = DefaultMaxManifestFileSize
	}
	return &c
}

// maxMemTableSize is the largest memtable the arena's 32-bit offsets allow.
const maxMemTableSize = 4<<30 - 1

// Validate reports every invalid field at once.
func (o *Options) Validate() error {
	c := o.EnsureDefaults()
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.MemTableSize < 16<<10 || c.MemTableSize > maxMemTableSize {
		bad("MemTableSize %d is outside [16 KiB, 4 GiB)", c.MemTableSize)
	}
	if c.MaxImmutableMemTables < 1 {
		bad("MaxImmutableMemTables %d must be at least 1", c.MaxImmutableMemTables)
	}
	if c.BlockSize < 256 || c.BlockSize > 1<<20 {
		bad("BlockSize %d is outside [256 B, 1 MiB]", c.BlockSize)
	}
	if c.BlockRestartInterval < 1 || c.BlockRestartInterval > 1024 {
		bad("BlockRestartInterval %d is outside [1, 1024]", c.BlockRestartInterval)
	}
	if c.BloomBitsPerKey > 64 {
		bad("BloomBitsPerKey %d is larger than 64", c.BloomBitsPerKey)
	}
	if p := c.PrefixExtractor; p != nil && (p.Name == "" || p.Len == nil) {
		bad("PrefixExtractor needs both a Name and a Len function")
	}
	if _, err := sstable.ParseCompression(c.Compression); err != nil {
		bad("Compression %q is not one of none, snappy, s2, zstd", c.Compression)
	}
	if c.LearnedIndex != nil {
		if err := c.LearnedIndex.Validate(); err != nil {
			bad("LearnedIndex: %v", err)
		}
	}
	if c.TargetFileSize < 2<<10 {
		bad("TargetFileSize %d is smaller than 2 KiB", c.TargetFileSize)
	}
	if c.L0CompactionThreshold < 1 {
		bad("L0CompactionThreshold %d must be at least 1", c.L0CompactionThreshold)
	}
	if c.L0SlowdownWritesThreshold < c.L0CompactionThreshold {
		bad("L0SlowdownWritesThreshold %d is below L0CompactionThreshold %d", c.L0SlowdownWritesThreshold, c.L0CompactionThreshold)
	}
	if c.L0StopWritesThreshold < c.L0SlowdownWritesThreshold {
		bad("L0StopWritesThreshold %d is below L0SlowdownWritesThreshold %d", c.L0StopWritesThreshold, c.L0SlowdownWritesThreshold)
	}
	if c.LBaseMaxBytes < 16<<10 {
		bad("LBaseMaxBytes %d is smaller than 16 KiB", c.LBaseMaxBytes)
	}
	if c.LevelMultiplier < 2 {
		bad("LevelMultiplier %d must be at least 2", c.LevelMultiplier)
	}
	if c.MaxConcurrentCompactions < 1 {
		bad("MaxConcurrentCompactions %d must be at least 1", c.MaxConcurrentCompactions)
	}
	if c.HardPendingCompactionBytes < c.SoftPendingCompactionBytes {
		bad("HardPendingCompactionBytes %d is below SoftPendingCompactionBytes %d", c.HardPendingCompactionBytes, c.SoftPendingCompactionBytes)
	}
	if c.SlowdownWriteRate < 1<<20 {
		bad("SlowdownWriteRate %d is below 1 MiB/s", c.SlowdownWriteRate)
	}
	if c.ValueLogFileSize < 64<<10 {
		bad("ValueLogFileSize %d is smaller than 64 KiB", c.ValueLogFileSize)
	}
	if c.ValueLogReadAhead < 4<<10 {
		bad("ValueLogReadAhead %d is smaller than 4 KiB", c.ValueLogReadAhead)
	}
	if c.MaxOpenFiles < 16 {
		bad("MaxOpenFiles %d is below 16", c.MaxOpenFiles)
	}
	if c.MaxManifestFileSize < 4<<10 {
		bad("MaxManifestFileSize %d is smaller than 4 KiB", c.MaxManifestFileSize)
	}
	if c.SharedFromLevel < 0 || c.SharedFromLevel >= manifest.NumLevels {
		bad("SharedFromLevel %d is outside [1, %d] (0: the default)", c.SharedFromLevel, manifest.NumLevels-1)
	}
	if c.SharedPartSize < 0 || (c.SharedPartSize > 0 && c.SharedPartSize < 4<<10) || c.SharedPartSize > 64<<20 {
		bad("SharedPartSize %d is outside [4 KiB, 64 MiB] (0: the default)", c.SharedPartSize)
	}
	if c.SharedWarmup < 0 {
		bad("SharedWarmup %d is negative", c.SharedWarmup)
	}
	if c.ReadOnly && c.ErrorIfExists {
		bad("ReadOnly and ErrorIfExists are both set: a read-only Open never creates a database")
	}
	if c.ErrorIfExists && c.ErrorIfNotExists {
		bad("ErrorIfExists and ErrorIfNotExists are both set: Open could never succeed")
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("strata: invalid options: %w", errors.Join(errs...))
}

func (o *Options) writerOptions() sstable.WriterOptions {
	c, _ := sstable.ParseCompression(o.Compression)
	wo := sstable.WriterOptions{
		BlockSize:            o.BlockSize,
		BlockRestartInterval: o.BlockRestartInterval,
		BitsPerKey:           o.BloomBitsPerKey,
		Compression:          c,
	}
	if p := o.PrefixExtractor; p != nil {
		wo.PrefixName, wo.PrefixLen = p.Name, p.Len
	}
	if !o.DisableLearnedIndex {
		wo.Learned = &learned.Options{}
		if o.LearnedIndex != nil {
			*wo.Learned = *o.LearnedIndex
		}
	}
	return wo
}

// WriteOptions control one write.
type WriteOptions struct {
	// Sync makes the write durable (the WAL is synced) before it returns.
	Sync bool
}

// Sync and NoSync are the two write modes. A nil *WriteOptions means Sync.
var (
	Sync   = &WriteOptions{Sync: true}
	NoSync = &WriteOptions{Sync: false}
)

func (o *WriteOptions) sync() bool { return o == nil || o.Sync }

// IterOptions bound an iterator to [LowerBound, UpperBound). A nil bound is
// unbounded.
type IterOptions struct {
	LowerBound, UpperBound []byte
	// Prefix, when not nil, limits the iterator to the keys that start
	// with it: the bounds narrow to [Prefix, the first key past every key
	// that starts with it), within LowerBound and UpperBound. When
	// Options.PrefixExtractor gives Prefix as its own prefix (Len(Prefix)
	// == len(Prefix)), the iterator asks each table's Bloom filter and
	// reads only the tables that may hold a key of that prefix
	// (Metrics.PrefixFilter counts them). Default nil: no prefix.
	Prefix []byte
	// MappedValues lets Value return a separated value read from a
	// memory-mapped value log as a slice of the mapping, its checksum
	// verified in place, instead of a copy: a scan saves a copy of every
	// such value. Default false.
	//
	// The slice is valid until the next positioning call or Close,
	// whichever comes first, and must not be used after either: once the
	// iterator lets go of the value log, the mapping may be unmapped, and
	// reading the slice then crashes the process rather than returning an
	// error (as does reading it while another process truncates the file;
	// Strata never truncates a value log).
	MappedValues bool
}
