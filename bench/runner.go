package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// Run executes spec on every engine, one after another, Spec.Repeat times
// over (the engines in turn in each repetition, so that a slow spell of a
// shared machine does not fall on one engine's runs), and returns the
// report. Each repetition starts one engine further down the list
// (repetition r with engine r-1, modulo their number), so that the costs a
// machine charges whoever runs first do not fall on one engine's runs
// alone: on a virtual machine that hands freed memory back to its host,
// the first 800 MiB written to the page cache after the memory was freed
// took 2.2-2.6 s of system time against 0.3 s the next time (dd, 2 MiB
// writes), and a fill of 200,000 x 4 KiB ran at 67-79k ops/s first and
// 122-233k ops/s in the repetitions after it. An engine that is not
// available, or fails, yields skipped results with a note; only a bad spec
// or an unusable directory is an error.
func Run(ctx context.Context, spec Spec, progress Progress) (*Report, error) {
	if err := spec.Normalize(); err != nil {
		return nil, err
	}
	if progress == nil {
		progress = NoProgress{}
	}
	root := spec.Dir
	if root == "" {
		tmp, err := os.MkdirTemp("", "kvbench-")
		if err != nil {
			return nil, err
		}
		root = tmp
		if !spec.KeepDB {
			defer os.RemoveAll(tmp)
		}
	}
	rep := &Report{Spec: spec, Machine: DescribeMachine(), Started: time.Now()}
	var runs [][]Result
	for r := 1; r <= spec.Repeat; r++ {
		p := progress
		if spec.Repeat > 1 {
			p = runProgress{Progress: progress, suffix: fmt.Sprintf(" (run %d/%d)", r, spec.Repeat)}
		}
		runs = append(runs, nil)
		byEngine := make([][]Result, len(spec.Engines))
		err := runOnce(ctx, &spec, root, r, p, func(e int, results []Result) {
			byEngine[e] = results
			runs[len(runs)-1] = inEngineOrder(byEngine)
			rep.Results = Aggregate(runs)
			rep.Rounds = BuildRounds(&spec, rep.Results)
		})
		if spec.Repeat > 1 {
			rep.Repeats = runs
		}
		if err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// inEngineOrder joins the results of the engines of one repetition, in
// spec.Engines' order, up to the first engine that has none yet: Aggregate
// matches the repetitions' results by position.
func inEngineOrder(byEngine [][]Result) []Result {
	var out []Result
	for _, results := range byEngine {
		if results == nil {
			break
		}
		out = append(out, results...)
	}
	return out
}

// runOnce runs spec on every engine once (repetition r, from 1), starting
// with engine r-1 (see Run), and passes each engine's results to add, with
// the engine's index in spec.Engines, as they come.
func runOnce(ctx context.Context, spec *Spec, root string, r int, progress Progress, add func(int, []Result)) error {
	for i := range spec.Engines {
		e := (i + r - 1) % len(spec.Engines)
		name := spec.Engines[e]
		if err := ctx.Err(); err != nil {
			return err
		}
		info, _ := LookupEngine(name)
		if info.Available != nil {
			if err := info.Available(); err != nil {
				var skipped []Result
				for i, b := range spec.Benchmarks {
					skipped = append(skipped, Result{Engine: name, Benchmark: b, Round: spec.RoundOf(i), Skipped: true, Note: err.Error()})
				}
				add(e, skipped)
				continue
			}
		}
		dir := filepath.Join(root, DirName(name))
		if err := errors.Join(os.RemoveAll(dir), os.RemoveAll(SharedStoreDir(spec.Config.SharedStoreDir, dir))); err != nil {
			return err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		var results []Result
		var err error
		if info.External != nil {
			results, err = info.External().Run(ctx, spec, dir, progress)
		} else {
			results, err = runEngine(ctx, spec, info, dir, r, progress)
		}
		if err != nil {
			// Mark the benchmarks that did not run: engines return the
			// results of the benchmarks before the failure, in order.
			for i := len(results); i < len(spec.Benchmarks); i++ {
				results = append(results, Result{Benchmark: spec.Benchmarks[i], Skipped: true, Note: "failed: " + err.Error()})
			}
		}
		for i := range results {
			results[i].Engine = name
			results[i].Round = spec.RoundOf(i)
			if info.Version != nil && !results[i].Skipped {
				results[i].EngineVersion = info.Version()
			}
		}
		if results == nil {
			results = []Result{} // ran, with nothing to report: not "not yet"
		}
		add(e, results)
		if err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
		if !spec.KeepDB {
			os.RemoveAll(dir)
			os.RemoveAll(SharedStoreDir(spec.Config.SharedStoreDir, dir))
		}
	}
	return nil
}

// runProgress marks the benchmarks of one repetition in progress reports.
type runProgress struct {
	Progress
	suffix string
}

func (p runProgress) Start(engine, benchmark string, total int64) {
	p.Progress.Start(engine, benchmark+p.suffix, total)
}

func (p runProgress) Measured(ops int64, d time.Duration) { ReportMeasured(p.Progress, ops, d) }

// runEngine runs every benchmark of spec on an in-process engine. Like
// db_bench run once per benchmark, the engine is opened before each
// benchmark and closed after it, and the bytes written between the open
// and the end of the close are charged to the benchmark. Before every
// benchmark but the first, the engine settles (Settler) after the open.
//
// After a benchmark that writes, the disk size is taken twice: right after
// the last operation (DiskSizeBeforeSettle), and once the engine settled
// and closed (DiskSize), so that space amplification "at the end" is
// measured after the engine's background work, GC included, and how much
// that work reclaimed shows.
func runEngine(ctx context.Context, spec *Spec, info EngineInfo, dir string, r int, progress Progress) (_ []Result, err error) {
	prof, err := startProfiling(spec, info.Name, r)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, prof.stop()) }()
	st := newKeyState(spec)
	var results []Result
	for bi, name := range spec.Benchmarks {
		if err := ctx.Err(); err != nil {
			return results, err
		}
		if name == StateBackend {
			res := Result{Benchmark: name, Skipped: true, Note: StateBackendNote}
			if isStrataEngine(info.Name) {
				written0 := processWriteBytes()
				// Beside the engine's directory, not in it: the other
				// benchmarks' disk sizes are of that directory.
				sbDir := dir + "-" + StateBackend
				res, err = runStateBackend(ctx, spec, info, sbDir, progress)
				res.DiskWritten = processWriteBytes() - written0
				if res.UserBytes > 0 {
					res.WriteAmp = float64(res.DiskWritten) / float64(res.UserBytes)
				}
				if !spec.KeepDB {
					os.RemoveAll(sbDir)
				}
				if err != nil {
					return results, fmt.Errorf("%s: %w", name, err)
				}
			}
			results = append(results, res)
			continue
		}
		written0 := processWriteBytes()
		cfg := spec.Config
		cfg.Clock = st.clock.now
		eng, err := info.Open(dir, cfg)
		if err != nil {
			return results, fmt.Errorf("open: %w", err)
		}
		// An engine that finishes recovery in the background after Open
		// (Strata flushes the writes it replayed from its WAL, and may
		// compact after) would do it inside the benchmark, where one that
		// recovers inside Open (RocksDB, Pebble) or flushes at Close
		// (Badger) does not: settle first, untimed, as after a writing
		// benchmark.
		var openSettle time.Duration
		if s, ok := eng.(Settler); ok && bi > 0 {
			start := time.Now()
			if err := s.WaitForBackgroundWork(ctx); err != nil {
				return results, errors.Join(fmt.Errorf("%s: settle after open: %w", name, err), eng.Close())
			}
			openSettle = time.Since(start)
		}
		res, runErr := runBenchmark(ctx, spec, info.Name, eng, name, bi, st, progress)
		res.OpenSettle = openSettle
		if WritesData(name) {
			res.DiskSizeBeforeSettle = DirSize(dir)
		}
		if s, ok := eng.(Settler); ok && runErr == nil && WritesData(name) {
			start := time.Now()
			runErr = s.WaitForBackgroundWork(ctx)
			res.Settle = time.Since(start)
		}
		if c, ok := eng.(WriteCounter); ok {
			res.EngineWritten = c.BytesWritten()
		}
		if c, ok := eng.(Counter); ok {
			res.Counters = c.Counters()
		}
		if s, ok := eng.(Stater); ok {
			res.EngineStats = s.Stats()
		}
		if bi == len(spec.Benchmarks)-1 && runErr == nil {
			runErr = prof.heap()
		}
		closeErr := eng.Close()
		if err := errors.Join(runErr, closeErr); err != nil {
			return results, fmt.Errorf("%s: %w", name, err)
		}
		res.DiskWritten = processWriteBytes() - written0
		res.DiskSize = DirSize(dir)
		res.LiveBytes = st.liveBytes()
		res.Finish(res.moved)
		results = append(results, res.Result)
	}
	return results, nil
}

// runResult is a Result plus the bytes moved, for MB/s.
type runResult struct {
	Result
	moved int64
}

// thread is one worker's state.
type thread struct {
	id   int
	rng  randSource
	hist histogram
	// byOp splits hist by kind of operation, for mixes (see OpLatency).
	byOp   [numOpKinds]histogram
	key    []byte
	getBuf []byte
	values *valueSource

	listBuf []byte // listappend's list being rewritten

	ops, reads, found, rows int64
	moved, userBytes        int64
	// paused is time the worker waited for the real clock (the ttl
	// workload), left out of the benchmark's duration.
	paused time.Duration
	// note is what the worker has to say about how it ran, for
	// Result.Note.
	note    string
	pending int64 // ops not yet added to the shared counter
	done    *atomic.Int64
}

// Kinds of operation, for the latency of each in a mix.
const (
	opRead = iota
	opWrite
	opScan
	numOpKinds
)

var opKindNames = [numOpKinds]string{"read", "write", "scan"}

// tickOp is tick for an operation of kind k.
func (t *thread) tickOp(k int, start time.Time) {
	d := time.Since(start)
	t.byOp[k].record(d)
	t.hist.record(d)
	t.count()
}

// tick counts one operation that started at start toward the latency
// histogram, progress and the timeline.
func (t *thread) tick(start time.Time) {
	t.hist.record(time.Since(start))
	t.count()
}

// count counts one operation toward progress and the timeline.
func (t *thread) count() {
	t.ops++
	t.pending++
	if t.pending == 64 {
		t.done.Add(64)
		t.pending = 0
	}
}

func (t *thread) flushTicks() {
	t.done.Add(t.pending)
	t.pending = 0
}

// runBenchmark runs one benchmark: it starts the worker goroutines the
// benchmark needs, samples throughput, and merges what the workers
// measured.
func runBenchmark(ctx context.Context, spec *Spec, engName string, eng Engine, name string, benchIndex int, st *keyState, progress Progress) (runResult, error) {
	empty := ReadsExisting(name) && st.live.Load() == 0
	w := planWorkload(spec, name, st)
	var done atomic.Int64
	threads := make([]*thread, w.threads)
	for i := range threads {
		seed := spec.Seed*1_000_003 + uint64(benchIndex)*101 + uint64(i)
		threads[i] = &thread{
			id:     i,
			rng:    newRandSource(seed),
			key:    make([]byte, spec.KeySize),
			values: newValueSource(spec.Value, seed),
			done:   &done,
		}
	}
	progress.Start(engName, spec.Label(benchIndex), w.total)
	res := runResult{Result: Result{Benchmark: name}}

	stopSampler := make(chan struct{})
	var samplerWG sync.WaitGroup
	samplerWG.Add(1)
	start := time.Now()
	// The sampler counts operations every sampleTick; the timeline is
	// made from the counts once the benchmark is over (see timeline).
	var counts []opsAt
	go func() {
		defer samplerWG.Done()
		tick := time.NewTicker(sampleTick)
		defer tick.Stop()
		var lastProgress int64
		for {
			select {
			case <-stopSampler:
				progress.Add(done.Load() - lastProgress)
				return
			case now := <-tick.C:
				n := done.Load()
				progress.Add(n - lastProgress)
				lastProgress = n
				c := opsAt{at: now.Sub(start), ops: n}
				if tr, ok := eng.(ThresholdReporter); ok {
					c.threshold = tr.SeparationThreshold()
				}
				counts = append(counts, c)
			}
		}
	}()

	errs := make([]error, len(threads))
	var wg sync.WaitGroup
	stopBackground := make(chan struct{})
	var bgErr error
	var bgWG sync.WaitGroup
	if w.background != nil {
		bg := &thread{id: -1, rng: newRandSource(spec.Seed + 77), key: make([]byte, spec.KeySize),
			values: newValueSource(spec.Value, spec.Seed+77), done: new(atomic.Int64)}
		bgWG.Add(1)
		go func() {
			defer bgWG.Done()
			bgErr = w.background(ctx, eng, bg, stopBackground)
			res.UserBytes += bg.userBytes
		}()
	}
	for i, t := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = w.run(ctx, eng, t)
			t.flushTicks()
		}()
	}
	wg.Wait()
	res.Duration = time.Since(start)
	for _, t := range threads {
		res.Duration -= t.paused
		if t.note != "" {
			res.Note = t.note
		}
	}
	if empty {
		res.Note = noKeysNote
	}
	close(stopBackground)
	bgWG.Wait()
	close(stopSampler)
	samplerWG.Wait()
	res.Timeline = timeline(counts, spec.ReportInterval, res.Duration)
	ReportMeasured(progress, done.Load(), res.Duration)
	progress.Done()

	var hist histogram
	var byOp [numOpKinds]histogram
	for _, t := range threads {
		hist.merge(&t.hist)
		for k := range byOp {
			byOp[k].merge(&t.byOp[k])
		}
		res.Ops += t.ops
		res.Reads += t.reads
		res.Found += t.found
		res.UserBytes += t.userBytes
		res.moved += t.moved
		if t.rows > 0 {
			res.RowsPerSec += float64(t.rows)
		}
	}
	if res.RowsPerSec > 0 {
		res.RowsPerSec /= res.Duration.Seconds()
	}
	res.P50, res.P95 = hist.percentile(50), hist.percentile(95)
	res.P99, res.P999 = hist.percentile(99), hist.percentile(99.9)
	res.Latency = hist.buckets()
	res.PerOp = perOpLatency(&byOp)
	return res, errors.Join(append(errs, bgErr)...)
}

// sampleTick is how often the runner counts operations for the timeline
// and the progress bar.
const sampleTick = 100 * time.Millisecond

// autoSamples is how many samples an automatic report interval aims at.
const autoSamples = 25

// opsAt is the count of operations done at some time into a benchmark.
type opsAt struct {
	at        time.Duration
	ops       int64
	threshold int // ThresholdReporter's, or 0
}

// timeline turns the sampler's counts into throughput samples at least
// interval apart (each sample the rate since the previous one; a last
// stretch shorter than interval is left out). Interval 0 chooses one from
// the benchmark's duration: a round interval that gives about autoSamples
// samples, at least sampleTick.
func timeline(counts []opsAt, interval, duration time.Duration) []Sample {
	if interval <= 0 {
		interval = AutoInterval(duration)
	}
	var out []Sample
	var last opsAt
	for _, c := range counts {
		if d := c.at - last.at; d >= interval-sampleTick/10 {
			out = append(out, Sample{Elapsed: c.at, OpsPerSec: float64(c.ops-last.ops) / d.Seconds(), Threshold: c.threshold})
			last = c
		}
	}
	return out
}

// AutoInterval is the report interval chosen for a benchmark of duration
// d when Spec.ReportInterval is 0: the round interval (1, 2 or 5 times a
// power of ten) nearest above d/autoSamples, and at least sampleTick.
func AutoInterval(d time.Duration) time.Duration {
	want := d / autoSamples
	for step := sampleTick; ; step *= 10 {
		for _, m := range []time.Duration{1, 2, 5} {
			if m*step >= want {
				return m * step
			}
		}
	}
}

// perOpLatency returns the latency of each kind of operation, when the
// benchmark mixed more than one kind (nil otherwise: the overall figures
// say it all).
func perOpLatency(byOp *[numOpKinds]histogram) []OpLatency {
	kinds := 0
	for k := range byOp {
		if byOp[k].total > 0 {
			kinds++
		}
	}
	if kinds < 2 {
		return nil
	}
	var out []OpLatency
	for k := range byOp {
		h := &byOp[k]
		if h.total == 0 {
			continue
		}
		out = append(out, OpLatency{Op: opKindNames[k], Count: int64(h.total),
			P50: h.percentile(50), P99: h.percentile(99), P999: h.percentile(99.9)})
	}
	return out
}
