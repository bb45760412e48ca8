package sstable

import (
	"fmt"
	"testing"

	"github.com/strata-db/strata/internal/base"
)

func TestFilterFalsePositiveRate(t *testing.T) {
	const n = 20000
	for _, c := range []struct {
		bitsPerKey int
		maxFPR     float64 // generous bound; the expected rate is well below
	}{
		{4, 0.20},
		{10, 0.025},
		{20, 0.001},
	} {
		var hashes []uint64
		for i := range n {
			hashes = append(hashes, filterHash(fmt.Appendf(nil, "present-%d", i)))
		}
		f, ok := decodeFilter(buildFilter(hashes, c.bitsPerKey))
		if !ok {
			t.Fatal("built filter does not decode")
		}
		for i, h := range hashes {
			if !f.mayContain(h) {
				t.Fatalf("false negative for key %d", i)
			}
		}
		fp := 0
		const probes = 200000
		for i := range probes {
			if f.mayContain(filterHash(fmt.Appendf(nil, "absent-%d", i))) {
				fp++
			}
		}
		rate := float64(fp) / probes
		t.Logf("bits/key %d: false-positive rate %.4f", c.bitsPerKey, rate)
		if rate > c.maxFPR {
			t.Errorf("bits/key %d: false-positive rate %.4f above %.4f", c.bitsPerKey, rate, c.maxFPR)
		}
	}
}

func TestFilterEmpty(t *testing.T) {
	f, ok := decodeFilter(buildFilter(nil, 10))
	if !ok {
		t.Fatal("empty filter does not decode")
	}
	if f.mayContain(filterHash([]byte("x"))) {
		t.Fatal("empty filter claims a key")
	}
}

func TestDecodeFilterRejects(t *testing.T) {
	good := buildFilter([]uint64{1, 2, 3}, 10)
	for _, b := range [][]byte{
		nil,
		{7},
		good[:len(good)-2],
		append(append([]byte{}, good[:len(good)-1]...), 0),  // k = 0
		append(append([]byte{}, good[:len(good)-1]...), 31), // k too large
	} {
		if _, ok := decodeFilter(b); ok {
			t.Fatalf("decodeFilter accepted %d bytes", len(b))
		}
	}
}

// TestTableFilter checks the filter through the Reader: no false
// negatives, a false-positive rate near the configured one, and no filter
// when BitsPerKey is negative.
func TestTableFilter(t *testing.T) {
	for _, c := range []struct {
		bitsPerKey int
		maxFPR     float64
	}{{0, 0.025}, {5, 0.15}, {-1, 1}} {
		f := newTestFile(t)
		w := NewWriter(f, WriterOptions{BitsPerKey: c.bitsPerKey})
		const n = 10000
		for i := range n {
			// Two versions per user key: the filter counts user keys once.
			for _, seq := range []base.SeqNum{2, 1} {
				if err := w.Add(base.MakeInternalKey(fmt.Appendf(nil, "key-%06d", i), seq, base.KindSet), nil); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		r := openTable(t, f.reopen(t), ReaderOptions{})
		for i := range n {
			if !r.MayContain(fmt.Appendf(nil, "key-%06d", i)) {
				t.Fatalf("false negative for key %d", i)
			}
		}
		fp := 0
		for i := range 5 * n {
			k := fmt.Appendf(nil, "absent-%d", i)
			if r.MayContain(k) {
				fp++
			}
			if _, _, _, ok, err := r.Get(k, base.SeqNumMax); ok || err != nil {
				t.Fatalf("Get(%q) = %v, %v", k, ok, err)
			}
		}
		rate := float64(fp) / (5 * n)
		t.Logf("BitsPerKey %d: table false-positive rate %.4f, filter %d bytes", c.bitsPerKey, rate, r.Properties().FilterSize)
		if rate > c.maxFPR {
			t.Errorf("BitsPerKey %d: false-positive rate %.4f above %.4f", c.bitsPerKey, rate, c.maxFPR)
		}
		if c.bitsPerKey < 0 && (rate != 1 || r.Properties().FilterSize != 0) {
			t.Errorf("BitsPerKey %d wrote a filter", c.bitsPerKey)
		}
	}
}

func TestSkipFilterDecision(t *testing.T) {
	for _, c := range []struct {
		counted, rejected int
		skip              bool
	}{
		{256, 0, true},   // every key looked up is in the table
		{256, 15, true},  // under one in 16 rejected
		{256, 16, false}, // one in 16: the probes pay
		{256, 200, false},
		{256, 256, false}, // every key absent
	} {
		if got := skipFilter(c.counted, c.rejected); got != c.skip {
			t.Errorf("skipFilter(%d, %d) = %v, want %v", c.counted, c.rejected, got, c.skip)
		}
	}
}

// TestFilterUseAdapts: a Reader whose lookups all find their keys stops
// probing its filter; once lookups of absent keys come, it probes again
// within a window. Results are right throughout.
func TestFilterUseAdapts(t *testing.T) {
	f := newTestFile(t)
	w := NewWriter(f, WriterOptions{})
	const n = 2000
	key := func(i int) []byte { return fmt.Appendf(nil, "key-%06d", i) }
	for i := range n {
		if err := w.Add(base.MakeInternalKey(key(i), 1, base.KindSet), fmt.Appendf(nil, "v%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r := openTable(t, f.reopen(t), ReaderOptions{})
	if r.fuse.skip.Load() {
		t.Fatal("a new Reader skips its filter")
	}
	// filterWindow sampled lookups take about filterWindow*filterSampleEvery
	// lookups; four times that leaves no doubt.
	const lookups = 4 * filterWindow * filterSampleEvery
	for j := range lookups {
		i := j % n
		v, _, _, ok, err := r.Get(key(i), base.SeqNumMax)
		if !ok || err != nil || string(v) != fmt.Sprintf("v%d", i) {
			t.Fatalf("Get(%q) = %q, %v, %v", key(i), v, ok, err)
		}
	}
	if !r.fuse.skip.Load() {
		t.Fatal("the filter is still probed after lookups that all hit")
	}
	// Skipped, the filter is read only by the sampled lookups: with every
	// bit cleared (it rejects every key), the others still find their
	// keys. One lookup in filterSampleEvery is sampled (31 of 2,000
	// expected); 10% is far beyond chance.
	// A fresh window, so that the sampled rejections do not end one.
	saved := r.filter.data
	r.filter.data = make([]byte, len(saved))
	r.fuse.counted.Store(0)
	r.fuse.rejected.Store(0)
	lost := 0
	for i := range n {
		v, _, _, ok, err := r.Get(key(i), base.SeqNumMax)
		if err != nil || (ok && string(v) != fmt.Sprintf("v%d", i)) {
			t.Fatalf("Get(%q) = %q, %v, %v", key(i), v, ok, err)
		}
		if !ok {
			lost++
		}
	}
	r.filter.data = saved
	if lost > n/10 {
		t.Fatalf("%d of %d lookups consulted the skipped filter", lost, n)
	}
	// One absent key over and over (a hot key the sampling must not
	// miss): never found, and the filter comes back.
	for range lookups {
		k := []byte("key-000100-absent")
		if _, _, _, ok, err := r.Get(k, base.SeqNumMax); ok || err != nil {
			t.Fatalf("Get(%q) = %v, %v", k, ok, err)
		}
	}
	if r.fuse.skip.Load() {
		t.Fatal("the filter is still skipped after lookups that all miss")
	}
}
