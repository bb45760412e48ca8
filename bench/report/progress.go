package report

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-db/strata/bench"
)

// redrawEvery is the shortest interval between two redraws of the bar.
const redrawEvery = 100 * time.Millisecond

// barWidth is the number of cells of the bar itself; with the longest
// engine and benchmark names the line stays within 80 columns: names
// longer than nameCells together (Strata's GC variants with a round,
// "strata/reverse-lookup overwrite 2/5") take cells from the bar, down to
// minBarWidth.
const (
	barWidth    = 16
	minBarWidth = 8
	nameCells   = 12 + 1 + 16
)

// NewProgress returns a bench.Progress writing to w. When interactive (w is
// a terminal) it keeps one line up to date with the engine, the benchmark, a
// bar, the percentage done, the throughput so far and the time left, redrawn
// at most ten times a second, and replaces it with a summary when the
// benchmark ends. Otherwise it writes only that summary, one line per
// finished benchmark, such as "strata fillrandom: 200000 ops in 4.1s".
//
// Add may be called from many goroutines at once; it costs an atomic add
// and, when a redraw is due, one line of output.
func NewProgress(w io.Writer, interactive bool) bench.Progress {
	return newProgress(w, interactive, time.Now)
}

func newProgress(w io.Writer, interactive bool, now func() time.Time) *progress {
	return &progress{w: w, interactive: interactive, now: now, epoch: now()}
}

type progress struct {
	w           io.Writer
	interactive bool
	now         func() time.Time
	epoch       time.Time // the clock's reading at creation; times below count from it

	done atomic.Int64
	// started is when the benchmark started, in nanoseconds since epoch.
	started atomic.Int64
	// nextDraw is when the bar may be redrawn, in nanoseconds since the
	// benchmark started; Add claims a redraw by moving it forward.
	nextDraw atomic.Int64
	// gen counts Starts, so a redraw claimed during one benchmark is not
	// drawn for the next.
	gen atomic.Int64
	// active is set between Start and Done.
	active atomic.Bool

	mu        sync.Mutex // serializes output and guards the fields below
	engine    string
	benchmark string
	total     int64
	lastLen   int // cells of the line last drawn, to blank what is left of it
	// measuredOps and measured are what the benchmark itself measured
	// (bench.Measurer), measured 0 when it did not say.
	measuredOps int64
	measured    time.Duration
}

// Measured records the benchmark's own operations and duration, which the
// summary line shows in place of the progress's count and clock.
func (p *progress) Measured(ops int64, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.measuredOps, p.measured = ops, d
}

func (p *progress) Start(engine, benchmark string, total int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.engine, p.benchmark, p.total = engine, benchmark, total
	p.measuredOps, p.measured = 0, 0
	p.started.Store(int64(p.now().Sub(p.epoch)))
	p.gen.Add(1)
	p.done.Store(0)
	p.nextDraw.Store(0)
	p.active.Store(true)
	if p.interactive {
		p.drawLocked(0)
	}
}

func (p *progress) Add(n int64) {
	p.done.Add(n)
	if !p.interactive || !p.active.Load() {
		return
	}
	// Redraw when the last redraw is old enough; of several goroutines
	// arriving together only the one that moves nextDraw draws.
	gen := p.gen.Load()
	elapsed := p.elapsed()
	next := p.nextDraw.Load()
	if int64(elapsed) < next || !p.nextDraw.CompareAndSwap(next, int64(elapsed+redrawEvery)) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.active.Load() && p.gen.Load() == gen {
		p.drawLocked(elapsed)
	}
}

// elapsed is the time since the benchmark started.
func (p *progress) elapsed() time.Duration {
	return p.now().Sub(p.epoch) - time.Duration(p.started.Load())
}

func (p *progress) Done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.active.Swap(false) {
		return
	}
	elapsed := p.elapsed()
	done, took := p.done.Load(), elapsed
	if p.measured > 0 {
		done, took = p.measuredOps, p.measured
	}
	line := fmt.Sprintf("%s %s: %d ops in %s", p.engine, p.benchmark, done, fmtElapsed(took))
	if s := took.Seconds(); s > 0 && done > 0 {
		line += " (" + fmtCompact(float64(done)/s) + " ops/s)"
	}
	// Time outside the measurement (db_bench's start and its wait for
	// compactions) is said apart, so the rate matches the table.
	if extra := elapsed - took; extra > 100*time.Millisecond && extra > took/10 {
		line += ", " + fmtElapsed(elapsed) + " in all"
	}
	if p.interactive {
		line = "\r" + line + strings.Repeat(" ", max(p.lastLen-width(line), 0))
		p.lastLen = 0
	}
	// Progress output is best effort: a failed write must not stop a run.
	_, _ = io.WriteString(p.w, line+"\n")
}

// drawLocked writes the bar line; p.mu is held.
func (p *progress) drawLocked(elapsed time.Duration) {
	done := p.done.Load()
	var b strings.Builder
	engine, benchmark := truncate(p.engine, 21), truncate(p.benchmark, 16)
	bar := barWidth - max(0, width(engine)+1+width(benchmark)-nameCells)
	if bar < minBarWidth {
		bar = minBarWidth
		engine = truncate(engine, max(12, nameCells+barWidth-minBarWidth-1-width(benchmark)))
	}
	b.WriteString(engine + " " + benchmark + " ")
	rate := 0.0
	if s := elapsed.Seconds(); s > 0 {
		rate = float64(done) / s
	}
	if p.total > 0 {
		frac := min(max(float64(done)/float64(p.total), 0), 1)
		fill := int(frac * float64(bar))
		b.WriteString("[" + strings.Repeat("#", fill) + strings.Repeat("-", bar-fill) + "] ")
		fmt.Fprintf(&b, "%5.1f%%", 100*frac)
	} else {
		b.WriteString(groupDigits(done) + " ops")
	}
	if rate > 0 {
		b.WriteString("  " + fmtCompact(rate) + " ops/s")
		if p.total > done {
			eta := time.Duration(float64(p.total-done) / rate * float64(time.Second))
			b.WriteString("  ETA " + fmtElapsed(eta))
		}
	}
	line := b.String()
	n := width(line)
	// Pad over the rest of a longer previous line.
	pad := strings.Repeat(" ", max(p.lastLen-n, 0))
	p.lastLen = n
	_, _ = io.WriteString(p.w, "\r"+line+pad)
}

// IsTerminal reports whether f is a terminal (a character device other
// than the null device), so progress can be drawn in place.
func IsTerminal(f *os.File) bool {
	if f == nil {
		return false
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	if null, err := os.Stat(os.DevNull); err == nil && os.SameFile(fi, null) {
		return false
	}
	return true
}
