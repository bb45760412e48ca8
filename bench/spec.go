package bench

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/strata-db/strata/checkpoint"
	"github.com/strata-db/strata/gc"
)

// Benchmark names, as db_bench spells them where it has them.
const (
	FillSeq          = "fillseq"          // Num keys in ascending order
	FillRandom       = "fillrandom"       // Num distinct keys in random order
	Overwrite        = "overwrite"        // Num writes of random existing keys
	ReadRandom       = "readrandom"       // Reads gets of random existing keys
	ReadSeq          = "readseq"          // a full scan, reading every value
	SeekRandom       = "seekrandom"       // seeks to random keys, each then SeekNexts nexts, about Reads rows in all
	ReadWhileWriting = "readwhilewriting" // Threads readers and one writer; the readers are measured
	DeleteRandom     = "deleterandom"     // Num deletes of random keys
	YCSBA            = "ycsb-a"           // 50% reads, 50% updates, zipfian
	YCSBB            = "ycsb-b"           // 95% reads, 5% updates, zipfian
	YCSBC            = "ycsb-c"           // 100% reads, zipfian
	YCSBD            = "ycsb-d"           // 95% reads of the latest keys, 5% inserts
	YCSBE            = "ycsb-e"           // 95% short scans, 5% inserts
	YCSBF            = "ycsb-f"           // 50% reads, 50% read-modify-writes, zipfian
	ListAppend       = "listappend"       // Num operations on ListKeys lists: appends, and ListReadPercent whole-list reads
	TTLExpiry        = "ttl"              // Num writes with a TTL in ttlPhases phases, each expiring before the next ends
	StateBackend     = "statebackend"     // Strata only: Num keys in key groups over 2 instances, Num overwrites, a checkpoint every CheckpointEvery, restore, rescale 2 -> 3
)

// WritesData reports whether a benchmark writes (so the engine may be left
// with background work to settle).
func WritesData(benchmark string) bool {
	switch benchmark {
	case ReadRandom, ReadSeq, SeekRandom, YCSBC:
		return false
	}
	return true
}

// ReadsExisting reports whether a benchmark reads keys that earlier
// benchmarks of the run are meant to have written: run on an empty
// database, its reads miss and its scans find only the keys it inserts
// itself (YCSB loads before it runs; here a fill does).
func ReadsExisting(benchmark string) bool {
	switch benchmark {
	case ReadRandom, ReadSeq, SeekRandom, ReadWhileWriting, YCSBA, YCSBB, YCSBC, YCSBD, YCSBE, YCSBF:
		return true
	}
	return false
}

// noKeysNote is the note of a benchmark that reads existing keys and ran
// with none written before it.
const noKeysNote = "no keys were written before it in this run: its reads miss and its scans find only the keys it inserts (run fillrandom or fillseq first, as YCSB loads before it runs)"

// AllBenchmarks lists the benchmarks in the order they are documented.
var AllBenchmarks = []string{FillSeq, FillRandom, Overwrite, ReadRandom, ReadSeq, SeekRandom,
	ReadWhileWriting, DeleteRandom, YCSBA, YCSBB, YCSBC, YCSBD, YCSBE, YCSBF,
	ShiftSmall, ShiftLarge, ShiftRead, ShiftScan, ListAppend, TTLExpiry, StateBackend}

// Key distributions of overwrite (Spec.KeyDist).
const (
	KeyUniform = "uniform"
	KeyZipfian = "zipfian"
)

// ValueDist says how value sizes are drawn.
type ValueDist struct {
	// Kind is "fixed" (every value Size bytes), "uniform" (uniform in
	// [Min, Max]) or "normal" (mean (Min+Max)/2, sd (Max-Min)/6, clamped to
	// [Min, Max]); db_bench's --value_size_distribution_type.
	Kind string `json:"kind"`
	Size int    `json:"size"`
	Min  int    `json:"min,omitempty"`
	Max  int    `json:"max,omitempty"`
}

// Mean returns the expected value size in bytes.
func (d ValueDist) Mean() float64 {
	if d.Kind == "" || d.Kind == "fixed" {
		return float64(d.Size)
	}
	return float64(d.Min+d.Max) / 2
}

func (d ValueDist) String() string {
	if d.Kind == "" || d.Kind == "fixed" {
		return fmt.Sprintf("%d B", d.Size)
	}
	return fmt.Sprintf("%s %d-%d B", d.Kind, d.Min, d.Max)
}

// Config is the engine settings every engine receives, translated to its
// own options.
type Config struct {
	// ValueThreshold: values of at least this many bytes are separated by
	// engines that separate (strata, pebble-vs, badger, rocksdb-blob).
	ValueThreshold int `json:"value_threshold"`
	// MemTableSize in bytes (64 MiB by default).
	MemTableSize int64 `json:"memtable_size"`
	// CacheSize is the block cache in bytes (64 MiB by default).
	CacheSize int64 `json:"cache_size"`
	// Compression is "none" (the default: values are random bytes) or
	// "snappy".
	Compression string `json:"compression"`
	// DisableWAL turns write-ahead logging off in every engine that has one.
	DisableWAL bool `json:"disable_wal"`
	// Sync makes every write durable before it returns.
	Sync bool `json:"sync"`
	// GCBudget is the space-amplification budget of Strata's cost GC
	// policy (the engine strata/cost); 0 means gc.DefaultBudget (1.3). The
	// peers' value-log GC keeps its own settings (see their descriptions).
	GCBudget float64 `json:"gc_budget,omitempty"`
	// SharedCache is the local cache of shared files, in bytes, of Strata
	// with a store (Options.SharedCacheSize): the statebackend workload's
	// databases have the workload's stores as Options.SharedStore when it
	// is positive, and keep every file local when it is 0 (kvbench's
	// --shared_cache); the engine strata/shared has it as its cache, and
	// no bound when it is 0.
	SharedCache int64 `json:"shared_cache,omitempty"`
	// SharedPartSize is Options.SharedPartSize with a store: the unit of
	// the ranged GETs that read shared files (--shared_part_size; 0:
	// Strata's default, 1 MiB).
	SharedPartSize int64 `json:"shared_part_size,omitempty"`
	// SharedStoreDir is where strata/shared keeps its store
	// (--shared_store_dir; empty: beside its database): a directory on
	// another device (a tmpfs, say) takes the store's writes off the
	// database's disk, as an object store's network would.
	SharedStoreDir string `json:"shared_store_dir,omitempty"`
	// sharedStore, when set, is the Options.SharedStore Strata opens with
	// (the statebackend workload's store of the instance). storeLatency
	// and storeBandwidth are Spec.StoreLatency and Spec.StoreBandwidth,
	// for strata/shared's own store.
	sharedStore    checkpoint.Store
	storeLatency   time.Duration
	storeBandwidth int64
	// Clock is the time engines that take a clock decide TTL expiry by
	// (Strata's Options.Clock); nil means the real clock. The runner sets
	// it to a clock of its own per engine run, which the ttl workload moves
	// forward (see TTLWriter). It must be safe for concurrent use.
	Clock func() time.Time `json:"-"`
}

// Spec is a benchmark run.
type Spec struct {
	Engines    []string `json:"engines"`
	Benchmarks []string `json:"benchmarks"`
	// GCPolicies runs Strata once per value-log GC policy (kvbench's
	// --gc_policy; names from GCPolicyNames): Normalize replaces "strata"
	// in Engines by "strata/<policy>" for each policy, in order, so each
	// runs as an engine of its own. Empty keeps Strata's default policy.
	GCPolicies []string `json:"gc_policies,omitempty"`
	// Num is the number of keys (fills and overwrites write Num keys).
	Num int64 `json:"num"`
	// Reads is the number of operations of read benchmarks and YCSB mixes
	// (default Num).
	Reads int64 `json:"reads"`
	// KeySize in bytes (16). Keys are the 8-byte big-endian key index,
	// padded with zeros, as db_bench makes them.
	KeySize int       `json:"key_size"`
	Value   ValueDist `json:"value"`
	// Threads run read benchmarks (and readwhilewriting's readers) in
	// parallel; writes come from one thread. Default 1.
	Threads int `json:"threads"`
	// SeekNexts is the number of Next calls after each seek (100).
	SeekNexts int `json:"seek_nexts"`
	// ZipfTheta skews YCSB key choice (0.99), and overwrite's when KeyDist
	// is zipfian.
	ZipfTheta float64 `json:"zipf_theta"`
	// OverwriteRounds runs overwrite that many times in a row, each round
	// Num writes measured on its own (kvbench's --overwrite_rounds; 0:
	// off): Normalize appends the rounds to Benchmarks when they have no
	// overwrite, and repeats an overwrite they have once. Benchmarks that
	// repeat overwrite themselves (fillrandom,overwrite,overwrite) are
	// rounds without it. See Rounds.
	OverwriteRounds int `json:"overwrite_rounds,omitempty"`
	// KeyDist chooses the keys overwrite writes: KeyUniform (the default)
	// or KeyZipfian (skewed by ZipfTheta, the popular keys scattered over
	// the key space as YCSB's scrambled zipfian does).
	KeyDist string `json:"key_dist,omitempty"`
	// ListKeys is the number of lists listappend appends to (kvbench's
	// --list_keys; default Num/100, at least 1). Its elements are values
	// of the spec's sizes, and it picks lists by KeyDist.
	ListKeys int64 `json:"list_keys,omitempty"`
	// ListReadPercent is the share of listappend's operations that read a
	// whole list, in percent (--list_read_percent; default 5, at most 100).
	ListReadPercent int `json:"list_read_percent,omitempty"`
	// TTL is the time to live of the ttl workload's writes (--ttl; default
	// 10s). Engines that follow Config.Clock see it pass at once; engines
	// on the real clock make the workload wait for it (untimed).
	TTL time.Duration `json:"ttl_ns,omitempty"`
	// CheckpointEvery is how many overwrites the statebackend workload
	// makes between checkpoints (--checkpoint_every; default Num/10, at
	// least 1): a count of operations rather than seconds, so that the
	// checkpoints of two runs hold the same writes.
	CheckpointEvery int64 `json:"checkpoint_every,omitempty"`
	// StoreLatency is added to every request the statebackend workload
	// makes of its stores (--store_latency; default 0: none), as S3 takes
	// 10-100 ms to answer one; StoreBandwidth limits each store's bytes
	// to so many per second (--store_bandwidth; default 0: unlimited).
	// See checkpoint.SlowStore.
	StoreLatency   time.Duration `json:"store_latency_ns,omitempty"`
	StoreBandwidth int64         `json:"store_bandwidth,omitempty"`
	// StoreS3 puts the statebackend workload's stores in an S3 bucket
	// instead of local directories (--store_s3, "http://host:port/bucket";
	// the credentials from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY),
	// each store under a prefix of its own, new for each run. The
	// latency and bandwidth limits apply on top of the server's own.
	StoreS3 string `json:"store_s3,omitempty"`
	// SharedWarmup is the Options.SharedWarmup, in bytes per second, of
	// the statebackend workload's warm open from the store (with
	// Config.SharedCache; --shared_warmup; default 256 MiB/s).
	SharedWarmup int64 `json:"shared_warmup,omitempty"`
	// OpenReadTime is how long each read phase of the statebackend
	// workload's open-from-store step runs (--open_read_time; default
	// 10s): the throughput after an open, sampled every second, and the
	// reads compared with a local copy of the state.
	OpenReadTime time.Duration `json:"open_read_time_ns,omitempty"`
	// OpenRepeats is how many times that step opens every instance cold,
	// and compares each read phase with the local copy
	// (--open_repeats; default 3).
	OpenRepeats int `json:"open_repeats,omitempty"`
	// OpenSkipLocal leaves out of that step the local copies of the state
	// and the reads compared with them (--open_skip_local): at the
	// step's peak the disk holds the store, a full local copy and a full
	// warm one, which a large state may not fit.
	OpenSkipLocal bool `json:"open_skip_local,omitempty"`
	// RescaleSkip names the statebackend workload's rescale methods
	// (RescaleMethods) to leave out, reported as skipped
	// (--rescale_skip): each makes the new instances' state again, which
	// a large state may not have the time or the disk for.
	RescaleSkip []string `json:"rescale_skip,omitempty"`
	// Seed makes key order and values repeatable.
	Seed uint64 `json:"seed"`
	// Dir holds one subdirectory per engine; empty means a temporary
	// directory removed afterwards.
	Dir string `json:"dir"`
	// KeepDB leaves the databases in Dir after the run.
	KeepDB bool `json:"keep_db"`
	// ReportInterval is the spacing of throughput-over-time samples; 0
	// (the default) chooses it per benchmark, for about 25 samples, at
	// least 100ms apart (see AutoInterval; db_bench's are whole seconds).
	ReportInterval time.Duration `json:"report_interval_ns"`
	Config         Config        `json:"config"`

	// Repeat runs the whole spec this many times (1 by default): each
	// figure is then the median of the runs, with its minimum and maximum
	// (see Result.Runs).
	Repeat int `json:"repeat,omitempty"`
	// CPUProfile and MemProfile, when set, are files to write Strata's CPU
	// and heap profiles to (see profile.go for what they cover).
	CPUProfile string `json:"cpu_profile,omitempty"`
	MemProfile string `json:"mem_profile,omitempty"`
}

// DefaultSpec is what `kvbench` runs with no flags: a comparison that takes
// a few minutes on a 2-core machine (200,000 keys of 4 KiB values, so
// that each benchmark lasts long enough for its throughput over time to
// show).
func DefaultSpec() Spec {
	return Spec{
		Engines:        []string{"strata", "pebble", "pebble-vs", "badger", "rocksdb", "rocksdb-blob"},
		Benchmarks:     []string{FillRandom, ReadRandom, Overwrite, SeekRandom},
		Num:            200_000,
		KeySize:        16,
		Value:          ValueDist{Kind: "fixed", Size: 4096},
		Threads:        1,
		SeekNexts:      100,
		ZipfTheta:      0.99,
		KeyDist:        KeyUniform,
		Seed:           1,
		ReportInterval: 0, // automatic
		Config: Config{
			ValueThreshold: 1024,
			MemTableSize:   64 << 20,
			CacheSize:      64 << 20,
			Compression:    "none",
		},
	}
}

// Normalize fills defaults and checks the spec, reporting every problem.
func (s *Spec) Normalize() error {
	var errs []error
	if s.Num <= 0 {
		errs = append(errs, fmt.Errorf("num must be positive, got %d", s.Num))
	}
	if s.Reads <= 0 {
		s.Reads = s.Num
	}
	if s.KeySize == 0 {
		s.KeySize = 16
	}
	if s.KeySize < 8 || s.KeySize > 1024 {
		errs = append(errs, fmt.Errorf("key_size must be in [8, 1024], got %d", s.KeySize))
	}
	switch s.Value.Kind {
	case "", "fixed":
		s.Value.Kind = "fixed"
		if s.Value.Size < 0 {
			errs = append(errs, fmt.Errorf("value_size must not be negative, got %d", s.Value.Size))
		}
	case "uniform", "normal":
		if s.Value.Min < 0 || s.Value.Max < s.Value.Min {
			errs = append(errs, fmt.Errorf("value size range [%d, %d] is invalid", s.Value.Min, s.Value.Max))
		}
	default:
		errs = append(errs, fmt.Errorf("value_size_distribution_type %q is not fixed, uniform or normal", s.Value.Kind))
	}
	if s.Threads <= 0 {
		s.Threads = 1
	}
	if s.SeekNexts < 0 {
		errs = append(errs, fmt.Errorf("seek_nexts must not be negative"))
	}
	if s.ZipfTheta == 0 {
		s.ZipfTheta = 0.99
	}
	if s.ZipfTheta <= 0 || s.ZipfTheta >= 1 {
		errs = append(errs, fmt.Errorf("zipf theta must be in (0, 1), got %v", s.ZipfTheta))
	}
	if s.ReportInterval < 0 {
		errs = append(errs, fmt.Errorf("report interval must not be negative, got %s", s.ReportInterval))
	}
	if s.Repeat == 0 {
		s.Repeat = 1
	}
	if s.Repeat < 0 {
		errs = append(errs, fmt.Errorf("repeat must be positive, got %d", s.Repeat))
	}
	switch s.KeyDist {
	case "":
		s.KeyDist = KeyUniform
	case KeyUniform, KeyZipfian:
	default:
		errs = append(errs, fmt.Errorf("key_dist %q is not %s or %s", s.KeyDist, KeyUniform, KeyZipfian))
	}
	if s.CheckpointEvery < 0 {
		errs = append(errs, fmt.Errorf("checkpoint_every must not be negative, got %d", s.CheckpointEvery))
	}
	if s.StoreLatency < 0 {
		errs = append(errs, fmt.Errorf("store_latency must not be negative, got %s", s.StoreLatency))
	}
	if s.StoreBandwidth < 0 {
		errs = append(errs, fmt.Errorf("store_bandwidth must not be negative (0: unlimited), got %d", s.StoreBandwidth))
	}
	if s.CheckpointEvery == 0 && slices.Contains(s.Benchmarks, StateBackend) {
		s.CheckpointEvery = max(1, s.Num/10)
	}
	errs = append(errs, s.normalizeShared()...)
	errs = append(errs, s.expandRounds()...)
	errs = append(errs, s.normalizeState()...)
	if s.Config.MemTableSize == 0 {
		s.Config.MemTableSize = 64 << 20
	}
	if s.Config.CacheSize == 0 {
		s.Config.CacheSize = 64 << 20
	}
	if s.Config.Compression == "" {
		s.Config.Compression = "none"
	}
	if s.Config.Compression != "none" && s.Config.Compression != "snappy" {
		errs = append(errs, fmt.Errorf("compression %q is not none or snappy", s.Config.Compression))
	}
	known := map[string]bool{}
	for _, b := range AllBenchmarks {
		known[b] = true
	}
	for _, b := range s.Benchmarks {
		if !known[b] {
			errs = append(errs, fmt.Errorf("unknown benchmark %q (known: %s)", b, strings.Join(AllBenchmarks, ", ")))
		}
	}
	if len(s.Benchmarks) == 0 {
		errs = append(errs, errors.New("no benchmarks given"))
	}
	if s.Config.GCBudget == 0 {
		s.Config.GCBudget = gc.DefaultBudget
	}
	if s.Config.GCBudget < 1 {
		errs = append(errs, fmt.Errorf("gc_budget is a space amplification, at least 1, got %v", s.Config.GCBudget))
	}
	errs = append(errs, s.expandGCPolicies()...)
	seen := map[string]bool{}
	for _, e := range s.Engines {
		if seen[e] {
			errs = append(errs, fmt.Errorf("engine %q is listed twice", e))
		}
		seen[e] = true
		if _, err := ResolveEngine(e); err != nil {
			errs = append(errs, err)
		}
	}
	if len(s.Engines) == 0 {
		errs = append(errs, errors.New("no engines given"))
	}
	return errors.Join(errs...)
}

// expandGCPolicies replaces "strata" in Engines by a Strata variant per GC
// policy (whose names are checked with the other engines). It is
// idempotent: once expanded, no "strata" is left, and every policy's
// variant must be among the engines.
func (s *Spec) expandGCPolicies() []error {
	if len(s.GCPolicies) == 0 {
		return nil
	}
	var errs []error
	seen := map[string]bool{}
	for _, p := range s.GCPolicies {
		if seen[p] {
			errs = append(errs, fmt.Errorf("gc policy %q is listed twice", p))
		}
		seen[p] = true
	}
	var engines []string
	for _, e := range s.Engines {
		if e != "strata" {
			engines = append(engines, e)
			continue
		}
		for _, p := range s.GCPolicies {
			engines = append(engines, "strata/"+p)
		}
	}
	s.Engines = engines
	for _, p := range s.GCPolicies {
		if !slices.Contains(s.Engines, "strata/"+p) {
			errs = append(errs, fmt.Errorf("gc policies are given but strata is not among the engines"))
			break
		}
	}
	return errs
}

// expandRounds puts OverwriteRounds overwrites into Benchmarks (see
// OverwriteRounds). It is idempotent: once expanded, Benchmarks hold as
// many overwrites as there are rounds.
func (s *Spec) expandRounds() []error {
	n := s.OverwriteRounds
	if n < 0 {
		return []error{fmt.Errorf("overwrite_rounds must not be negative, got %d", n)}
	}
	if n == 0 {
		return nil
	}
	have := 0
	for _, b := range s.Benchmarks {
		if b == Overwrite {
			have++
		}
	}
	switch have {
	case n:
	case 0:
		for range n {
			s.Benchmarks = append(s.Benchmarks, Overwrite)
		}
	case 1:
		var out []string
		for _, b := range s.Benchmarks {
			if b != Overwrite {
				out = append(out, b)
				continue
			}
			for range n {
				out = append(out, Overwrite)
			}
		}
		s.Benchmarks = out
	default:
		return []error{fmt.Errorf("overwrite_rounds %d conflicts with the %d overwrites in benchmarks "+
			"(repeated overwrites are rounds already)", n, have)}
	}
	return nil
}

// Rounds is the number of overwrite rounds of the run: the overwrites in
// Benchmarks when OverwriteRounds is set or overwrite is repeated; 0
// otherwise (a lone overwrite is a benchmark like any other). Rounds are
// numbered in the order they run, whatever runs between them.
func (s *Spec) Rounds() int {
	n := 0
	for _, b := range s.Benchmarks {
		if b == Overwrite {
			n++
		}
	}
	if n >= 2 || s.OverwriteRounds > 0 {
		return n
	}
	return 0
}

// RoundOf is the round (from 1) that the i-th benchmark of Benchmarks is,
// or 0 when it is not a round.
func (s *Spec) RoundOf(i int) int {
	if i < 0 || i >= len(s.Benchmarks) || s.Benchmarks[i] != Overwrite || s.Rounds() == 0 {
		return 0
	}
	r := 0
	for _, b := range s.Benchmarks[:i+1] {
		if b == Overwrite {
			r++
		}
	}
	return r
}

// Label names the i-th benchmark for progress reports: its name, and for a
// round its number, as in "overwrite 2/5".
func (s *Spec) Label(i int) string {
	if r := s.RoundOf(i); r > 0 {
		return fmt.Sprintf("%s %d/%d", s.Benchmarks[i], r, s.Rounds())
	}
	if i < 0 || i >= len(s.Benchmarks) {
		return ""
	}
	return s.Benchmarks[i]
}

// Defaults of the statebackend workload's open-from-store step.
const (
	DefaultSharedWarmup = 256 << 20
	DefaultOpenReadTime = 10 * time.Second
	DefaultOpenRepeats  = 3
)

// normalizeShared fills the defaults of the open-from-store step when the
// statebackend workload runs with a shared cache, checks the shared
// settings, and passes the store's speed to the engines (strata/shared).
func (s *Spec) normalizeShared() []error {
	var errs []error
	if s.Config.SharedPartSize < 0 {
		errs = append(errs, fmt.Errorf("shared_part_size must not be negative (0: the default), got %d", s.Config.SharedPartSize))
	}
	if s.Config.SharedCache < 0 {
		errs = append(errs, fmt.Errorf("shared_cache must not be negative (0: every file local), got %d", s.Config.SharedCache))
	}
	if s.SharedWarmup < 0 {
		errs = append(errs, fmt.Errorf("shared_warmup must not be negative, got %d", s.SharedWarmup))
	}
	if s.OpenReadTime < 0 {
		errs = append(errs, fmt.Errorf("open_read_time must not be negative, got %s", s.OpenReadTime))
	}
	if s.OpenRepeats < 0 {
		errs = append(errs, fmt.Errorf("open_repeats must not be negative, got %d", s.OpenRepeats))
	}
	for _, m := range s.RescaleSkip {
		if !slices.Contains(RescaleMethods, m) {
			errs = append(errs, fmt.Errorf("rescale_skip: no rescale method %q (there are %s)", m, strings.Join(RescaleMethods, ", ")))
		}
	}
	if s.Config.SharedCache > 0 && slices.Contains(s.Benchmarks, StateBackend) {
		if s.SharedWarmup == 0 {
			s.SharedWarmup = DefaultSharedWarmup
		}
		if s.OpenReadTime == 0 {
			s.OpenReadTime = DefaultOpenReadTime
		}
		if s.OpenRepeats == 0 {
			s.OpenRepeats = DefaultOpenRepeats
		}
	}
	s.Config.storeLatency, s.Config.storeBandwidth = s.StoreLatency, s.StoreBandwidth
	return errs
}

// normalizeState fills the defaults of the listappend and ttl settings when
// those benchmarks run (leaving a spec without them as it was), and checks
// them.
func (s *Spec) normalizeState() []error {
	var errs []error
	if slices.Contains(s.Benchmarks, ListAppend) {
		if s.ListKeys == 0 {
			s.ListKeys = max(1, s.Num/100)
		}
		if s.ListReadPercent == 0 {
			s.ListReadPercent = 5
		}
	}
	if slices.Contains(s.Benchmarks, TTLExpiry) && s.TTL == 0 {
		s.TTL = 10 * time.Second
	}
	if s.ListKeys < 0 || s.ListKeys > maxListKeys {
		errs = append(errs, fmt.Errorf("list_keys must be in [1, %d], got %d", int64(maxListKeys), s.ListKeys))
	}
	if s.ListReadPercent < 0 || s.ListReadPercent > 100 {
		errs = append(errs, fmt.Errorf("list_read_percent must be in [1, 100], got %d", s.ListReadPercent))
	}
	if s.TTL < 0 {
		errs = append(errs, fmt.Errorf("ttl must be positive, got %s", s.TTL))
	}
	return errs
}
