package tool

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/checkpoint"
	"github.com/strata-db/strata/gc"
	"github.com/strata-db/strata/vfs"
)

// StressConfig configures a stress run.
type StressConfig struct {
	// Dir is the database; Expected the expected-state file (default
	// Dir + ".expected").
	Dir, Expected string
	Keys          int           // key space (default 10000); fixed when the expected state is created
	Threads       int           // worker goroutines (default 4)
	Ops           int64         // stop after this many operations (0: no limit)
	Duration      time.Duration // stop after this long (0: no limit)
	Seed          uint64        // 0: from the clock
	// Events prints a line "event NAME" to Out when a flush or compaction
	// begins, a table, value log or manifest is created, written or
	// synced, and so on: crashtest kills the process on them.
	Events bool
	// SlowIO widens the windows a kill should hit: writes and syncs of
	// tables, value logs and manifests, and the start of flushes and
	// compactions, sleep a little.
	SlowIO bool
	// Store, if set, is the directory of a local object store that keeps
	// the database's shared files (see stress_store.go). A database that
	// shares files needs its store to open: give it the same Store every
	// time.
	Store string
	// NoMerges leaves merge operands out of the writes (see stressMerger).
	NoMerges bool
	Out      io.Writer
}

// StressStats are what a stress run did.
type StressStats struct {
	Ops, Writes, SyncWrites, Reads, Scans, Snapshots  int64
	Flushes, Compactions, Checkpoints, RangeDeletions int64
	StoreCheckpoints                                  int64 // of Checkpoints, those to the store
	Ingests, BulkLoads                                int64
	Refused                                           int64 // Sync writes refused during a bulk load
	Verified                                          int   // keys verified at open
}

// stressTTL is the time to live of stress's SetWithTTL writes.
const stressTTL = 30 * 24 * time.Hour

// errStressFailed marks a verification failure (as opposed to an error
// of the run).
var errStressFailed = errors.New("stress: verification failed")

func (t *Tool) runStress(args []string) int {
	fs := t.newFlags("stress")
	var c StressConfig
	fs.StringVar(&c.Dir, "dir", "", "database directory")
	fs.StringVar(&c.Expected, "expected", "", "expected-state file (default DIR.expected)")
	fs.IntVar(&c.Keys, "keys", 10000, "key space")
	fs.IntVar(&c.Threads, "threads", 4, "worker goroutines")
	fs.Int64Var(&c.Ops, "ops", 0, "operations (0: until --duration)")
	fs.DurationVar(&c.Duration, "duration", 0, "how long to run (0: until --ops)")
	fs.Uint64Var(&c.Seed, "seed", 0, "random seed (0: from the clock)")
	fs.BoolVar(&c.Events, "events", false, "print event lines for crashtest")
	fs.BoolVar(&c.SlowIO, "slow-io", false, "sleep in flushes, compactions and file writes, to widen crash windows")
	fs.StringVar(&c.Store, "store", "", "directory of a local object store for the database's shared files (the same every run)")
	fs.BoolVar(&c.NoMerges, "no-merges", false, "leave merge operands out of the writes")
	if _, err := parse(fs, args, 0, 0); err != nil {
		return t.usageError("stress", err)
	}
	if c.Dir == "" {
		return t.usageError("stress", errors.New("--dir is required"))
	}
	if c.Ops == 0 && c.Duration == 0 {
		c.Duration = 10 * time.Second
	}
	c.Out = t.Stdout
	stats, err := Stress(t.FS, c)
	if err != nil {
		fmt.Fprintf(t.Stderr, "strata stress: %v\n", err)
		if errors.Is(err, errStressFailed) {
			return 3
		}
		return 1
	}
	fmt.Fprintf(t.Stdout, "stress: %d ops: %d writes (%d with Sync, %d refused in bulk loads), %d range deletions, %d ingests, %d bulk loads, %d reads, %d scans, %d snapshots, %d flushes, %d compactions, %d checkpoints (%d to the store); %d keys verified at open\n",
		stats.Ops, stats.Writes, stats.SyncWrites, stats.Refused, stats.RangeDeletions, stats.Ingests, stats.BulkLoads, stats.Reads, stats.Scans, stats.Snapshots, stats.Flushes, stats.Compactions, stats.Checkpoints, stats.StoreCheckpoints, stats.Verified)
	return 0
}

// stressOptions returns the options of a stress run: small memtables,
// tables and value logs, and garbage collection at aggressive thresholds,
// varied by seed so that successive runs of a crash test reopen the
// database with different settings.
func stressOptions(rng *rand.Rand, fs vfs.FS) (*strata.Options, string) {
	o := &strata.Options{
		FS: fs,
		// From the smallest memtable to 32 times it: a child that opens
		// with a smaller one than the last replays its WAL into several
		// memtables and flushes them as it goes, a path of its own.
		MemTableSize:          int64(16<<10) << rng.IntN(6),
		ValueLogFileSize:      int64(64<<10) << rng.IntN(3),
		TargetFileSize:        int64(32<<10) << rng.IntN(3),
		LBaseMaxBytes:         256 << 10,
		L0CompactionThreshold: 2 + rng.IntN(3),
		ValueThreshold:        []int{64, 200, 1024}[rng.IntN(3)],
		Compression:           []string{"none", "snappy", "zstd"}[rng.IntN(3)],
		CacheSize:             4 << 20,
		Merger:                stressMerger{},
	}
	o.MaxConcurrentCompactions = 1 + rng.IntN(2)
	if rng.IntN(3) == 0 {
		o.SeparationTime = strata.SeparateAtFlush
	}
	policies := []gc.Policy{gc.ReverseLookup(0.3), gc.Rewrite(), gc.Cost(1.2), gc.Passive()}
	o.GCPolicy = policies[rng.IntN(len(policies))]
	desc := fmt.Sprintf("memtable %d, vlog file %d, target file %d, L0 trigger %d, threshold %d, %s, gc %s, compactions %d, separation %d",
		o.MemTableSize, o.ValueLogFileSize, o.TargetFileSize, o.L0CompactionThreshold, o.ValueThreshold, o.Compression, o.GCPolicy.Name(), o.MaxConcurrentCompactions, o.SeparationTime)
	return o, desc
}

// stresser is one stress run.
type stresser struct {
	db    *strata.DB
	e     *expectedState
	cfg   StressConfig
	locks []sync.Mutex
	stats StressStats
	ops   atomic.Int64
	stop  atomic.Bool
	ckpt  atomic.Int64
	out   *lockedWriter
	fs    vfs.FS
	opts  *strata.Options
	// up uploads the checkpoints of a shared run (nil otherwise);
	// storeMu runs them one at a time.
	up      *checkpoint.Uploader
	storeMu sync.Mutex
	// ingests numbers the external tables; bulkMu runs bulk loads one at
	// a time.
	ingests atomic.Int64
	bulkMu  sync.Mutex

	failMu sync.Mutex
	failed error
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) printf(format string, args ...any) {
	l.mu.Lock()
	fmt.Fprintf(l.w, format, args...)
	l.mu.Unlock()
}

// Stress opens the database in c.Dir (creating it and the expected state
// if needed), verifies every key against the expected state, and runs a
// random workload on c.Threads goroutines until c.Ops operations or
// c.Duration. Each operation that reads checks what it reads against the
// expected state; any difference fails the run with an error matching
// errStressFailed.
func Stress(fs vfs.FS, c StressConfig) (StressStats, error) {
	if c.Keys <= 0 {
		c.Keys = 10000
	}
	if c.Threads <= 0 {
		c.Threads = 4
	}
	if c.Expected == "" {
		c.Expected = c.Dir + ".expected"
	}
	if c.Seed == 0 {
		c.Seed = uint64(time.Now().UnixNano())
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	out := &lockedWriter{w: c.Out}
	if err := os.MkdirAll(filepath.Dir(c.Expected), 0o755); err != nil {
		return StressStats{}, err
	}
	e, _, err := openExpected(c.Expected, c.Keys)
	if err != nil {
		return StressStats{}, err
	}
	defer e.close()
	rng := rand.New(rand.NewPCG(c.Seed, 0x5eed))
	var inner vfs.FS = fs
	var events func(string)
	if c.Events {
		events = func(name string) { out.printf("event %s\n", name) }
	}
	if c.Events || c.SlowIO {
		inner = &slowFS{FS: fs, events: events, slow: c.SlowIO, seed: c.Seed}
	}
	opts, desc := stressOptions(rng, inner)
	opts.EventListener = stressListener(events, c.SlowIO)
	var up *checkpoint.Uploader
	if c.Store != "" {
		store, err := newStressStore(c.Store, events, c.SlowIO, c.Seed)
		if err != nil {
			return StressStats{}, err
		}
		desc += stressSharedOptions(rng, opts, store)
		if up, err = checkpoint.NewUploader(store, &checkpoint.UploadOptions{KeepLast: stressKeepLast}); err != nil {
			return StressStats{}, err
		}
		// A run killed while it read a checkpoint opened as an instance
		// left that instance.
		if err := destroyOpened(c.Dir, opts); err != nil {
			return StressStats{}, err
		}
	}
	out.printf("stress: seed %d, %s\n", c.Seed, desc)
	// A run killed in an ingest left its external table.
	if err := fs.RemoveAll(ingestDir(c.Dir)); err != nil {
		return StressStats{}, err
	}

	db, err := strata.Open(c.Dir, opts)
	if err != nil {
		return StressStats{}, fmt.Errorf("open: %w", err)
	}
	res := verifyDB(db, e)
	if len(res.failures) > 0 {
		db.Close()
		for _, f := range res.failures {
			out.printf("FAIL: %s\n", f)
		}
		return StressStats{}, fmt.Errorf("%w at open: %d failures, first: %s", errStressFailed, len(res.failures), res.failures[0])
	}
	e.reconcile(res)
	e.verified().Add(uint64(res.checked))
	out.printf("ready: %d keys present, %d verified\n", res.keys, res.checked)

	s := &stresser{db: db, e: e, cfg: c, locks: make([]sync.Mutex, e.keys), out: out, fs: fs, opts: opts, up: up}
	s.stats.Verified = res.checked
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < c.Threads; i++ {
		wg.Add(1)
		seed := rng.Uint64()
		go func() {
			defer wg.Done()
			s.worker(rand.New(rand.NewPCG(seed, uint64(i))), start)
		}()
	}
	wg.Wait()
	cerr := db.Close()
	s.stats.Ops = s.ops.Load()
	if s.failed != nil {
		return s.stats, s.failed
	}
	if cerr != nil {
		return s.stats, fmt.Errorf("close: %w", cerr)
	}
	return s.stats, nil
}

// fail stops the run with err.
func (s *stresser) fail(err error) {
	s.failMu.Lock()
	if s.failed == nil {
		s.failed = err
		s.out.printf("FAIL: %v\n", err)
	}
	s.failMu.Unlock()
	s.stop.Store(true)
}

func (s *stresser) failf(format string, args ...any) {
	s.fail(fmt.Errorf("%w: %s", errStressFailed, fmt.Sprintf(format, args...)))
}

func (s *stresser) worker(rng *rand.Rand, start time.Time) {
	for !s.stop.Load() {
		n := s.ops.Add(1)
		if (s.cfg.Ops > 0 && n > s.cfg.Ops) || (s.cfg.Duration > 0 && time.Since(start) > s.cfg.Duration) {
			s.stop.Store(true)
			return
		}
		var err error
		switch x := rng.IntN(1000); {
		case x < 450:
			err = s.write(rng, []int{rng.IntN(s.e.keys)}, rng.IntN(10) == 0)
		case x < 530:
			err = s.write(rng, []int{rng.IntN(s.e.keys)}, true)
		case x < 630:
			err = s.write(rng, s.distinctKeys(rng, 2+rng.IntN(7)), rng.IntN(4) == 0)
		case x < 660:
			err = s.deleteRange(rng)
		case x < 675:
			err = s.ingest(rng)
		case x < 678:
			err = s.bulkLoad(rng)
		case x < 850:
			err = s.get(rng)
		case x < 920:
			err = s.scan(rng)
		case x < 975:
			err = s.snapshot(rng)
		case x < 984:
			atomic.AddInt64(&s.stats.Flushes, 1)
			err = s.durableCall(s.db.Flush)
		case x < 988:
			// Refused during a bulk load, like a Sync write.
			if err = s.durableCall(s.db.Sync); errors.Is(err, strata.ErrBulkLoadSync) {
				err = nil
			}
		case x < 996:
			atomic.AddInt64(&s.stats.Compactions, 1)
			lo := rng.IntN(s.e.keys)
			hi := min(s.e.keys-1, lo+rng.IntN(s.e.keys/4+1))
			err = s.durableCall(func() error { return s.db.Compact(stressKey(lo), stressKey(hi)) })
		default:
			if s.up != nil && rng.IntN(2) == 0 {
				atomic.AddInt64(&s.stats.Checkpoints, 1)
				err = s.storeCheckpoint(rng)
			} else {
				err = s.checkpoint(rng)
			}
		}
		if err != nil {
			s.fail(err)
			return
		}
	}
}

// durableCall runs fn (a flush, or a call that flushes), after which
// every write acknowledged before it began is durable.
func (s *stresser) durableCall(fn func() error) error {
	before := s.e.acks().Load()
	if err := fn(); err != nil {
		return err
	}
	s.e.raiseSynced(before)
	return nil
}

func (s *stresser) distinctKeys(rng *rand.Rand, n int) []int {
	seen := make(map[int]bool)
	var keys []int
	for len(keys) < n {
		k := rng.IntN(s.e.keys)
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	return keys
}

// lockKeys locks keys in ascending order (so that workers never deadlock)
// and returns them sorted.
func (s *stresser) lockKeys(keys []int) []int {
	sorted := append([]int(nil), keys...)
	for i := 1; i < len(sorted); i++ {
		for j := i; j > 0 && sorted[j] < sorted[j-1]; j-- {
			sorted[j], sorted[j-1] = sorted[j-1], sorted[j]
		}
	}
	for _, k := range sorted {
		s.locks[k].Lock()
	}
	return sorted
}

func (s *stresser) unlockKeys(keys []int) {
	for _, k := range keys {
		s.locks[k].Unlock()
	}
}

// write sets or deletes keys (a batch when there are several) and records
// the outcome in the expected state.
func (s *stresser) write(rng *rand.Rand, keys []int, sync bool) error {
	keys = s.lockKeys(keys)
	defer s.unlockKeys(keys)
	b := s.db.NewBatch()
	for _, k := range keys {
		st := s.e.get(k)
		id := st.maxID + 1
		del := rng.IntN(8) == 0
		s.e.put(k, st.begin(id, del))
		switch {
		case del:
			b.Delete(stressKey(k))
		case rng.IntN(4) == 0:
			// A time to live far beyond the run: the entry carries its
			// expiry through the WAL, flushes, compactions and recovery,
			// and must read back like any other.
			b.SetWithTTL(stressKey(k), stressValue(k, id), stressTTL)
		case !s.cfg.NoMerges && rng.IntN(5) == 0:
			// Reads back as the Set would (stressMerger), once the
			// engine has folded it onto what is below in the right order.
			b.Merge(stressKey(k), stressValue(k, id))
		default:
			b.Set(stressKey(k), stressValue(k, id))
		}
	}
	return s.commit(b, keys, sync)
}

// commit applies b, whose keys' pending writes are recorded, and records
// the acknowledgement.
func (s *stresser) commit(b *strata.Batch, keys []int, sync bool) error {
	o := strata.NoSync
	before := s.e.acks().Load()
	if sync {
		o = strata.Sync
	}
	if err := s.db.Apply(b, o); err != nil {
		if s.refused(keys, err) {
			return nil
		}
		return fmt.Errorf("apply: %w", err)
	}
	if sync {
		s.e.syncAcks().Add(1)
		atomic.AddInt64(&s.stats.SyncWrites, 1)
	}
	atomic.AddInt64(&s.stats.Writes, 1)
	s.acked(keys, sync, before)
	return nil
}

// acked records the acknowledgement of the pending writes of keys, made
// durable when they were (sync), which then made every write acknowledged
// before they began (the count before) durable too.
func (s *stresser) acked(keys []int, sync bool, before uint64) {
	ack := s.e.acks().Add(1)
	if sync {
		s.e.raiseSynced(before)
	}
	synced := s.e.synced().Load()
	for _, k := range keys {
		s.e.put(k, s.e.get(k).acked(sync, ack, synced))
	}
}

// randomRange draws a range [lo, hi) of 1 to 16 keys and lists them.
func (s *stresser) randomRange(rng *rand.Rand) (lo, hi int, keys []int) {
	lo = rng.IntN(s.e.keys)
	hi = min(s.e.keys, lo+1+rng.IntN(16))
	keys = make([]int, 0, hi-lo)
	for k := lo; k < hi; k++ {
		keys = append(keys, k)
	}
	return lo, hi, keys
}

// deleteRange deletes a small range of keys.
func (s *stresser) deleteRange(rng *rand.Rand) error {
	lo, hi, keys := s.randomRange(rng)
	s.lockKeys(keys)
	defer s.unlockKeys(keys)
	for _, k := range keys {
		st := s.e.get(k)
		s.e.put(k, st.begin(st.maxID+1, true))
	}
	b := s.db.NewBatch()
	b.DeleteRange(stressKey(lo), stressKey(hi))
	atomic.AddInt64(&s.stats.RangeDeletions, 1)
	return s.commit(b, keys, rng.IntN(2) == 0)
}

// check compares what a live read found for key k with the expected
// latest write.
func (s *stresser) check(what string, k int, st keyState, v []byte, found bool) {
	wantFound, wantID := st.expectLive()
	if !found {
		if wantFound {
			s.failf("%s: key %s: found nothing, expected write %d (%s)", what, stressKey(k), wantID, st)
		}
		return
	}
	id, ok := parseStressValue(k, v)
	if !ok {
		s.failf("%s: key %s: value never written: %q", what, stressKey(k), printable(v, false, 40))
		return
	}
	if !wantFound || id != wantID {
		s.failf("%s: key %s: found write %d, expected %s", what, stressKey(k), id, describeFound(wantFound, wantID))
	}
}

func (s *stresser) get(rng *rand.Rand) error {
	k := rng.IntN(s.e.keys)
	s.locks[k].Lock()
	defer s.locks[k].Unlock()
	atomic.AddInt64(&s.stats.Reads, 1)
	switch rng.IntN(4) {
	case 0:
		// Has answers from the key side alone where it can.
		found, err := s.db.Has(stressKey(k))
		if err != nil {
			return fmt.Errorf("has: %w", err)
		}
		if want, _ := s.e.get(k).expectLive(); found != want {
			s.failf("has %d: %v, expected state %s", k, found, s.e.get(k))
		}
		return nil
	case 1:
		// GetAppend appends to what dst holds.
		dst := []byte("prefix")
		v, err := s.db.GetAppend(stressKey(k), dst)
		if err != nil && !errors.Is(err, strata.ErrNotFound) {
			return fmt.Errorf("get append: %w", err)
		}
		if err == nil {
			if !bytes.HasPrefix(v, []byte("prefix")) {
				s.failf("get append %d: %q lost what dst held", k, v[:min(len(v), 16)])
			}
			v = v[len("prefix"):]
		}
		s.check("get append", k, s.e.get(k), v, err == nil)
		return nil
	}
	v, err := s.db.Get(stressKey(k))
	if err != nil && !errors.Is(err, strata.ErrNotFound) {
		return fmt.Errorf("get: %w", err)
	}
	s.check("get", k, s.e.get(k), v, err == nil)
	return nil
}

// lockRange locks [lo, hi) and returns the expected states.
func (s *stresser) lockRange(lo, hi int) []keyState {
	sts := make([]keyState, hi-lo)
	for k := lo; k < hi; k++ {
		s.locks[k].Lock()
		sts[k-lo] = s.e.get(k)
	}
	return sts
}

func (s *stresser) unlockRange(lo, hi int) {
	for k := lo; k < hi; k++ {
		s.locks[k].Unlock()
	}
}

// scan creates an iterator over a few keys while they are locked, then
// reads it (forward or backward) after releasing them, while other
// workers may write them: it must see the state of its creation.
func (s *stresser) scan(rng *rand.Rand) error {
	lo := rng.IntN(s.e.keys)
	hi := min(s.e.keys, lo+1+rng.IntN(32))
	o := &strata.IterOptions{LowerBound: stressKey(lo), UpperBound: stressKey(hi), MappedValues: rng.IntN(4) == 0}
	if rng.IntN(4) == 0 {
		// A prefix iterator over the ten keys that share all but the
		// last digit.
		lo = lo / 10 * 10
		hi = min(s.e.keys, lo+10)
		o = &strata.IterOptions{Prefix: stressKey(lo)[:7], MappedValues: o.MappedValues}
	}
	sts := s.lockRange(lo, hi)
	it, err := s.db.NewIter(o)
	s.unlockRange(lo, hi)
	if err != nil {
		return fmt.Errorf("iterator: %w", err)
	}
	atomic.AddInt64(&s.stats.Scans, 1)
	seen := make(map[int][]byte)
	reverse := rng.IntN(2) == 0
	var prev []byte
	move := it.First
	next := it.Next
	if reverse {
		move, next = it.Last, it.Prev
	}
	for ok := move(); ok; ok = next() {
		k, ok := parseStressKey(it.Key())
		if !ok || k < lo || k >= hi {
			s.failf("scan [%d, %d): key %q out of bounds", lo, hi, it.Key())
			break
		}
		if prev != nil && (bytes.Compare(prev, it.Key()) >= 0) != reverse {
			s.failf("scan: keys out of order: %q then %q", prev, it.Key())
		}
		prev = append(prev[:0], it.Key()...)
		v := it.Value()
		if v == nil && it.Error() != nil {
			break // a value that could not be read: Close reports it
		}
		seen[k] = append([]byte(nil), v...)
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("iterator: %w", err)
	}
	for k := lo; k < hi; k++ {
		v, ok := seen[k]
		s.check("scan", k, sts[k-lo], v, ok)
	}
	return nil
}

// snapshot takes a snapshot of a few locked keys and reads them through
// it after other workers had the chance to write them.
func (s *stresser) snapshot(rng *rand.Rand) error {
	lo := rng.IntN(s.e.keys)
	hi := min(s.e.keys, lo+1+rng.IntN(8))
	sts := s.lockRange(lo, hi)
	snap := s.db.NewSnapshot()
	s.unlockRange(lo, hi)
	defer snap.Close()
	atomic.AddInt64(&s.stats.Snapshots, 1)
	for k := lo; k < hi; k++ {
		v, err := snap.Get(stressKey(k))
		if err != nil && !errors.Is(err, strata.ErrNotFound) {
			return fmt.Errorf("snapshot get: %w", err)
		}
		s.check("snapshot", k, sts[k-lo], v, err == nil)
	}
	return nil
}

// checkpoint writes a checkpoint, opens it read-only, checks that every
// value in it is one that was written, and removes it.
func (s *stresser) checkpoint(rng *rand.Rand) error {
	dir := filepath.Join(filepath.Dir(s.cfg.Dir), fmt.Sprintf("%s.ckpt-%d", filepath.Base(s.cfg.Dir), s.ckpt.Add(1)))
	os.RemoveAll(dir)
	defer os.RemoveAll(dir)
	atomic.AddInt64(&s.stats.Checkpoints, 1)
	if err := s.durableCall(func() error { return s.db.Checkpoint(dir) }); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	db, err := strata.Open(dir, &strata.Options{FS: s.fs, ReadOnly: true, CacheSize: -1, Merger: stressMerger{}})
	if err != nil {
		return fmt.Errorf("open checkpoint read-only: %w", err)
	}
	defer db.Close()
	return s.checkValuesWritten(db, 0, s.e.keys, "checkpoint")
}

// checkValuesWritten reads every key of db, a checkpoint of keys [lo,
// hi), and fails the run if a key is outside them or a value is not one
// that was written.
func (s *stresser) checkValuesWritten(db *strata.DB, lo, hi int, what string) error {
	it, err := db.NewIter(nil)
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		k, ok := parseStressKey(it.Key())
		if !ok || k < lo || k >= hi {
			s.failf("%s: key %q never written, or outside the range", what, it.Key())
			break
		}
		v := it.Value()
		if v == nil && it.Error() != nil {
			break // a value that could not be read: Close reports it
		}
		if _, ok := parseStressValue(k, v); !ok {
			s.failf("%s: key %s holds a value never written", what, it.Key())
			break
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}
