package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/strata-db/strata/internal/base"
)

func TestRoundTripRandom(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 0))
		recs := randRecords(rng, 60, 5*BlockSize)
		l := writeLog(t, recs)
		got, err, off := readAll(l.data)
		if err != io.EOF {
			t.Fatalf("seed %d: err = %v, want io.EOF", seed, err)
		}
		if len(got) != len(recs) {
			t.Fatalf("seed %d: read %d records, wrote %d", seed, len(got), len(recs))
		}
		for i := range recs {
			if !bytes.Equal(got[i], recs[i]) {
				t.Fatalf("seed %d: record %d differs", seed, i)
			}
		}
		if off != int64(len(l.data)) {
			t.Fatalf("seed %d: Offset() at EOF = %d, file size %d", seed, off, len(l.data))
		}
		checkAgainstModel(t, l.data)
		checkOffsets(t, l)
	}
}

// checkOffsets checks WriteRecord's offsets and Size() against the file and
// against Reader.Offset.
func checkOffsets(t *testing.T, l writtenLog) {
	t.Helper()
	r := NewReader(bytes.NewReader(l.data), "test.log")
	prevEnd := int64(0)
	for i, start := range l.starts {
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
		if r.Offset() != l.ends[i] {
			t.Fatalf("record %d: Reader.Offset %d, Writer.Size %d", i, r.Offset(), l.ends[i])
		}
		// The record starts where the last ended, or at the next block
		// when the last left a tail shorter than a header.
		want := prevEnd
		if BlockSize-prevEnd%BlockSize < headerSize {
			want = (prevEnd/BlockSize + 1) * BlockSize
		}
		if start != want {
			t.Fatalf("record %d starts at %d, want %d", i, start, want)
		}
		typ := l.data[start+6]
		if typ != fullChunk && typ != firstChunk {
			t.Fatalf("record %d: chunk at its start offset has type %d", i, typ)
		}
		prevEnd = l.ends[i]
	}
}

// TestBlockTail writes records that leave every tail size from 0 to 16
// bytes at the end of the first block and checks the bytes on disk.
func TestBlockTail(t *testing.T) {
	for tail := 0; tail <= headerSize+1; tail++ {
		first := bytes.Repeat([]byte{0xab}, BlockSize-headerSize-tail)
		second := []byte("second record")
		l := writeLog(t, [][]byte{first, second, nil})
		if l.ends[0] != int64(BlockSize-tail) {
			t.Fatalf("tail %d: first record ends at %d", tail, l.ends[0])
		}
		switch {
		case tail == 0:
			// The second record starts the next block.
			if l.starts[1] != BlockSize || l.data[BlockSize+6] != fullChunk {
				t.Fatalf("tail 0: second record at %d", l.starts[1])
			}
		case tail < headerSize:
			if !bytes.Equal(l.data[BlockSize-tail:BlockSize], make([]byte, tail)) {
				t.Fatalf("tail %d: padding not zero: %x", tail, l.data[BlockSize-tail:BlockSize])
			}
			if l.starts[1] != BlockSize || l.data[BlockSize+6] != fullChunk {
				t.Fatalf("tail %d: second record at %d", tail, l.starts[1])
			}
		case tail == headerSize:
			// An empty FIRST chunk fills the tail exactly.
			h := l.data[BlockSize-headerSize : BlockSize]
			if h[6] != firstChunk || binary.LittleEndian.Uint16(h[4:]) != 0 {
				t.Fatalf("tail %d: got header %x, want an empty FIRST chunk", tail, h)
			}
			if l.starts[1] != BlockSize-headerSize || l.data[BlockSize+6] != lastChunk {
				t.Fatalf("tail %d: second record at %d", tail, l.starts[1])
			}
		default:
			if l.starts[1] != int64(BlockSize-tail) || l.data[BlockSize-tail+6] != firstChunk {
				t.Fatalf("tail %d: second record at %d", tail, l.starts[1])
			}
		}
		got, err, _ := readAll(l.data)
		if err != io.EOF || len(got) != 3 || !bytes.Equal(got[0], first) ||
			!bytes.Equal(got[1], second) || len(got[2]) != 0 {
			t.Fatalf("tail %d: read back %d records, err %v", tail, len(got), err)
		}
		checkAgainstModel(t, l.data)
	}
}

// TestLegacyBlockTail reads legacy logs whose first record leaves every
// tail size from 0 to 16 bytes at the end of the first block: a tail
// shorter than 7 bytes is padding, one of 7 an empty FIRST chunk, and a
// longer one holds a chunk.
func TestLegacyBlockTail(t *testing.T) {
	for tail := 0; tail <= headerSize+1; tail++ {
		first := bytes.Repeat([]byte{0xab}, BlockSize-legacyHeaderSize-tail)
		second := []byte("second record")
		l := writeLegacyLog([][]byte{first, second, nil})
		if tail == legacyHeaderSize {
			h := l.data[BlockSize-legacyHeaderSize : BlockSize]
			if h[6] != legacyFirstChunk || binary.LittleEndian.Uint16(h[4:]) != 0 {
				t.Fatalf("tail 7: got header %x, want an empty FIRST chunk", h)
			}
		}
		got, err, _ := readAll(l.data)
		if err != io.EOF || len(got) != 3 || !bytes.Equal(got[0], first) ||
			!bytes.Equal(got[1], second) || len(got[2]) != 0 {
			t.Fatalf("tail %d: read back %d records, err %v", tail, len(got), err)
		}
		checkAgainstModel(t, l.data)
	}
}

// TestWriterSyncedOffsets checks the synced offset in every chunk the
// Writer writes: the log's size at the last successful Sync before the
// chunk's record was written, 0 before the first.
func TestWriterSyncedOffsets(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	recs := randRecords(rng, 60, 3*BlockSize)
	l := writeLogSyncing(t, recs, func(int) bool { return rng.IntN(4) == 0 }, true)
	if len(l.syncs) < 5 {
		t.Fatalf("only %d syncs", len(l.syncs))
	}
	for _, c := range chunkMap(l) {
		want := int64(0)
		for _, s := range l.syncs {
			if s <= l.starts[c.rec] {
				want = s
			}
		}
		h := l.data[c.start:]
		if h[6] < fullChunk || h[6] > lastChunk {
			t.Fatalf("chunk at %d has type %d", c.start, h[6])
		}
		if got := int64(binary.LittleEndian.Uint64(h[7:15])); got != want {
			t.Fatalf("chunk at %d (record %d) carries synced offset %d, want %d", c.start, c.rec, got, want)
		}
	}
}

// TestRecordsAtBlockBoundaries writes records sized so that each ends
// exactly at a block boundary, including ones spanning several blocks.
func TestRecordsAtBlockBoundaries(t *testing.T) {
	var recs [][]byte
	rng := rand.New(rand.NewPCG(7, 7))
	for _, blocks := range []int{1, 1, 2, 3, 1, 4} {
		// A record spanning k blocks uses k headers.
		recs = append(recs, randBytes(rng, blocks*(BlockSize-headerSize)))
	}
	recs = append(recs, nil, []byte("x"))
	l := writeLog(t, recs)
	end := int64(0)
	for i := 0; i < 6; i++ {
		end += int64([]int{1, 1, 2, 3, 1, 4}[i]) * BlockSize
		if l.ends[i] != end {
			t.Fatalf("record %d ends at %d, want %d", i, l.ends[i], end)
		}
	}
	got, err, _ := readAll(l.data)
	if err != io.EOF || len(got) != len(recs) {
		t.Fatalf("read %d records, err %v", len(got), err)
	}
	for i := range recs {
		if !bytes.Equal(got[i], recs[i]) {
			t.Fatalf("record %d differs", i)
		}
	}
}

func TestLargeRecordBoundedBuffer(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	big := randBytes(rng, 1<<20+123)
	f := newTestFile(t)
	w := NewWriter(f)
	if _, err := w.WriteRecord(big); err != nil {
		t.Fatal(err)
	}
	if cap(w.buf) != bufSize {
		t.Fatalf("buffer grew to %d bytes", cap(w.buf))
	}
	if n := int64(len(f.contents(t))); n < w.Size()-bufSize {
		t.Fatalf("only %d of %d bytes reached the file", n, w.Size())
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, err, _ := readAll(f.contents(t))
	if err != io.EOF || len(got) != 1 || !bytes.Equal(got[0], big) {
		t.Fatalf("read %d records, err %v", len(got), err)
	}
}

func TestWriterFlushSyncSize(t *testing.T) {
	f := newTestFile(t)
	w := NewWriter(f)
	if _, err := w.WriteRecord([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if w.Size() != headerSize+5 || len(f.contents(t)) != 0 {
		t.Fatalf("Size %d, file %d bytes before Flush", w.Size(), len(f.contents(t)))
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if len(f.contents(t)) != headerSize+5 || f.syncs != 0 {
		t.Fatalf("after Flush: file %d bytes, %d syncs", len(f.contents(t)), f.syncs)
	}
	if _, err := w.WriteRecord([]byte("world")); err != nil {
		t.Fatal(err)
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	if len(f.contents(t)) != 2*(headerSize+5) || f.syncs != 1 {
		t.Fatalf("after Sync: file %d bytes, %d syncs", len(f.contents(t)), f.syncs)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if f.syncs != 2 || f.closes != 1 {
		t.Fatalf("Close: %d syncs, %d closes", f.syncs, f.closes)
	}
	for name, fn := range map[string]func() error{
		"Close":       w.Close,
		"Flush":       w.Flush,
		"Sync":        w.Sync,
		"WriteRecord": func() error { _, err := w.WriteRecord(nil); return err },
	} {
		if err := fn(); !errors.Is(err, base.ErrClosed) {
			t.Fatalf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
	if f.closes != 1 {
		t.Fatalf("file closed %d times", f.closes)
	}
}

// TestWriterStickyErrors fails the i-th Write for each i and checks that the
// Writer reports the failure from then on and never writes again.
func TestWriterStickyErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	recs := randRecords(rng, 40, 3*BlockSize)
	for _, tc := range []struct {
		name    string
		err     error
		partial int
		target  error
	}{
		{"error", errInjected, 0, errInjected},
		{"partial+error", errInjected, 100, errInjected},
		{"short write", nil, 10, io.ErrShortWrite},
	} {
		for fail := 1; ; fail++ {
			f := newTestFile(t)
			f.writeFail, f.writeErr, f.partial = fail, tc.err, tc.partial
			w := NewWriter(f)
			var firstErr error
			for i, r := range recs {
				_, err := w.WriteRecord(r)
				if err == nil && i%3 == 0 {
					err = w.Flush()
				}
				if err != nil {
					firstErr = err
					break
				}
			}
			if firstErr == nil {
				firstErr = w.Sync()
			}
			if firstErr == nil {
				if !f.failed {
					break // every Write succeeded: all failure points covered
				}
				t.Fatalf("%s, write %d: failure not reported", tc.name, fail)
			}
			if !errors.Is(firstErr, tc.target) {
				t.Fatalf("%s, write %d: got %v, want %v", tc.name, fail, firstErr, tc.target)
			}
			if _, err := w.WriteRecord([]byte("more")); !errors.Is(err, tc.target) {
				t.Fatalf("%s: WriteRecord after failure: %v", tc.name, err)
			}
			if err := w.Flush(); !errors.Is(err, tc.target) {
				t.Fatalf("%s: Flush after failure: %v", tc.name, err)
			}
			if err := w.Sync(); !errors.Is(err, tc.target) {
				t.Fatalf("%s: Sync after failure: %v", tc.name, err)
			}
			if err := w.Close(); !errors.Is(err, tc.target) {
				t.Fatalf("%s: Close after failure: %v", tc.name, err)
			}
			if err := w.Close(); err == nil {
				t.Fatalf("%s: second Close succeeded", tc.name)
			}
			if f.afterFailed != 0 || f.syncs != 0 || f.closes != 1 {
				t.Fatalf("%s: after failure: %d writes, %d syncs; %d closes",
					tc.name, f.afterFailed, f.syncs, f.closes)
			}
			// Whatever reached the file reads as a prefix of the records.
			got, err, _ := readAll(f.contents(t))
			if err != io.EOF {
				t.Fatalf("%s: reading the failed log: %v", tc.name, err)
			}
			for i := range got {
				if !bytes.Equal(got[i], recs[i]) {
					t.Fatalf("%s: record %d of the failed log differs", tc.name, i)
				}
			}
		}
	}
}

func TestWriterSyncAndCloseErrors(t *testing.T) {
	f := newTestFile(t)
	f.syncErr = errInjected
	w := NewWriter(f)
	if _, err := w.WriteRecord([]byte("a")); err != nil {
		t.Fatal(err)
	}
	if err := w.Sync(); !errors.Is(err, errInjected) {
		t.Fatalf("Sync: %v", err)
	}
	f.syncErr = nil
	if err := w.Sync(); !errors.Is(err, errInjected) {
		t.Fatalf("Sync after a failed Sync: %v, want the sticky error", err)
	}
	if _, err := w.WriteRecord([]byte("b")); !errors.Is(err, errInjected) {
		t.Fatalf("WriteRecord after a failed Sync: %v", err)
	}
	if err := w.Close(); !errors.Is(err, errInjected) || f.closes != 1 {
		t.Fatalf("Close: %v, %d closes", err, f.closes)
	}

	f = newTestFile(t)
	f.closeErr = errInjected
	w = NewWriter(f)
	if err := w.Close(); !errors.Is(err, errInjected) {
		t.Fatalf("Close with a failing file Close: %v", err)
	}
	if err := w.Close(); err == nil {
		t.Fatal("second Close succeeded")
	}
}

func TestWriteRecordDoesNotAllocate(t *testing.T) {
	w := NewWriter(newDiscardFile(t))
	rec := make([]byte, 100)
	allocs := testing.AllocsPerRun(2000, func() {
		if _, err := w.WriteRecord(rec); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("WriteRecord of 100 bytes: %v allocations", allocs)
	}
}
