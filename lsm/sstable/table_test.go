package sstable

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/strata-db/strata/index/learned"
	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// model answers queries over the sorted entries of a table.
type model []kv

func (m model) get(uk []byte, snap base.SeqNum) (kv, bool) {
	i := sort.Search(len(m), func(i int) bool {
		return base.InternalCompare(m[i].key, base.MakeSearchKey(uk, snap)) >= 0
	})
	if i < len(m) && bytes.Equal(m[i].key.UserKey, uk) {
		return m[i], true
	}
	return kv{}, false
}

func (m model) seekGE(uk []byte) int {
	return sort.Search(len(m), func(i int) bool { return bytes.Compare(m[i].key.UserKey, uk) >= 0 })
}

func (m model) seekLT(uk []byte) int { return m.seekGE(uk) - 1 }

// checkAt compares the iterator's state with model position pos.
func checkAt(t *testing.T, m model, it interface {
	Valid() bool
	Key() base.InternalKey
	Value() []byte
	Error() error
}, valid bool, pos int, what string) {
	t.Helper()
	if err := it.Error(); err != nil {
		t.Fatalf("%s: iterator error: %v", what, err)
	}
	want := pos >= 0 && pos < len(m)
	if valid != want || it.Valid() != want {
		t.Fatalf("%s: valid=%v/%v, model pos %d of %d", what, valid, it.Valid(), pos, len(m))
	}
	if !want {
		return
	}
	if k := it.Key(); base.InternalCompare(k, m[pos].key) != 0 || k.Trailer != m[pos].key.Trailer {
		t.Fatalf("%s: key %s, want %s (pos %d)", what, k, m[pos].key, pos)
	}
	if !bytes.Equal(it.Value(), m[pos].value) {
		t.Fatalf("%s: value of %s differs (len %d, want %d)", what, m[pos].key, len(it.Value()), len(m[pos].value))
	}
}

// probeKey returns a user key near the model's keys: an existing key, a key
// just before or after one, or a random one.
func probeKey(rng *rand.Rand, m model) []byte {
	if rng.IntN(20) == 0 {
		// Keys outside the prefix that every key shares.
		return [][]byte{nil, []byte("a"), []byte("k"), []byte("k0"), []byte("z"), {0xff}}[rng.IntN(6)]
	}
	if len(m) == 0 || rng.IntN(4) == 0 {
		return fmt.Appendf(nil, "k%03d/%s", rng.IntN(420), randBytes(rng, rng.IntN(4)))
	}
	k := bytes.Clone(m[rng.IntN(len(m))].key.UserKey)
	switch rng.IntN(3) {
	case 0:
		return append(k, 0)
	case 1:
		if len(k) > 0 {
			return k[:len(k)-1]
		}
	}
	return k
}

// verifyTable compares full scans, gets random Gets and steps random
// iterator moves of r with the model.
func verifyTable(t *testing.T, rng *rand.Rand, r *Reader, m model, gets, steps int) {
	t.Helper()
	// Full forward and backward scans.
	it := r.NewIter()
	pos := 0
	for ok := it.First(); ok; ok = it.Next() {
		checkAt(t, m, it, true, pos, "forward scan")
		pos++
	}
	checkAt(t, m, it, false, len(m), "forward scan end")
	pos = len(m) - 1
	for ok := it.Last(); ok; ok = it.Prev() {
		checkAt(t, m, it, true, pos, "backward scan")
		pos--
	}
	checkAt(t, m, it, false, -1, "backward scan end")
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}

	// Gets at random snapshots.
	var maxSeq base.SeqNum
	for _, e := range m {
		maxSeq = max(maxSeq, e.key.SeqNum())
	}
	for range gets {
		uk := probeKey(rng, m)
		snap := base.SeqNum(rng.Uint64N(uint64(maxSeq) + 2))
		if rng.IntN(10) == 0 {
			snap = base.SeqNumMax
		}
		want, wantOK := m.get(uk, snap)
		v, kind, seq, ok, err := r.Get(uk, snap)
		if err != nil {
			t.Fatalf("Get(%q, %d): %v", uk, snap, err)
		}
		if ok != wantOK {
			t.Fatalf("Get(%q, %d): found=%v, want %v", uk, snap, ok, wantOK)
		}
		if ok && (kind != want.key.Kind() || seq != want.key.SeqNum() || !bytes.Equal(v, want.value)) {
			t.Fatalf("Get(%q, %d) = %s#%d, want %s", uk, snap, kind, seq, want.key)
		}
		if ok && !r.MayContain(uk) {
			t.Fatalf("MayContain(%q) = false for a present key", uk)
		}
	}

	// Random walks mixing seeks, Next and Prev.
	it = r.NewIter()
	defer it.Close()
	pos = -1
	for step := range steps {
		var ok bool
		var what string
		switch op := rng.IntN(10); {
		case op == 0:
			ok, pos, what = it.First(), 0, "First"
			if len(m) == 0 {
				pos = 0
			}
		case op == 1:
			ok, pos, what = it.Last(), len(m)-1, "Last"
		case op == 2:
			k := probeKey(rng, m)
			ok, pos, what = it.SeekGE(k), m.seekGE(k), fmt.Sprintf("SeekGE(%q)", k)
		case op == 3:
			k := probeKey(rng, m)
			ok, pos, what = it.SeekLT(k), m.seekLT(k), fmt.Sprintf("SeekLT(%q)", k)
		case op < 7:
			ok, what = it.Next(), "Next"
			if pos < len(m) {
				pos++
			}
		default:
			ok, what = it.Prev(), "Prev"
			if pos >= len(m) {
				pos = len(m) - 1
			} else if pos >= 0 {
				pos--
			}
		}
		checkAt(t, m, it, ok, pos, fmt.Sprintf("step %d %s", step, what))
	}
}

func TestRoundTrip(t *testing.T) {
	type config struct {
		n        int
		o        WriterOptions
		big      bool
		rangeDel int
	}
	var configs []config
	for c := range numCompressions {
		configs = append(configs,
			config{n: 2000, o: WriterOptions{Compression: c}},
			config{n: 500, o: WriterOptions{Compression: c, BlockSize: 1, BlockRestartInterval: 1}, rangeDel: 3},
			config{n: 1500, o: WriterOptions{Compression: c, BlockSize: 200, BlockRestartInterval: 3}, big: true, rangeDel: 20},
			config{n: 1200, o: WriterOptions{Compression: c, BlockSize: 64 << 10, BlockRestartInterval: 32, BitsPerKey: -1}, big: true},
		)
	}
	configs = append(configs,
		config{n: 0, o: WriterOptions{}},
		config{n: 0, o: WriterOptions{}, rangeDel: 5},
		config{n: 1, o: WriterOptions{Compression: ZstdCompression}},
	)
	// With a learned index that accepts any fit, so that Get goes through
	// it on these small tables of odd block shapes.
	anyFit := &learned.Options{MinKeys: 1, MinKeysPerSegment: 1, MaxSpread: 1 << 20, MaxShare: 1e9}
	configs = append(configs,
		config{n: 2000, o: WriterOptions{Learned: anyFit}},
		config{n: 500, o: WriterOptions{BlockSize: 1, BlockRestartInterval: 1, Learned: anyFit}, rangeDel: 3},
		config{n: 1500, o: WriterOptions{Compression: SnappyCompression, BlockSize: 200, BlockRestartInterval: 3, Learned: anyFit}, big: true, rangeDel: 20},
		config{n: 1200, o: WriterOptions{BlockSize: 64 << 10, BlockRestartInterval: 32, BitsPerKey: -1, Learned: anyFit}, big: true},
		config{n: 0, o: WriterOptions{Learned: anyFit}, rangeDel: 5},
		config{n: 1, o: WriterOptions{Learned: anyFit}},
	)
	for ci, c := range configs {
		t.Run(fmt.Sprintf("%d/%s/bs=%d/ri=%d/n=%d", ci, c.o.Compression, c.o.BlockSize, c.o.BlockRestartInterval, c.n), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(ci), 42))
			spec := tableSpec{entries: genEntries(rng, c.n, c.big), rangeDels: genRangeDels(rng, c.rangeDel)}
			f, md := writeTable(t, spec, c.o)
			for _, cache := range []Cache{nil, newMapCache()} {
				r := openTable(t, f, ReaderOptions{Cache: cache, FileNum: 7})
				gets, steps := 2000, 3000
				if c.o.BlockSize > 8<<10 {
					// Every uncached Get reads a fresh 64 KiB block,
					// which is slow under the race detector.
					gets, steps = 300, 1000
				}
				if c.o.Learned != nil && c.n > 0 && !r.Learned().Present {
					t.Fatalf("no learned index: %v", r.Learned().Reason)
				}
				verifyTable(t, rng, r, spec.entries, gets, steps)
				checkRangeDels(t, r.RangeTombstones(), spec.rangeDels)
				checkProps(t, r.Properties(), spec, c.o)
				if r.FileNum() != 7 {
					t.Fatalf("FileNum = %d", r.FileNum())
				}
				if err := r.Close(); err != nil {
					t.Fatal(err)
				}
				f = f.reopen(t)
			}
			checkMetadata(t, md, spec)
		})
	}
}

func checkRangeDels(t *testing.T, got, want []base.RangeTombstone) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d range tombstones, want %d", len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i].Start, want[i].Start) || !bytes.Equal(got[i].End, want[i].End) || got[i].Seq != want[i].Seq {
			t.Fatalf("tombstone %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func checkProps(t *testing.T, p *Properties, spec tableSpec, o WriterOptions) {
	t.Helper()
	var dels, rawK, rawV uint64
	for _, e := range spec.entries {
		if e.key.Kind() == base.KindDelete {
			dels++
		}
		rawK += uint64(e.key.Size())
		rawV += uint64(len(e.value))
	}
	if p.NumEntries != uint64(len(spec.entries)) || p.NumDeletions != dels || p.RawKeySize != rawK || p.RawValueSize != rawV {
		t.Fatalf("properties %+v do not match the %d entries (dels %d, keys %d, values %d)", p, len(spec.entries), dels, rawK, rawV)
	}
	if p.NumRangeDeletions != uint64(len(spec.rangeDels)) {
		t.Fatalf("NumRangeDeletions = %d, want %d", p.NumRangeDeletions, len(spec.rangeDels))
	}
	if p.Compression != o.Compression.String() {
		t.Fatalf("Compression = %q", p.Compression)
	}
	if (o.BitsPerKey >= 0) != (p.FilterSize > 0) {
		t.Fatalf("FilterSize = %d with BitsPerKey %d", p.FilterSize, o.BitsPerKey)
	}
	if len(spec.entries) > 0 && (p.NumDataBlocks == 0 || p.DataSize == 0 || p.IndexSize == 0) {
		t.Fatalf("sizes missing: %+v", p)
	}
	for k, v := range spec.userProps {
		if p.User[k] != v {
			t.Fatalf("user property %q = %q, want %q", k, p.User[k], v)
		}
	}
	if len(p.User) != len(spec.userProps) {
		t.Fatalf("user properties %v, want %v", p.User, spec.userProps)
	}
}

func checkMetadata(t *testing.T, md *WriterMetadata, spec tableSpec) {
	t.Helper()
	es, ts := spec.entries, spec.rangeDels
	if md.HasPointKeys != (len(es) > 0) || md.HasRangeDels != (len(ts) > 0) {
		t.Fatalf("HasPointKeys=%v HasRangeDels=%v", md.HasPointKeys, md.HasRangeDels)
	}
	var seqs []base.SeqNum
	if len(es) > 0 {
		if base.InternalCompare(md.SmallestPoint, es[0].key) != 0 || base.InternalCompare(md.LargestPoint, es[len(es)-1].key) != 0 {
			t.Fatalf("point bounds %s %s, want %s %s", md.SmallestPoint, md.LargestPoint, es[0].key, es[len(es)-1].key)
		}
		for _, e := range es {
			seqs = append(seqs, e.key.SeqNum())
		}
	}
	if len(ts) > 0 {
		if want := base.MakeInternalKey(ts[0].Start, ts[0].Seq, base.KindRangeDelete); base.InternalCompare(md.SmallestRangeDel, want) != 0 {
			t.Fatalf("SmallestRangeDel %s, want %s", md.SmallestRangeDel, want)
		}
		var end []byte
		for _, r := range ts {
			if bytes.Compare(r.End, end) > 0 {
				end = r.End
			}
			seqs = append(seqs, r.Seq)
		}
		if !bytes.Equal(md.LargestRangeDel.UserKey, end) || !md.LargestRangeDel.IsRangeDelSentinel() {
			t.Fatalf("LargestRangeDel %s, want %q sentinel", md.LargestRangeDel, end)
		}
	}
	if len(seqs) > 0 {
		lo, hi := seqs[0], seqs[0]
		for _, s := range seqs {
			lo, hi = min(lo, s), max(hi, s)
		}
		if md.SmallestSeq != lo || md.LargestSeq != hi || md.Properties.SmallestSeq != lo || md.Properties.LargestSeq != hi {
			t.Fatalf("seqs [%d, %d], want [%d, %d]", md.SmallestSeq, md.LargestSeq, lo, hi)
		}
	}
	// Smallest/Largest are the extremes of both kinds of bounds.
	var all []base.InternalKey
	if len(es) > 0 {
		all = append(all, md.SmallestPoint, md.LargestPoint)
	}
	if len(ts) > 0 {
		all = append(all, md.SmallestRangeDel, md.LargestRangeDel)
	}
	for _, k := range all {
		if base.InternalCompare(md.Smallest(), k) > 0 || base.InternalCompare(md.Largest(), k) < 0 {
			t.Fatalf("Smallest %s / Largest %s do not bound %s", md.Smallest(), md.Largest(), k)
		}
	}
}

func TestMetadataBounds(t *testing.T) {
	f := newTestFile(t)
	w := NewWriter(f, WriterOptions{})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(w.AddRangeDel([]byte("a"), []byte("c"), 9))
	must(w.AddRangeDel([]byte("a"), []byte("z"), 5))
	must(w.Add(base.MakeInternalKey([]byte("b"), 3, base.KindSet), []byte("v")))
	must(w.AddRangeDel([]byte("b"), []byte("d"), 4))
	must(w.Add(base.MakeInternalKey([]byte("z"), 1, base.KindSet), []byte("v")))
	must(w.Close())
	md := w.Metadata()
	if got := md.Smallest(); got.String() != `"a"#9,RANGEDEL` {
		t.Fatalf("Smallest = %s", got)
	}
	// The point z#1 sorts after the sentinel z#SeqNumMax,RANGEDEL.
	if got := md.Largest(); got.String() != `"z"#1,SET` {
		t.Fatalf("Largest = %s", got)
	}
	if got := md.LargestRangeDel; !got.IsRangeDelSentinel() || string(got.UserKey) != "z" {
		t.Fatalf("LargestRangeDel = %s", got)
	}
	if md.SmallestSeq != 1 || md.LargestSeq != 9 {
		t.Fatalf("seqs [%d, %d]", md.SmallestSeq, md.LargestSeq)
	}
}

func TestMetaBlocksAndUserProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	spec := tableSpec{
		entries: genEntries(rng, 300, false),
		meta: map[string][]byte{
			"strata.learned-index": randValue(rng, 5000),
			"vlog.refs":            []byte("x"),
			"empty":                {},
		},
		userProps: map[string]string{"ttl.min": "123", "": "empty name", "bin": "\x00\xff"},
	}
	for _, c := range []Compression{NoCompression, ZstdCompression} {
		f, _ := writeTable(t, spec, WriterOptions{Compression: c})
		r := openTable(t, f, ReaderOptions{})
		for name, want := range spec.meta {
			got, ok, err := r.MetaBlock(name)
			if err != nil || !ok || !bytes.Equal(got, want) {
				t.Fatalf("MetaBlock(%q) = %d bytes, %v, %v; want %d bytes", name, len(got), ok, err, len(want))
			}
		}
		if _, ok, err := r.MetaBlock("nope"); ok || err != nil {
			t.Fatalf("MetaBlock(nope) = %v, %v", ok, err)
		}
		if _, ok, err := r.MetaBlock(MetaPropertiesName); !ok || err != nil {
			t.Fatalf("MetaBlock(properties) = %v, %v", ok, err)
		}
		checkProps(t, r.Properties(), spec, WriterOptions{Compression: c})
		if s := r.Properties().String(); !bytes.Contains([]byte(s), []byte(`user "ttl.min": "123"`)) {
			t.Fatalf("Properties.String() lacks the user property:\n%s", s)
		}
	}
}

func TestWriterErrors(t *testing.T) {
	k := func(s string, seq base.SeqNum, kind base.Kind) base.InternalKey {
		return base.MakeInternalKey([]byte(s), seq, kind)
	}
	cases := []struct {
		name string
		do   func(w *Writer) error
	}{
		{"out of order", func(w *Writer) error {
			if err := w.Add(k("b", 1, base.KindSet), nil); err != nil {
				return nil
			}
			return w.Add(k("a", 1, base.KindSet), nil)
		}},
		{"duplicate key", func(w *Writer) error {
			if err := w.Add(k("b", 1, base.KindSet), nil); err != nil {
				return nil
			}
			return w.Add(k("b", 1, base.KindSet), nil)
		}},
		{"older seq first", func(w *Writer) error {
			if err := w.Add(k("b", 1, base.KindSet), nil); err != nil {
				return nil
			}
			return w.Add(k("b", 2, base.KindSet), nil)
		}},
		{"rangedel kind", func(w *Writer) error { return w.Add(k("a", 1, base.KindRangeDelete), []byte("b")) }},
		{"invalid kind", func(w *Writer) error { return w.Add(k("a", 1, base.KindMax), nil) }},
		{"empty range", func(w *Writer) error { return w.AddRangeDel([]byte("b"), []byte("b"), 1) }},
		{"range order", func(w *Writer) error {
			if err := w.AddRangeDel([]byte("b"), []byte("c"), 1); err != nil {
				return nil
			}
			return w.AddRangeDel([]byte("a"), []byte("c"), 1)
		}},
		{"range seq order", func(w *Writer) error {
			if err := w.AddRangeDel([]byte("b"), []byte("c"), 1); err != nil {
				return nil
			}
			return w.AddRangeDel([]byte("b"), []byte("c"), 2)
		}},
		{"reserved meta", func(w *Writer) error { return w.AddMetaBlock(MetaFilterName, nil) }},
		{"empty meta name", func(w *Writer) error { return w.AddMetaBlock("", nil) }},
		{"duplicate meta", func(w *Writer) error {
			if err := w.AddMetaBlock("x", nil); err != nil {
				return nil
			}
			return w.AddMetaBlock("x", nil)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newTestFile(t)
			w := NewWriter(f, WriterOptions{})
			err := c.do(w)
			if err == nil {
				t.Fatal("no error")
			}
			// Sticky: every later call fails with the same error, and
			// Close still closes the file.
			if err2 := w.Add(k("zzz", 1, base.KindSet), nil); err2 != err {
				t.Fatalf("Add after error = %v, want %v", err2, err)
			}
			if err2 := w.Close(); err2 != err {
				t.Fatalf("Close after error = %v, want %v", err2, err)
			}
			if !f.closed {
				t.Fatal("file not closed")
			}
		})
	}
}

func TestWriterOptionsValidate(t *testing.T) {
	if err := (WriterOptions{}).Validate(); err != nil {
		t.Fatal(err)
	}
	err := WriterOptions{BlockSize: -1, BlockRestartInterval: -1, BitsPerKey: 1000, Compression: 9}.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, field := range []string{"BlockSize", "BlockRestartInterval", "BitsPerKey", "Compression"} {
		if !bytes.Contains([]byte(err.Error()), []byte(field)) {
			t.Fatalf("error %q does not mention %s", err, field)
		}
	}
	f := newTestFile(t)
	w := NewWriter(f, WriterOptions{BlockSize: -5})
	if w.Add(base.MakeInternalKey([]byte("a"), 1, base.KindSet), nil) == nil || w.Close() == nil || !f.closed {
		t.Fatal("invalid options did not fail the writer")
	}
}

func TestWriterIOErrors(t *testing.T) {
	ioErr := errors.New("disk on fire")
	f := newTestFile(t)
	f.writeErr = ioErr
	w := NewWriter(f, WriterOptions{BlockSize: 1})
	var err error
	for i := 0; err == nil && i < 100000; i++ {
		err = w.Add(base.MakeInternalKey(fmt.Appendf(nil, "%08d", i), 1, base.KindSet), make([]byte, 100))
	}
	if err == nil {
		err = w.Close()
	} else if err2 := w.Close(); err2 != err {
		t.Fatalf("Close = %v, want sticky %v", err2, err)
	}
	if !errors.Is(err, ioErr) {
		t.Fatalf("error %v does not wrap the I/O error", err)
	}
	if !f.closed {
		t.Fatal("file not closed")
	}
}

func TestReaderIOError(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	f, _ := writeTable(t, tableSpec{entries: genEntries(rng, 100, false)}, WriterOptions{})
	ioErr := errors.New("bad sector")
	r := openTable(t, f, ReaderOptions{})
	f.readErr = ioErr
	it := r.NewIter()
	if it.First() || !errors.Is(it.Error(), ioErr) || errors.Is(it.Error(), base.ErrCorruption) {
		t.Fatalf("iterator error %v", it.Error())
	}
	// Errors are sticky.
	f.readErr = nil
	if it.First() || it.SeekGE([]byte("a")) || it.Next() || it.Error() == nil {
		t.Fatal("iterator recovered from a sticky error")
	}
	if err := it.Close(); !errors.Is(err, ioErr) {
		t.Fatalf("Close = %v", err)
	}
	f.readErr = ioErr
	if _, err := NewReader(f, f.size(t), ReaderOptions{}); !errors.Is(err, ioErr) {
		t.Fatalf("NewReader = %v", err)
	}
}

func TestEstimatedSize(t *testing.T) {
	f := newTestFile(t)
	w := NewWriter(f, WriterOptions{})
	prev := w.EstimatedSize()
	for i := range 5000 {
		if err := w.Add(base.MakeInternalKey(fmt.Appendf(nil, "%08d", i), 1, base.KindSet), make([]byte, 100)); err != nil {
			t.Fatal(err)
		}
		if s := w.EstimatedSize(); s < prev {
			t.Fatalf("EstimatedSize went down: %d -> %d", prev, s)
		} else {
			prev = s
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if size := w.Metadata().Size; prev > size || float64(prev) < 0.9*float64(size) {
		t.Fatalf("EstimatedSize %d before Close, final size %d", prev, size)
	}
}

func TestCompressionNames(t *testing.T) {
	for c := range numCompressions {
		got, err := ParseCompression(c.String())
		if err != nil || got != c {
			t.Fatalf("ParseCompression(%q) = %v, %v", c.String(), got, err)
		}
	}
	if _, err := ParseCompression("lz4"); err == nil {
		t.Fatal("ParseCompression(lz4) succeeded")
	}
	if s := Compression(200).String(); s != "compression(200)" {
		t.Fatal(s)
	}
}

// TestCacheBlocksImmutable checks that blocks handed to the cache are fresh:
// they never change after being stored, whatever else is read.
func TestCacheBlocksImmutable(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, c := range []Compression{NoCompression, S2Compression} {
		spec := tableSpec{entries: genEntries(rng, 2000, true)}
		f, _ := writeTable(t, spec, WriterOptions{Compression: c, BlockSize: 512})
		cache := newMapCache()
		r := openTable(t, f, ReaderOptions{Cache: cache})
		snapshot := map[cacheKey][]byte{}
		verifyTable(t, rng, r, spec.entries, 1000, 1000)
		for k, b := range cache.m {
			snapshot[k] = bytes.Clone(b)
		}
		if len(snapshot) == 0 {
			t.Fatal("nothing was cached")
		}
		verifyTable(t, rng, r, spec.entries, 1000, 1000)
		for k, b := range snapshot {
			if !bytes.Equal(cache.m[k], b) {
				t.Fatalf("cached block at %d changed", k.offset)
			}
		}
	}
}

// TestGetValueStable checks that values returned by Get stay valid after
// later reads (no cache: they must not alias a reused buffer).
func TestGetValueStable(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	spec := tableSpec{entries: genEntries(rng, 1000, false)}
	f, _ := writeTable(t, spec, WriterOptions{Compression: SnappyCompression, BlockSize: 256})
	r := openTable(t, f, ReaderOptions{})
	var got [][]byte
	for _, e := range spec.entries {
		v, _, _, ok, err := r.Get(e.key.UserKey, e.key.SeqNum())
		if err != nil || !ok {
			t.Fatalf("Get(%s) = %v, %v", e.key, ok, err)
		}
		got = append(got, v)
	}
	for i, e := range spec.entries {
		if !bytes.Equal(got[i], e.value) {
			t.Fatalf("value of %s changed after later Gets", e.key)
		}
	}
}

// TestConcurrentReaders runs Gets and iterators over one Reader from
// several goroutines (meaningful under -race).
func TestConcurrentReaders(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	spec := tableSpec{entries: genEntries(rng, 3000, false)}
	f, _ := writeTable(t, spec, WriterOptions{Compression: S2Compression, BlockSize: 1024})
	for _, cache := range []Cache{nil, newMapCache()} {
		r := openTable(t, f, ReaderOptions{Cache: cache})
		errc := make(chan error, 4)
		for g := range 4 {
			go func() {
				rng := rand.New(rand.NewPCG(uint64(g), 1))
				for range 300 {
					e := spec.entries[rng.IntN(len(spec.entries))]
					v, _, _, ok, err := r.Get(e.key.UserKey, e.key.SeqNum())
					if err != nil || !ok || !bytes.Equal(v, e.value) {
						errc <- fmt.Errorf("Get(%s): ok=%v err=%v", e.key, ok, err)
						return
					}
				}
				it := r.NewIter()
				n := 0
				for ok := it.First(); ok; ok = it.Next() {
					n++
				}
				if err := it.Close(); err != nil || n != len(spec.entries) {
					errc <- fmt.Errorf("scan saw %d entries, err %v", n, err)
					return
				}
				errc <- nil
			}()
		}
		for range 4 {
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestWriterAlignedWrites: a table reaches its file in writes of
// vfs.MapAlign bytes (but the last), so that its mapping can use huge
// pages; and a buffer a finished Writer gave back serves the next table
// without carrying its bytes over.
func TestWriterAlignedWrites(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for round := range 2 {
		f := newTestFile(t)
		w := NewWriter(f, WriterOptions{})
		var want []kv
		for i := 0; w.EstimatedSize() < 5*vfs.MapAlign/2; i++ {
			e := kv{base.MakeInternalKey(fmt.Appendf(nil, "key%08d", i), 1, base.KindSet), randValue(rng, 10+rng.IntN(3000))}
			if err := w.Add(e.key, e.value); err != nil {
				t.Fatal(err)
			}
			want = append(want, e)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if len(f.writes) < 3 {
			t.Fatalf("%d writes for a table of %d bytes", len(f.writes), w.Metadata().Size)
		}
		for i, n := range f.writes[:len(f.writes)-1] {
			if n != vfs.MapAlign {
				t.Fatalf("write %d of %d has %d bytes, want %d", i, len(f.writes), n, vfs.MapAlign)
			}
		}
		// A buffer that kept bytes of the table before would make the file
		// longer than the table.
		data, written := f.contents(t), 0
		for _, n := range f.writes {
			written += n
		}
		if size := w.Metadata().Size; uint64(written) != size || uint64(len(data)) != size {
			t.Fatalf("round %d: %d bytes written, file of %d, table of %d", round, written, len(data), size)
		}
		r := openTable(t, readOnly(t, data), ReaderOptions{})
		for _, e := range want {
			v, _, _, found, err := r.Get(e.key.UserKey, base.SeqNumMax)
			if err != nil || !found || !bytes.Equal(v, e.value) {
				t.Fatalf("Get(%q) = %d bytes, found %v, %v; want %d bytes", e.key.UserKey, len(v), found, err, len(e.value))
			}
		}
	}
}

// prefetchFile records a Prefetcher's hints and the reads after them.
type prefetchFile struct {
	vfs.File
	hints [][2]int64 // off, n
	reads [][2]int64 // off, n of each ReadAt
}

func (p *prefetchFile) Prefetch(off, n int64) { p.hints = append(p.hints, [2]int64{off, n}) }

func (p *prefetchFile) ReadAt(b []byte, off int64) (int, error) {
	p.reads = append(p.reads, [2]int64{off, int64(len(b))})
	return p.File.ReadAt(b, off)
}

// TestOpenPrefetchesMetaBlocks: opening a table through a file that takes
// hints (a shared file in an object store) asks, right after the footer
// and the meta-index, for every block the open reads next, in one hint
// that ends at the footer: the open then costs two round trips to the
// store whatever number of meta blocks it has.
func TestOpenPrefetchesMetaBlocks(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	spec := tableSpec{entries: genEntries(rng, 3000, false), rangeDels: genRangeDels(rng, 20),
		meta: map[string][]byte{"x.extra": []byte("extra")}}
	for _, lo := range []*learned.Options{nil, {MaxShare: 1}} {
		f, _ := writeTable(t, spec, WriterOptions{BlockSize: 512, BitsPerKey: 10, Learned: lo})
		size := f.size(t)
		pf := &prefetchFile{File: f}
		r, err := NewReader(pf, size, ReaderOptions{FileNum: 1})
		require.NoError(t, err)
		require.Len(t, pf.hints, 1)
		start, n := pf.hints[0][0], pf.hints[0][1]
		require.Equal(t, size-footerLen, start+n, "the hint ends at the footer")
		// The footer and the meta-index come first; every read after
		// them lies within the hint.
		require.GreaterOrEqual(t, len(pf.reads), 4, "footer, meta-index, index, properties at least")
		for _, rd := range pf.reads[2:] {
			require.GreaterOrEqual(t, rd[0], start, "read at %d before the hint's %d", rd[0], start)
			require.LessOrEqual(t, rd[0]+rd[1], size-footerLen)
		}
		require.NoError(t, r.Close())
	}
}
