package vlog

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/vfs"
)

const testFileNum base.FileNum = 7

var testFileName = base.MakeFilename(base.FileTypeVlog, testFileNum)

// testFile is a value-log file of an in-memory filesystem (vfs.MemFS). It
// counts ReadAt calls and the bytes they ask for, records whether it was
// closed, and fails Write, Sync or ReadAt while writeErr, syncErr or
// readErr is set (set them between operations, not while another goroutine
// uses the file).
type testFile struct {
	vfs.File // the open handle
	fs       *vfs.MemFS

	closed   bool
	writeErr error // returned by Write, which then writes nothing
	syncErr  error // returned by Sync of the open file, which then syncs nothing
	readErr  error // returned by ReadAt (still counted), which then reads nothing

	reads, readBytes atomic.Int64
	// writes are the lengths of the writes that reached the file, in order.
	writes []int
}

// createTestFile creates an empty value log on a new in-memory filesystem.
func createTestFile() (*testFile, error) {
	fs := vfs.NewMem()
	f, err := fs.Create(testFileName)
	if err != nil {
		return nil, err
	}
	return &testFile{File: f, fs: fs}, nil
}

// newTestFile creates an empty value log for a Writer.
func newTestFile(t testing.TB) *testFile {
	t.Helper()
	f, err := createTestFile()
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// openTestFile returns a value log holding a copy of data, opened for
// reading.
func openTestFile(data []byte) (*testFile, error) {
	w, err := createTestFile()
	if err != nil {
		return nil, err
	}
	if _, err := w.File.Write(data); err != nil {
		return nil, err
	}
	if err := w.File.Close(); err != nil {
		return nil, err
	}
	return w.reopen()
}

// fileWith is openTestFile for a test.
func fileWith(t testing.TB, data []byte) *testFile {
	t.Helper()
	f, err := openTestFile(data)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// reopen returns a new handle, open for reading, on the file of f (which
// may be closed), with its own counters.
func (f *testFile) reopen() (*testFile, error) {
	h, err := f.fs.Open(testFileName)
	if err != nil {
		return nil, err
	}
	return &testFile{File: h, fs: f.fs}, nil
}

// contents returns the bytes of the file, open or closed.
func (f *testFile) contents(t testing.TB) []byte {
	t.Helper()
	r, err := f.reopen()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fi, err := r.Stat()
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, fi.Size())
	if n, err := r.File.ReadAt(data, 0); n < len(data) {
		t.Fatalf("reading %s: %d of %d bytes: %v", testFileName, n, len(data), err)
	}
	return data
}

func (f *testFile) ReadAt(p []byte, off int64) (int, error) {
	f.reads.Add(1)
	f.readBytes.Add(int64(len(p)))
	if f.readErr != nil {
		return 0, f.readErr
	}
	return f.File.ReadAt(p, off)
}

func (f *testFile) Write(p []byte) (int, error) {
	if f.writeErr != nil {
		return 0, f.writeErr
	}
	n, err := f.File.Write(p)
	f.writes = append(f.writes, n)
	return n, err
}

func (f *testFile) Sync() error {
	if f.syncErr != nil && !f.closed {
		return f.syncErr
	}
	return f.File.Sync()
}

func (f *testFile) Close() error {
	f.closed = true
	return f.File.Close()
}

func (f *testFile) resetCounts() {
	f.reads.Store(0)
	f.readBytes.Store(0)
}

// discardFile is a value log whose writes go nowhere, for allocation
// counts. Its other operations are an in-memory file's.
type discardFile struct{ vfs.File }

func newDiscardFile(t testing.TB) *discardFile { return &discardFile{newTestFile(t)} }

func (f *discardFile) Write(p []byte) (int, error) { return len(p), nil }

// kv is one record's contents.
type kv struct{ key, value []byte }

// genRecords returns n records in key order with keys of 0 to 24 bytes
// (the first key empty) and values mostly small, some empty, some of a few
// KiB and, when large is set, a few of half to one and a half times the
// Writer's buffer (writerBufSize), so that some go to the file directly.
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
			vlen = writerBufSize/2 + rng.IntN(writerBufSize)
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
	f := newTestFile(t)
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
	return f.contents(t), ptrs
}

// openBytes opens data as the value log testFileNum.
func openBytes(data []byte, o ReaderOptions) (*Reader, *testFile, error) {
	f, err := openTestFile(data)
	if err != nil {
		return nil, nil, err
	}
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

// requireGets reads every record of recs through r at its pointer in ptrs
// and checks its value.
func requireGets(t testing.TB, r *Reader, recs []kv, ptrs []Pointer) {
	t.Helper()
	for i, p := range ptrs {
		v, err := r.Get(p, recs[i].key)
		if err != nil {
			t.Fatalf("record %d at %s: %v", i, p, err)
		}
		if !bytes.Equal(recs[i].value, v) {
			t.Fatalf("record %d at %s: wrong value", i, p)
		}
	}
}
