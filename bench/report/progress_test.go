package report

import (
	"bytes"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/strata-db/strata/bench"
)

// fakeClock is a clock tests move by hand; safe for concurrent use.
type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) advance(d time.Duration) { c.ns.Add(int64(d)) }
func newFakeClock() *fakeClock               { c := &fakeClock{}; c.ns.Store(1e18); return c }
func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}
func (b *syncBuffer) String() string { b.mu.Lock(); defer b.mu.Unlock(); return b.buf.String() }

// syncBuffer lets a test read output while writers may still run.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func TestProgressNonInteractive(t *testing.T) {
	clock := newFakeClock()
	var buf bytes.Buffer
	p := newProgress(&buf, false, clock.now)
	p.Start("strata", "fillrandom", 200_000)
	for range 200 {
		p.Add(1000)
		clock.advance(20500 * time.Microsecond)
	}
	assert.Empty(t, buf.String(), "nothing while running")
	p.Done()
	p.Done() // a second Done writes nothing
	p.Start("pebble", "readrandom", 10)
	p.Add(10)
	clock.advance(time.Second)
	p.Done()
	assert.Equal(t, "strata fillrandom: 200000 ops in 4.1s (48.8k ops/s)\n"+
		"pebble readrandom: 10 ops in 1.0s (10 ops/s)\n", buf.String())
}

func TestProgressInteractive(t *testing.T) {
	clock := newFakeClock()
	var buf bytes.Buffer
	p := newProgress(&buf, true, clock.now)
	p.Start("strata", "fillrandom", 1000)
	clock.advance(time.Second)
	p.Add(500)
	out := buf.String()
	assert.Contains(t, out, "\rstrata fillrandom [########--------]  50.0%  500 ops/s  ETA 1.0s")

	// Within the redraw interval nothing is drawn.
	n := len(buf.String())
	clock.advance(10 * time.Millisecond)
	p.Add(1)
	assert.Len(t, buf.String(), n)

	clock.advance(time.Second)
	p.Add(499)
	assert.Contains(t, buf.String(), "100.0%")
	p.Done()
	out = buf.String()
	last := out[strings.LastIndex(out, "\r"):]
	assert.Equal(t, "\rstrata fillrandom: 1000 ops in 2.0s (498 ops/s)", strings.TrimRight(last, " \n"))
	assert.True(t, strings.HasSuffix(last, "\n"), "the summary line ends the line")
	// The longest names still fit, Strata's GC variants in a round too.
	p.Start("rocksdb-blob", "readwhilewriting", 1_000_000)
	clock.advance(3 * time.Second)
	p.Add(12_345)
	p.Done()
	p.Start("strata/reverse-lookup", "overwrite 12/20", 1_000_000)
	clock.advance(3 * time.Second)
	p.Add(12_345)
	assert.Contains(t, buf.String(), "strata/reverse-lookup overwrite 12/20 [")
	p.Done()
	p.Start("a-very-long-engine-name/with-a-variant", "readwhilewriting", 1_000_000)
	clock.advance(3 * time.Second)
	p.Add(12_345)
	out = buf.String()
	for _, l := range strings.Split(out, "\r") {
		assert.LessOrEqual(t, width(strings.TrimRight(l, " \n")), 80, "line fits a terminal: %q", l)
	}

	// Unknown totals show a count instead of a bar.
	buf.Reset()
	p.Start("badger", "readseq", 0)
	clock.advance(time.Second)
	p.Add(1234)
	assert.Contains(t, buf.String(), "badger readseq 1,234 ops  1.23k ops/s")
}

func TestProgressConcurrent(t *testing.T) {
	var buf syncBuffer
	p := NewProgress(&buf, true)
	const workers, per = 8, 20_000
	p.Start("strata", "readrandom", workers*per)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range per {
				p.Add(1)
			}
		}()
	}
	wg.Wait()
	p.Done()
	out := buf.String()
	assert.Contains(t, out, "\rstrata readrandom [")
	assert.Contains(t, out, "strata readrandom: 160000 ops in ")
	// At most ~10 redraws a second plus the first and the last line.
	assert.Less(t, strings.Count(out, "\r"), 100)
}

func TestIsTerminal(t *testing.T) {
	assert.False(t, IsTerminal(nil))
	f, err := os.CreateTemp(t.TempDir(), "x")
	require.NoError(t, err)
	defer f.Close()
	assert.False(t, IsTerminal(f), "a regular file")
	null, err := os.Open(os.DevNull)
	require.NoError(t, err)
	defer null.Close()
	assert.False(t, IsTerminal(null), "the null device")
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	assert.False(t, IsTerminal(w), "a pipe")
}

// TestProgressMeasured: when the benchmark says what it measured (db_bench's
// own figures), the summary line shows that, with the whole time apart,
// so it agrees with the table; a later benchmark that says nothing is
// timed by the progress's clock again.
func TestProgressMeasured(t *testing.T) {
	clock := newFakeClock()
	var buf bytes.Buffer
	p := newProgress(&buf, false, clock.now)
	var _ bench.Measurer = p
	p.Start("rocksdb", "overwrite", 50_000)
	p.Add(50_000)
	clock.advance(6500 * time.Millisecond) // db_bench's start and its wait for compactions included
	bench.ReportMeasured(p, 50_000, 1810*time.Millisecond)
	p.Done()
	p.Start("rocksdb", "readrandom", 100)
	p.Add(100)
	clock.advance(time.Second)
	bench.ReportMeasured(p, 100, 980*time.Millisecond) // within 10%: no total
	p.Done()
	p.Start("strata", "fillrandom", 10)
	p.Add(10)
	clock.advance(time.Second)
	p.Done()
	assert.Equal(t, "rocksdb overwrite: 50000 ops in 1.8s (27.6k ops/s), 6.5s in all\n"+
		"rocksdb readrandom: 100 ops in 1.0s (102 ops/s)\n"+
		"strata fillrandom: 10 ops in 1.0s (10 ops/s)\n", buf.String())
}
