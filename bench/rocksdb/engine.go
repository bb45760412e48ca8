package rocksdb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/strata-db/strata/bench"
)

// program is the db_bench executable looked up in PATH.
const program = "db_bench"

func init() {
	bench.RegisterEngine(bench.EngineInfo{
		Name: "rocksdb",
		Description: "RocksDB through its db_bench (from PATH): leveled compaction with dynamic level sizes, " +
			"10-bit Bloom filters, 2 background jobs, no value separation",
		External:  func() bench.External { return &engine{name: "rocksdb"} },
		Available: available,
	})
	bench.RegisterEngine(bench.EngineInfo{
		Name: "rocksdb-blob",
		Description: "RocksDB through its db_bench (from PATH) with the integrated BlobDB: values >= threshold " +
			"in blob files, blob garbage collection on (age cutoff 0.25); otherwise as rocksdb",
		External:  func() bench.External { return &engine{name: "rocksdb-blob", blob: true} },
		Available: available,
	})
}

// available reports whether db_bench is installed.
func available() error {
	if _, err := exec.LookPath(program); err != nil {
		return errors.New("db_bench not found in PATH (install the Debian package rocksdb-tools)")
	}
	return nil
}

// engine runs a spec through db_bench.
type engine struct {
	name string // engine name, for progress
	blob bool   // integrated BlobDB on
	bin  string // db_bench to run; looked up in PATH when empty
}

// Run runs each benchmark of spec as its own db_bench process on the
// database in dir/db, and returns one Result per benchmark, in order. On an
// error it returns the results of the benchmarks that completed.
func (e *engine) Run(ctx context.Context, spec *bench.Spec, dir string, progress bench.Progress) ([]bench.Result, error) {
	if progress == nil {
		progress = bench.NoProgress{}
	}
	if err := checkSpec(spec, e.blob); err != nil {
		return nil, fmt.Errorf("%s: %w", e.name, err)
	}
	bin := e.bin
	if bin == "" {
		var err error
		if bin, err = exec.LookPath(program); err != nil {
			return nil, fmt.Errorf("%s: %w", e.name, err)
		}
	}
	dbDir := filepath.Join(dir, "db")
	reportDir := filepath.Join(dir, "reports")
	if err := os.MkdirAll(reportDir, 0o755); err != nil {
		return nil, fmt.Errorf("%s: %w", e.name, err)
	}
	var results []bench.Result
	live := liveModel{num: float64(spec.Num)}
	created := false
	for i, name := range spec.Benchmarks {
		if err := ctx.Err(); err != nil {
			return results, fmt.Errorf("%s: %w", e.name, err)
		}
		p := planFor(spec, name)
		if p.dbBench == "" {
			results = append(results, bench.Result{Engine: e.name, Benchmark: name, Skipped: true, Note: p.note})
			continue
		}
		wasCreated := created
		fresh := !created || p.kind == kindFill
		reportFile := filepath.Join(reportDir, fmt.Sprintf("%02d-%s.csv", i, name))
		args := runArgs(spec, e.blob, p, dbDir, reportFile, runSeed(spec, i), fresh)
		interval := reportSeconds(spec.ReportInterval)

		progress.Start(e.name, spec.Label(i), p.total)
		r, err := invoke(ctx, bin, args, reportFile, interval, p.total, progress)
		var res bench.Result
		if err == nil {
			created = true
			res, err = buildResult(spec, p, name, r, &live)
			if err == nil {
				progress.Add(max(0, min(res.Ops, p.total)-r.reported))
				bench.ReportMeasured(progress, res.Ops, res.Duration)
			}
		}
		progress.Done()
		if err != nil {
			return results, fmt.Errorf("%s: %s: %w", e.name, name, err)
		}
		res.Engine = e.name
		res.DiskSize = dbSize(dbDir)
		if p.kind == kindFill && wasCreated {
			// The in-process engines fill on top of what is there.
			res.Note = "db_bench runs every fill on a fresh database"
		}
		if spec.RoundOf(i) > 0 {
			res.Note = noteRounds
		}
		res.Finish(r.moved)
		results = append(results, res)
	}
	return results, nil
}

// noteRounds says what overwrite rounds lack under db_bench: each round is
// a db_bench run of its own, so its disk size is measured between runs,
// but only after the run's waitforcompaction (closing the database
// earlier would abort its compactions), never right after the last write.
const noteRounds = "disk size measured after db_bench's waitforcompaction only, not before settling"

// checkSpec rejects settings db_bench cannot be given.
func checkSpec(spec *bench.Spec, blob bool) error {
	cfg := spec.Config
	var errs []error
	if spec.Num <= 0 {
		errs = append(errs, fmt.Errorf("num must be positive, got %d", spec.Num))
	}
	if cfg.MemTableSize <= 0 {
		errs = append(errs, fmt.Errorf("memtable size must be positive, got %d", cfg.MemTableSize))
	}
	if cfg.CacheSize < 0 {
		errs = append(errs, fmt.Errorf("cache size must not be negative, got %d", cfg.CacheSize))
	}
	switch cfg.Compression {
	case "", "none", "snappy":
	default:
		errs = append(errs, fmt.Errorf("compression %q is not none or snappy", cfg.Compression))
	}
	if blob && cfg.ValueThreshold <= 0 {
		errs = append(errs, fmt.Errorf("rocksdb-blob: value threshold must be positive, got %d", cfg.ValueThreshold))
	}
	return errors.Join(errs...)
}

// run is what one db_bench process left behind.
type run struct {
	stdout   string
	version  string         // RocksDB's, as db_bench printed it
	written  int64          // bytes written to storage (ru_oublock x 512)
	timeline []bench.Sample // from the report file
	reported int64          // operations already passed to progress
	moved    int64          // key and value bytes moved, set by buildResult
}

// invoke runs db_bench with args, reporting progress from its report file
// while it runs. Cancelling ctx kills it.
func invoke(ctx context.Context, bin string, args []string, reportFile string, interval int, total int64,
	progress bench.Progress) (*run, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout bytes.Buffer
	stderr := &tailBuffer{limit: 64 << 10}
	cmd.Stdout = &stdout
	cmd.Stderr = stderr
	// Should db_bench leave a child holding its output open, do not wait
	// for it forever once db_bench is gone.
	cmd.WaitDelay = 5 * time.Second

	r := &run{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				data, err := os.ReadFile(reportFile)
				if err != nil {
					continue
				}
				samples, err := parseReport(string(data), interval)
				if err != nil {
					continue
				}
				if n := min(reportOps(samples, interval), total); n > r.reported {
					progress.Add(n - r.reported)
					r.reported = n
				}
			}
		}
	}()
	err := cmd.Run()
	close(stop)
	wg.Wait()
	r.written = childWriteBytes(cmd.ProcessState)
	if ctx.Err() != nil {
		return nil, fmt.Errorf("db_bench stopped: %w", ctx.Err())
	}
	if err != nil {
		return nil, fmt.Errorf("db_bench %s: %w%s", strings.Join(args, " "), err,
			indent(lastLines(stderr.String()+"\n"+stdout.String(), 12)))
	}
	r.stdout = stdout.String()
	r.version = parseVersion(stderr.String() + "\n" + r.stdout)
	// A run that did no benchmark writes no report file; parseOutput then
	// says why.
	data, err := os.ReadFile(reportFile)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("db_bench report file: %w", err)
	}
	if r.timeline, err = parseReport(string(data), interval); err != nil {
		return nil, fmt.Errorf("db_bench report file %s: %w", reportFile, err)
	}
	return r, nil
}

// buildResult turns a run's output into the benchmark's Result (without the
// disk size), updating the live-key model.
func buildResult(spec *bench.Spec, p plan, name string, r *run, live *liveModel) (bench.Result, error) {
	out, err := parseOutput(r.stdout, p.dbBench)
	if err != nil {
		return bench.Result{}, fmt.Errorf("%w%s", err, indent(lastLines(r.stdout, 12)))
	}
	res := bench.Result{
		Benchmark:     name,
		Ops:           out.ops,
		Duration:      out.wall(),
		DiskWritten:   r.written,
		Timeline:      r.timeline,
		EngineStats:   out.levels,
		EngineVersion: r.version,
	}
	if out.assertions {
		res.EngineStats = joinSummary("db_bench built with assertions enabled (slower than a release build)", out.levels)
	}
	h := out.hists[p.op]
	if h == nil && len(out.hists) == 1 {
		for _, only := range out.hists {
			h = only
		}
	}
	if h != nil {
		res.P50 = micros(h.get("P50", 50))
		res.P95 = micros(h.get("P95", 95))
		res.P99 = micros(h.get("P99", 99))
		res.P999 = micros(h.get("P99.9", 99.9))
		for _, b := range h.buckets {
			res.Latency = append(res.Latency, bench.LatencyBucket{Lower: micros(b.lo), Upper: micros(b.hi), Count: b.count})
		}
	}
	entry := float64(spec.KeySize) + spec.Value.Mean() // key and value bytes of a write
	switch p.kind {
	case kindFill:
		live.fill()
		res.UserBytes = int64(float64(res.Ops) * entry)
		r.moved = res.UserBytes
	case kindOverwrite:
		live.write(res.Ops)
		res.UserBytes = int64(float64(res.Ops) * entry)
		r.moved = res.UserBytes
	case kindDelete:
		live.remove(res.Ops)
		res.UserBytes = res.Ops * int64(spec.KeySize)
	case kindRead, kindReadWhileWriting:
		res.Reads = res.Ops
		if out.hasFound && out.tried > 0 {
			// One thread's numbers; with one thread they are exact.
			res.Found = int64(math.Round(float64(out.found) / float64(out.tried) * float64(res.Ops)))
		}
		r.moved = int64(float64(res.Found) * entry)
		if p.kind == kindReadWhileWriting && out.hasWrites {
			live.write(out.writes)
			res.UserBytes = int64(float64(out.writes) * entry)
			// The report file counts the writer's operations too: scale
			// the samples by the readers' share.
			if share := float64(res.Ops) / float64(res.Ops+out.writes); res.Ops+out.writes > 0 {
				for i := range res.Timeline {
					res.Timeline[i].OpsPerSec *= share
				}
			}
			res.Note = fmt.Sprintf("writer: about %d writes (RocksDB's DB stats); timeline scaled to the readers' share", out.writes)
		}
	case kindMerge:
		if out.hasMerges {
			// One thread, so the message's numbers are the run's.
			res.Reads, res.Found = out.mergeReads, out.mergeHits
			element := float64(spec.KeySize) + spec.Value.Mean()
			res.UserBytes = int64(float64(out.merges) * element)
			r.moved = res.UserBytes
			live.merge(out.merges, spec.Value.Mean()+1, spec.ListKeys, spec.KeySize)
		}
		res.Note = "lists by merge operator (stringappend); list keys are keys 0 to list_keys-1, " +
			"those of earlier fills where there were fills"
	case kindScan:
		r.moved = int64(float64(res.Ops) * entry)
		if d := res.Duration.Seconds(); d > 0 {
			res.RowsPerSec = float64(res.Ops) / d
		}
	case kindSeek:
		rows := float64(res.Ops) * live.expectedRows(p.rowsPer)
		r.moved = int64(rows * entry)
		if d := res.Duration.Seconds(); d > 0 {
			res.RowsPerSec = rows / d
		}
	}
	res.LiveBytes = int64(live.keys*entry + live.listBytes)
	return res, nil
}

// liveModel is the expected number of live keys. The core tracks live keys
// exactly for in-process engines, but db_bench draws its random keys with
// its own generator, so here each random write or delete hits any of the
// Num keys with probability 1/Num, independently:
//
//   - a fill leaves all Num keys live;
//   - n random writes leave a missing key missing with probability
//     (1-1/Num)^n, so live = Num - (Num-live)(1-1/Num)^n;
//   - n random deletes leave a live key live with probability (1-1/Num)^n,
//     so live = live (1-1/Num)^n; Num deletes of a full database leave
//     about Num/e keys, i.e. remove about 63%.
type liveModel struct {
	num  float64
	keys float64
	// listBytes is the bytes listappend's merges added: each operand and
	// its delimiter, and each list's key once.
	listBytes float64
	listKeyed bool
}

// merge counts n merges of elem bytes each into lists keys of keySize.
func (m *liveModel) merge(n int64, elem float64, lists int64, keySize int) {
	if !m.listKeyed && n > 0 {
		m.listBytes += float64(lists * int64(keySize))
		m.listKeyed = true
	}
	m.listBytes += float64(n) * elem
}

func (m *liveModel) fill() { m.keys = m.num }

func (m *liveModel) write(n int64) { m.keys = m.num - (m.num-m.keys)*m.untouched(n) }

func (m *liveModel) remove(n int64) { m.keys *= m.untouched(n) }

// untouched is the probability that n random picks miss a given key.
func (m *liveModel) untouched(n int64) float64 {
	if m.num <= 1 {
		if n > 0 {
			return 0
		}
		return 1
	}
	return math.Exp(float64(n) * math.Log1p(-1/m.num))
}

// expectedRows is the expected number of rows a seek to a uniformly random
// key index followed by reading up to n rows returns, when a fraction
// p = keys/num of the keys are live (spread evenly): a seek to index s can
// read at most p(num-s) rows before the end. With m = num-s running over
// 1..num, the sum of min(n, p m) is p c(c+1)/2 + n(num-c), where c counts
// the m with p m < n.
func (m *liveModel) expectedRows(n int) float64 {
	if m.num <= 0 || m.keys <= 0 || n <= 0 {
		return 0
	}
	p := min(m.keys/m.num, 1)
	c := min(m.num, math.Ceil(float64(n)/p)-1)
	return (p*c*(c+1)/2 + float64(n)*(m.num-c)) / m.num
}

// dbSize is the size of the files in the database directory, blob files
// included, RocksDB's info logs (LOG, LOG.old.*) not: they are not data,
// and the in-process engines write none.
func dbSize(dir string) int64 {
	var total int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if n := d.Name(); n == "LOG" || strings.HasPrefix(n, "LOG.old.") {
			return nil
		}
		if info, err := d.Info(); err == nil {
			total += info.Size()
		}
		return nil
	})
	return total
}

// tailBuffer keeps the last limit bytes written to it.
type tailBuffer struct {
	mu    sync.Mutex
	limit int
	buf   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.limit; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// lastLines returns the last n non-empty lines of s (carriage returns count
// as line ends: db_bench's progress reports use them).
func lastLines(s string, n int) []string {
	var lines []string
	for _, l := range strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' }) {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return lines[max(0, len(lines)-n):]
}

func indent(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return "\n\t" + strings.Join(lines, "\n\t")
}
