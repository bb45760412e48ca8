package memtable

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/strata-db/strata/internal/base"
	"github.com/stretchr/testify/require"
)

// TestRandomizedModel applies random inserts (many versions of few user
// keys, every point kind, some exact duplicates) and after each batch
// compares Get at random snapshots and random iterator walks with a sorted
// slice.
func TestRandomizedModel(t *testing.T) {
	r := testRand(t)
	rounds := 40
	if testing.Short() {
		rounds = 10
	}
	for round := 0; round < rounds; round++ {
		m := New(1 << 20)
		var md model
		var pool [][]byte
		newKey := randomUserKey
		if round%2 == 1 {
			newKey = randomIntKey
		}
		for i := 0; i < 1+r.IntN(60); i++ {
			pool = append(pool, newKey(r))
		}
		if round%4 >= 2 {
			// Links tuned to the range of some of the keys: the others
			// fall outside it.
			lo, hi := KeyPrefix(pool[r.IntN(len(pool))]), KeyPrefix(pool[r.IntN(len(pool))])
			m.TuneLinks(min(lo, hi), max(lo, hi))
		}
		usedSeqs := map[base.SeqNum]bool{}
		steps := 200 + r.IntN(1500)
		for step := 0; step < steps; step++ {
			var k base.InternalKey
			if len(md.entries) > 0 && r.IntN(20) == 0 {
				// An exact duplicate must be refused without changes.
				k = md.entries[r.IntN(len(md.entries))].key
			} else {
				seq := base.SeqNum(1 + r.IntN(1<<20))
				for usedSeqs[seq] {
					seq = base.SeqNum(1 + r.IntN(1<<20))
				}
				usedSeqs[seq] = true
				k = base.MakeInternalKey(pool[r.IntN(len(pool))], seq, pointKinds[r.IntN(len(pointKinds))])
			}
			v := make([]byte, r.IntN(20))
			for i := range v {
				v[i] = byte(r.Uint32())
			}
			sizeBefore, lenBefore := m.Size(), m.Len()
			err := m.Add(k, v)
			if md.add(k, v) {
				if err != nil {
					t.Fatalf("round %d step %d: Add(%s): %v", round, step, k, err)
				}
			} else {
				if !errors.Is(err, errDuplicate) {
					t.Fatalf("round %d step %d: duplicate Add(%s) returned %v", round, step, k, err)
				}
				if m.Size() != sizeBefore || m.Len() != lenBefore {
					t.Fatalf("duplicate Add changed the table: size %d->%d len %d->%d",
						sizeBefore, m.Size(), lenBefore, m.Len())
				}
			}
			if m.Len() != len(md.entries) {
				t.Fatalf("Len %d, model %d", m.Len(), len(md.entries))
			}
			if step%50 == 0 {
				checkAgainstModel(t, r, m, &md, pool)
			}
		}
		checkInvariants(t, &m.points)
		checkAgainstModel(t, r, m, &md, pool)
		checkFullScans(t, m, &md)
	}
}

func checkAgainstModel(t *testing.T, r *rand.Rand, m *MemTable, md *model, pool [][]byte) {
	t.Helper()
	randomKey := func() []byte {
		if r.IntN(4) == 0 {
			return randomUserKey(r)
		}
		return pool[r.IntN(len(pool))]
	}
	for i := 0; i < 50; i++ {
		key := randomKey()
		var snap base.SeqNum
		switch r.IntN(10) {
		case 0:
			snap = base.SeqNumMax
		case 1:
			snap = math.MaxUint64
		case 2:
			snap = 0
		default:
			snap = base.SeqNum(r.IntN(1<<20 + 2))
		}
		want, wantOK := md.get(key, snap)
		v, kind, seq, ok := m.Get(key, snap)
		if ok != wantOK {
			t.Fatalf("Get(%q, %d): found %v, model %v", key, snap, ok, wantOK)
		}
		if ok && (kind != want.key.Kind() || seq != want.key.SeqNum() || !bytes.Equal(v, want.value)) {
			t.Fatalf("Get(%q, %d) = %s/%d %q, model %s", key, snap, kind, seq, v, fmtEntry(want.key, want.value))
		}
	}

	// A random walk mixing seeks, Next and Prev. pos is the model position:
	// -1 before the first entry, len after the last.
	it := m.NewIter()
	defer it.Close()
	n := len(md.entries)
	pos := -1
	for i := 0; i < 200; i++ {
		var valid bool
		switch op := r.IntN(8); op {
		case 0:
			key := randomKey()
			valid, pos = it.SeekGE(key), md.seekGE(key)
		case 1:
			key := randomKey()
			valid, pos = it.SeekLT(key), md.seekGE(key)-1
		case 2:
			valid, pos = it.First(), 0
		case 3:
			valid, pos = it.Last(), n-1
		case 4, 5:
			if pos < n {
				pos++
			}
			valid = it.Next()
		case 6, 7:
			if pos >= n {
				pos = n - 1
			} else if pos >= 0 {
				pos--
			}
			valid = it.Prev()
		}
		if pos >= n {
			pos = n
		}
		wantValid := pos >= 0 && pos < n
		if valid != wantValid || it.Valid() != wantValid {
			t.Fatalf("walk step %d: valid %v/%v, model position %d of %d", i, valid, it.Valid(), pos, n)
		}
		if !wantValid {
			if it.Key().UserKey != nil || it.Value() != nil {
				t.Fatalf("invalid iterator returned a key or value")
			}
			continue
		}
		e := md.entries[pos]
		if base.InternalCompare(it.Key(), e.key) != 0 || !bytes.Equal(it.Value(), e.value) {
			t.Fatalf("walk step %d: at %s, model %s", i, fmtEntry(it.Key(), it.Value()), fmtEntry(e.key, e.value))
		}
	}
	if it.Error() != nil {
		t.Fatal(it.Error())
	}
}

func checkFullScans(t *testing.T, m *MemTable, md *model) {
	t.Helper()
	it := m.NewIter()
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		e := md.entries[i]
		if base.InternalCompare(it.Key(), e.key) != 0 || !bytes.Equal(it.Value(), e.value) {
			t.Fatalf("forward %d: %s, model %s", i, fmtEntry(it.Key(), it.Value()), fmtEntry(e.key, e.value))
		}
		i++
	}
	if i != len(md.entries) {
		t.Fatalf("forward scan saw %d entries, model %d", i, len(md.entries))
	}
	i = len(md.entries) - 1
	for ok := it.Last(); ok; ok = it.Prev() {
		e := md.entries[i]
		if base.InternalCompare(it.Key(), e.key) != 0 || !bytes.Equal(it.Value(), e.value) {
			t.Fatalf("backward %d: %s, model %s", i, fmtEntry(it.Key(), it.Value()), fmtEntry(e.key, e.value))
		}
		i--
	}
	if i != -1 {
		t.Fatalf("backward scan stopped at model index %d", i)
	}
	// Off the start, Next comes back to the first entry; off the end, Prev
	// comes back to the last.
	if len(md.entries) > 0 {
		if !it.Next() || base.InternalCompare(it.Key(), md.entries[0].key) != 0 {
			t.Fatalf("Next after running off the start is not the first entry")
		}
		it.Last()
		if it.Next() || it.Next() {
			t.Fatalf("Next past the end is valid")
		}
		if !it.Prev() || base.InternalCompare(it.Key(), md.entries[len(md.entries)-1].key) != 0 {
			t.Fatalf("Prev after running off the end is not the last entry")
		}
	}
}

// TestArenaFull fills small memtables until Add fails and checks that the
// failed Add changed nothing, that EntrySize bounds every Add, and that the
// contents still match the model.
func TestArenaFull(t *testing.T) {
	r := testRand(t)
	for round := 0; round < 20; round++ {
		m := New(2048 + r.IntN(16<<10))
		var md model
		seq := base.SeqNum(0)
		fulls := 0
		for fulls < 20 {
			seq++
			k := base.MakeInternalKey(randomUserKey(r), seq, pointKinds[r.IntN(len(pointKinds))])
			v := make([]byte, r.IntN(300))
			if r.IntN(10) == 0 {
				k.Trailer = base.MakeTrailer(seq, base.KindRangeDelete)
			}
			size, avail, n, rd := m.Size(), m.Available(), m.Len(), m.HasRangeDels()
			if size+avail != m.Capacity() {
				t.Fatalf("Size %d + Available %d != Capacity %d", size, avail, m.Capacity())
			}
			fits := avail >= EntrySize(len(k.UserKey), len(v))
			err := m.Add(k, v)
			if errors.Is(err, ErrArenaFull) {
				if fits {
					t.Fatalf("Add of %d+%d bytes failed with %d available, EntrySize %d",
						len(k.UserKey), len(v), avail, EntrySize(len(k.UserKey), len(v)))
				}
				if m.Size() != size || m.Available() != avail || m.Len() != n || m.HasRangeDels() != rd {
					t.Fatalf("failed Add changed the table")
				}
				fulls++
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			if grew := m.Size() - size; grew > EntrySize(len(k.UserKey), len(v)) || grew <= 0 {
				t.Fatalf("Add used %d bytes, EntrySize says at most %d", grew, EntrySize(len(k.UserKey), len(v)))
			}
			if k.Kind() != base.KindRangeDelete {
				md.add(k, v)
			}
		}
		checkInvariants(t, &m.points)
		checkInvariants(t, &m.rangeDels)
		checkFullScans(t, m, &md)
	}
}

// TestRangeTombstones checks ordering (start asc, seq desc), the snapshot
// filter, and that range deletions stay out of the point entries.
func TestRangeTombstones(t *testing.T) {
	r := testRand(t)
	m := New(1 << 20)
	if !m.Empty() || m.HasRangeDels() || m.RangeTombstones(base.SeqNumMax) != nil {
		t.Fatal("new memtable is not empty")
	}
	var want []base.RangeTombstone
	for seq := base.SeqNum(1); seq <= 500; seq++ {
		start, end := randomUserKey(r), randomUserKey(r)
		if bytes.Compare(start, end) > 0 {
			start, end = end, start
		}
		if err := m.Add(base.MakeInternalKey(start, seq, base.KindRangeDelete), end); err != nil {
			t.Fatal(err)
		}
		want = append(want, base.RangeTombstone{Start: start, End: end, Seq: seq})
		if seq%3 == 0 {
			if err := m.Add(base.MakeInternalKey(start, seq+1000, base.KindSet), []byte("v")); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A range deletion with the same start and seq as a point entry is a
	// different internal key; an exact duplicate is refused.
	if err := m.Add(base.MakeInternalKey(want[0].Start, want[0].Seq, base.KindRangeDelete), nil); !errors.Is(err, errDuplicate) {
		t.Fatalf("duplicate range deletion: %v", err)
	}
	slices.SortFunc(want, func(a, b base.RangeTombstone) int {
		if c := bytes.Compare(a.Start, b.Start); c != 0 {
			return c
		}
		return compareInts(uint64(b.Seq), uint64(a.Seq))
	})
	if m.Len() != 166 || !m.HasRangeDels() || m.Empty() {
		t.Fatalf("Len %d HasRangeDels %v Empty %v", m.Len(), m.HasRangeDels(), m.Empty())
	}
	for _, snap := range []base.SeqNum{0, 1, 2, 77, 250, 499, 500, 501, base.SeqNumMax, math.MaxUint64} {
		var exp []base.RangeTombstone
		for _, rt := range want {
			if rt.Seq <= snap {
				exp = append(exp, rt)
			}
		}
		got := m.RangeTombstones(snap)
		if !slices.EqualFunc(got, exp, func(a, b base.RangeTombstone) bool {
			return bytes.Equal(a.Start, b.Start) && bytes.Equal(a.End, b.End) && a.Seq == b.Seq
		}) {
			t.Fatalf("snap %d: got %d tombstones, want %d\ngot  %v\nwant %v", snap, len(got), len(exp), got, exp)
		}
	}
	it := m.NewIter()
	for ok := it.First(); ok; ok = it.Next() {
		if it.Key().Kind() != base.KindSet {
			t.Fatalf("point iterator returned %s", it.Key())
		}
	}
	checkInvariants(t, &m.rangeDels)
}

func TestEmptyAndOnlyRangeDels(t *testing.T) {
	m := New(4096)
	it := m.NewIter()
	if it.First() || it.Last() || it.SeekGE(nil) || it.SeekLT([]byte("z")) || it.Next() || it.Prev() {
		t.Fatal("iterator over an empty memtable is valid")
	}
	if _, _, _, ok := m.Get(nil, base.SeqNumMax); ok {
		t.Fatal("Get on an empty memtable found something")
	}
	if err := m.Add(base.MakeInternalKey([]byte("a"), 1, base.KindRangeDelete), []byte("b")); err != nil {
		t.Fatal(err)
	}
	if m.Empty() || m.Len() != 0 || !m.HasRangeDels() || it.First() {
		t.Fatal("range deletion counted as a point entry")
	}
}

func TestInvalidKind(t *testing.T) {
	m := New(4096)
	for _, kind := range []base.Kind{base.KindMax, base.KindInvalid, base.KindValuePointerMeta + 1} {
		size := m.Size()
		if err := m.Add(base.MakeInternalKey([]byte("k"), 1, kind), nil); err == nil || errors.Is(err, ErrArenaFull) {
			t.Fatalf("kind %s: err %v", kind, err)
		}
		if m.Size() != size || !m.Empty() {
			t.Fatalf("kind %s: refused Add changed the table", kind)
		}
	}
}

func TestSizes(t *testing.T) {
	if strconv.IntSize == 64 {
		for _, size := range []uint64{1 << 40, math.MaxUint32 + 1, math.MaxUint32} {
			if got := clampArenaSize(int(size), fixedOverhead); got != math.MaxUint32 {
				t.Fatalf("clamp %d: %d", size, got)
			}
		}
		below := uint64(math.MaxUint32 - 1)
		if got := clampArenaSize(int(below), fixedOverhead); got != below {
			t.Fatalf("clamp 4 GiB-2: %d", got)
		}
	}
	if fixedOverhead != 392 {
		t.Fatalf("fixedOverhead is %d; update the New doc comment", fixedOverhead)
	}
	for _, size := range []int{-5, 0, 1, int(fixedOverhead) - 1} {
		m := New(size)
		if m.Capacity() != int(fixedOverhead) || m.Size() != int(fixedOverhead) || m.Available() != 0 {
			t.Fatalf("New(%d): capacity %d size %d available %d", size, m.Capacity(), m.Size(), m.Available())
		}
		if err := m.Add(base.MakeInternalKey(nil, 1, base.KindSet), nil); !errors.Is(err, ErrArenaFull) {
			t.Fatalf("New(%d): Add: %v", size, err)
		}
	}
	m := New(1 << 16)
	if m.Capacity() != 1<<16 || m.Size() != int(fixedOverhead) || !m.Empty() {
		t.Fatalf("capacity %d size %d", m.Capacity(), m.Size())
	}
	if EntrySize(-1, -1) != EntrySize(0, 0) || EntrySize(16, 100) < 16+100+8+nodeHeaderSize {
		t.Fatalf("EntrySize: %d %d", EntrySize(-1, -1), EntrySize(16, 100))
	}
	// A value larger than the arena is refused, not a panic.
	if err := m.Add(base.MakeInternalKey([]byte("k"), 1, base.KindSet), make([]byte, 1<<17)); !errors.Is(err, ErrArenaFull) {
		t.Fatalf("oversized value: %v", err)
	}
}

// TestAliasing checks that keys and values returned by Get and the
// iterator have no spare capacity, so appends cannot overwrite the arena.
func TestAliasing(t *testing.T) {
	m := New(4096)
	for i, k := range []string{"a", "b"} {
		if err := m.Add(base.MakeInternalKey([]byte(k), base.SeqNum(i+1), base.KindSet), []byte("val-"+k)); err != nil {
			t.Fatal(err)
		}
	}
	v, _, _, _ := m.Get([]byte("a"), base.SeqNumMax)
	_ = append(v, 'X')
	it := m.NewIter()
	it.First()
	_ = append(it.Key().UserKey, 'Y')
	_ = append(it.Value(), 'Z')
	it.Next()
	if string(it.Key().UserKey) != "b" || string(it.Value()) != "val-b" {
		t.Fatalf("arena overwritten: %s=%q", it.Key(), it.Value())
	}
}

// TestHeightDistribution checks that tower heights follow p = 2^-heightShift.
func TestHeightDistribution(t *testing.T) {
	r := rng{state: 12345}
	var counts [maxHeight + 1]int
	const n = 1 << 20
	for i := 0; i < n; i++ {
		counts[r.randomHeight()]++
	}
	atLeast := n
	for h := 1; h <= 4; h++ {
		want := float64(n) / float64(uint64(1)<<(heightShift*(h-1)))
		if got := float64(atLeast); got < 0.95*want || got > 1.05*want {
			t.Fatalf("height >= %d: %v, want about %v", h, got, want)
		}
		atLeast -= counts[h]
	}
}

func TestZeroAllocs(t *testing.T) {
	const n = 1000
	keys := make([][]byte, n)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range keys {
		keys[i] = make([]byte, 16)
		for j := range keys[i] {
			keys[i][j] = byte(r.Uint32())
		}
	}
	m := New(1 << 20)
	val := make([]byte, 100)
	i := 0
	if a := testing.AllocsPerRun(n-1, func() {
		if err := m.Add(base.MakeInternalKey(keys[i], base.SeqNum(i+1), base.KindSet), val); err != nil {
			t.Fatal(err)
		}
		i++
	}); a != 0 {
		t.Fatalf("Add: %v allocs", a)
	}
	if a := testing.AllocsPerRun(100, func() {
		m.Get(keys[r.IntN(i)], base.SeqNumMax)
	}); a != 0 {
		t.Fatalf("Get: %v allocs", a)
	}
	it := m.NewIter()
	it.First()
	if a := testing.AllocsPerRun(100, func() {
		if !it.Next() {
			it.First()
		}
		_ = it.Key()
		_ = it.Value()
	}); a != 0 {
		t.Fatalf("Next: %v allocs", a)
	}
}

var largeFlag = flag.Bool("memtable.large", false, "run TestLargestArena (allocates a 4 GiB arena)")

// TestLargestArena allocates a 4 GiB - 1 arena and fills its last bytes, so
// offsets near 2^32 are exercised. Off by default: when the Go heap cannot
// hand out fresh pages it zeroes the whole arena, which takes seconds and
// 4 GiB of memory.
func TestLargestArena(t *testing.T) {
	if strconv.IntSize < 64 || !*largeFlag {
		t.Skip("needs -memtable.large and a 64-bit address space")
	}
	m := New(int(^uint(0) >> 1))
	if m.Capacity() != math.MaxUint32 {
		t.Fatalf("capacity %d", m.Capacity())
	}
	if err := m.Add(base.MakeInternalKey([]byte("first"), 1, base.KindSet), []byte("v1")); err != nil {
		t.Fatal(err)
	}
	// Skip to the end of the arena: the writer is the only allocator.
	skip := uint64(math.MaxUint32-64<<10) &^ chunkMask
	m.arena.used.Store(skip)
	m.arena.top = skip
	var md model
	md.add(base.MakeInternalKey([]byte("first"), 1, base.KindSet), []byte("v1"))
	r := testRand(t)
	for seq := base.SeqNum(2); ; seq++ {
		k := base.MakeInternalKey(randomUserKey(r), seq, base.KindSet)
		v := []byte(k.String())
		if err := m.Add(k, v); errors.Is(err, ErrArenaFull) {
			if m.Available() >= EntrySize(len(k.UserKey), len(v)) {
				t.Fatalf("arena full with %d bytes available", m.Available())
			}
			break
		} else if err != nil {
			t.Fatal(err)
		}
		md.add(k, v)
	}
	checkInvariants(t, &m.points)
	checkFullScans(t, m, &md)
	for _, e := range md.entries {
		if v, _, _, ok := m.Get(e.key.UserKey, e.key.SeqNum()); !ok || !bytes.Equal(v, e.value) {
			t.Fatalf("Get(%s) = %q %v", e.key, v, ok)
		}
	}
}

// TestResetReuse fills a memtable, resets it, and fills it again with other
// keys: nothing of the first contents may show through.
func TestResetReuse(t *testing.T) {
	m := New(64 << 10)
	require.NoError(t, m.Add(base.MakeInternalKey([]byte("r"), 1, base.KindRangeDelete), []byte("s")))
	for i := 0; ; i++ {
		k := base.MakeInternalKey([]byte(fmt.Sprintf("old%05d", i)), base.SeqNum(i+1), base.KindSet)
		if err := m.Add(k, []byte("old-value")); err != nil {
			break
		}
	}
	m.Reset()
	require.True(t, m.Empty())
	require.Zero(t, m.Len())
	require.False(t, m.HasRangeDels())
	for i := 0; i < 200; i++ {
		k := base.MakeInternalKey([]byte(fmt.Sprintf("new%05d", 199-i)), base.SeqNum(i+1), base.KindSet)
		require.NoError(t, m.Add(k, []byte(fmt.Sprintf("v%d", 199-i))))
	}
	it := m.NewIter()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		require.Equal(t, fmt.Sprintf("new%05d", n), string(it.Key().UserKey))
		require.Equal(t, fmt.Sprintf("v%d", n), string(it.Value()))
		n++
	}
	require.Equal(t, 200, n)
	for ok := it.Last(); ok; ok = it.Prev() {
		n--
		require.Equal(t, fmt.Sprintf("new%05d", n), string(it.Key().UserKey))
	}
	require.NoError(t, it.Close())
	_, _, _, found := m.Get([]byte("old00001"), base.SeqNumMax)
	require.False(t, found)
	require.Empty(t, m.RangeTombstones(base.SeqNumMax))
}

// TestLinkSummary: summaries are monotonic in the key prefix whatever the
// tuning, and a tuned range spreads its keys apart.
func TestLinkSummary(t *testing.T) {
	r := testRand(t)
	for _, tc := range []struct{ lo, hi uint64 }{
		{0, 0}, {0, 200000}, {1 << 48, 1<<48 + 10000}, {5, 5}, {1 << 62, 1<<63 + 7},
		{0, 1<<64 - 1}, {1<<64 - 100, 1<<64 - 1}, {100, 50},
	} {
		s := summaryFor(tc.lo, tc.hi)
		var ps []uint64
		for range 2000 {
			switch r.IntN(3) {
			case 0:
				ps = append(ps, r.Uint64())
			case 1:
				if tc.hi >= tc.lo && tc.hi-tc.lo < 1<<64-1 {
					ps = append(ps, tc.lo+r.Uint64N(tc.hi-tc.lo+1))
				}
			case 2:
				ps = append(ps, tc.lo+uint64(r.IntN(64))-32, tc.hi+uint64(r.IntN(64))-32)
			}
		}
		slices.Sort(ps)
		for i := 1; i < len(ps); i++ {
			if s.of(ps[i-1]) > s.of(ps[i]) {
				t.Fatalf("summary %+v (range %d..%d) not monotonic: %#x -> %#x, %#x -> %#x", s, tc.lo, tc.hi, ps[i-1], s.of(ps[i-1]), ps[i], s.of(ps[i]))
			}
		}
	}
	// Integer keys 0..200000 get summaries of their own.
	s := summaryFor(0, 200000)
	if s.of(12345) == s.of(12346) {
		t.Fatalf("tuned summary %+v does not tell 12345 from 12346", s)
	}
	if defaultSummary.of(12345) != defaultSummary.of(12346) {
		t.Fatal("the default summary keeps the first 4 bytes only")
	}
}
