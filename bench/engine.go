package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Engine is a key-value store driven operation by operation. Methods may be
// called from several goroutines at once (readers in parallel with one
// writer).
type Engine interface {
	// Put writes key=value (durably before returning when Config.Sync).
	Put(key, value []byte) error
	// Get appends the value of key to buf[:0] and returns it; found is false
	// when the key does not exist.
	Get(key, buf []byte) (value []byte, found bool, err error)
	// Delete removes key.
	Delete(key []byte) error
	// Scan positions at the first key >= start and reads up to n entries,
	// returning how many it read and their total key+value bytes. Every
	// key and value read is passed through Touch (one load per cache line)
	// and the sum to Consume, so that every engine delivers the bytes
	// themselves, not just slices that could point at memory never read.
	Scan(start []byte, n int) (rows int, bytes int64, err error)
	// Close closes the store.
	Close() error
}

// Stater is implemented by engines that can describe their internal state
// (levels, caches) after a run; the report shows it.
type Stater interface {
	Stats() string
}

// Settler is implemented by engines whose writes leave background work
// behind (compactions). After each benchmark that writes, the runner waits
// for it, untimed, with the disk writes it makes charged to the benchmark,
// as the RocksDB engines do with db_bench's waitforcompaction. Without it an
// engine's compaction debt would be paid inside the next benchmark, and its
// reads measured against a tree that is still being reshaped.
type Settler interface {
	WaitForBackgroundWork(ctx context.Context) error
}

// WriteCounter is implemented by engines that count the bytes they write
// to storage themselves. The runner reads the count after a benchmark and
// its settle, before closing the engine (which it opens for each
// benchmark, so the count covers one benchmark) into
// Result.EngineWritten, beside the process's own I/O accounting. What the
// count covers is the engine's: each implementation says.
type WriteCounter interface {
	BytesWritten() int64
}

// Merger is implemented by engines with a merge operator that appends:
// Merge adds operand to the end of key's value (the value is the
// concatenation of the operands merged into it, oldest first) without
// reading the value. The listappend workload uses it where an engine has
// it, and reads and rewrites the whole list otherwise (see Updater).
type Merger interface {
	Merge(key, operand []byte) error
}

// Updater is implemented by engines that read-modify-write one key
// atomically, in a transaction: Update calls fn with key's value (nil when
// there is none) and writes what fn returns. The listappend workload uses
// it on engines without a merge operator; on engines with neither, it
// reads with Get and writes with Put (one writer, so nothing interleaves).
type Updater interface {
	Update(key []byte, fn func(old []byte) ([]byte, error)) error
}

// TTLWriter is implemented by engines that can write a key with a time to
// live (the ttl workload; engines without it get explicit deletes of the
// keys whose TTL passed).
type TTLWriter interface {
	// PutTTL writes key=value to expire ttl from now.
	PutTTL(key, value []byte, ttl time.Duration) error
	// FollowsClock reports whether the engine tells the time by
	// Config.Clock, which the workload moves forward, or by the real
	// clock, which the workload has to wait for.
	FollowsClock() bool
}

// Counter is implemented by engines that count events of interest
// themselves (Strata: entries its compactions dropped as expired, and the
// value-log reads those compactions made). The runner reads the counts
// after a benchmark and its settle, before closing the engine (which it
// opens for each benchmark, so they cover one benchmark), into
// Result.Counters.
type Counter interface {
	Counters() map[string]int64
}

// External is an engine that runs a whole spec itself (RocksDB's db_bench),
// returning one Result per benchmark, in order.
type External interface {
	Run(ctx context.Context, spec *Spec, dir string, progress Progress) ([]Result, error)
}

// EngineInfo describes a registered engine.
type EngineInfo struct {
	Name        string
	Description string
	// Open opens an in-process engine in dir (which exists and is empty).
	// Nil for external engines.
	Open func(dir string, cfg Config) (Engine, error)
	// External returns the engine for engines that run workloads
	// themselves. Nil for in-process engines.
	External func() External
	// Available returns nil when the engine can run here, or an error
	// saying why not (shown as a skip note, never a failure).
	Available func() error
	// Variant derives a variant of the engine, named by what follows a
	// slash in an engine name: "strata/passive" is the variant "passive"
	// of "strata" (Strata with that value-log GC policy). It returns an
	// error naming the variants it knows when variant is not one of them.
	// Nil for engines without variants. Variants are not registered: any
	// number of them can be asked for by name, and each runs as an engine
	// of its own, with its own row in the reports.
	Variant func(variant string) (EngineInfo, error)
	// Version returns the engine's version, for Result.EngineVersion. Nil
	// for engines that report it in their results (external ones).
	Version func() string
}

var registry struct {
	sync.Mutex
	engines []EngineInfo
}

// RegisterEngine adds an engine (adapters call it from init).
func RegisterEngine(e EngineInfo) {
	registry.Lock()
	defer registry.Unlock()
	registry.engines = slices.DeleteFunc(registry.engines, func(x EngineInfo) bool { return x.Name == e.Name })
	registry.engines = append(registry.engines, e)
}

// LookupEngine finds an engine by name: a registered engine, or a variant
// "base/variant" of one (see EngineInfo.Variant).
func LookupEngine(name string) (EngineInfo, bool) {
	e, err := ResolveEngine(name)
	return e, err == nil
}

// ResolveEngine is LookupEngine with an error saying why a name is not an
// engine. A variant gets the name asked for, and its base engine's
// Available when it has none of its own.
func ResolveEngine(name string) (EngineInfo, error) {
	if e, ok := registered(name); ok {
		return e, nil
	}
	unknown := fmt.Errorf("unknown engine %q (known: %s)", name, strings.Join(EngineNames(), ", "))
	baseName, variant, ok := strings.Cut(name, "/")
	if !ok {
		return EngineInfo{}, unknown
	}
	base, ok := registered(baseName)
	if !ok || base.Variant == nil {
		return EngineInfo{}, unknown
	}
	if variant == "" {
		return EngineInfo{}, fmt.Errorf("engine %q: no variant after the slash", name)
	}
	e, err := base.Variant(variant)
	if err != nil {
		return EngineInfo{}, fmt.Errorf("engine %q: %w", name, err)
	}
	e.Name = name
	if e.Available == nil {
		e.Available = base.Available
	}
	if e.Version == nil {
		e.Version = base.Version
	}
	return e, nil
}

// registered finds an engine registered under name.
func registered(name string) (EngineInfo, bool) {
	registry.Lock()
	defer registry.Unlock()
	for _, e := range registry.engines {
		if e.Name == name {
			return e, true
		}
	}
	return EngineInfo{}, false
}

// DirName is the name of an engine's database directory under the run's
// directory: the engine name with slashes made dashes, so that a variant
// ("strata/passive") gets a directory beside its base engine's rather than
// inside it.
func DirName(engine string) string { return strings.ReplaceAll(engine, "/", "-") }

// EngineNames lists the registered engines, sorted (variants, which are
// derived on demand, are not listed).
func EngineNames() []string {
	registry.Lock()
	defer registry.Unlock()
	var out []string
	for _, e := range registry.engines {
		out = append(out, e.Name)
	}
	slices.Sort(out)
	return out
}

// Progress receives progress reports while a benchmark runs. Implementations
// must be safe for concurrent use.
type Progress interface {
	// Start announces a benchmark of total operations on engine.
	Start(engine, benchmark string, total int64)
	// Add reports n more operations done.
	Add(n int64)
	// Done ends the benchmark.
	Done()
}

// Measurer is implemented by a Progress that shows, when a benchmark ends,
// the operations and time the benchmark's Result reports, rather than its
// own count between Start and Done, which for db_bench also holds the
// process's start and its wait for compactions.
type Measurer interface {
	Measured(ops int64, d time.Duration)
}

// ReportMeasured tells p, when it is a Measurer, what the benchmark
// measured. Call it before Done.
func ReportMeasured(p Progress, ops int64, d time.Duration) {
	if m, ok := p.(Measurer); ok {
		m.Measured(ops, d)
	}
}

// NoProgress discards progress reports.
type NoProgress struct{}

func (NoProgress) Start(string, string, int64) {}
func (NoProgress) Add(int64)                   {}
func (NoProgress) Done()                       {}
