package bench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/checkpoint"
	"github.com/strata-db/strata/checkpoint/keygroup"
	"github.com/strata-db/strata/vfs"
)

// The open-from-store step of the statebackend workload, in shared mode
// (Config.SharedCache > 0), after the restore and the rescales: the job
// restarts from the latest checkpoints without downloading them
// (strata.OpenFromStore), and reads.
//
//   - Local copies (unless Spec.OpenSkipLocal): every instance's latest
//     checkpoint restored in full (checkpoint.Restore, untimed: the
//     restore step timed it) and opened from its local files, the
//     baseline of the reads; readrandom on them for Spec.OpenReadTime is
//     the curve "local files".
//   - Cold opens, Spec.OpenRepeats rounds: every instance opened from
//     its store into a new directory (an empty cache of
//     Config.SharedCache bytes), one after the other, each timed to
//     Open's return and then to its first Get (of a random key it
//     holds), with the requests it made of its store until then; then
//     readrandom over the instances for Spec.OpenReadTime, its
//     throughput every second (the curve "cold <round>").
//   - A warm open: the same with Options.SharedWarmup = Spec.SharedWarmup
//     and, with local copies, no bound on the cache, the curve "warm-up";
//     then, once the warm-up has ended and both have no background work
//     left (untimed), Spec.OpenRepeats rounds of readrandom on the local
//     copies and on the warm instances in turn.
//   - Zipfian reads with a small cache: the instances opened again, each
//     with a cache of a tenth of its state, settled, and Spec.OpenRepeats rounds
//     of zipfian reads (Spec.ZipfTheta, stateZipfReaders readers) on the
//     local copies and on them in turn.
//
// Readrandom runs Spec.Threads readers. Every read must find its key.

// Curve names of StateOpen.Curves.
const (
	CurveLocal       = "local files"
	CurveCold        = "cold" // "cold <round>"
	CurveWarmup      = "warm-up"
	CurveZipfLocal   = "zipfian, local files"
	CurveZipfShared  = "zipfian, 10% cache"
	ReadsWarm        = "readrandom, warm cache"
	ReadsZipfSmall   = "zipfian, 10% cache"
	stateZipfReaders = 16
	// stateZipfCacheShare is the share of an instance's state its cache
	// holds in the zipfian reads.
	stateZipfCacheShare = 0.1
)

// StateOpen is what the open-from-store step measured.
type StateOpen struct {
	// StateBytes are the bytes of the tables and value logs of the
	// latest checkpoints, summed over the instances.
	StateBytes int64 `json:"state_bytes"`
	// CacheSize is the cache (Options.SharedCacheSize) of each instance
	// in the cold opens; Warmup and WarmCache the warm open's
	// Options.SharedWarmup, in bytes per second, and its cache: no bound
	// (-1) when its reads are compared with the local copies (warm is the
	// whole state local, as the copies have it), else CacheSize.
	CacheSize int64 `json:"cache_size"`
	Warmup    int64 `json:"warmup"`
	WarmCache int64 `json:"warm_cache"`
	// SkipLocal says there were no local copies (Spec.OpenSkipLocal): no
	// curve "local files", no readrandom compared, and the zipfian reads
	// of the store alone.
	SkipLocal bool `json:"skip_local,omitempty"`
	// ReadTime is how long each read phase ran; Readers the readers of
	// readrandom.
	ReadTime time.Duration `json:"read_time_ns"`
	Readers  int           `json:"readers"`
	// Opens are the opens, every instance's in turn: the cold rounds
	// (Round from 1), then the warm open (Warmup set).
	Opens []StateOpenTiming `json:"opens"`
	// Curves are the reads' throughput over time, in 1-second buckets.
	Curves []StateCurve `json:"curves"`
	// WarmupTime is the time from the warm open's return until every
	// instance's warm-up had ended; WarmedBytes what the instances held
	// in their caches then.
	WarmupTime  time.Duration `json:"warmup_time_ns"`
	WarmedBytes int64         `json:"warmed_bytes"`
	// Reads compare the instances opened from the store with the local
	// copies, round by round.
	Reads []StateReads `json:"reads"`
}

// StateOpenTiming is one instance's open from its store.
type StateOpenTiming struct {
	Round    int  `json:"round,omitempty"`
	Warmup   bool `json:"warmup,omitempty"`
	Instance int  `json:"instance"`
	// Open is the time OpenFromStore took; FirstGet the first Get after
	// it returned.
	Open     time.Duration `json:"open_ns"`
	FirstGet time.Duration `json:"first_get_ns"`
	// Store is what the instance asked of its store from the call to
	// OpenFromStore until the first Get returned (the background's
	// requests of that time included); Requests lists them.
	Store    StoreStats     `json:"store"`
	Requests []StoreRequest `json:"requests,omitempty"`
}

// Total is the time from the call to OpenFromStore until the first Get
// returned.
func (t StateOpenTiming) Total() time.Duration { return t.Open + t.FirstGet }

// StateCurve is one read phase's throughput over time.
type StateCurve struct {
	Name      string        `json:"name"`
	Readers   int           `json:"readers"`
	Ops       int64         `json:"ops"`
	Duration  time.Duration `json:"duration_ns"`
	OpsPerSec float64       `json:"ops_per_sec"`
	// Samples are the throughput of each second.
	Samples []Sample `json:"samples"`
	// Gets are the store GETs the phase's reads made (Metrics.Shared);
	// Compactions the compactions the databases finished meanwhile.
	Gets        int64 `json:"gets"`
	Compactions int64 `json:"compactions"`
}

// StateReads compares reads of the instances opened from the store with
// reads of the local copies: one entry per round in each, the local
// phase first.
type StateReads struct {
	Name    string `json:"name"`
	Readers int    `json:"readers"`
	// CacheSize is the cache of each instance opened from the store.
	CacheSize int64     `json:"cache_size"`
	Local     []float64 `json:"local_ops_per_sec"`
	Shared    []float64 `json:"shared_ops_per_sec"`
}

// stateDBs are the instances' databases, one per old instance.
type stateDBs [stateOldInstances]*strata.DB

// close closes every database that is open and removes the directories
// (unless KeepDB).
func (r *stateRun) closeAll(dbs *stateDBs, dirs []string) error {
	var err error
	for i, db := range dbs {
		if db != nil {
			err = errors.Join(err, db.Close())
			dbs[i] = nil
		}
	}
	if !r.spec.KeepDB {
		for _, d := range dirs {
			os.RemoveAll(d)
		}
	}
	return err
}

// openFromStore runs the open-from-store step on checkpoints ids of the
// stores, whose tables and value logs are stateBytes bytes each.
func (r *stateRun) openFromStore(ss *stateStores, ids [stateOldInstances]uint64, stateBytes [stateOldInstances]int64) (_ *StateOpen, err error) {
	spec := r.spec
	so := &StateOpen{CacheSize: spec.Config.SharedCache, Warmup: spec.SharedWarmup, WarmCache: spec.Config.SharedCache,
		ReadTime: spec.OpenReadTime, Readers: spec.Threads, SkipLocal: spec.OpenSkipLocal}
	for _, b := range stateBytes {
		so.StateBytes += b
	}

	// The local copies.
	var local *stateDBs
	if !spec.OpenSkipLocal {
		// Warm means the whole state local, as the copies have it.
		so.WarmCache = -1
		local = new(stateDBs)
		var localDirs []string
		defer func() { err = errors.Join(err, r.closeAll(local, localDirs)) }()
		for i := range local {
			dir := filepath.Join(r.dir, fmt.Sprintf("local-%d", i))
			localDirs = append(localDirs, dir)
			if err := checkpoint.Restore(r.ctx, ss.stores[i], ids[i], vfs.Default, dir, nil); err != nil {
				return so, err
			}
			if local[i], err = r.open(dir); err != nil {
				return so, err
			}
		}
		c, err := r.readFor(local, CurveLocal, spec.Threads, false, 1)
		if err != nil {
			return so, err
		}
		so.Curves = append(so.Curves, c)
	}

	// Cold opens.
	for round := 1; round <= spec.OpenRepeats; round++ {
		dbs, dirs, timings, err := r.openAll(ss, ids, fmt.Sprintf("cold-%d", round), spec.Config.SharedCache, 0, uint64(round))
		for i := range timings {
			timings[i].Round = round
		}
		so.Opens = append(so.Opens, timings...)
		if err == nil {
			var c StateCurve
			c, err = r.readFor(&dbs, fmt.Sprintf("%s %d", CurveCold, round), spec.Threads, false, uint64(10+round))
			so.Curves = append(so.Curves, c)
		}
		if err = errors.Join(err, r.closeAll(&dbs, dirs)); err != nil {
			return so, err
		}
	}

	// The warm open, and readrandom against the local copies once warm.
	if err := r.warmReads(so, ss, ids, local); err != nil {
		return so, err
	}

	// Zipfian reads with a tenth of the state cached.
	var small int64
	for _, b := range stateBytes {
		small = max(small, int64(float64(b)*stateZipfCacheShare))
	}
	var dbs stateDBs
	var dirs []string
	reads := StateReads{Name: ReadsZipfSmall, Readers: stateZipfReaders, CacheSize: small}
	defer func() {
		so.Reads = append(so.Reads, reads)
		err = errors.Join(err, r.closeAll(&dbs, dirs))
	}()
	for i := range dbs {
		opts := r.opts
		opts.SharedCacheSize = max(1, int64(float64(stateBytes[i])*stateZipfCacheShare))
		dir := filepath.Join(r.dir, fmt.Sprintf("open-zipf-%d", i))
		dirs = append(dirs, dir)
		os.RemoveAll(dir)
		var view checkpoint.Store
		if view, err = ss.dbView(i); err != nil {
			return so, err
		}
		if dbs[i], err = strata.OpenFromStore(r.ctx, view, ids[i], dir, &opts); err != nil {
			return so, err
		}
	}
	if err := r.settle(&dbs); err != nil {
		return so, err
	}
	for round := 1; round <= spec.OpenRepeats; round++ {
		if local != nil {
			lc, err := r.readFor(local, CurveZipfLocal, stateZipfReaders, true, uint64(100+round))
			if err != nil {
				return so, err
			}
			reads.Local = append(reads.Local, lc.OpsPerSec)
			if round == 1 {
				so.Curves = append(so.Curves, lc)
			}
		}
		sc, err := r.readFor(&dbs, CurveZipfShared, stateZipfReaders, true, uint64(200+round))
		if err != nil {
			return so, err
		}
		reads.Shared = append(reads.Shared, sc.OpsPerSec)
		if round == 1 {
			so.Curves = append(so.Curves, sc)
		}
	}
	return so, nil
}

// warmReads opens every instance with the warm-up and a cache of
// so.WarmCache, reads while it runs, waits for it to end, and compares
// readrandom on the warm instances with the local copies (if any).
func (r *stateRun) warmReads(so *StateOpen, ss *stateStores, ids [stateOldInstances]uint64, local *stateDBs) (err error) {
	spec := r.spec
	dbs, dirs, timings, err := r.openAll(ss, ids, "warm", so.WarmCache, spec.SharedWarmup, 0)
	defer func() { err = errors.Join(err, r.closeAll(&dbs, dirs)) }()
	for i := range timings {
		timings[i].Warmup = true
	}
	so.Opens = append(so.Opens, timings...)
	if err != nil {
		return err
	}
	opened := time.Now()
	c, err := r.readFor(&dbs, CurveWarmup, spec.Threads, false, 50)
	so.Curves = append(so.Curves, c)
	if err != nil {
		return err
	}
	if err := r.waitWarm(&dbs); err != nil {
		return err
	}
	so.WarmupTime = time.Since(opened)
	for _, db := range dbs {
		so.WarmedBytes += db.Metrics().Shared.CachedBytes
	}
	if local == nil {
		return nil
	}
	// Compare the two at rest: no compaction left from their opens.
	if err := errors.Join(r.settle(local), r.settle(&dbs)); err != nil {
		return err
	}
	reads := StateReads{Name: ReadsWarm, Readers: spec.Threads, CacheSize: so.WarmCache}
	defer func() { so.Reads = append(so.Reads, reads) }()
	for round := 1; round <= spec.OpenRepeats; round++ {
		lc, err := r.readFor(local, CurveLocal, spec.Threads, false, uint64(60+round))
		if err != nil {
			return err
		}
		sc, err := r.readFor(&dbs, ReadsWarm, spec.Threads, false, uint64(70+round))
		if err != nil {
			return err
		}
		reads.Local = append(reads.Local, lc.OpsPerSec)
		reads.Shared = append(reads.Shared, sc.OpsPerSec)
	}
	return nil
}

// stateOpenBucket is the interval of the read phases' throughput
// samples (a test makes it shorter).
var stateOpenBucket = time.Second

// settle waits until the databases have no background work left
// (flushes, compactions, garbage collection), as the runner does after
// an open.
func (r *stateRun) settle(dbs *stateDBs) error {
	for _, db := range dbs {
		if err := (&strataEngine{db: db}).WaitForBackgroundWork(r.ctx); err != nil {
			return err
		}
	}
	return nil
}

// warmPoll is how often waitWarm looks at the warm-ups.
const warmPoll = 100 * time.Millisecond

// waitWarm waits until no instance's warm-up runs.
func (r *stateRun) waitWarm(dbs *stateDBs) error {
	for {
		warming := false
		for _, db := range dbs {
			warming = warming || db.Metrics().Shared.Warming
		}
		if !warming {
			return nil
		}
		select {
		case <-r.ctx.Done():
			return r.ctx.Err()
		case <-time.After(warmPoll):
		}
	}
}

// openAll opens every instance's checkpoint ids[i] from its store into a
// new directory named after tag, one after the other, each with a cache
// of cache bytes and a warm-up of warmup bytes/s, and times each to its
// first Get (of a random key it holds, drawn by seed). On error the
// databases opened so far are returned, to be closed.
func (r *stateRun) openAll(ss *stateStores, ids [stateOldInstances]uint64, tag string, cache, warmup int64, seed uint64) (dbs stateDBs, dirs []string, timings []StateOpenTiming, err error) {
	rng := newRandSource(r.spec.Seed ^ 0x0be1 ^ seed)
	key := make([]byte, 0, keygroup.PrefixLen+r.spec.KeySize)
	user := make([]byte, r.spec.KeySize)
	for i := range dbs {
		dir := filepath.Join(r.dir, fmt.Sprintf("open-%s-%d", tag, i))
		dirs = append(dirs, dir)
		os.RemoveAll(dir)
		opts := r.opts
		opts.SharedCacheSize, opts.SharedWarmup = cache, warmup
		// A key of instance i to read first.
		var k []byte
		for inst := -1; inst != i; {
			k, inst = r.keyWith(key, user, rng.Uint64N(uint64(r.spec.Num)))
		}
		ts := ss.db[i]
		var view checkpoint.Store
		if view, err = ss.dbView(i); err != nil {
			return dbs, dirs, timings, err
		}
		before := ts.stats()
		ts.startTrace()
		start := time.Now()
		dbs[i], err = strata.OpenFromStore(r.ctx, view, ids[i], dir, &opts)
		t := StateOpenTiming{Instance: i, Open: time.Since(start)}
		if err == nil {
			start = time.Now()
			_, err = dbs[i].Get(k)
			t.FirstGet = time.Since(start)
		}
		t.Requests = ts.stopTrace()
		t.Store = ts.stats().sub(before)
		timings = append(timings, t)
		if err != nil {
			return dbs, dirs, timings, fmt.Errorf("instance %d: %w", i, err)
		}
	}
	return dbs, dirs, timings, nil
}

// readFor reads from dbs for Spec.OpenReadTime with readers goroutines,
// each Get of a key drawn uniformly or, with zipf, by Spec.ZipfTheta
// (the popular keys scattered), and returns the throughput, every second
// of it, and the store GETs the reads made. A read that does not find its
// key is an error.
func (r *stateRun) readFor(dbs *stateDBs, name string, readers int, zipf bool, seed uint64) (StateCurve, error) {
	c := StateCurve{Name: name, Readers: readers}
	counts := func() (gets, compactions int64) {
		for _, db := range dbs {
			m := db.Metrics()
			gets += m.Shared.Gets
			compactions += int64(m.Compact.Count)
		}
		return gets, compactions
	}
	gets0, compactions0 := counts()
	n := uint64(r.spec.Num)
	var z *zipfian
	if zipf {
		z = newZipfian(n, r.spec.ZipfTheta)
	}
	var done atomic.Int64
	var stop atomic.Bool
	errs := make([]error, readers)
	var wg sync.WaitGroup
	start := time.Now()
	for g := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := newRandSource(r.spec.Seed*7919 + seed*1009 + uint64(g))
			key := make([]byte, 0, keygroup.PrefixLen+r.spec.KeySize)
			user := make([]byte, r.spec.KeySize)
			var val []byte
			pending := int64(0)
			for !stop.Load() {
				var i uint64
				if zipf {
					i = fnv64(z.next(rng)) % n
				} else {
					i = rng.Uint64N(n)
				}
				k, inst := r.keyWith(key, user, i)
				v, err := dbs[inst].GetAppend(k, val[:0])
				if err != nil {
					errs[g] = fmt.Errorf("%s: get of key %d (instance %d): %w", name, i, inst, err)
					stop.Store(true)
					break
				}
				val = v
				if pending++; pending == 16 {
					done.Add(pending)
					pending = 0
				}
			}
			done.Add(pending)
		}()
	}
	var samples []opsAt
	tick := time.NewTicker(sampleTick)
	deadline := time.NewTimer(r.spec.OpenReadTime)
	var ctxErr error
sample:
	for {
		select {
		case now := <-tick.C:
			samples = append(samples, opsAt{at: now.Sub(start), ops: done.Load()})
		case <-deadline.C:
			break sample
		case <-r.ctx.Done():
			ctxErr = r.ctx.Err()
			break sample
		}
	}
	tick.Stop()
	deadline.Stop()
	stop.Store(true)
	wg.Wait()
	c.Duration = time.Since(start)
	c.Ops = done.Load()
	if s := c.Duration.Seconds(); s > 0 {
		c.OpsPerSec = float64(c.Ops) / s
	}
	c.Samples = timeline(samples, stateOpenBucket, c.Duration)
	gets1, compactions1 := counts()
	c.Gets, c.Compactions = gets1-gets0, compactions1-compactions0
	return c, errors.Join(append(errs, ctxErr)...)
}
