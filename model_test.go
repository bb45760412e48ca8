package strata

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-db/strata/checkpoint"
	"github.com/strata-db/strata/gc"
	"github.com/strata-db/strata/index/learned"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// model is the expected state: a plain map.
type model map[string]string

func (m model) clone() model {
	c := make(model, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func (m model) deleteRange(start, end string) {
	for k := range m {
		if k >= start && k < end {
			delete(m, k)
		}
	}
}

// sortedKeys returns the model's keys within [lower, upper) ("" = open).
func (m model) sortedKeys(lower, upper []byte) []string {
	var keys []string
	for k := range m {
		if lower != nil && k < string(lower) {
			continue
		}
		if upper != nil && k >= string(upper) {
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// modelSeeds returns the seeds to run: STRATA_SEED replays one seed.
func modelSeeds(t *testing.T, n int) []uint64 {
	if s := os.Getenv("STRATA_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err)
		return []uint64{seed}
	}
	seeds := make([]uint64, n)
	for i := range seeds {
		seeds[i] = uint64(i + 1)
	}
	return seeds
}

type modelTest struct {
	t   *testing.T
	rng *rand.Rand
	// rngIter draws the iterator choices added after the rest (prefixes,
	// SeekLE), so that rng's sequence, and with it what each seed did
	// before them, stays as it was: a seed reported then replays the same.
	rngIter *rand.Rand
	fs      *vfs.MemFS
	opts    *Options
	db      *DB
	m       model
	step    int
	seed    uint64

	snaps []modelSnap
	iters []modelIter

	// exp holds the expiry (ms, by clockMs) of keys written with a TTL;
	// the DB's Options.Clock reads clockMs, which only "tick" steps move.
	exp     map[string]expiry
	clockMs atomic.Int64
	hist    map[string][]string // STRATA_DEBUG: what happened to each key

	compactions uint64 // automatic and manual compactions over all sessions
	gcDeleted   uint64 // value logs garbage collection deleted, over all sessions
	expired     uint64 // entries flushes and compactions dropped for their TTL
	gcMoved     uint64 // values it relocated
	// prefixSkipped: tables prefix iterators' Bloom filters ruled out
	prefixSkipped uint64
}

type modelSnap struct {
	s   *Snapshot
	m   model
	exp map[string]expiry
}

// expiry is the model of a key whose value has a TTL: when it expires,
// and the merge operands written onto it since (which, once it expires,
// make the key's value on their own).
type expiry struct {
	at   int64
	base string
	ops  [][]byte
}

// visible returns the view of m at now: keys whose TTL has passed are
// gone, or, if operands were merged onto their value, hold the operands
// merged onto nothing.
func (mt *modelTest) visible(m model, exp map[string]expiry, now int64) model {
	out := m.clone()
	for k, e := range exp {
		if e.at <= now {
			mt.expire(out, k, e)
		}
	}
	return out
}

// expire applies the expiry of k to m.
func (mt *modelTest) expire(m model, k string, e expiry) {
	if len(e.ops) == 0 {
		delete(m, k)
		return
	}
	val, err := mt.opts.Merger.Merge([]byte(k), nil, e.ops)
	require.NoError(mt.t, err)
	m[k] = string(val)
}

// mergeOperand returns a random operand for the DB's merger.
func (mt *modelTest) mergeOperand() []byte {
	if mt.opts.Merger == Counter {
		return CounterDelta(int64(mt.rng.IntN(1000)) - 500)
	}
	return ListElement(nil, mt.value())
}

// applyMerge is the model of a merge: the merger applied to the current
// value (none when absent) and one operand. Onto a value with a TTL the
// operand applies only while the value lives (the key keeps the value's
// expiry, and the operands are remembered for after it).
func (mt *modelTest) applyMerge(m model, exp map[string]expiry, k string, op []byte) {
	mt.note(k, "merge %q onto %q", trunc(op), trunc([]byte(m[k])))
	var existing []byte
	if v, ok := m[k]; ok {
		existing = []byte(v)
	}
	val, err := mt.opts.Merger.Merge([]byte(k), existing, [][]byte{op})
	require.NoError(mt.t, err)
	m[k] = string(val)
	if e, ok := exp[k]; ok {
		e.ops = append(slices.Clone(e.ops), op)
		exp[k] = e
	}
}

func (mt *modelTest) note(k string, format string, args ...any) {
	if mt.hist != nil {
		mt.hist[k] = append(mt.hist[k], fmt.Sprintf("step %d: ", mt.step)+fmt.Sprintf(format, args...))
	}
}

// clearExp forgets the expiry of k, rewritten without one.
func (mt *modelTest) clearExp(k string) { delete(mt.exp, k) }

// clearExpRange forgets the expiries of [a, b).
func (mt *modelTest) clearExpRange(a, b string) {
	for k := range mt.exp {
		if k >= a && k < b {
			delete(mt.exp, k)
		}
	}
}

func cloneExp(e map[string]expiry) map[string]expiry {
	c := make(map[string]expiry, len(e))
	for k, v := range e {
		c[k] = v
	}
	return c
}

type modelIter struct {
	it           *Iterator
	m            []string // sorted keys in bounds
	vals         model
	lower, upper []byte
	prefix       []byte // IterOptions.Prefix (nil: none)
	pos          int    // index into m of the current key; -1/len(m) invalid
	valid        bool
}

func (mt *modelTest) fatalf(format string, args ...any) {
	mt.t.Helper()
	mt.t.Fatalf("seed %d step %d (replay with STRATA_SEED=%d): %s", mt.seed, mt.step, mt.seed, fmt.Sprintf(format, args...))
}

func (mt *modelTest) key() []byte {
	// A small key space forces overwrites, deletes of live keys and
	// overlapping ranges. Keys vary in length to exercise prefix compression.
	n := mt.rng.IntN(300)
	return []byte(fmt.Sprintf("key%0*d", 3+n%3, n))
}

func (mt *modelTest) value() []byte {
	if mt.opts.Merger == Counter {
		// Values a counter can merge onto (separated above 4 bytes).
		return CounterDelta(int64(mt.rng.IntN(1 << 20)))
	}
	var n int
	switch r := mt.rng.IntN(20); {
	case r == 0:
		n = 2000 + mt.rng.IntN(8000) // larger than a block
	case r < 4:
		n = 0
	default:
		n = 1 + mt.rng.IntN(100)
	}
	v := make([]byte, n)
	for i := range v {
		v[i] = byte('a' + mt.rng.IntN(26))
	}
	return v
}

// ingest adds an external table of a few keys (sets and deletions, some
// values separated) through Ingest: keys of the memtables' ranges or not,
// so that it flushes or marks the WAL.
func (mt *modelTest) ingest() {
	path := fmt.Sprintf("ext-%d.sst", mt.step)
	w, err := NewTableWriter(path, &TableWriterOptions{FS: mt.fs, ValueThreshold: 64})
	require.NoError(mt.t, err)
	keys := map[string]bool{}
	for range 1 + mt.rng.IntN(8) {
		keys[string(mt.key())] = true
	}
	sorted := slices.Sorted(maps.Keys(keys))
	next := mt.m.clone()
	for _, k := range sorted {
		if mt.rng.IntN(5) == 0 {
			require.NoError(mt.t, w.Delete([]byte(k)))
			delete(next, k)
			continue
		}
		v := mt.value()
		require.NoError(mt.t, w.Set([]byte(k), v))
		next[k] = string(v)
	}
	require.NoError(mt.t, w.Close())
	if err := mt.db.Ingest([]string{path}); err != nil {
		mt.fatalf("Ingest: %v", err)
	}
	mt.m = next
	for _, k := range sorted {
		mt.clearExp(k)
		mt.note(k, "ingested")
	}
}

func (mt *modelTest) writeOpts() *WriteOptions {
	if mt.rng.IntN(2) == 0 {
		return Sync
	}
	return NoSync
}

func (mt *modelTest) checkGet(get func([]byte) ([]byte, error), m model, key []byte) {
	mt.t.Helper()
	got, err := get(key)
	want, ok := m[string(key)]
	if !ok {
		if !errors.Is(err, ErrNotFound) {
			mt.fatalf("Get(%q) = %q, %v; want not found", key, got, err)
		}
		return
	}
	if err != nil || string(got) != want {
		mt.fatalf("Get(%q) = %q, %v; want %q", key, trunc(got), err, trunc([]byte(want)))
	}
}

func trunc(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + fmt.Sprintf("...(%d bytes)", len(b))
	}
	return string(b)
}

func (mt *modelTest) randomBounds() (lower, upper []byte) {
	if mt.rng.IntN(2) == 0 {
		lower = mt.key()
	}
	if mt.rng.IntN(2) == 0 {
		upper = mt.key()
	}
	if lower != nil && upper != nil && string(lower) > string(upper) {
		lower, upper = upper, lower
	}
	return lower, upper
}

// randomIterOptions returns bounds, and a third of the time a prefix: a
// key cut short, most often to 5 bytes (the prefix of the "prefix-filter"
// configuration's extractor, whose Bloom filters then rule tables out),
// or the whole key, or once in a while the empty prefix.
func (mt *modelTest) randomIterOptions() *IterOptions {
	lower, upper := mt.randomBounds()
	o := &IterOptions{LowerBound: lower, UpperBound: upper}
	switch r := mt.rngIter.IntN(30); {
	case r == 0:
		o.Prefix = []byte{}
	case r < 10:
		n := mt.rngIter.IntN(300)
		k := []byte(fmt.Sprintf("key%0*d", 3+n%3, n)) // as mt.key, from rngIter
		o.Prefix = k[:min([]int{3, 4, 5, 5, 5, 6, 8}[mt.rngIter.IntN(7)], len(k))]
	}
	return o
}

func (mt *modelTest) newModelIter(it *Iterator, m model, o *IterOptions) modelIter {
	keys := m.sortedKeys(o.LowerBound, o.UpperBound)
	if o.Prefix != nil {
		keys = slices.DeleteFunc(keys, func(k string) bool { return !strings.HasPrefix(k, string(o.Prefix)) })
	}
	return modelIter{it: it, m: keys, vals: m.clone(), lower: o.LowerBound, upper: o.UpperBound, prefix: o.Prefix, pos: -1}
}

// iterStep applies one random positioning call to both the iterator and the
// model, and compares.
func (mt *modelTest) iterStep(mi *modelIter) {
	mt.t.Helper()
	it, keys := mi.it, mi.m
	var op string
	var ok bool
	seekIndex := func(k []byte) int {
		return sort.SearchStrings(keys, string(k))
	}
	switch r := mt.rng.IntN(12); {
	case r == 0:
		op, ok = "First", it.First()
		mi.pos = 0
	case r == 1:
		op, ok = "Last", it.Last()
		mi.pos = len(keys) - 1
	case r <= 3:
		k := mt.key()
		op, ok = fmt.Sprintf("SeekGE(%s)", k), it.SeekGE(k)
		mi.pos = seekIndex(k)
	case r <= 5 && mt.rngIter.IntN(2) == 0:
		k := mt.key()
		op, ok = fmt.Sprintf("SeekLE(%s)", k), it.SeekLE(k)
		mi.pos = sort.Search(len(keys), func(j int) bool { return keys[j] > string(k) }) - 1
	case r <= 5:
		k := mt.key()
		op, ok = fmt.Sprintf("SeekLT(%s)", k), it.SeekLT(k)
		mi.pos = seekIndex(k) - 1
	case r <= 8:
		op, ok = "Next", it.Next()
		if mi.valid {
			mi.pos++
		}
	default:
		op, ok = "Prev", it.Prev()
		if mi.valid {
			mi.pos--
		}
	}
	if err := it.Error(); err != nil {
		mt.fatalf("iterator %s: %v", op, err)
	}
	want := mi.pos >= 0 && mi.pos < len(keys)
	if !mi.valid && (op == "Next" || op == "Prev") {
		want = false
	}
	mi.valid = want
	if ok != want {
		mt.fatalf("iterator [%q,%q) prefix %q %s = %v, want %v (model pos %d of %d)", mi.lower, mi.upper, mi.prefix, op, ok, want, mi.pos, len(keys))
	}
	if !ok {
		return
	}
	if k := keys[mi.pos]; string(it.Key()) != k || string(it.Value()) != mi.vals[k] {
		if os.Getenv("STRATA_DEBUG") != "" {
			g, gerr := mt.db.Get([]byte(k))
			mt.t.Logf("debug: Get=%q %v; iter dir %d\n%s", trunc(g), gerr, it.dir, strings.Join(mt.hist[k], "\n"))
			fit, _ := mt.db.NewIter(nil)
			if fit.SeekGE([]byte(k)) {
				mt.t.Logf("debug: forward=%q", trunc(fit.Value()))
			}
			if fit.SeekLT([]byte(k + "\x00")) {
				mt.t.Logf("debug: reverse=%q", trunc(fit.Value()))
			}
			fit.Close()
		}
		mt.fatalf("iterator [%q,%q) prefix %q %s at %q=%q (error %v), want %q=%q", mi.lower, mi.upper, mi.prefix, op, it.Key(), trunc(it.Value()), it.Error(), k, trunc([]byte(mi.vals[k])))
	}
}

func (mt *modelTest) closeAll() {
	for _, mi := range mt.iters {
		require.NoError(mt.t, mi.it.Close())
	}
	mt.iters = nil
	for _, s := range mt.snaps {
		require.NoError(mt.t, s.s.Close())
	}
	mt.snaps = nil
}

func (mt *modelTest) reopen() {
	mt.closeAll()
	m := mt.db.Metrics()
	mt.compactions += m.Compact.Count
	mt.gcDeleted += m.GC.DeletedFiles
	mt.gcMoved += m.GC.Relocated
	mt.expired += m.Compact.Expired
	mt.prefixSkipped += m.PrefixFilter.Skipped
	if err := mt.db.Close(); err != nil {
		mt.fatalf("Close: %v", err)
	}
	db, err := Open("db", mt.opts)
	if err != nil {
		mt.fatalf("Open: %v", err)
	}
	mt.db = db
}

// fullCheck compares every key and a full scan in both directions.
func (mt *modelTest) fullCheck() {
	mt.t.Helper()
	for i := 0; i < 300; i++ {
		k := []byte(fmt.Sprintf("key%0*d", 3+i%3, i))
		mt.checkGet(mt.db.Get, mt.m, k)
	}
	it, err := mt.db.NewIter(nil)
	require.NoError(mt.t, err)
	defer it.Close()
	keys := mt.m.sortedKeys(nil, nil)
	var got []string
	for ok := it.First(); ok; ok = it.Next() {
		got = append(got, string(it.Key()))
		if string(it.Value()) != mt.m[string(it.Key())] {
			mt.fatalf("scan: %q=%q, want %q", it.Key(), trunc(it.Value()), trunc([]byte(mt.m[string(it.Key())])))
		}
	}
	require.NoError(mt.t, it.Error())
	if !slices.Equal(got, keys) {
		mt.fatalf("forward scan:\n got %v\nwant %v", got, keys)
	}
	got = got[:0]
	for ok := it.Last(); ok; ok = it.Prev() {
		got = append(got, string(it.Key()))
	}
	slices.Reverse(got)
	if !slices.Equal(got, keys) {
		mt.fatalf("reverse scan:\n got %v\nwant %v", got, keys)
	}
}

// runModel runs one seed and returns the number of compactions it ran (for
// the leveled configurations' check that compaction really happened).
func runModel(t *testing.T, seed uint64, ops int, opts *Options) *modelTest {
	fs := vfs.NewMem()
	o := *opts
	o.FS = fs
	mt := &modelTest{t: t, rng: rand.New(rand.NewPCG(seed, 0x5eed)), rngIter: rand.New(rand.NewPCG(seed, 0x17e7)), fs: fs, opts: &o, m: model{}, seed: seed, exp: map[string]expiry{}}
	mt.clockMs.Store(1_000_000_000_000)
	if os.Getenv("STRATA_DEBUG") != "" {
		mt.hist = map[string][]string{}
	}
	if o.Merger == nil {
		o.Merger = ListAppend
	}
	if o.SharedStore == modelSharedStore {
		// A store of its own on the model's filesystem.
		store, err := checkpoint.NewLocalStoreFS(fs, "store")
		require.NoError(t, err)
		o.SharedStore = store
	}
	o.Clock = func() time.Time { return time.UnixMilli(mt.clockMs.Load()) }
	db, err := Open("db", mt.opts)
	require.NoError(t, err)
	mt.db = db
	defer func() {
		mt.closeAll()
		mt.db.Close()
	}()
	var counts [20]int
	for mt.step = 0; mt.step < ops; mt.step++ {
		r := mt.rng.IntN(1000)
		switch {
		case r < 300:
			counts[0]++
			k, v := mt.key(), mt.value()
			if err := mt.db.Set(k, v, mt.writeOpts()); err != nil {
				mt.fatalf("Set: %v", err)
			}
			mt.m[string(k)] = string(v)
			mt.clearExp(string(k))
			mt.note(string(k), "set %q", trunc(v))
		case r < 380:
			counts[1]++
			k := mt.key()
			if err := mt.db.Delete(k, mt.writeOpts()); err != nil {
				mt.fatalf("Delete: %v", err)
			}
			delete(mt.m, string(k))
			mt.clearExp(string(k))
			mt.note(string(k), "delete")
		case r < 400:
			counts[2]++
			a, b := mt.randomBounds()
			if a == nil || b == nil {
				continue
			}
			if err := mt.db.DeleteRange(a, b, mt.writeOpts()); err != nil {
				mt.fatalf("DeleteRange: %v", err)
			}
			mt.m.deleteRange(string(a), string(b))
			mt.clearExpRange(string(a), string(b))
		case r < 450:
			counts[3]++
			b := mt.db.NewBatch()
			pending, pendingExp := mt.m.clone(), cloneExp(mt.exp)
			for i := 0; i < 1+mt.rng.IntN(20); i++ {
				switch mt.rng.IntN(8) {
				case 0:
					k := mt.key()
					require.NoError(t, b.Delete(k))
					delete(pending, string(k))
					mt.note(string(k), "batch delete")
					delete(pendingExp, string(k))
				case 1:
					a, c := mt.randomBounds()
					if a != nil && c != nil {
						require.NoError(t, b.DeleteRange(a, c))
						pending.deleteRange(string(a), string(c))
						for k := range pendingExp {
							if k >= string(a) && k < string(c) {
								delete(pendingExp, k)
							}
						}
					}
				case 3:
					k, op := mt.key(), mt.mergeOperand()
					require.NoError(t, b.Merge(k, op))
					mt.applyMerge(pending, pendingExp, string(k), op)
				case 2:
					k, v := mt.key(), mt.value()
					ttl := time.Duration(1+mt.rng.IntN(4)) * time.Second
					require.NoError(t, b.SetWithTTL(k, v, ttl))
					pending[string(k)] = string(v)
					pendingExp[string(k)] = expiry{at: mt.clockMs.Load() + ttl.Milliseconds()}
					mt.note(string(k), "batch setttl %q", trunc(v))
				default:
					k, v := mt.key(), mt.value()
					require.NoError(t, b.Set(k, v))
					pending[string(k)] = string(v)
					delete(pendingExp, string(k))
					mt.note(string(k), "batch set %q", trunc(v))
				}
			}
			if err := mt.db.Apply(b, mt.writeOpts()); err != nil {
				mt.fatalf("Apply: %v", err)
			}
			mt.m, mt.exp = pending, pendingExp
		case r < 640:
			counts[4]++
			mt.checkGet(mt.db.Get, mt.m, mt.key())
		case r < 650:
			counts[17]++
			mt.ingest()
		case r < 700:
			counts[5]++
			o := mt.randomIterOptions()
			it, err := mt.db.NewIter(o)
			if err != nil {
				mt.fatalf("NewIter: %v", err)
			}
			mi := mt.newModelIter(it, mt.m, o)
			for i := 0; i < 20; i++ {
				mt.iterStep(&mi)
			}
			if mt.rng.IntN(4) == 0 && len(mt.iters) < 4 {
				mt.iters = append(mt.iters, mi) // keep it open across writes
			} else {
				require.NoError(t, it.Close())
			}
		case r < 780:
			counts[6]++
			if len(mt.iters) == 0 {
				continue
			}
			i := mt.rng.IntN(len(mt.iters))
			for j := 0; j < 10; j++ {
				mt.iterStep(&mt.iters[i])
			}
			if mt.rng.IntN(3) == 0 {
				require.NoError(t, mt.iters[i].it.Close())
				mt.iters = slices.Delete(mt.iters, i, i+1)
			}
		case r < 800:
			counts[7]++
			if len(mt.snaps) < 4 {
				mt.snaps = append(mt.snaps, modelSnap{s: mt.db.NewSnapshot(), m: mt.m.clone(), exp: cloneExp(mt.exp)})
			}
		case r < 850:
			counts[8]++
			if len(mt.snaps) == 0 {
				continue
			}
			s := mt.snaps[mt.rng.IntN(len(mt.snaps))]
			// A snapshot's view loses what has expired since it was taken.
			sm := mt.visible(s.m, s.exp, mt.clockMs.Load())
			if mt.rng.IntN(2) == 0 {
				mt.checkGet(s.s.Get, sm, mt.key())
			} else {
				o := mt.randomIterOptions()
				it, err := s.s.NewIter(o)
				if err != nil {
					mt.fatalf("Snapshot.NewIter: %v", err)
				}
				mi := mt.newModelIter(it, sm, o)
				for i := 0; i < 20; i++ {
					mt.iterStep(&mi)
				}
				require.NoError(t, it.Close())
			}
		case r < 870:
			counts[9]++
			if len(mt.snaps) > 0 {
				i := mt.rng.IntN(len(mt.snaps))
				require.NoError(t, mt.snaps[i].s.Close())
				mt.snaps = slices.Delete(mt.snaps, i, i+1)
			}
		case r < 900:
			counts[10]++
			if err := mt.db.Flush(); err != nil {
				mt.fatalf("Flush: %v", err)
			}
		case r < 920:
			counts[11]++
			a, b := mt.randomBounds()
			if err := mt.db.Compact(a, b); err != nil {
				mt.fatalf("Compact(%q, %q): %v", a, b, err)
			}
		case r < 930:
			counts[12]++
			mt.reopen()
		case r < 935:
			counts[13]++
			mt.fullCheck()
		case r < 970:
			counts[14]++
			k, v := mt.key(), mt.value()
			ttl := time.Duration(1+mt.rng.IntN(4)) * time.Second
			if err := mt.db.SetWithTTL(k, v, ttl, mt.writeOpts()); err != nil {
				mt.fatalf("SetWithTTL: %v", err)
			}
			mt.m[string(k)] = string(v)
			mt.exp[string(k)] = expiry{at: mt.clockMs.Load() + ttl.Milliseconds()}
			mt.note(string(k), "setttl %q", trunc(v))
		case r < 995:
			counts[16]++
			k, op := mt.key(), mt.mergeOperand()
			if err := mt.db.Merge(k, op, mt.writeOpts()); err != nil {
				mt.fatalf("Merge: %v", err)
			}
			mt.applyMerge(mt.m, mt.exp, string(k), op)
		case r < 1000:
			counts[15]++
			// Time passes: iterators (a view at one moment) are closed
			// first; snapshots stay, and lose what expires.
			for _, mi := range mt.iters {
				require.NoError(t, mi.it.Close())
			}
			mt.iters = nil
			now := mt.clockMs.Add(int64(1+mt.rng.IntN(3)) * 1000)
			for k, e := range mt.exp {
				if e.at <= now {
					mt.expire(mt.m, k, e)
					delete(mt.exp, k)
				}
			}
		}
	}
	mt.fullCheck()
	if mt.db.shared != nil {
		// Everything that qualifies is shared before the last reopen,
		// so that the last database's reads find shared files whatever
		// the share loop had reached (TestModel checks that reads went to
		// the store).
		mt.db.waitSharedIdle()
	}
	mt.reopen()
	mt.fullCheck()
	t.Logf("seed %d: ops by kind %v, %d compactions, gc deleted %d value logs and moved %d values, %d entries expired\n%s",
		seed, counts[:18], mt.compactions, mt.gcDeleted, mt.gcMoved, mt.expired, strings.TrimSpace(mt.db.Metrics().String()))
	return mt
}

func TestModel(t *testing.T) {
	ops, seeds := 5000, 8
	switch {
	case soak:
		ops, seeds = 20000, 16
	case testing.Short():
		ops, seeds = 2000, 3
	case raceEnabled:
		// The race detector needs the concurrency, not every seed (half
		// of the root package's time under it went here): CI's run with
		// invariants, without the detector, takes all of them.
		seeds = 4
	}
	configs := map[string]Options{
		"small-memtable": {MemTableSize: 64 << 10, BlockSize: 512, TargetFileSize: 16 << 10, CacheSize: 256 << 10},
		// Tiny levels and files: hundreds of automatic compactions per seed,
		// running while snapshots and iterators are open.
		// Separation at 64 bytes: most values live in value logs.
		"leveled": {MemTableSize: 16 << 10, TargetFileSize: 4 << 10, LBaseMaxBytes: 16 << 10, LevelMultiplier: 3,
			L0CompactionThreshold: 2, BlockSize: 1024, MaxOpenFiles: 16, CacheSize: 128 << 10, ValueThreshold: 64,
			ValueLogReadAhead: 4 << 10},
		// Separation off: every value stays in the tree.
		"leveled-concurrent": {MemTableSize: 16 << 10, TargetFileSize: 4 << 10, LBaseMaxBytes: 16 << 10, LevelMultiplier: 4,
			L0CompactionThreshold: 2, MaxConcurrentCompactions: 3, DisableWAL: true, ValueThreshold: -1},
		"no-wal": {MemTableSize: 64 << 10, DisableWAL: true, Compression: "none", CacheSize: -1},
		// Garbage collection on, at thresholds that keep it busy: value logs
		// are deleted, recompacted and rewritten while snapshots and
		// iterators hold older states.
		"gc-reverse-lookup": {MemTableSize: 16 << 10, TargetFileSize: 4 << 10, LBaseMaxBytes: 16 << 10, LevelMultiplier: 3,
			L0CompactionThreshold: 2, ValueThreshold: 32, MaxOpenFiles: 16,
			GCPolicy: &gc.ReverseLookupPolicy{Ratio: 0.3, MaxSpaceAmp: 1.1, MaxInFlight: 8}},
		"gc-rewrite": {MemTableSize: 16 << 10, TargetFileSize: 4 << 10, LBaseMaxBytes: 16 << 10, LevelMultiplier: 3,
			L0CompactionThreshold: 2, ValueThreshold: 32, MaxConcurrentCompactions: 2,
			GCPolicy: &gc.RewritePolicy{Ratio: 0.2, MaxSpaceAmp: 1.1, MaxInFlight: 8}},
		"gc-cost-no-wal": {MemTableSize: 16 << 10, TargetFileSize: 4 << 10, LBaseMaxBytes: 16 << 10, LevelMultiplier: 3,
			L0CompactionThreshold: 2, ValueThreshold: 32, DisableWAL: true,
			GCPolicy: &gc.CostPolicy{Budget: 1.05, MaxInFlight: 8}},
		"zstd": {MemTableSize: 128 << 10, Compression: "zstd", BloomBitsPerKey: -1, BlockRestartInterval: 1},
		// Counters merged through flushes and tiny compactions, with values
		// written at commit.
		"counter": {MemTableSize: 16 << 10, TargetFileSize: 4 << 10, LBaseMaxBytes: 16 << 10, LevelMultiplier: 3,
			L0CompactionThreshold: 2, ValueThreshold: 4, Merger: Counter},
		// A learned index in every table, however small (point reads go
		// through the models), and none at all.
		"learned-every-table": {MemTableSize: 32 << 10, TargetFileSize: 8 << 10, LBaseMaxBytes: 32 << 10, LevelMultiplier: 3,
			L0CompactionThreshold: 2, BlockSize: 256, ValueThreshold: 64,
			LearnedIndex: &learned.Options{ErrorBound: 2, MinKeys: 1, MinKeysPerSegment: 1, MaxSpread: 1 << 20, MaxShare: 1e9}},
		"learned-off": {MemTableSize: 32 << 10, TargetFileSize: 8 << 10, LBaseMaxBytes: 32 << 10, LevelMultiplier: 3,
			L0CompactionThreshold: 2, BlockSize: 256, ValueThreshold: 64, DisableLearnedIndex: true},
		// Prefixes of 5 bytes ("key01") in the Bloom filters: prefix
		// iterators skip tables, range deletions of skipped tables apply.
		"prefix-filter": {MemTableSize: 16 << 10, TargetFileSize: 4 << 10, LBaseMaxBytes: 16 << 10, LevelMultiplier: 3,
			L0CompactionThreshold: 2, ValueThreshold: 64, PrefixExtractor: FixedPrefix(5)},
		// Shared files (tables of L1 and deeper, value logs) in a store:
		// with a cache smaller than a part, every read of a shared file
		// goes to the store; with a large one, local copies serve them.
		"shared-tiny-cache": {MemTableSize: 16 << 10, TargetFileSize: 4 << 10, LBaseMaxBytes: 16 << 10, LevelMultiplier: 3,
			L0CompactionThreshold: 2, ValueThreshold: 64, ValueLogFileSize: 64 << 10,
			SharedStore: modelSharedStore, SharedFromLevel: 1, SharedCacheSize: 1},
		"shared-large-cache": {MemTableSize: 16 << 10, TargetFileSize: 4 << 10, LBaseMaxBytes: 16 << 10, LevelMultiplier: 3,
			L0CompactionThreshold: 2, ValueThreshold: 64, ValueLogFileSize: 64 << 10,
			SharedStore: modelSharedStore, SharedFromLevel: 1, SharedCacheSize: -1,
			GCPolicy: &gc.ReverseLookupPolicy{Ratio: 0.3, MaxSpaceAmp: 1.1, MaxInFlight: 8}},
	}
	for name, opts := range configs {
		t.Run(name, func(t *testing.T) {
			for _, seed := range modelSeeds(t, seeds) {
				mt := runModel(t, seed, ops, &opts)
				if strings.HasPrefix(name, "leveled") && !testing.Short() && mt.compactions < 100 {
					t.Fatalf("seed %d ran only %d compactions", seed, mt.compactions)
				}
				// The GC configurations must collect for real: delete value
				// logs and move live values, while snapshots and iterators
				// hold older states.
				if strings.HasPrefix(name, "gc-") && (mt.gcDeleted < 10 || mt.gcMoved == 0) {
					t.Fatalf("seed %d: gc deleted only %d value logs and moved %d values", seed, mt.gcDeleted, mt.gcMoved)
				}
				if !testing.Short() && mt.expired == 0 {
					t.Fatalf("seed %d: no flush or compaction dropped an expired entry", seed)
				}
				if strings.HasPrefix(name, "shared-") {
					// The last DB of the run (closed) shared files, and
					// with the tiny cache read them from the store: it
					// opened on a version whose files were shared
					// (runModel waits for that).
					tables, vlogs := mt.db.vs.Current().NumShared()
					if tables+vlogs == 0 {
						t.Fatalf("seed %d: nothing shared", seed)
					}
					if name == "shared-tiny-cache" && mt.db.shared.files.Stats().Gets == 0 {
						t.Fatalf("seed %d: no read went to the store", seed)
					}
				}
				if name == "prefix-filter" && mt.prefixSkipped == 0 {
					t.Fatalf("seed %d: no prefix iterator skipped a table by its filter", seed)
				}
				switch li := mt.db.Metrics().LearnedIndex; {
				case name == "learned-every-table" && li.Hits == 0:
					t.Fatalf("seed %d: no point read went through a model: %s", seed, li)
				case name == "learned-off" && (li.Tables != 0 || li.Hits != 0):
					t.Fatalf("seed %d: models used though off: %s", seed, li)
				}
			}
		})
	}
}

// modelSharedStore in a configuration's Options asks runModel for a
// shared store of the model's own (see runModel).
var modelSharedStore checkpoint.Store = sentinelStore{}

type sentinelStore struct{ checkpoint.Store }
