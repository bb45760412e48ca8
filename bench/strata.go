package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/checkpoint"
	"github.com/strata-db/strata/gc"
	"github.com/strata-db/strata/vlog"
)

func init() {
	RegisterEngine(EngineInfo{
		Name:        "strata",
		Description: "Strata (this repository), default value-log GC policy",
		Open: func(dir string, cfg Config) (Engine, error) {
			return openStrata(dir, cfg, "")
		},
		Variant: strataVariant,
		Version: strataVersion,
	})
}

// strataVersion is the engine's module version (in this repository's
// workspace, "devel").
func strataVersion() string { return ModuleVersion("github.com/strata-db/strata") }

// GCPolicyNames are the value-log GC policies Strata's variants run with:
// "strata/<policy>" is Strata with Options.GCPolicy set to that policy
// (gc.ByName's defaults; "cost" with Config.GCBudget), and "strata/off" is
// Strata with Options.DisableGC, to measure what collection saves.
var GCPolicyNames = []string{"passive", "reverse-lookup", "rewrite", "cost", strataGCOff}

// strataGCOff is the variant with value-log GC turned off.
const strataGCOff = "off"

// strataRMW is the variant "strata/rmw": Strata with its default GC
// policy that offers no merge operator to the workloads, so listappend
// appends to a list by reading it and writing it back, the baseline its
// merge operator is measured against.
const strataRMW = "rmw"

// strataMapped is the variant "strata/mapped": Strata with its default GC
// policy whose scans take values in place from the value logs' mappings
// (IterOptions.MappedValues) instead of copies.
const strataMapped = "mapped"

// strataShared is the variant "strata/shared": Strata with its default
// GC policy and a shared store (Options.SharedStore), a local store
// beside its directory (SharedStoreDir) made as slow as Spec.StoreLatency
// and Spec.StoreBandwidth say, and a cache of Config.SharedCache bytes
// (no bound when 0): the cost of sharing the lower levels in ordinary
// work, where the cache holds the whole state.
const strataShared = "shared"

// SharedStoreDir is the directory of the store of strata/shared whose
// database is in dir: beside it, so that the database's disk size is
// its own, or, when under is not empty (Config.SharedStoreDir), in under,
// named after the run's directory and the database's.
func SharedStoreDir(under, dir string) string {
	if under == "" {
		return dir + "-store"
	}
	return filepath.Join(under, filepath.Base(filepath.Dir(dir))+"-"+filepath.Base(dir)+"-store")
}

// strataVariant derives "strata/<policy>", "strata/rmw", "strata/mapped",
// "strata/shared", or a separation variant ("strata/t1k",
// "strata/adaptive": see separationVariants).
func strataVariant(policy string) (EngineInfo, error) {
	if sep, ok := separationVariants[policy]; ok {
		return EngineInfo{
			Description: "Strata (this repository), " + sep.desc,
			Open: func(dir string, cfg Config) (Engine, error) {
				return openStrataSep(dir, cfg, sep)
			},
		}, nil
	}
	desc := "Strata (this repository), value-log GC policy " + policy
	switch policy {
	case strataRMW:
		return EngineInfo{
			Description: "Strata (this repository), default value-log GC policy, lists appended by read-modify-write (no merge operator)",
			Open: func(dir string, cfg Config) (Engine, error) {
				e, err := openStrata(dir, cfg, "")
				if err != nil {
					return nil, err
				}
				return strataNoMerge{e.(*strataEngine)}, nil
			},
		}, nil
	case strataMapped:
		return EngineInfo{
			Description: "Strata (this repository), default value-log GC policy, scans with IterOptions.MappedValues (values in place in mapped value logs, not copied)",
			Open: func(dir string, cfg Config) (Engine, error) {
				e, err := openStrata(dir, cfg, "")
				if err != nil {
					return nil, err
				}
				e.(*strataEngine).iterOpts = &strata.IterOptions{MappedValues: true}
				return e, nil
			},
		}, nil
	case strataShared:
		return EngineInfo{
			Description: "Strata (this repository), default value-log GC policy, lower levels shared into a local store " +
				"(SharedStore, --store_latency added to its requests) with a cache of --shared_cache bytes (0: no bound)",
			Open: func(dir string, cfg Config) (Engine, error) {
				if cfg.sharedStore == nil {
					store, err := openSharedStore(SharedStoreDir(cfg.SharedStoreDir, dir), cfg)
					if err != nil {
						return nil, err
					}
					cfg.sharedStore = store
				}
				if cfg.SharedCache == 0 {
					cfg.SharedCache = -1
				}
				return openStrata(dir, cfg, "")
			},
		}, nil
	case strataGCOff:
		desc = "Strata (this repository), value-log GC off (DisableGC)"
	case "cost":
		desc += " with the space-amplification budget --gc_budget"
	case "":
		return EngineInfo{}, fmt.Errorf("no GC policy named (%s), or %s, or %s, or %s", strings.Join(GCPolicyNames, ", "), strataRMW, strataMapped, strataShared)
	default:
		if _, err := gc.ByName(policy); err != nil {
			return EngineInfo{}, fmt.Errorf("%w; or %s; or %s; or %s; or %s; or a separation variant (%s)", err, strataGCOff, strataRMW, strataMapped, strataShared,
				strings.Join(SeparationVariantNames, ", "))
		}
	}
	return EngineInfo{
		Description: desc,
		Open: func(dir string, cfg Config) (Engine, error) {
			return openStrata(dir, cfg, policy)
		},
	}, nil
}

type strataEngine struct {
	db *strata.DB
	wo *strata.WriteOptions
	// opts are the options db was opened with (the statebackend workload
	// opens databases of its own with them).
	opts strata.Options
	// ttlWrites says a write with a TTL was made since Open (see
	// WaitForBackgroundWork).
	ttlWrites atomic.Bool
	// iterOpts are the options of Scan's iterators (nil: the defaults).
	iterOpts *strata.IterOptions
}

// openStrata opens Strata in dir with the value-log GC policy named policy
// ("" for Strata's default, strataGCOff for none).
func openStrata(dir string, cfg Config, policy string) (Engine, error) {
	return openStrataWith(dir, cfg, policy, nil)
}

// openStrataWith is openStrata with a last say on the options.
func openStrataWith(dir string, cfg Config, policy string, adjust func(*strata.Options)) (Engine, error) {
	opts := &strata.Options{
		MemTableSize:   cfg.MemTableSize,
		CacheSize:      cfg.CacheSize,
		Compression:    cfg.Compression,
		ValueThreshold: cfg.ValueThreshold,
		DisableWAL:     cfg.DisableWAL,
		// Lists for listappend (the merger is consulted only where merge
		// operands were written).
		Merger: strata.ListAppend,
		Clock:  cfg.Clock,
	}
	if cfg.ValueThreshold <= 0 {
		opts.ValueThreshold = -1
	}
	switch policy {
	case "":
	case strataGCOff:
		opts.DisableGC = true
	case "cost":
		opts.GCPolicy = gc.Cost(cfg.GCBudget)
	default:
		p, err := gc.ByName(policy)
		if err != nil {
			return nil, err
		}
		opts.GCPolicy = p
	}
	if cfg.sharedStore != nil {
		opts.SharedStore = cfg.sharedStore
		opts.SharedCacheSize = cfg.SharedCache
		opts.SharedPartSize = cfg.SharedPartSize
	}
	if adjust != nil {
		adjust(opts)
	}
	db, err := strata.Open(dir, opts)
	if err != nil {
		return nil, err
	}
	wo := strata.NoSync
	if cfg.Sync {
		wo = strata.Sync
	}
	return &strataEngine{db: db, wo: wo, opts: *opts}, nil
}

func (e *strataEngine) Put(key, value []byte) error { return e.db.Set(key, value, e.wo) }

// Get reads into buf, as Badger's ValueCopy and Pebble's copy do.
func (e *strataEngine) Get(key, buf []byte) ([]byte, bool, error) {
	v, err := e.db.GetAppend(key, buf[:0])
	if err != nil {
		if isNotFound(err) {
			return buf[:0], false, nil
		}
		return nil, false, err
	}
	return v, true, nil
}

func (e *strataEngine) Delete(key []byte) error { return e.db.Delete(key, e.wo) }

// Merge appends operand to key's list with strata.ListAppend.
func (e *strataEngine) Merge(key, operand []byte) error { return e.db.Merge(key, operand, e.wo) }

// PutTTL writes with SetWithTTL; expiry is decided by Config.Clock.
func (e *strataEngine) PutTTL(key, value []byte, ttl time.Duration) error {
	e.ttlWrites.Store(true)
	return e.db.SetWithTTL(key, value, ttl, e.wo)
}

func (e *strataEngine) FollowsClock() bool { return true }

// Counters, since Open: the entries flushes and compactions dropped (or
// turned into tombstones) because their TTL had passed
// (Metrics.Compact.Expired); the value-log records compactions read
// (Compact.ValueLogReads), which only relocating live values out of a
// value log being collected does, never expiry; and the records garbage
// collection relocated in all (GC.Relocated, by recompaction or rewrite),
// of which those reads are a part. Run on strata/off (no GC, so no
// relocation), a ttl workload shows compactions dropping expired entries
// with no value-log read at all. And the writes (commits) and those of
// them that waited for another writer's commit (commit_waits,
// Metrics.Latency.CommitWait), which is where a write's tail comes from
// when writing goroutines outnumber processors. With a shared store
// (strata/shared), the shared files, the store GETs reads made and the
// parts the cache lacked (Metrics.Shared).
func (e *strataEngine) Counters() map[string]int64 {
	m := e.db.Metrics()
	c := map[string]int64{
		"compact_expired":         int64(m.Compact.Expired),
		"compact_value_log_reads": int64(m.Compact.ValueLogReads),
		"gc_relocated":            int64(m.GC.Relocated),
		"commits":                 int64(m.Latency.Commit.Count),
		"commit_waits":            int64(m.Latency.CommitWait.Count),
	}
	if sh := m.Shared; sh.Files > 0 {
		// With a shared store: the ranged GETs reads made of it, and the
		// parts the cache lacked.
		c["shared_files"] = int64(sh.Files)
		c["shared_gets"] = sh.Gets
		c["shared_part_misses"] = sh.PartMisses
	}
	return c
}

func (e *strataEngine) Scan(start []byte, n int) (int, int64, error) {
	it, err := e.db.NewIter(e.iterOpts)
	if err != nil {
		return 0, 0, err
	}
	rows, bytes := 0, int64(0)
	var sum uint64
	for ok := it.SeekGE(start); ok && rows < n; ok = it.Next() {
		k, v := it.Key(), it.Value()
		sum += Touch(k) + Touch(v)
		bytes += int64(len(k) + len(v))
		rows++
	}
	Consume(sum)
	return rows, bytes, it.Close() // the error that ended the loop, if one did
}

func (e *strataEngine) Close() error { return e.db.Close() }

// openSharedStore returns the local store in dir, made as slow as cfg
// says.
func openSharedStore(dir string, cfg Config) (checkpoint.Store, error) {
	local, err := checkpoint.NewLocalStore(dir)
	if err != nil {
		return nil, err
	}
	return checkpoint.NewSlowStore(local, checkpoint.SlowOptions{Latency: cfg.storeLatency, Bandwidth: cfg.storeBandwidth})
}

// strataExpiryCheck is how often Strata looks for tables whose entries'
// TTLs have passed when nothing else happens (its expiryCheckInterval).
const strataExpiryCheck = time.Second

// WaitForBackgroundWork waits until no memtable waits for a flush, no
// compaction runs and no level wants one, and value-log garbage collection
// is idle (Metrics.GC.Idle), on several polls in a row. After writes with
// a TTL it wants the quiet to last past two of Strata's expiry checks:
// time passing starts no background work by itself, and the check that
// finds mostly expired tables runs on a timer.
func (e *strataEngine) WaitForBackgroundWork(ctx context.Context) error {
	polls := 3
	if e.ttlWrites.Load() {
		polls = int(2*strataExpiryCheck/strataSettlePoll) + 1
	}
	for quiet := 0; quiet < polls; {
		m := e.db.Metrics()
		busy := m.MemTable.Immutable > 0 || m.Compact.InProgress > 0 || !m.GC.Idle || m.BackgroundE != ""
		for level, l := range m.Levels {
			busy = busy || (level < len(m.Levels)-1 && l.Score >= 1)
		}
		if m.BackgroundE != "" {
			return fmt.Errorf("strata: %s", m.BackgroundE)
		}
		if busy {
			quiet = 0
		} else {
			quiet++
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(strataSettlePoll):
		}
	}
	return nil
}

// strataSettlePoll is how often WaitForBackgroundWork looks at the
// metrics.
const strataSettlePoll = 50 * time.Millisecond

// BytesWritten is what Strata's metrics count as written since Open: WAL,
// flushed tables, compaction output and value logs (written by flushes and
// by garbage collection), the numerator of its own Metrics.WriteAmp.
func (e *strataEngine) BytesWritten() int64 {
	m := e.db.Metrics()
	return int64(m.WAL.BytesWritten + m.Flush.BytesWritten + m.Compact.BytesWritten + m.ValueLogs.BytesWritten)
}

func (e *strataEngine) Stats() string { return fmt.Sprint(e.db.Metrics()) }

func isNotFound(err error) bool { return errors.Is(err, strata.ErrNotFound) }

// strataNoMerge is Strata without the Merger interface (strata/rmw); it
// keeps every other interface of the engine.
type strataNoMerge struct{ e *strataEngine }

func (s strataNoMerge) Put(key, value []byte) error { return s.e.Put(key, value) }
func (s strataNoMerge) Get(key, buf []byte) ([]byte, bool, error) {
	return s.e.Get(key, buf)
}
func (s strataNoMerge) Delete(key []byte) error { return s.e.Delete(key) }
func (s strataNoMerge) Scan(start []byte, n int) (int, int64, error) {
	return s.e.Scan(start, n)
}
func (s strataNoMerge) Close() error { return s.e.Close() }
func (s strataNoMerge) PutTTL(key, value []byte, ttl time.Duration) error {
	return s.e.PutTTL(key, value, ttl)
}
func (s strataNoMerge) FollowsClock() bool { return true }
func (s strataNoMerge) WaitForBackgroundWork(ctx context.Context) error {
	return s.e.WaitForBackgroundWork(ctx)
}
func (s strataNoMerge) BytesWritten() int64        { return s.e.BytesWritten() }
func (s strataNoMerge) Counters() map[string]int64 { return s.e.Counters() }
func (s strataNoMerge) Stats() string              { return s.e.Stats() }

// separationVariant is a Strata variant that separates values by its own
// rule rather than by Config.ValueThreshold, for the shifting benchmarks.
type separationVariant struct {
	desc      string
	threshold int  // a fixed threshold in bytes; -1 keeps every value inline
	adaptive  bool // vlog.AdaptiveThreshold instead
}

// separationVariants are "strata/t256", "strata/t1k", "strata/t4k",
// "strata/inline" and "strata/adaptive".
var separationVariants = map[string]separationVariant{
	"t256":     {desc: "values of 256 B and more separated", threshold: 256},
	"t1k":      {desc: "values of 1 KiB and more separated", threshold: 1 << 10},
	"t4k":      {desc: "values of 4 KiB and more separated", threshold: 4 << 10},
	"inline":   {desc: "no value separated", threshold: -1},
	"adaptive": {desc: "separation threshold set by vlog.AdaptiveThreshold", adaptive: true},
}

// SeparationVariantNames lists the separation variants, for help texts.
var SeparationVariantNames = []string{"t256", "t1k", "t4k", "inline", "adaptive"}

// adaptiveStrata is Strata with an adaptive policy, which reports the
// threshold it chose on the timeline.
type adaptiveStrata struct {
	*strataEngine
	policy *vlog.AdaptiveThreshold
}

func (e *adaptiveStrata) SeparationThreshold() int { return e.policy.Threshold() }

// adaptivePolicies keeps each database directory's adaptive policy: the
// runner closes and reopens an engine between benchmarks (to measure its
// size), and a policy made anew at each Open would forget what the
// previous phases did, as a program reopening a DB with a fresh policy
// would.
var adaptivePolicies struct {
	sync.Mutex
	byDir map[string]*vlog.AdaptiveThreshold
}

func adaptivePolicy(dir string) *vlog.AdaptiveThreshold {
	adaptivePolicies.Lock()
	defer adaptivePolicies.Unlock()
	if adaptivePolicies.byDir == nil {
		adaptivePolicies.byDir = make(map[string]*vlog.AdaptiveThreshold)
	}
	p := adaptivePolicies.byDir[dir]
	if entries, err := os.ReadDir(dir); err == nil && len(entries) == 0 {
		p = nil // a new database (a repetition reuses the directory)
	}
	if p == nil {
		p = vlog.NewAdaptiveThreshold(vlog.AdaptiveOptions{})
		adaptivePolicies.byDir[dir] = p
	}
	return p
}

func openStrataSep(dir string, cfg Config, sep separationVariant) (Engine, error) {
	var policy *vlog.AdaptiveThreshold
	if sep.adaptive {
		policy = adaptivePolicy(dir)
	} else {
		cfg.ValueThreshold = sep.threshold
	}
	e, err := openStrataWith(dir, cfg, "", func(o *strata.Options) {
		if policy != nil {
			o.SeparationPolicy = policy
		}
	})
	if err != nil || policy == nil {
		return e, err
	}
	return &adaptiveStrata{strataEngine: e.(*strataEngine), policy: policy}, nil
}
