package vlog

import (
	"math"
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/internal/stripe"
)

// AdaptiveOptions configures an AdaptiveThreshold. The zero value of each
// field means its default. Costs are in bytes of background writes (flush,
// compaction, GC), the unit the rule trades in.
type AdaptiveOptions struct {
	// Initial is the threshold until MinWrites writes have been observed,
	// in bytes. Default 1024.
	Initial int
	// Min and Max clamp the threshold, in bytes: values below Min always
	// stay in the tree, values of at least Max always leave it. Defaults
	// 512 and 64 KiB. (kvbench's shifting phases: separating values of
	// 256-512 B slowed later point reads of them by about a quarter and
	// saved no measurable write bandwidth.)
	Min, Max int
	// RewriteAmp is how many times compaction rewrites a byte kept in the
	// tree over its life. Default 8.
	RewriteAmp float64
	// GCOverhead is what GC rewrites, per separated byte, to reclaim the
	// space of dead values. Default 0.25.
	GCOverhead float64
	// PointerBytes is the size of the pointer the tree keeps for a
	// separated value. Default 12.
	PointerBytes float64
	// ReadCost is the cost of the extra read a point read of a separated
	// value makes, in bytes of background writes of equal cost. Default
	// 2048.
	ReadCost float64
	// ScanRowCost is the same for a row of a scan. Default 32: a scan
	// reads separated values through mapped value logs, and in kvbench's
	// shift-scan phase (1-3 KiB values, 90% scans) separating them at
	// 1 KiB scanned faster than keeping them inline, whose larger tables
	// compaction rewrites.
	ScanRowCost float64
	// MinWrites is the number of observed writes before the threshold
	// leaves Initial. Default 1024.
	MinWrites uint64
	// UpdateEvery is how many calls of Separate (one per value flushed)
	// pass between two recomputations of the threshold. Default 4096.
	UpdateEvery uint64
	// Window is the number of observed writes above which Update halves
	// every counter, so that old observations fade. Default 1<<20.
	Window uint64
}

func (o *AdaptiveOptions) withDefaults() AdaptiveOptions {
	c := *o
	setInt := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	setFloat := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	setUint := func(v *uint64, d uint64) {
		if *v == 0 {
			*v = d
		}
	}
	setInt(&c.Initial, 1024)
	setInt(&c.Min, 512)
	setInt(&c.Max, 64<<10)
	c.Min = max(c.Min, 0)
	c.Max = max(c.Max, c.Min)
	c.Initial = min(max(c.Initial, c.Min), c.Max)
	setFloat(&c.RewriteAmp, 8)
	setFloat(&c.GCOverhead, 0.25)
	setFloat(&c.PointerBytes, 12)
	setFloat(&c.ReadCost, 2048)
	setFloat(&c.ScanRowCost, 32)
	setUint(&c.MinWrites, 1024)
	setUint(&c.UpdateEvery, 4096)
	setUint(&c.Window, 1<<20)
	return c
}

// AdaptiveThreshold is a Policy that sets its threshold from what the DB
// observes. It is a worked example of an Observer; the DB uses Threshold
// by default.
//
// # The rule
//
// Observations land in histograms over value size (buckets four to an
// octave, so a bucket spans at most a quarter of its lower bound): count
// and bytes of written values, count of point reads; scanned rows are
// spread over the buckets in proportion to writes. For a bucket b with
// W writes of mean size v, R point reads and S scanned rows, separating
// its values nets, in bytes of background writes,
//
//	net(b) = W·((A − G)·v − (1 + A)·P) − R·ReadCost − S·ScanRowCost
//
// where A is RewriteAmp and G GCOverhead: kept in the tree, a value is
// written by the flush and A more times by compaction, (1 + A)·v; in a
// value log it is written once and GC moves a fraction G of it, while
// the pointer of P bytes takes its place in the tree, (1 + G)·v +
// (1 + A)·P. Each read of a separated value pays an extra read.
//
// The threshold is the smallest bucket bound t in [Min, Max] that
// maximises the sum of net(b) over the buckets from t up to Max (values
// of at least Max are separated in any case). So when writes dominate, the
// threshold falls to Min; when point reads of some sizes outweigh the
// rewrites their separation saves, it rises above them. With the defaults,
// a 4 KiB value is separated unless it is read more than about 15 times per
// write (about 1,000 scanned rows), a 1 KiB value unless read about 4 times.
// ObserveGarbage and the separated flags are not used by the rule.
//
// Its observations live in memory only: a DB opened with a new
// AdaptiveThreshold starts at Initial. To keep what it learnt across a
// reopen in the same process, pass the same AdaptiveThreshold again.
//
// Separate recomputes the threshold every UpdateEvery calls (one goroutine
// does it while the others keep the old threshold); the observers only add
// to atomic counters, striped to spare concurrent writers contention.
type AdaptiveThreshold struct {
	o         AdaptiveOptions
	threshold atomic.Int64
	// calls counts calls of Separate, which recomputes the threshold at
	// every UpdateEvery-th.
	calls    atomic.Uint64
	updateMu sync.Mutex

	// The counters are striped, so that writers on different cores mostly
	// add to different cache lines; Update sums the stripes.
	stripes  [statStripes]statStripe
	scanRows atomic.Uint64
}

// statStripes is the number of copies of the histogram.
const (
	statStripeBits = 2
	statStripes    = 1 << statStripeBits
)

type statStripe struct {
	buckets [numBuckets]bucketStats
	_       [64]byte // keeps the next stripe off this one's last line
}

// bucketStats are the counters of one value-size bucket.
type bucketStats struct {
	writes, writeBytes, reads atomic.Uint64
}

// stripe returns the stripe of the calling goroutine (see stripe.Of).
func (a *AdaptiveThreshold) stripe() *statStripe {
	return &a.stripes[stripe.Of(statStripeBits)]
}

// NewAdaptiveThreshold returns an AdaptiveThreshold starting at o.Initial.
func NewAdaptiveThreshold(o AdaptiveOptions) *AdaptiveThreshold {
	a := &AdaptiveThreshold{o: o.withDefaults()}
	a.threshold.Store(int64(a.o.Initial))
	return a
}

// Separate reports whether valueLen is at least the current threshold.
// Every UpdateEvery-th call recomputes the threshold first (unless an
// update is running already).
func (a *AdaptiveThreshold) Separate(_ []byte, valueLen int) bool {
	if a.calls.Add(1)%a.o.UpdateEvery == 0 && a.updateMu.TryLock() {
		a.updateLocked()
		a.updateMu.Unlock()
	}
	return valueLen >= int(a.threshold.Load())
}

// Threshold returns the current threshold in bytes.
func (a *AdaptiveThreshold) Threshold() int { return int(a.threshold.Load()) }

// Update recomputes the threshold from the observations now and returns
// it.
func (a *AdaptiveThreshold) Update() int {
	a.updateMu.Lock()
	defer a.updateMu.Unlock()
	a.updateLocked()
	return a.Threshold()
}

// ObserveWrite adds a write of a valueLen-byte value to the histogram.
func (a *AdaptiveThreshold) ObserveWrite(_, valueLen int) {
	b := &a.stripe().buckets[bucketOf(valueLen)]
	b.writes.Add(1)
	b.writeBytes.Add(uint64(max(valueLen, 0)))
}

// ObserveRead adds a point read of a valueLen-byte value.
func (a *AdaptiveThreshold) ObserveRead(valueLen int, _ bool) {
	a.stripe().buckets[bucketOf(valueLen)].reads.Add(1)
}

// ObserveScan adds rows scanned rows.
func (a *AdaptiveThreshold) ObserveScan(rows int, _ int) {
	if rows > 0 {
		a.scanRows.Add(uint64(rows))
	}
}

// ObserveGarbage does nothing: the rule charges GC through GCOverhead.
func (a *AdaptiveThreshold) ObserveGarbage(base.FileNum, uint64, uint64) {}

// updateLocked recomputes the threshold; updateMu is held.
func (a *AdaptiveThreshold) updateLocked() {
	var w, bytes, r [numBuckets]float64
	var totalW uint64
	for s := range a.stripes {
		for i := range numBuckets {
			b := &a.stripes[s].buckets[i]
			n := b.writes.Load()
			totalW += n
			w[i] += float64(n)
			bytes[i] += float64(b.writeBytes.Load())
			r[i] += float64(b.reads.Load())
		}
	}
	scan := float64(a.scanRows.Load())
	if totalW < a.o.MinWrites {
		return
	}

	o := &a.o
	lo, hi := bucketOf(o.Min), bucketOf(o.Max)
	perWrite := -(1 + o.RewriteAmp) * o.PointerBytes
	best, bestScore, score := hi, 0.0, 0.0
	for i := hi - 1; i >= lo; i-- {
		v := float64(bucketLow(i))
		if w[i] > 0 {
			v = bytes[i] / w[i]
		}
		net := w[i]*((o.RewriteAmp-o.GCOverhead)*v+perWrite) -
			r[i]*o.ReadCost -
			scan*w[i]/float64(totalW)*o.ScanRowCost
		score += net
		if score >= bestScore {
			best, bestScore = i, score
		}
	}
	t := bucketLow(best)
	switch best {
	case lo:
		t = o.Min
	case hi:
		t = o.Max
	}
	a.threshold.Store(int64(min(max(t, o.Min), o.Max)))

	if totalW > o.Window {
		for s := range a.stripes {
			for i := range numBuckets {
				b := &a.stripes[s].buckets[i]
				halve(&b.writes)
				halve(&b.writeBytes)
				halve(&b.reads)
			}
		}
		halve(&a.scanRows)
	}
}

// halve subtracts half of c's value from it (atomically with respect to
// concurrent adds).
func halve(c *atomic.Uint64) {
	if h := c.Load() / 2; h > 0 {
		c.Add(^(h - 1))
	}
}

// Value-size buckets: 0..3 hold those sizes; above, each octave
// [2^e, 2^(e+1)) is cut in four buckets of equal width. Sizes past
// 2^32-1 share the last bucket.
const (
	subBucketBits = 2
	numBuckets    = 4 * 31
)

// bucketOf returns the bucket of a value of n bytes.
func bucketOf(n int) int {
	v := uint64(min(max(n, 0), math.MaxUint32))
	if v < 1<<subBucketBits {
		return int(v)
	}
	e := bits.Len64(v) - 1 // 2 <= e <= 31
	m := (v >> (e - subBucketBits)) & (1<<subBucketBits - 1)
	return (e-1)<<subBucketBits + int(m)
}

// bucketLow returns the smallest size in bucket i.
func bucketLow(i int) int {
	if i < 1<<subBucketBits {
		return i
	}
	e := i>>subBucketBits + 1
	m := i & (1<<subBucketBits - 1)
	return (1<<subBucketBits + m) << (e - subBucketBits)
}
