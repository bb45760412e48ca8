package vlog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/vfs"
)

const testFileNum base.FileNum = 7

var testFileName = base.MakeFilename(base.FileTypeVlog, testFileNum)

// memFile is a minimal in-memory vfs.File for tests, counting reads.
type memFile struct {
	mu       sync.RWMutex
	data     []byte
	closed   bool
	writeErr error // returned by Write once set
	syncErr  error // returned by Sync once set
	readErr  error // returned by ReadAt once set

	reads, readBytes atomic.Int64
}

var _ vfs.File = (*memFile)(nil)

func newMemFile(data []byte) *memFile { return &memFile{data: data} }

func (f *memFile) Read([]byte) (int, error) { return 0, errors.New("memFile: Read not supported") }

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	f.reads.Add(1)
	f.readBytes.Add(int64(len(p)))
	if f.readErr != nil {
		return 0, f.readErr
	}
	if f.closed {
		return 0, os.ErrClosed
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

func (f *memFile) Sync() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return os.ErrClosed
	}
	return f.syncErr
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

func (f *memFile) Stat() (os.FileInfo, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return fileInfo{size: int64(len(f.data))}, nil
}

func (f *memFile) resetCounts() {
	f.reads.Store(0)
	f.readBytes.Store(0)
}

type fileInfo struct{ size int64 }

func (i fileInfo) Name() string       { return "memfile" }
func (i fileInfo) Size() int64        { return i.size }
func (i fileInfo) Mode() fs.FileMode  { return 0o644 }
func (i fileInfo) ModTime() time.Time { return time.Time{} }
func (i fileInfo) IsDir() bool        { return false }
func (i fileInfo) Sys() any           { return nil }

// kv is one record's contents.
type kv struct{ key, value []byte }

// genRecords returns n records in key order with keys of 0 to 24 bytes
// (the first key empty) and values mostly small, some empty, some of a few
// KiB and, when large is set, a few past the Writer's 256 KiB buffer.
func genRecords(rng *rand.Rand, n int, large bool) []kv {
	recs := make([]kv, n)
	for i := range recs {
		key := []byte{}
		if i > 0 {
			key = fmt.Appendf(nil, "key%06d", i)
			key = append(key, randBytes(rng, rng.IntN(16))...)
		}
		var vlen int
		switch x := rng.IntN(100); {
		case x < 5:
			vlen = 0
		case x < 60:
			vlen = 1 + rng.IntN(200)
		case x < 95 || !large:
			vlen = 1000 + rng.IntN(8000)
		default:
			vlen = 200<<10 + rng.IntN(200<<10)
		}
		recs[i] = kv{key: key, value: randBytes(rng, vlen)}
	}
	return recs
}

func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// buildFile writes recs into a value log (finished when finish is set,
// else the writer is aborted after everything reached the file) and
// returns the file's bytes and the records' pointers.
func buildFile(t testing.TB, recs []kv, finish bool) ([]byte, []Pointer) {
	t.Helper()
	f := newMemFile(nil)
	w := NewWriter(f, testFileNum)
	ptrs := make([]Pointer, len(recs))
	for i, r := range recs {
		p, err := w.Add(r.key, r.value)
		if err != nil {
			t.Fatal(err)
		}
		ptrs[i] = p
	}
	if finish {
		if err := w.Finish(); err != nil {
			t.Fatal(err)
		}
	} else {
		w.flush()
		if w.err != nil {
			t.Fatal(w.err)
		}
		if err := w.Abort(); err != nil {
			t.Fatal(err)
		}
	}
	return f.data, ptrs
}

// openBytes opens data as the value log testFileNum.
func openBytes(data []byte, o ReaderOptions) (*Reader, *memFile, error) {
	f := newMemFile(data)
	r, err := NewReader(f, testFileNum, int64(len(data)), o)
	return r, f, err
}

// requireCorruption fails unless err is a corruption error naming the
// test file at offset off (off < 0: any offset).
func requireCorruption(t testing.TB, err error, off int64) {
	t.Helper()
	if !errors.Is(err, base.ErrCorruption) {
		t.Fatalf("want a corruption error, got %v", err)
	}
	var ce *base.CorruptionError
	if !errors.As(err, &ce) {
		t.Fatalf("corruption error %v is not a *base.CorruptionError", err)
	}
	if ce.File != testFileName {
		t.Fatalf("corruption error names file %q, want %q: %v", ce.File, testFileName, err)
	}
	if off >= 0 && ce.Offset != off {
		t.Fatalf("corruption error at offset %d, want %d: %v", ce.Offset, off, err)
	}
}

// scanAll scans r and returns the records and pointers it yields and the
// scan's error.
func scanAll(r *Reader) ([]kv, []Pointer, error) {
	var recs []kv
	var ptrs []Pointer
	s := r.NewScanner()
	for s.Next() {
		recs = append(recs, kv{bytes.Clone(s.Key()), bytes.Clone(s.Value())})
		ptrs = append(ptrs, s.Pointer())
	}
	return recs, ptrs, s.Err()
}

// requireRecs fails unless got holds the records of want (nil and empty
// slices alike).
func requireRecs(t testing.TB, want, got []kv, msgAndArgs ...any) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%d records, want %d %v", len(got), len(want), msgAndArgs)
	}
	for i := range want {
		if !bytes.Equal(want[i].key, got[i].key) || !bytes.Equal(want[i].value, got[i].value) {
			t.Fatalf("record %d differs %v", i, msgAndArgs)
		}
	}
}
