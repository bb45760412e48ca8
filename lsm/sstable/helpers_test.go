package sstable

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/vfs"
)

// memFile is a minimal in-memory vfs.File for tests.
type memFile struct {
	mu       sync.RWMutex
	data     []byte
	closed   bool
	syncs    int
	writeErr error // returned by Write once set
	readErr  error // returned by ReadAt once set
}

var _ vfs.File = (*memFile)(nil)

func (f *memFile) Read(p []byte) (int, error) { return 0, errors.New("memFile: Read not supported") }

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.readErr != nil {
		return 0, f.readErr
	}
	if off < 0 {
		return 0, errors.New("memFile: negative offset")
	}
	if off >= int64(len(f.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.writeErr != nil {
		return 0, f.writeErr
	}
	if f.closed {
		return 0, os.ErrClosed
	}
	f.data = append(f.data, p...)
	return len(p), nil
}

func (f *memFile) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return os.ErrClosed
	}
	f.closed = true
	return nil
}

func (f *memFile) Sync() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.syncs++
	return nil
}

func (f *memFile) Stat() (os.FileInfo, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return memInfo{size: int64(len(f.data))}, nil
}

type memInfo struct{ size int64 }

func (i memInfo) Name() string       { return "mem" }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) Mode() os.FileMode  { return 0o644 }
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return false }
func (i memInfo) Sys() any           { return nil }

// readOnly returns a fresh open file holding data.
func readOnly(data []byte) *memFile { return &memFile{data: data} }

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
func writeTable(t testing.TB, spec tableSpec, o WriterOptions) (*memFile, *WriterMetadata) {
	t.Helper()
	f := &memFile{}
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
	md := w.Metadata()
	if md.Size != uint64(len(f.data)) {
		t.Fatalf("Metadata.Size = %d, file has %d bytes", md.Size, len(f.data))
	}
	return &memFile{data: f.data}, md
}

func openTable(t testing.TB, f *memFile, o ReaderOptions) *Reader {
	t.Helper()
	r, err := NewReader(f, int64(len(f.data)), o)
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
