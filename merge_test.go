package strata

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-db/strata/compaction"
	"github.com/strata-db/strata/gc"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

func listOf(t *testing.T, v []byte) []string {
	t.Helper()
	elems, err := DecodeList(v)
	require.NoError(t, err)
	out := make([]string, len(elems))
	for i, e := range elems {
		out[i] = string(e)
	}
	return out
}

// TestMergeListAppend appends to lists across flushes and compactions with
// a snapshot held: reads in every direction see the whole list, the
// snapshot its prefix, and a full compaction folds each list into one
// entry (values large enough to be separated by then).
func TestMergeListAppend(t *testing.T) {
	fs := vfs.NewMem()
	opts := &Options{FS: fs, Merger: ListAppend, MemTableSize: 64 << 10, ValueThreshold: 256}
	db, err := Open("db", opts)
	require.NoError(t, err)
	want := map[string][]string{}
	var snap *Snapshot
	var snapWant map[string][]string
	for i := 0; i < 3000; i++ {
		k := fmt.Sprintf("list%02d", i%40)
		e := fmt.Sprintf("e%d", i)
		require.NoError(t, db.Merge([]byte(k), ListElement(nil, []byte(e)), NoSync))
		want[k] = append(want[k], e)
		if i == 1500 {
			snap = db.NewSnapshot()
			snapWant = map[string][]string{}
			for k, v := range want {
				snapWant[k] = append([]string(nil), v...)
			}
		}
		if i%700 == 699 {
			require.NoError(t, db.Flush())
		}
	}
	check := func(when string) {
		for k, v := range want {
			got, err := db.Get([]byte(k))
			require.NoError(t, err, when)
			require.Equal(t, v, listOf(t, got), "%s: %s", when, k)
			got, err = snap.Get([]byte(k))
			require.NoError(t, err, when)
			require.Equal(t, snapWant[k], listOf(t, got), "%s: snapshot %s", when, k)
		}
		it, err := db.NewIter(nil)
		require.NoError(t, err)
		n := 0
		for ok := it.Last(); ok; ok = it.Prev() {
			require.Equal(t, want[string(it.Key())], listOf(t, it.Value()), "%s: reverse %s", when, it.Key())
			n++
		}
		require.NoError(t, it.Error())
		require.Equal(t, len(want), n)
		require.NoError(t, it.Close())
	}
	check("before compaction")
	require.NoError(t, db.Compact(nil, nil))
	check("after compaction with a snapshot")
	require.NoError(t, snap.Close())
	snap = db.NewSnapshot()
	snapWant = want
	require.NoError(t, db.Compact(nil, nil))
	check("after compaction")
	v := currentVersion(db)
	var entries uint64
	for _, f := range v.Levels[6] {
		h, err := db.tableCache.get(f)
		require.NoError(t, err)
		entries += h.reader.Properties().NumEntries
		db.tableCache.release(h)
	}
	require.Equal(t, uint64(len(want)), entries, "each list folded into one entry")
	require.NotEmpty(t, v.Vlogs, "the folded lists are large: separated")
	require.NoError(t, snap.Close())
	require.NoError(t, db.Close())
	db, err = Open("db", opts)
	require.NoError(t, err)
	for k, w := range want {
		got, err := db.Get([]byte(k))
		require.NoError(t, err)
		require.Equal(t, w, listOf(t, got))
	}
	require.NoError(t, db.Close())
}

// TestMergeCounter: counters over separated values, deletes and range
// deletes.
func TestMergeCounter(t *testing.T) {
	db, err := Open("db", &Options{FS: vfs.NewMem(), Merger: Counter, ValueThreshold: 4})
	require.NoError(t, err)
	require.NoError(t, db.Set([]byte("c"), CounterDelta(100), nil)) // separated
	require.NoError(t, db.Merge([]byte("c"), CounterDelta(5), nil))
	require.NoError(t, db.Merge([]byte("c"), CounterDelta(-2), nil))
	get := func() int64 {
		v, err := db.Get([]byte("c"))
		require.NoError(t, err)
		n, err := CounterValue(v)
		require.NoError(t, err)
		return n
	}
	require.Equal(t, int64(103), get())
	require.NoError(t, db.Flush())
	require.NoError(t, db.Compact(nil, nil))
	require.Equal(t, int64(103), get())
	require.NoError(t, db.Delete([]byte("c"), nil))
	require.NoError(t, db.Merge([]byte("c"), CounterDelta(7), nil))
	require.Equal(t, int64(7), get())
	require.NoError(t, db.DeleteRange([]byte("a"), []byte("z"), nil))
	require.NoError(t, db.Merge([]byte("c"), CounterDelta(1), nil))
	require.NoError(t, db.Compact(nil, nil))
	require.Equal(t, int64(1), get())
	require.NoError(t, db.Close())
}

// TestMergeWithoutMerger: merges are refused without a merger; a database
// holding operands reopened without one fails their reads clearly and
// keeps them through compaction, for a reopen with the merger.
func TestMergeWithoutMerger(t *testing.T) {
	fs := vfs.NewMem()
	db, err := Open("db", &Options{FS: fs})
	require.NoError(t, err)
	require.ErrorIs(t, db.Merge([]byte("k"), []byte("x"), nil), ErrNoMerger)
	require.NoError(t, db.Close())

	db, err = Open("db", &Options{FS: fs, Merger: ListAppend})
	require.NoError(t, err)
	require.NoError(t, db.Set([]byte("k"), ListElement(nil, []byte("a")), nil))
	require.NoError(t, db.Merge([]byte("k"), ListElement(nil, []byte("b")), nil))
	require.NoError(t, db.Merge([]byte("k"), ListElement(nil, []byte("c")), nil))
	require.NoError(t, db.Close())

	db, err = Open("db", &Options{FS: fs})
	require.NoError(t, err)
	_, err = db.Get([]byte("k"))
	require.ErrorIs(t, err, ErrNoMerger)
	// The error names the key, with the "strata:" prefix once, forward
	// and backward.
	const want = `strata: merge operand without Options.Merger: key "k"`
	require.EqualError(t, err, want)
	it, err := db.NewIter(nil)
	require.NoError(t, err)
	require.False(t, it.Last())
	require.EqualError(t, it.Error(), want)
	require.EqualError(t, it.Close(), want) // Close reports the iteration error
	require.NoError(t, db.Compact(nil, nil))
	require.NoError(t, db.Close())

	db, err = Open("db", &Options{FS: fs, Merger: ListAppend})
	require.NoError(t, err)
	v, err := db.Get([]byte("k"))
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b", "c"}, listOf(t, v))
	require.NoError(t, db.Close())
}

// TestMergeOntoExpiringValue: an operand merged onto a value with a TTL
// applies while the value lives; after it expires, reads see the operands
// merged onto nothing, whether or not a compaction ran in between.
func TestMergeOntoExpiringValue(t *testing.T) {
	for _, compact := range []bool{false, true} {
		t.Run(fmt.Sprintf("compact=%t", compact), func(t *testing.T) {
			clock := newTestClock(time.Unix(1_000_000, 0))
			db, err := Open("db", &Options{FS: vfs.NewMem(), Merger: ListAppend, Clock: clock.Now})
			require.NoError(t, err)
			require.NoError(t, db.SetWithTTL([]byte("k"), ListElement(nil, []byte("base")), time.Minute, nil))
			require.NoError(t, db.Merge([]byte("k"), ListElement(nil, []byte("x")), nil))
			v, err := db.Get([]byte("k"))
			require.NoError(t, err)
			require.Equal(t, []string{"base", "x"}, listOf(t, v))
			if compact {
				require.NoError(t, db.Compact(nil, nil))
			}
			clock.Advance(2 * time.Minute)
			v, err = db.Get([]byte("k"))
			require.NoError(t, err)
			require.Equal(t, []string{"x"}, listOf(t, v))
			require.NoError(t, db.Compact(nil, nil))
			v, err = db.Get([]byte("k"))
			require.NoError(t, err)
			require.Equal(t, []string{"x"}, listOf(t, v))
			require.NoError(t, db.Close())
		})
	}
}

// TestTTLExpiresWithoutValueLogReads: separated values written with a TTL
// expire at the right moment for Get, iterators and snapshots, and the
// compactions that drop them read no value log; their records become
// garbage that GC deletes.
func TestTTLExpiresWithoutValueLogReads(t *testing.T) {
	clock := newTestClock(time.Unix(1_000_000, 0))
	// Passive GC, as in TestCompactionFilter: no relocation reads.
	db, err := Open("db", &Options{FS: vfs.NewMem(), ValueThreshold: 64, Clock: clock.Now, GCPolicy: gc.Passive()})
	require.NoError(t, err)
	big := bytes.Repeat([]byte("v"), 500)
	for i := 0; i < 200; i++ {
		k := []byte(fmt.Sprintf("k%03d", i))
		if i%2 == 0 {
			require.NoError(t, db.SetWithTTL(k, big, time.Minute, nil))
		} else {
			require.NoError(t, db.Set(k, big, nil))
		}
	}
	require.NoError(t, db.Flush())
	snap := db.NewSnapshot()
	_, err = db.Get([]byte("k000"))
	require.NoError(t, err)
	clock.Advance(time.Minute) // expiry is inclusive
	_, err = db.Get([]byte("k000"))
	require.ErrorIs(t, err, ErrNotFound)
	_, err = snap.Get([]byte("k000"))
	require.ErrorIs(t, err, ErrNotFound, "a snapshot sees expiry too")
	got, err := readAll(t, db)
	require.NoError(t, err)
	require.Len(t, got, 100)
	require.NoError(t, snap.Close())
	require.NoError(t, db.Compact(nil, nil))
	m := db.Metrics()
	require.Equal(t, uint64(100), m.Compact.Expired)
	require.Zero(t, m.Compact.ValueLogReads, "expiry read a value log")
	waitGCIdle(t, db)
	require.Positive(t, db.Metrics().ValueLogs.Garbage+db.Metrics().GC.DeletedBytes)
	require.NoError(t, db.Close())
}

func TestSetWithTTLRejectsNonPositive(t *testing.T) {
	db, err := Open("db", &Options{FS: vfs.NewMem()})
	require.NoError(t, err)
	require.True(t, errors.Is(db.SetWithTTL([]byte("k"), []byte("v"), 0, nil), ErrInvalidTTL))
	require.NoError(t, db.Close())
}

// TestTTLClockBeforeEpoch: a write whose expiry would fall at or before
// 1970 (a clock left at time.Time{}, as a test's mock clock may be) fails
// alone with ErrInvalidTTL, by SetWithTTL or by DefaultTTL, under both
// separation times; the database goes on, and once the clock is sane
// again, writes with a TTL work and expire. Such an expiry used to be
// written (a negative one encodes as a huge number that no read could
// decode), which stopped the database at the write (separation at
// commit) or at every flush, also after a reopen; an expiry of exactly 0
// read as "never".
func TestTTLClockBeforeEpoch(t *testing.T) {
	for name, sep := range map[string]SeparationTime{"commit": SeparateAtCommit, "flush": SeparateAtFlush} {
		t.Run(name, func(t *testing.T) {
			var now atomic.Pointer[time.Time]
			set := func(at time.Time) { now.Store(&at) }
			set(time.Time{})
			fs := vfs.NewMem()
			opts := &Options{FS: fs, SeparationTime: sep, ValueThreshold: 16,
				Clock: func() time.Time { return *now.Load() }}
			db, err := Open("db", opts)
			require.NoError(t, err)
			big := bytes.Repeat([]byte("v"), 64) // separated
			for _, v := range [][]byte{[]byte("v"), big} {
				require.ErrorIs(t, db.SetWithTTL([]byte("k"), v, time.Hour, Sync), ErrInvalidTTL)
				b := db.NewBatch()
				require.ErrorIs(t, b.SetWithTTL([]byte("k"), v, time.Hour), ErrInvalidTTL)
				// An hour before the epoch with a TTL of an hour: exactly 0.
				set(time.UnixMilli(-3600_000))
				require.ErrorIs(t, db.SetWithTTL([]byte("k"), v, time.Hour, Sync), ErrInvalidTTL)
				set(time.Time{})
			}
			require.NoError(t, db.Set([]byte("other"), big, Sync), "the refused writes stopped the database")
			require.NoError(t, db.Flush())
			_, err = db.Get([]byte("k"))
			require.ErrorIs(t, err, ErrNotFound)

			// DefaultTTL under such a clock refuses plain sets, alone and
			// in batches.
			require.NoError(t, db.Close())
			opts.DefaultTTL = time.Hour
			db, err = Open("db", opts)
			require.NoError(t, err)
			require.ErrorIs(t, db.Set([]byte("d"), big, Sync), ErrInvalidTTL)
			b := db.NewBatch()
			require.NoError(t, b.Set([]byte("d"), big))
			require.ErrorIs(t, db.Apply(b, Sync), ErrInvalidTTL)

			// A sane clock again: TTLs work and expire.
			set(time.UnixMilli(1_700_000_000_000))
			require.NoError(t, db.Set([]byte("d"), big, Sync))
			require.NoError(t, db.SetWithTTL([]byte("k"), big, time.Minute, Sync))
			require.NoError(t, db.Flush())
			got, err := db.Get([]byte("k"))
			require.NoError(t, err)
			require.Equal(t, big, got)
			set(time.UnixMilli(1_700_000_000_000 + 2*3600_000))
			for _, k := range []string{"k", "d"} {
				_, err = db.Get([]byte(k))
				require.ErrorIs(t, err, ErrNotFound, "%s expired", k)
			}
			v, err := db.Get([]byte("other"))
			require.NoError(t, err)
			require.Equal(t, big, v)
			require.NoError(t, db.Close())
		})
	}
}

// TestCompactionFilter: a user's filter removes keys during compaction,
// deciding separated ones without a value-log read, and never changes what
// an open snapshot sees.
func TestCompactionFilter(t *testing.T) {
	var sawSeparated atomic.Int32
	filter := func(key, value []byte, separated bool) bool {
		if separated {
			sawSeparated.Add(1)
			if value != nil {
				t.Errorf("a separated value was read for the filter")
			}
		}
		return bytes.HasPrefix(key, []byte("tmp:"))
	}
	// Passive GC: nothing is relocated, so the value-log reads checked at
	// the end count the filter's alone (relocation reads count there too).
	db, err := Open("db", &Options{FS: vfs.NewMem(), ValueThreshold: 64, CompactionFilter: filter,
		GCPolicy: gc.Passive()})
	require.NoError(t, err)
	for i := 0; i < 50; i++ {
		v := bytes.Repeat([]byte("x"), 10+i*5)
		require.NoError(t, db.Set([]byte(fmt.Sprintf("tmp:%02d", i)), v, nil))
		require.NoError(t, db.Set([]byte(fmt.Sprintf("keep:%02d", i)), v, nil))
	}
	snap := db.NewSnapshot()
	require.NoError(t, db.Compact(nil, nil))
	got, err := readAll(t, db)
	require.NoError(t, err)
	require.Len(t, got, 100, "the filter ran under an open snapshot")
	require.NoError(t, snap.Close())
	require.NoError(t, db.Compact(nil, nil))
	got, err = readAll(t, db)
	require.NoError(t, err)
	require.Len(t, got, 50)
	for k := range got {
		require.True(t, bytes.HasPrefix([]byte(k), []byte("keep:")))
	}
	require.Positive(t, sawSeparated.Load())
	require.Zero(t, db.Metrics().Compact.ValueLogReads)
	require.NoError(t, db.Close())
}

// TestTTLSpaceSettles writes four times its live data with a TTL, the
// first three quarters expiring: once the background work has settled
// (by itself: expired tables are found and rewritten, their value logs
// collected), disk space is at most 1.5x the bytes still live, and no
// compaction read a value log to find what expired.
func TestTTLSpaceSettles(t *testing.T) {
	var nowMs atomic.Int64
	nowMs.Store(1_000_000_000_000)
	dir := t.TempDir()
	// Passive GC: value logs are only deleted, never relocated from, so the
	// compactions' value-log reads below count what expiry read, and
	// nothing else (relocation reads are counted there too).
	opts := &Options{MemTableSize: 256 << 10, ValueThreshold: 256, ValueLogFileSize: 256 << 10,
		TargetFileSize: 64 << 10, GCPolicy: gc.Passive(),
		Clock: func() time.Time { return time.UnixMilli(nowMs.Load()) }}
	db, err := Open(dir, opts)
	require.NoError(t, err)
	const perRound, size = 1500, 1024
	val := bytes.Repeat([]byte("t"), size)
	for r := 0; r < 4; r++ {
		for i := 0; i < perRound; i++ {
			k := []byte(fmt.Sprintf("r%d-%05d", r, i))
			require.NoError(t, db.SetWithTTL(k, val, 90*time.Minute, NoSync))
		}
		nowMs.Add(time.Hour.Milliseconds()) // rounds 0-2 expire by the end
	}
	require.NoError(t, db.Flush())
	live := int64(perRound * (size + 8))
	// Settle: passes run by themselves (a ticker); wait for them on the
	// DB's condition until nothing expired is left to compact and GC is
	// idle.
	db.mu.Lock()
	for wakeups := 0; ; wakeups++ {
		expired := compaction.ExpiredTables(db.vs.Current(), db.nowMillis())
		if len(expired) == 0 && db.gcIdleLocked() && db.bgErr == nil {
			break
		}
		require.NoError(t, db.bgErr)
		// Every pass (at least one a second) wakes this up: far more than
		// enough of them without progress means nothing collects.
		require.Less(t, wakeups, 2000, "%d expired tables are never compacted", len(expired))
		db.cond.Wait()
	}
	db.mu.Unlock()
	got, err := readAll(t, db)
	require.NoError(t, err)
	require.Len(t, got, perRound)
	m := db.Metrics()
	require.Zero(t, m.Compact.ValueLogReads)
	require.Positive(t, m.Compact.Expired)
	require.NoError(t, db.Close())
	disk := dirSize(t, dir)
	t.Logf("disk %d bytes for %d live: %.2fx; %d entries expired", disk, live, float64(disk)/float64(live), m.Compact.Expired)
	require.LessOrEqual(t, float64(disk), 1.5*float64(live))
}

func dirSize(t *testing.T, dir string) int64 {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var n int64
	for _, e := range entries {
		info, err := e.Info()
		require.NoError(t, err)
		n += info.Size()
	}
	return n
}

// testClock is a clock for Options.Clock that tests move by hand; the
// engine reads it from background goroutines too, so it is atomic.
type testClock struct{ nanos atomic.Int64 }

func newTestClock(start time.Time) *testClock {
	c := &testClock{}
	c.nanos.Store(start.UnixNano())
	return c
}

func (c *testClock) Now() time.Time { return time.Unix(0, c.nanos.Load()) }

func (c *testClock) Advance(d time.Duration) { c.nanos.Add(int64(d)) }

// TestIteratorLayers: layers describes each key as exportRange must write
// it, forward and backward, with the entries in the memtable and in
// tables: a value's expiry, and a merged value's operands only where the
// value below them expires.
func TestIteratorLayers(t *testing.T) {
	clock := newTestClock(time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC))
	db, err := Open("db", &Options{FS: vfs.NewMem(), Clock: clock.Now, Merger: ListAppend, ValueThreshold: 32})
	require.NoError(t, err)
	defer db.Close()
	large := string(bytes.Repeat([]byte("L"), 40))
	op1, op2 := string(ListElement(nil, []byte("1"))), string(ListElement(nil, []byte("2")))
	require.NoError(t, db.SetWithTTL([]byte("f"), []byte("gone"), time.Minute, NoSync))
	clock.Advance(2 * time.Minute)
	expiry, err := expiryFrom(clock.Now(), time.Hour)
	require.NoError(t, err)
	require.NoError(t, db.Set([]byte("a"), []byte("va"), NoSync))
	require.NoError(t, db.SetWithTTL([]byte("b"), []byte(large), time.Hour, NoSync))
	require.NoError(t, db.Set([]byte("d"), []byte("vd"), NoSync))
	require.NoError(t, db.SetWithTTL([]byte("e"), []byte(large), time.Hour, NoSync))
	for _, k := range []string{"c", "d", "e", "f"} {
		require.NoError(t, db.Merge([]byte(k), []byte(op1), NoSync))
		require.NoError(t, db.Merge([]byte(k), []byte(op2), NoSync))
	}
	type layer struct {
		value     string
		expiresAt int64
		below     string
		operands  string // joined: a flush may combine them (PartialMerge)
	}
	want := map[string]layer{
		"a": {value: "va"},
		"b": {value: large, expiresAt: expiry},
		"c": {value: op1 + op2},
		"d": {value: "vd" + op1 + op2},
		"e": {value: large + op1 + op2, expiresAt: expiry, below: large, operands: op1 + op2},
		"f": {value: op1 + op2},
	}
	check := func(where string) {
		it, err := db.NewIter(nil)
		require.NoError(t, err)
		defer it.Close()
		got := func() layer {
			e, below, ops := it.layers()
			l := layer{value: string(it.Value()), expiresAt: e, below: string(below)}
			l.operands = string(bytes.Join(ops, nil))
			return l
		}
		fwd, bwd := map[string]layer{}, map[string]layer{}
		for ok := it.First(); ok; ok = it.Next() {
			fwd[string(it.Key())] = got()
		}
		for ok := it.Last(); ok; ok = it.Prev() {
			bwd[string(it.Key())] = got()
		}
		require.NoError(t, it.Error())
		require.Equal(t, want, fwd, "%s, forward", where)
		require.Equal(t, want, bwd, "%s, backward", where)
	}
	check("memtable")
	require.NoError(t, db.Flush())
	check("tables")
}

// presenceMerger's merge tells whether the key had a value: "some:" or
// "none:", then the operands.
type presenceMerger struct{}

func (presenceMerger) Name() string { return "test.presence" }

func (presenceMerger) Merge(_, existing []byte, ops [][]byte) ([]byte, error) {
	out := []byte("none:")
	if existing != nil {
		out = append([]byte("some:"), existing...)
	}
	for _, op := range ops {
		out = append(out, op...)
	}
	return out, nil
}

func (presenceMerger) PartialMerge([]byte, [][]byte) ([]byte, bool) { return nil, false }

// TestMergeOntoEmptyValue: an operand on an empty value merges onto a
// value (a non-nil empty existing), not onto none, whichever path folds
// it: Get, forward and backward iteration, a flush, a compaction.
// Compaction and the backward iterator passed nil, so a flush changed
// what Get returned, and the two directions disagreed.
func TestMergeOntoEmptyValue(t *testing.T) {
	db, err := Open("db", &Options{FS: vfs.NewMem(), Merger: presenceMerger{}})
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.Set([]byte("e"), []byte{}, NoSync))
	require.NoError(t, db.Merge([]byte("e"), []byte("x"), NoSync))
	require.NoError(t, db.Merge([]byte("n"), []byte("y"), NoSync))
	want := model{"e": "some:x", "n": "none:y"}
	check := func(when string) {
		t.Helper()
		for k, v := range want {
			got, err := db.Get([]byte(k))
			require.NoError(t, err, "%s: Get %s", when, k)
			require.Equal(t, v, string(got), "%s: Get %s", when, k)
		}
		got, err := readAll(t, db)
		require.NoError(t, err)
		require.Equal(t, want, got, "%s: forward", when)
		it, err := db.NewIter(nil)
		require.NoError(t, err)
		back := model{}
		for ok := it.Last(); ok; ok = it.Prev() {
			back[string(it.Key())] = string(it.Value())
		}
		require.NoError(t, it.Close())
		require.Equal(t, want, back, "%s: backward", when)
	}
	check("in the memtable")
	require.NoError(t, db.Flush())
	check("flushed")
	require.NoError(t, db.Compact(nil, nil))
	check("compacted")
}

// panickyMerger appends operands, and panics, as a buggy decoder would,
// on an operand "boom" (Merge, PartialMerge and ValidateOperand alike,
// the last only when validates is set).
type panickyMerger struct{ validates bool }

func (panickyMerger) Name() string { return "test.panicky" }

func (panickyMerger) Merge(_, existing []byte, ops [][]byte) ([]byte, error) {
	out := slices.Clone(existing)
	for _, op := range ops {
		if string(op) == "boom" {
			panic("index out of range")
		}
		out = append(out, op...)
	}
	return out, nil
}

func (m panickyMerger) PartialMerge(_ []byte, ops [][]byte) ([]byte, bool) {
	out, _ := m.Merge(nil, nil, ops)
	return out, true
}

type validatingPanickyMerger struct{ panickyMerger }

func (validatingPanickyMerger) ValidateOperand(_, op []byte) error {
	if string(op) == "boom" {
		panic("index out of range")
	}
	return nil
}

// TestUserCallbackPanics: a Merger or CompactionFilter that panics on
// some key or operand fails that key's reads (or keeps the key), never
// the process nor the database: a panic in a flush or compaction used to
// kill the process from the background goroutine, and every reopen
// replayed the operand from the WAL into the same panic.
func TestUserCallbackPanics(t *testing.T) {
	t.Run("merger", func(t *testing.T) {
		fs := vfs.NewMem()
		opts := &Options{FS: fs, Merger: panickyMerger{}}
		db, err := Open("db", opts)
		require.NoError(t, err)
		require.NoError(t, db.Set([]byte("k"), []byte("a"), NoSync))
		require.NoError(t, db.Merge([]byte("k"), []byte("boom"), Sync))
		require.NoError(t, db.Merge([]byte("ok"), []byte("x"), NoSync))
		require.NoError(t, db.Merge([]byte("ok"), []byte("y"), Sync))
		_, err = db.Get([]byte("k"))
		require.ErrorContains(t, err, "panicked")
		require.NoError(t, db.Flush(), "a flush folding the operand")
		require.NoError(t, db.Compact(nil, nil))
		_, err = db.Get([]byte("k"))
		require.ErrorContains(t, err, "panicked")
		require.NoError(t, db.Close())
		db, err = Open("db", opts)
		require.NoError(t, err, "reopen")
		defer db.Close()
		v, err := db.Get([]byte("ok"))
		require.NoError(t, err)
		require.Equal(t, "xy", string(v))
		// A Set shadows the operand: the key reads again.
		require.NoError(t, db.Set([]byte("k"), []byte("b"), NoSync))
		require.NoError(t, db.Compact(nil, nil))
		v, err = db.Get([]byte("k"))
		require.NoError(t, err)
		require.Equal(t, "b", string(v))
		require.NoError(t, db.Set([]byte("z"), []byte("z"), Sync), "writes go on")
	})
	t.Run("validator", func(t *testing.T) {
		db, err := Open("db", &Options{FS: vfs.NewMem(), Merger: validatingPanickyMerger{}})
		require.NoError(t, err)
		defer db.Close()
		require.ErrorIs(t, db.Merge([]byte("k"), []byte("boom"), Sync), ErrInvalidOperand)
		require.NoError(t, db.Merge([]byte("k"), []byte("fine"), Sync))
	})
	t.Run("filter", func(t *testing.T) {
		db, err := Open("db", &Options{FS: vfs.NewMem(), CompactionFilter: func(key, _ []byte, _ bool) bool {
			if string(key) == "bad" {
				panic("user filter bug")
			}
			return string(key) == "drop"
		}})
		require.NoError(t, err)
		defer db.Close()
		for _, k := range []string{"bad", "drop", "keep"} {
			require.NoError(t, db.Set([]byte(k), []byte("v"), NoSync))
		}
		require.NoError(t, db.Flush())
		require.NoError(t, db.Compact(nil, nil))
		got, err := readAll(t, db)
		require.NoError(t, err)
		require.Equal(t, model{"bad": "v", "keep": "v"}, got, "the panicking filter keeps its key")
	})
}
