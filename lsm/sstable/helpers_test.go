package sstable

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/vfs"
)

// testFile is a table file of an in-memory filesystem (vfs.MemFS). It
// records whether it was closed and how often it was synced, and fails
// Write or ReadAt while writeErr or readErr is set (set them between
// operations, not while another goroutine uses the file).
type testFile struct {
	vfs.File // the open handle
	fs       *vfs.MemFS
	name     string

	closed   bool
	syncs    int
	writeErr error // returned by Write, which then writes nothing
	readErr  error // returned by ReadAt, which then reads nothing
	writes   []int // the length of each Write
}

const testFileName = "test.sst"

// newTestFile creates an empty table file on a new in-memory filesystem.
func newTestFile(t testing.TB) *testFile {
	t.Helper()
	fs := vfs.NewMem()
	f, err := fs.Create(testFileName)
	if err != nil {
		t.Fatal(err)
	}
	return &testFile{File: f, fs: fs, name: testFileName}
}

// readOnly returns a file holding a copy of data, opened for reading.
func readOnly(t testing.TB, data []byte) *testFile {
	t.Helper()
	f := newTestFile(t)
	if _, err := f.File.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.File.Close(); err != nil {
		t.Fatal(err)
	}
	return f.reopen(t)
}

// reopen returns a new handle, open for reading, on the file of f (which
// may be closed).
func (f *testFile) reopen(t testing.TB) *testFile {
	t.Helper()
	h, err := f.fs.Open(f.name)
	if err != nil {
		t.Fatal(err)
	}
	return &testFile{File: h, fs: f.fs, name: f.name}
}

// contents returns the bytes of the file, open or closed.
func (f *testFile) contents(t testing.TB) []byte {
	t.Helper()
	r := f.reopen(t)
	defer r.Close()
	data := make([]byte, r.size(t))
	if n, err := r.ReadAt(data, 0); n < len(data) {
		t.Fatalf("reading %s: %d of %d bytes: %v", f.name, n, len(data), err)
	}
	return data
}

// size returns the size of the file, which must be open.
func (f *testFile) size(t testing.TB) int64 {
	t.Helper()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// rewrite replaces the contents of the file with data, as seen by every
// handle open on it.
func (f *testFile) rewrite(t testing.TB, data []byte) {
	t.Helper()
	w, err := f.fs.Create(f.name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func (f *testFile) ReadAt(p []byte, off int64) (int, error) {
	if f.readErr != nil {
		return 0, f.readErr
	}
	return f.File.ReadAt(p, off)
}

func (f *testFile) Write(p []byte) (int, error) {
	if f.writeErr != nil {
		return 0, f.writeErr
	}
	f.writes = append(f.writes, len(p))
	return f.File.Write(p)
}

func (f *testFile) Sync() error {
	f.syncs++
	return f.File.Sync()
}

func (f *testFile) Close() error {
	f.closed = true
	return f.File.Close()
}

// kv is one point entry of the model.
type kv struct {
	key   base.InternalKey
	value []byte
}

// genEntries returns n random point entries sorted in internal-key order,
// with several versions of many user keys and every point kind.
func genEntries(rng *rand.Rand, n int, bigValues bool) []kv {
	var out []kv
	seen := map[string]bool{}
	seq := base.SeqNum(1)
	for len(out) < n {
		// Keys share prefixes: "key-" + a few random bytes.
		uk := fmt.Appendf(nil, "k%03d/%s", rng.IntN(400), randBytes(rng, rng.IntN(6)))
		if seen[string(uk)] {
			continue
		}
		seen[string(uk)] = true
		versions := 1
		if rng.IntN(3) == 0 {
			versions += rng.IntN(5)
		}
		for range versions {
			seq += base.SeqNum(1 + rng.IntN(3))
			kind := []base.Kind{base.KindSet, base.KindSet, base.KindSet, base.KindDelete, base.KindMerge, base.KindValuePointer}[rng.IntN(6)]
			var v []byte
			if kind != base.KindDelete {
				size := rng.IntN(120)
				if bigValues && rng.IntN(50) == 0 {
					size = 5000 + rng.IntN(20000)
				}
				v = randValue(rng, size)
			}
			out = append(out, kv{base.MakeInternalKey(uk, seq, kind), v})
		}
	}
	slices.SortFunc(out, func(a, b kv) int { return base.InternalCompare(a.key, b.key) })
	return out
}

func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + rng.IntN(26))
	}
	return b
}

// randValue returns a value that compresses somewhat.
func randValue(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		if rng.IntN(4) == 0 {
			b[i] = byte(rng.Uint32())
		} else {
			b[i] = "abcdefgh"[rng.IntN(8)]
		}
	}
	return b
}

// genRangeDels returns n tombstones in writer order.
func genRangeDels(rng *rand.Rand, n int) []base.RangeTombstone {
	var ts []base.RangeTombstone
	for range n {
		s := fmt.Appendf(nil, "k%03d", rng.IntN(400))
		e := fmt.Appendf(nil, "k%03d", 400+rng.IntN(100))
		ts = append(ts, base.RangeTombstone{Start: s, End: e, Seq: base.SeqNum(1 + rng.IntN(1000))})
	}
	slices.SortFunc(ts, func(a, b base.RangeTombstone) int {
		return base.InternalCompare(base.MakeInternalKey(a.Start, a.Seq, base.KindRangeDelete),
			base.MakeInternalKey(b.Start, b.Seq, base.KindRangeDelete))
	})
	return slices.CompactFunc(ts, func(a, b base.RangeTombstone) bool {
		return bytes.Equal(a.Start, b.Start) && a.Seq == b.Seq
	})
}

type tableSpec struct {
	entries   []kv
	rangeDels []base.RangeTombstone
	meta      map[string][]byte
	userProps map[string]string
}

// writeTable builds a table from spec, interleaving range dels with points.
func writeTable(t testing.TB, spec tableSpec, o WriterOptions) (*testFile, *WriterMetadata) {
	t.Helper()
	f := newTestFile(t)
	w := NewWriter(f, o)
	rd := spec.rangeDels
	for i, e := range spec.entries {
		if len(rd) > 0 && i%7 == 0 {
			if err := w.AddRangeDel(rd[0].Start, rd[0].End, rd[0].Seq); err != nil {
				t.Fatal(err)
			}
			rd = rd[1:]
		}
		if err := w.Add(e.key, e.value); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range rd {
		if err := w.AddRangeDel(r.Start, r.End, r.Seq); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(spec.meta)) {
		if err := w.AddMetaBlock(name, spec.meta[name]); err != nil {
			t.Fatal(err)
		}
	}
	for k, v := range spec.userProps {
		w.SetUserProperty(k, v)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if !f.closed || f.syncs == 0 {
		t.Fatalf("Close did not sync and close the file (closed=%v syncs=%d)", f.closed, f.syncs)
	}
	f = f.reopen(t)
	md := w.Metadata()
	if size := f.size(t); md.Size != uint64(size) {
		t.Fatalf("Metadata.Size = %d, file has %d bytes", md.Size, size)
	}
	return f, md
}

func openTable(t testing.TB, f *testFile, o ReaderOptions) *Reader {
	t.Helper()
	r, err := NewReader(f, f.size(t), o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// mapCache is a simple Cache for tests and benchmarks.
type mapCache struct {
	mu sync.RWMutex
	m  map[cacheKey][]byte
}

type cacheKey struct {
	id     uint64
	file   base.FileNum
	offset uint64
}

func newMapCache() *mapCache { return &mapCache{m: map[cacheKey][]byte{}} }

func (c *mapCache) Get(id uint64, fn base.FileNum, off uint64) []byte {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.m[cacheKey{id, fn, off}]
}

func (c *mapCache) Set(id uint64, fn base.FileNum, off uint64, b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[cacheKey{id, fn, off}] = b
}
