package cache

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// The policy simulator replays synthetic block-access traces through
// candidate eviction policies and reports their hit ratios. It is how the
// policy of this package was chosen; TestPolicySimulation keeps the claims
// that decided it true, and BenchmarkPolicySimulation prints the full table
// (go test -run '^$' -bench PolicySimulation).

// zipfGen draws ranks in [0, n) with P(rank i) ~ 1/(i+1)^theta, by the
// method of Gray et al. ("Quickly generating billion-record synthetic
// databases", also used by YCSB). Unlike math/rand's Zipf it accepts
// theta < 1, the usual choice (0.99) for key-value workloads.
type zipfGen struct {
	n                  uint64
	theta, alpha, zetn float64
	eta, half          float64
	rng                *rand.Rand
}

func newZipfGen(rng *rand.Rand, n uint64, theta float64) *zipfGen {
	zeta := func(n uint64) float64 {
		s := 0.0
		for i := uint64(1); i <= n; i++ {
			s += 1 / math.Pow(float64(i), theta)
		}
		return s
	}
	z := &zipfGen{n: n, theta: theta, rng: rng}
	z.zetn = zeta(n)
	z.alpha = 1 / (1 - theta)
	z.eta = (1 - math.Pow(2/float64(n), 1-theta)) / (1 - zeta(2)/z.zetn)
	z.half = 1 + math.Pow(0.5, theta)
	return z
}

func (z *zipfGen) next() uint64 {
	u := z.rng.Float64()
	uz := u * z.zetn
	if uz < 1 {
		return 0
	}
	if uz < z.half {
		return 1
	}
	r := uint64(float64(z.n) * math.Pow(z.eta*u-z.eta+1, z.alpha))
	return min(r, z.n-1)
}

// simTrace is a named sequence of block keys.
type simTrace struct {
	name string
	keys []uint64
}

// scanKeyBase starts the key range of one-touch scan blocks, far from the
// ranks the zipfian part draws.
const scanKeyBase = 1 << 40

// makeSimTraces builds the traces for a cache of capacity unit entries;
// length is the number of accesses of each trace.
func makeSimTraces(capacity, length int) []simTrace {
	rng := rand.New(rand.NewPCG(1, 2))
	universe := uint64(capacity * 50)
	var traces []simTrace

	// Zipfian point reads at two skews.
	for _, theta := range []float64{0.99, 0.8} {
		z := newZipfGen(rng, universe, theta)
		keys := make([]uint64, length)
		for i := range keys {
			keys[i] = z.next()
		}
		traces = append(traces, simTrace{fmt.Sprintf("zipf-%.2f", theta), keys})
	}

	// Zipfian reads with long sequential scans of blocks that are touched
	// once: after every 4 x capacity point reads, a scan of 2 x capacity
	// fresh blocks (a compaction or a full-table iterator). In the "2x"
	// variant each scanned block is read twice in a row (correlated
	// references: two reads of the same block by one iterator).
	for _, touches := range []int{1, 2} {
		z := newZipfGen(rng, universe, 0.99)
		keys := make([]uint64, 0, length)
		next := uint64(scanKeyBase)
		for len(keys) < length {
			for i := 0; i < 4*capacity && len(keys) < length; i++ {
				keys = append(keys, z.next())
			}
			for i := 0; i < 2*capacity && len(keys) < length; i++ {
				for range touches {
					keys = append(keys, next)
				}
				next++
			}
		}
		name := "zipf+scan"
		if touches > 1 {
			name = fmt.Sprintf("zipf+scan%dx", touches)
		}
		traces = append(traces, simTrace{name, keys})
	}

	// A loop over 10% more blocks than fit.
	{
		keys := make([]uint64, length)
		loop := uint64(capacity + capacity/10)
		for i := range keys {
			keys[i] = uint64(i) % loop
		}
		traces = append(traces, simTrace{"loop-1.1x", keys})
	}

	// A zipfian working set that moves: every 10 x capacity accesses the
	// hot keys are replaced by new ones (recency matters, old frequency
	// misleads).
	{
		z := newZipfGen(rng, universe, 0.99)
		keys := make([]uint64, length)
		phase := uint64(0)
		for i := range keys {
			if i > 0 && i%(10*capacity) == 0 {
				phase++
			}
			keys[i] = z.next() + phase*universe
		}
		traces = append(traces, simTrace{"zipf-shift", keys})
	}
	return traces
}

// simCandidate makes a fresh policy for a capacity in unit entries.
type simCandidate struct {
	name string
	make func(capacity int) simPolicy
}

func simCandidates() []simCandidate {
	return []simCandidate{
		{"LRU", func(c int) simPolicy { return newSimLRU(c) }},
		{"CLOCK", func(c int) simPolicy { return newSimClock(c) }},
		{"S3-FIFO(t=1)", func(c int) simPolicy { return newSimS3FIFO(c, 1) }},
		{"S3-FIFO(t=2)", func(c int) simPolicy { return newSimS3FIFO(c, 2) }},
		{"W-TinyLFU", func(c int) simPolicy { return newSimWTinyLFU(c) }},
		{"Cache", func(c int) simPolicy { return newSimCache(c) }},
	}
}

// hitRatio replays keys through p and returns the hit ratio of the point
// reads (scan blocks, which no policy can hit, are replayed but not counted).
func hitRatio(p simPolicy, keys []uint64) float64 {
	hits, n := 0, 0
	for _, k := range keys {
		hit := p.access(k)
		if k >= scanKeyBase {
			continue
		}
		n++
		if hit {
			hits++
		}
	}
	return float64(hits) / float64(n)
}

// simTable runs every candidate over every trace and returns
// ratios[candidate][trace] and the table as text.
func simTable(capacity, length int) (map[string]map[string]float64, string) {
	traces := makeSimTraces(capacity, length)
	ratios := make(map[string]map[string]float64)
	var b strings.Builder
	fmt.Fprintf(&b, "hit ratio of point reads; capacity %d entries, %d accesses per trace\n%-14s", capacity, length, "policy")
	for _, t := range traces {
		fmt.Fprintf(&b, " %11s", t.name)
	}
	b.WriteByte('\n')
	for _, c := range simCandidates() {
		ratios[c.name] = make(map[string]float64)
		fmt.Fprintf(&b, "%-14s", c.name)
		for _, t := range traces {
			r := hitRatio(c.make(capacity), t.keys)
			ratios[c.name][t.name] = r
			fmt.Fprintf(&b, " %10.2f%%", 100*r)
		}
		b.WriteByte('\n')
	}
	return ratios, b.String()
}

func BenchmarkPolicySimulation(b *testing.B) {
	for _, capacity := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("cap=%d", capacity), func(b *testing.B) {
			for range b.N {
				_, table := simTable(capacity, min(200*capacity, 2_000_000))
				b.Log("\n" + table)
			}
		})
	}
}

// TestPolicySimulation keeps true the measurements that chose the policy,
// on shorter traces: the Cache behaves as the reference S3-FIFO it
// implements, beats LRU on skewed reads, keeps its hit ratio through long
// scans (also when each scanned block is read twice, where a move threshold
// of one would not), and survives a loop slightly larger than itself.
func TestPolicySimulation(t *testing.T) {
	capacity := 500
	if raceEnabled || testing.Short() {
		capacity = 200
	}
	traces := makeSimTraces(capacity, 100*capacity)
	ratio := func(p simPolicy, trace string) float64 {
		for _, tr := range traces {
			if tr.name == trace {
				return hitRatio(p, tr.keys)
			}
		}
		t.Fatalf("no trace %q", trace)
		return 0
	}
	for _, tr := range traces {
		c := hitRatio(newSimCache(capacity), tr.keys)
		ref := hitRatio(newSimS3FIFO(capacity, moveThreshold), tr.keys)
		lru := hitRatio(newSimLRU(capacity), tr.keys)
		t.Logf("%-12s Cache %6.2f%%  S3-FIFO %6.2f%%  LRU %6.2f%%", tr.name, 100*c, 100*ref, 100*lru)
		if math.Abs(c-ref) > 0.01 {
			t.Errorf("%s: Cache %.4f differs from reference S3-FIFO %.4f", tr.name, c, ref)
		}
	}

	zipf := ratio(newSimCache(capacity), "zipf-0.99")
	if lru := ratio(newSimLRU(capacity), "zipf-0.99"); zipf < lru+0.03 {
		t.Errorf("zipf-0.99: Cache %.4f, want at least LRU %.4f + 0.03", zipf, lru)
	}
	for _, trace := range []string{"zipf+scan", "zipf+scan2x"} {
		scan := ratio(newSimCache(capacity), trace)
		if scan < 0.93*zipf {
			t.Errorf("%s: Cache %.4f, want at least 93%% of its %.4f without scans", trace, scan, zipf)
		}
		if lru := ratio(newSimLRU(capacity), trace); scan < lru+0.05 {
			t.Errorf("%s: Cache %.4f, want at least LRU %.4f + 0.05", trace, scan, lru)
		}
	}
	if r := ratio(newSimS3FIFO(capacity, 1), "zipf+scan2x"); r > 0.9*zipf {
		t.Errorf("zipf+scan2x with move threshold 1: %.4f; the trace no longer shows why the threshold is 2", r)
	}
	if loop := ratio(newSimCache(capacity), "loop-1.1x"); loop < 0.5 {
		t.Errorf("loop-1.1x: Cache %.4f, want at least 0.5", loop)
	}
}
