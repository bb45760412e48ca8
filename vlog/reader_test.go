package vlog

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/vfs"
)

func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	recs := genRecords(rng, 400, true)
	data, ptrs := buildFile(t, recs, true)
	r, _, err := openBytes(data, ReaderOptions{})
	require.NoError(t, err)
	defer r.Close()
	require.True(t, r.Finished())
	require.Equal(t, testFileNum, r.FileNum())

	// Pointers tile the file: header, records in order, footer.
	off := uint64(HeaderLen)
	for i, p := range ptrs {
		require.Equal(t, testFileNum, p.FileNum)
		require.Equal(t, off, p.Offset, "record %d", i)
		require.Equal(t, uint32(len(recs[i].value)), p.ValueLen)
		off = p.End()
	}
	require.Equal(t, off+FooterLen, uint64(len(data)))

	// Get of every pointer, in random order, from two goroutines.
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, i := range rand.New(rand.NewPCG(uint64(g), 9)).Perm(len(ptrs)) {
				v, err := r.Get(ptrs[i], recs[i].key)
				if err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(v, recs[i].value) {
					errs <- errors.New("wrong value")
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	got, gotPtrs, err := scanAll(r)
	require.NoError(t, err)
	requireRecs(t, recs, got)
	require.Equal(t, ptrs, gotPtrs)

	ra := r.NewReadAhead(0)
	for i, p := range ptrs {
		v, err := ra.Get(p, recs[i].key)
		require.NoError(t, err)
		require.Equal(t, recs[i].value, v)
	}
}

func TestEmptyFile(t *testing.T) {
	data, _ := buildFile(t, nil, true)
	require.Len(t, data, HeaderLen+FooterLen)
	r, _, err := openBytes(data, ReaderOptions{})
	require.NoError(t, err)
	require.True(t, r.Finished())
	got, _, err := scanAll(r)
	require.NoError(t, err)
	require.Empty(t, got)
}

func TestWriterAccounting(t *testing.T) {
	f := newTestFile(t)
	w := NewWriter(f, testFileNum)
	require.Equal(t, testFileNum, w.FileNum())
	require.Equal(t, uint64(HeaderLen), w.Size())
	require.Empty(t, f.contents(t), "the header waits in the buffer")
	var values uint64
	for i := range 100 {
		v := bytes.Repeat([]byte{byte(i)}, i*100)
		p, err := w.Add([]byte("k"), v)
		require.NoError(t, err)
		require.Equal(t, w.Size(), p.End())
		values += uint64(len(v))
	}
	require.Equal(t, uint64(100), w.Count())
	require.Equal(t, values, w.ValueBytes())
	size := w.Size()
	require.NoError(t, w.Finish())
	require.Len(t, f.contents(t), int(size)+FooterLen)
	require.True(t, f.closed)

	_, err := w.Add(nil, nil)
	require.ErrorIs(t, err, base.ErrClosed)
	require.ErrorIs(t, w.Finish(), base.ErrClosed)
	require.NoError(t, w.Abort())
}

// TestWriterLargeRecords checks records around and past the buffer size,
// which take the Writer's direct-write path.
func TestWriterLargeRecords(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var recs []kv
	for _, n := range []int{writerBufSize - 20, writerBufSize - 6, writerBufSize, writerBufSize + 1, 3 * writerBufSize, 10, 0, 2*writerBufSize + 7} {
		recs = append(recs, kv{key: randBytes(rng, 5), value: randBytes(rng, n)})
	}
	data, ptrs := buildFile(t, recs, true)
	r, _, err := openBytes(data, ReaderOptions{})
	require.NoError(t, err)
	requireGets(t, r, recs, ptrs)
	got, _, err := scanAll(r)
	require.NoError(t, err)
	requireRecs(t, recs, got)
}

// TestWriterAlignedWrites checks that every write but the last ends on a
// multiple of writerBufSize, with records of every size, after a Sync that
// writes a partial buffer, and across large records written directly.
func TestWriterAlignedWrites(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	f := newTestFile(t)
	lw := NewLiveWriter(f, testFileNum)
	var recs []kv
	var ptrs []Pointer
	add := func(n int) {
		k, v := randBytes(rng, 16), randBytes(rng, n)
		p, err := lw.Add(k, v)
		require.NoError(t, err)
		recs, ptrs = append(recs, kv{key: k, value: v}), append(ptrs, p)
	}
	for range 600 {
		add(4096 + rng.IntN(64))
	}
	require.NoError(t, lw.Sync()) // a write that ends off a boundary
	for _, n := range []int{100, 5 * writerBufSize / 2, 7, writerBufSize, 3} {
		add(n)
	}
	for range 1000 {
		add(rng.IntN(8192))
	}
	_, err := lw.Finish()
	require.NoError(t, err)

	offset, synced := 0, false
	for i, n := range f.writes {
		offset += n
		if i == len(f.writes)-1 {
			break
		}
		if offset%writerBufSize != 0 {
			require.False(t, synced, "write %d ends at %d, off a boundary, and so did an earlier one", i, offset)
			synced = true // Sync's write
		}
	}
	require.True(t, synced)
	require.Nil(t, lw.w.buf, "the buffer is dropped once the file is finished")
	data := f.contents(t)
	require.Len(t, data, offset)
	r, _, err := openBytes(data, ReaderOptions{})
	require.NoError(t, err)
	requireGets(t, r, recs, ptrs)
}

// TestWriterBufferGrows: a Writer that receives little holds a small
// buffer; one that receives much grows it to writerBufSize and no further.
func TestWriterBufferGrows(t *testing.T) {
	w := NewWriter(newDiscardFile(t), testFileNum)
	_, err := w.Add([]byte("k"), make([]byte, 1000))
	require.NoError(t, err)
	require.Equal(t, writerBufStart, cap(w.buf))
	for range 3 * writerBufSize / 4096 {
		_, err := w.Add([]byte("k"), make([]byte, 4000))
		require.NoError(t, err)
		require.LessOrEqual(t, cap(w.buf), writerBufSize)
	}
	require.Equal(t, writerBufSize, cap(w.buf))
}

func TestWriterAddDoesNotAllocate(t *testing.T) {
	w := NewWriter(newDiscardFile(t), testFileNum)
	key, value := make([]byte, 16), make([]byte, 4096)
	allocs := testing.AllocsPerRun(5000, func() {
		key[0]++
		if _, err := w.Add(key, value); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs)
}

func TestWriterCopiesInput(t *testing.T) {
	f := newTestFile(t)
	w := NewWriter(f, testFileNum)
	key, value := []byte("key"), []byte("value")
	p, err := w.Add(key, value)
	require.NoError(t, err)
	copy(key, "XXX")
	copy(value, "XXXXX")
	require.NoError(t, w.Finish())
	r, _, err := openBytes(f.contents(t), ReaderOptions{})
	require.NoError(t, err)
	v, err := r.Get(p, []byte("key"))
	require.NoError(t, err)
	require.Equal(t, "value", string(v))
}

func TestWriterErrorsAreSticky(t *testing.T) {
	boom := errors.New("boom")
	t.Run("write", func(t *testing.T) {
		f := newTestFile(t)
		w := NewWriter(f, testFileNum)
		f.writeErr = boom
		_, err := w.Add([]byte("k"), make([]byte, writerBufSize)) // fills the buffer
		require.ErrorIs(t, err, boom)
		f.writeErr = nil
		_, err = w.Add([]byte("k"), []byte("v"))
		require.ErrorIs(t, err, boom)
		require.ErrorIs(t, w.Finish(), boom)
		require.True(t, f.closed, "Finish closes the file even on error")
		require.NoError(t, w.Abort())
	})
	t.Run("sync", func(t *testing.T) {
		f := newTestFile(t)
		f.syncErr = boom
		w := NewWriter(f, testFileNum)
		_, err := w.Add([]byte("k"), []byte("v"))
		require.NoError(t, err)
		require.ErrorIs(t, w.Finish(), boom)
		require.True(t, f.closed)
	})
	t.Run("finish write", func(t *testing.T) {
		f := newTestFile(t)
		w := NewWriter(f, testFileNum)
		f.writeErr = boom
		require.ErrorIs(t, w.Finish(), boom)
		require.True(t, f.closed)
	})
}

func TestWriterAbort(t *testing.T) {
	f := newTestFile(t)
	w := NewWriter(f, testFileNum)
	_, err := w.Add([]byte("k"), []byte("v"))
	require.NoError(t, err)
	require.NoError(t, w.Abort())
	require.True(t, f.closed)
	require.Empty(t, f.contents(t), "Abort drops the buffer")
	require.NoError(t, w.Abort())
	require.ErrorIs(t, w.Finish(), base.ErrClosed)
	_, err = w.Add([]byte("k"), []byte("v"))
	require.ErrorIs(t, err, base.ErrClosed)
}

func TestUnfinishedFile(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	recs := genRecords(rng, 300, true)
	data, ptrs := buildFile(t, recs, false)
	r, _, err := openBytes(data, ReaderOptions{})
	require.NoError(t, err)
	require.False(t, r.Finished())
	requireGets(t, r, recs, ptrs)
	got, gotPtrs, err := scanAll(r)
	require.NoError(t, err)
	requireRecs(t, recs, got)
	require.Equal(t, ptrs, gotPtrs)

	// A torn last record: the scan ends before it, without an error.
	cut := data[:len(data)-3]
	r, _, err = openBytes(cut, ReaderOptions{})
	require.NoError(t, err)
	got, _, err = scanAll(r)
	require.NoError(t, err)
	requireRecs(t, recs[:len(recs)-1], got)
	s := r.NewScanner()
	for s.Next() {
	}
	require.Equal(t, ptrs[len(ptrs)-1].Offset, s.Offset())
	_, err = r.Get(ptrs[len(ptrs)-1], recs[len(recs)-1].key)
	requireCorruption(t, err, int64(ptrs[len(ptrs)-1].Offset))
}

func TestNewReaderHeader(t *testing.T) {
	data, _ := buildFile(t, []kv{{[]byte("a"), []byte("b")}}, true)
	for _, tc := range []struct {
		name    string
		fileNum base.FileNum
		data    []byte
	}{
		{"empty", testFileNum, nil},
		{"short", testFileNum, data[:HeaderLen-1]},
		{"wrong file number", testFileNum + 1, data},
		{"bad magic", testFileNum, append([]byte("X"), data[1:]...)},
		{"version 0", testFileNum, rewriteHeader(data, func(h []byte) { h[8] = 0 })},
		// A newer version and unknown flags: TestFormatVersionNewerRefused.
		{"bad checksum", testFileNum, append(bytes.Clone(data[:HeaderLen-1]), append([]byte{data[HeaderLen-1] ^ 1}, data[HeaderLen:]...)...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := fileWith(t, tc.data)
			_, err := NewReader(f, tc.fileNum, int64(len(tc.data)), ReaderOptions{FileName: "x.vlog"})
			require.ErrorIs(t, err, base.ErrCorruption)
			var ce *base.CorruptionError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, "x.vlog", ce.File)
			require.Equal(t, int64(0), ce.Offset)
		})
	}
	// A header with a valid checksum is accepted: the test helper is right.
	r, _, err := openBytes(rewriteHeader(data, func([]byte) {}), ReaderOptions{})
	require.NoError(t, err)
	require.True(t, r.Finished())
}

// rewriteHeader returns a copy of data with its header changed by fn and
// its checksum recomputed.
func rewriteHeader(data []byte, fn func(h []byte)) []byte {
	d := bytes.Clone(data)
	fn(d[:HeaderLen])
	sum := crc(d[:headerSumOff])
	d[headerSumOff], d[headerSumOff+1], d[headerSumOff+2], d[headerSumOff+3] = byte(sum), byte(sum>>8), byte(sum>>16), byte(sum>>24)
	return d
}

func TestReaderIOErrors(t *testing.T) {
	data, ptrs := buildFile(t, []kv{{[]byte("a"), []byte("b")}}, true)
	boom := errors.New("boom")
	f := fileWith(t, data)
	f.readErr = boom
	_, err := NewReader(f, testFileNum, int64(len(data)), ReaderOptions{})
	require.ErrorIs(t, err, boom)
	require.NotErrorIs(t, err, base.ErrCorruption)

	r, f, err := openBytes(data, ReaderOptions{})
	require.NoError(t, err)
	f.readErr = boom
	_, err = r.Get(ptrs[0], []byte("a"))
	require.ErrorIs(t, err, boom)
	_, err = r.NewReadAhead(0).Get(ptrs[0], []byte("a"))
	require.ErrorIs(t, err, boom)
	s := r.NewScanner()
	require.False(t, s.Next())
	require.ErrorIs(t, s.Err(), boom)

	// A file shorter than the size the caller gave: corruption.
	_, err = NewReader(fileWith(t, data), testFileNum, int64(len(data))+10, ReaderOptions{})
	requireCorruption(t, err, int64(len(data))+10-FooterLen)
	r, _, err = openBytes(data, ReaderOptions{})
	require.NoError(t, err)
	require.NoError(t, r.Close())
	_, err = r.Get(ptrs[0], []byte("a"))
	require.Error(t, err, "Get after Close")
}

func TestGetChecksPointer(t *testing.T) {
	recs := []kv{{[]byte("a"), []byte("apple")}, {[]byte("b"), []byte("banana")}, {[]byte("c"), nil}}
	data, ptrs := buildFile(t, recs, true)
	r, _, err := openBytes(data, ReaderOptions{})
	require.NoError(t, err)
	p := ptrs[1]
	for _, tc := range []struct {
		name string
		p    Pointer
		key  string
	}{
		{"wrong key", p, "a"},
		{"longer key", p, "bb"},
		{"wrong file", Pointer{FileNum: 8, Offset: p.Offset, Length: p.Length, ValueLen: p.ValueLen}, "b"},
		{"in header", Pointer{FileNum: testFileNum, Offset: 3, Length: p.Length, ValueLen: p.ValueLen}, "b"},
		{"past the records", Pointer{FileNum: testFileNum, Offset: ptrs[2].End(), Length: 6}, ""},
		{"into the footer", Pointer{FileNum: testFileNum, Offset: ptrs[2].Offset, Length: ptrs[2].Length + 1}, "c"},
		{"far away", Pointer{FileNum: testFileNum, Offset: 1 << 62, Length: 100}, "b"},
		{"short length", Pointer{FileNum: testFileNum, Offset: p.Offset, Length: p.Length - 1, ValueLen: p.ValueLen - 1}, "b"},
		{"long length", Pointer{FileNum: testFileNum, Offset: p.Offset, Length: p.Length + 1, ValueLen: p.ValueLen + 1}, "b"},
		{"wrong value length", Pointer{FileNum: testFileNum, Offset: p.Offset, Length: p.Length, ValueLen: p.ValueLen - 1}, "b"},
		{"length below value", Pointer{FileNum: testFileNum, Offset: p.Offset, Length: 5, ValueLen: 6}, "b"},
		{"mid-record", Pointer{FileNum: testFileNum, Offset: p.Offset + 1, Length: p.Length, ValueLen: p.ValueLen}, "b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := r.Get(tc.p, []byte(tc.key))
			requireCorruption(t, err, int64(tc.p.Offset))
			_, err = r.NewReadAhead(0).Get(tc.p, []byte(tc.key))
			requireCorruption(t, err, int64(tc.p.Offset))
		})
	}
	v, err := r.Get(ptrs[2], []byte("c"))
	require.NoError(t, err)
	require.Empty(t, v)
}

// TestUnnumberedFile: a value log written as Unnumbered (for ingestion)
// opens under any file number, finished, and its records read back; a
// numbered one still refuses another number.
func TestUnnumberedFile(t *testing.T) {
	fs := vfs.NewMem()
	f, err := fs.Create("ext.vlog")
	require.NoError(t, err)
	w := NewWriter(f, Unnumbered)
	p, err := w.Add([]byte("k"), []byte("value"))
	require.NoError(t, err)
	require.Equal(t, Unnumbered, p.FileNum)
	require.NoError(t, w.Finish())
	for _, num := range []base.FileNum{Unnumbered, 5, 123456} {
		f, err := fs.Open("ext.vlog")
		require.NoError(t, err)
		fi, err := f.Stat()
		require.NoError(t, err)
		r, err := NewReader(f, num, fi.Size(), ReaderOptions{})
		require.NoError(t, err, "as file %d", num)
		require.True(t, r.Finished(), "as file %d", num)
		p.FileNum = num
		v, err := r.Get(p, []byte("k"))
		require.NoError(t, err)
		require.Equal(t, "value", string(v))
		_, err = r.Get(p, []byte("other"))
		require.ErrorIs(t, err, base.ErrCorruption, "a pointer read for another key")
		require.NoError(t, r.Close())
	}
}

// barrierFile holds every ReadAt until two are in flight at once.
type barrierFile struct {
	*testFile
	mu      sync.Mutex
	waiting int
	open    chan struct{}
}

func (f *barrierFile) ReadAt(p []byte, off int64) (int, error) {
	f.mu.Lock()
	if f.waiting++; f.waiting == 2 {
		close(f.open)
	}
	f.mu.Unlock()
	select {
	case <-f.open:
	case <-time.After(time.Minute):
		return 0, errors.New("the other read never came")
	}
	return f.testFile.ReadAt(p, off)
}

// TestReaderOpensInOneRoundTrip: NewReader reads the header and the
// footer at once (a shared file's cache fetches each from the store), so
// that neither waits for the other.
func TestReaderOpensInOneRoundTrip(t *testing.T) {
	data, _ := buildFile(t, genRecords(rand.New(rand.NewPCG(3, 4)), 50, true), true)
	f := &barrierFile{testFile: fileWith(t, data), open: make(chan struct{})}
	r, err := NewReader(f, testFileNum, int64(len(data)), ReaderOptions{})
	require.NoError(t, err)
	require.True(t, r.Finished())
	require.NoError(t, r.Close())
}
