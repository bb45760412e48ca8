package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/vfs"
)

// testFile is a file of an in-memory filesystem (vfs.MemFS), as the Writer
// sees a log file, that counts the calls made to it and fails the ones a
// test asks for. It can fail the writeFail-th Write (counting from 1),
// writing only part of that call's bytes first, and fail Sync and Close.
type testFile struct {
	vfs.File // the open handle
	fs       *vfs.MemFS
	name     string

	writes      int   // Write calls so far
	writeFail   int   // 0: never fail
	partial     int   // bytes the failing Write still writes
	writeErr    error // returned by the failing Write (nil: a short write)
	syncErr     error // returned by Sync, which then syncs nothing
	closeErr    error // returned by Close, after closing the file
	syncs       int
	closes      int
	afterFailed int // Write calls after a failed one
	failed      bool
}

var errInjected = errors.New("injected failure")

// newTestFile creates an empty log file on a new in-memory filesystem.
func newTestFile(t testing.TB) *testFile {
	t.Helper()
	fs := vfs.NewMem()
	const name = "test.log"
	f, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	return &testFile{File: f, fs: fs, name: name}
}

func (f *testFile) Write(p []byte) (int, error) {
	f.writes++
	if f.failed {
		f.afterFailed++
	}
	if f.writeFail != 0 && f.writes == f.writeFail {
		f.failed = true
		n, err := f.File.Write(p[:min(f.partial, len(p))])
		if err != nil {
			return n, err
		}
		return n, f.writeErr
	}
	return f.File.Write(p)
}

func (f *testFile) Sync() error {
	f.syncs++
	if f.syncErr != nil {
		return f.syncErr
	}
	return f.File.Sync()
}

func (f *testFile) Close() error {
	f.closes++
	err := f.File.Close()
	if f.closeErr != nil {
		return f.closeErr
	}
	return err
}

// contents returns what has been written to the file so far, open or
// closed.
func (f *testFile) contents(t testing.TB) []byte {
	t.Helper()
	r, err := f.fs.Open(f.name)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fi, err := r.Stat()
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, fi.Size())
	if n, err := r.ReadAt(data, 0); n < len(data) {
		t.Fatalf("reading %s: %d of %d bytes: %v", f.name, n, len(data), err)
	}
	return data
}

// discardFile is a log file whose writes go nowhere, for benchmarks and
// allocation counts.
type discardFile struct{ vfs.File }

// newDiscardFile returns a file whose other operations are an in-memory
// file's.
func newDiscardFile(t testing.TB) *discardFile { return &discardFile{newTestFile(t)} }

func (f *discardFile) Write(p []byte) (int, error) { return len(p), nil }

// writtenLog is a log built by the Writer (or, for legacy logs, by
// writeLegacyLog), with what the tests need to know about it.
type writtenLog struct {
	data   []byte
	recs   [][]byte
	starts []int64 // WriteRecord's returned offsets
	ends   []int64 // Size() after each record
	// synced is the synced offset that each record's chunks carry (all 0
	// in a legacy log).
	synced []int64
	// syncs are the offsets that each successful Sync made durable, in
	// order (Close's sync not included).
	syncs []int64
}

// writeLog writes recs with a Writer, which it closes (so the chunks carry
// synced offset 0), and returns the file's bytes.
func writeLog(t testing.TB, recs [][]byte) writtenLog {
	t.Helper()
	return writeLogSyncing(t, recs, nil, true)
}

// writeLogSyncing writes recs with a Writer, calling Sync after record i
// when sync(i) is true (sync may be nil). With closeLog it closes the
// Writer at the end; otherwise it only flushes, as a writer does that a
// crash is about to stop, and the bytes after the last sync are the
// unsynced tail.
func writeLogSyncing(t testing.TB, recs [][]byte, sync func(i int) bool, closeLog bool) writtenLog {
	t.Helper()
	f := newTestFile(t)
	w := NewWriter(f)
	l := writtenLog{recs: recs}
	synced := int64(0)
	for i, r := range recs {
		off, err := w.WriteRecord(r)
		if err != nil {
			t.Fatal(err)
		}
		l.starts = append(l.starts, off)
		l.ends = append(l.ends, w.Size())
		l.synced = append(l.synced, synced)
		if sync != nil && sync(i) {
			if err := w.Sync(); err != nil {
				t.Fatal(err)
			}
			synced = w.Size()
			l.syncs = append(l.syncs, synced)
		}
	}
	var err error
	if closeLog {
		err = w.Close()
	} else {
		err = w.Flush()
	}
	if err != nil {
		t.Fatal(err)
	}
	l.data = f.contents(t)
	return l
}

// lastSynced returns the largest synced offset a chunk of l claims: below
// it, any damage is corruption.
func (l writtenLog) lastSynced() int64 {
	if len(l.synced) == 0 {
		return 0
	}
	return l.synced[len(l.synced)-1]
}

// writeLegacyLog lays recs out in the legacy format (7-byte headers, types
// 1..4, zero padding in block tails shorter than 7 bytes), as earlier
// versions of the Writer did.
func writeLegacyLog(recs [][]byte) writtenLog {
	l := writtenLog{recs: recs}
	var b []byte
	for _, p := range recs {
		if left := BlockSize - len(b)%BlockSize; left < legacyHeaderSize {
			b = append(b, make([]byte, left)...)
		}
		l.starts = append(l.starts, int64(len(b)))
		first := true
		for {
			n := min(len(p), BlockSize-len(b)%BlockSize-legacyHeaderSize)
			last := n == len(p)
			typ := legacyMiddleChunk
			switch {
			case first && last:
				typ = legacyFullChunk
			case first:
				typ = legacyFirstChunk
			case last:
				typ = legacyLastChunk
			}
			b = append(b, rawChunk(typ, string(p[:n]), false)...)
			p = p[n:]
			first = false
			if last {
				break
			}
		}
		l.ends = append(l.ends, int64(len(b)))
		l.synced = append(l.synced, 0)
	}
	l.data = b
	return l
}

// rawChunk encodes one legacy chunk; bad corrupts its checksum.
func rawChunk(typ byte, payload string, bad bool) []byte {
	b := make([]byte, legacyHeaderSize, legacyHeaderSize+len(payload))
	b[4], b[5], b[6] = byte(len(payload)), byte(len(payload)>>8), typ
	b = append(b, payload...)
	sum := chunkChecksum(b[6:])
	if bad {
		sum++
	}
	binary.LittleEndian.PutUint32(b, sum)
	return b
}

// syncedChunk encodes one chunk that carries synced offset synced; bad
// corrupts its checksum.
func syncedChunk(typ byte, synced uint64, payload string, bad bool) []byte {
	b := make([]byte, headerSize, headerSize+len(payload))
	binary.LittleEndian.PutUint16(b[4:], uint16(len(payload)))
	b[6] = typ
	binary.LittleEndian.PutUint64(b[7:], synced)
	b = append(b, payload...)
	sum := chunkChecksum(b[6:])
	if bad {
		sum++
	}
	binary.LittleEndian.PutUint32(b, sum)
	return b
}

// randRecords returns n records of sizes drawn to hit the interesting cases:
// empty, small, block-sized and multi-block.
func randRecords(rng *rand.Rand, n int, maxLarge int) [][]byte {
	recs := make([][]byte, n)
	for i := range recs {
		var size int
		switch rng.IntN(6) {
		case 0:
			size = 0
		case 1, 2:
			size = rng.IntN(200)
		case 3:
			size = rng.IntN(4 << 10)
		case 4:
			size = BlockSize - headerSize + rng.IntN(15) - 7
		default:
			size = rng.IntN(maxLarge + 1)
		}
		recs[i] = randBytes(rng, size)
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

// readAll reads every record of data with a Reader and returns them with
// the final error and offset.
func readAll(data []byte) (recs [][]byte, err error, offset int64) {
	r := NewReader(bytes.NewReader(data), "test.log")
	for {
		rec, err := r.Next()
		if err != nil {
			return recs, err, r.Offset()
		}
		recs = append(recs, bytes.Clone(rec))
	}
}

// modelResult is what reading a log should give.
type modelResult struct {
	recs    [][]byte
	offset  int64 // end of the valid prefix
	corrupt int64 // offset of the corrupt chunk, or -1 for io.EOF
}

// modelRead is a straightforward reader of a whole log held in memory,
// written independently of Reader to serve as its model.
func modelRead(data []byte) modelResult {
	res := modelResult{corrupt: -1}
	tab := crc32.MakeTable(crc32.Castagnoli)
	blockEnd := func(pos int) int { return min((pos/BlockSize+1)*BlockSize, len(data)) }
	// chunk decodes the chunk at pos: ok if it is well formed inside its
	// block and passes its checksum.
	chunk := func(pos int) (ok bool, typ byte, synced uint64, payload []byte) {
		limit := blockEnd(pos)
		if limit-pos < 7 {
			return false, 0, 0, nil
		}
		typ = data[pos+6]
		hs := 7
		if typ >= 5 {
			hs = 15
		}
		length := int(binary.LittleEndian.Uint16(data[pos+4:]))
		if typ < 1 || typ > 8 || pos+hs+length > limit {
			return false, 0, 0, nil
		}
		c := crc32.Checksum(data[pos+6:pos+hs+length], tab)
		c = ((c >> 15) | (c << 17)) + 0xa282ead8
		if c != binary.LittleEndian.Uint32(data[pos:]) {
			return false, 0, 0, nil
		}
		if hs == 15 {
			synced = binary.LittleEndian.Uint64(data[pos+7:])
		}
		return true, typ, synced, data[pos+hs : pos+hs+length]
	}
	var cur []byte
	inRec := false
	pos := 0
	prevSynced := false // the last valid chunk carries a synced offset
	for {
		end := blockEnd(pos)
		if left := end - pos; left < 7 || left < 15 && prevSynced {
			if end == len(data) {
				return res
			}
			pos = end
			continue
		}
		ok, typ, synced, payload := chunk(pos)
		if !ok {
			// A torn tail if every valid chunk after it (found at any
			// later offset, and skipped whole once found) claims a synced
			// offset at or below pos; corruption if one claims more or is
			// a legacy chunk.
			for b := pos + 1; b < len(data); {
				ok, typ, synced, payload := chunk(b)
				if !ok {
					b++
					continue
				}
				if typ <= 4 || synced > uint64(pos) {
					res.corrupt = int64(pos)
					return res
				}
				b += 15 + len(payload)
			}
			return res
		}
		chunkPos := pos
		prevSynced = typ >= 5
		if prevSynced {
			if synced > uint64(chunkPos) {
				res.corrupt = int64(chunkPos)
				return res
			}
			pos += 15 + len(payload)
			typ -= 4
		} else {
			pos += 7 + len(payload)
		}
		switch {
		case typ == 1 && !inRec:
			res.recs = append(res.recs, bytes.Clone(payload))
			res.offset = int64(pos)
		case typ == 2 && !inRec:
			inRec = true
			cur = append([]byte(nil), payload...)
		case typ == 3 && inRec:
			cur = append(cur, payload...)
		case typ == 4 && inRec:
			res.recs = append(res.recs, append(cur, payload...))
			res.offset = int64(pos)
			inRec = false
			cur = nil
		default:
			res.corrupt = int64(chunkPos)
			return res
		}
	}
}

// checkAgainstModel reads data with a Reader and checks it against the
// model, returning the model's result.
func checkAgainstModel(t testing.TB, data []byte) modelResult {
	t.Helper()
	want := modelRead(data)
	got, err, off := readAll(data)
	if len(got) != len(want.recs) {
		t.Fatalf("read %d records, model %d (err %v)", len(got), len(want.recs), err)
	}
	for i := range got {
		if !bytes.Equal(got[i], want.recs[i]) {
			t.Fatalf("record %d differs from the model", i)
		}
	}
	if off != want.offset {
		t.Fatalf("Offset() = %d, model %d", off, want.offset)
	}
	if want.corrupt < 0 {
		if err != io.EOF {
			t.Fatalf("err = %v, want io.EOF", err)
		}
	} else {
		var ce *base.CorruptionError
		if !errors.Is(err, base.ErrCorruption) || !errors.As(err, &ce) {
			t.Fatalf("err = %v, want corruption at %d", err, want.corrupt)
		}
		if ce.Offset != want.corrupt || ce.File != "test.log" {
			t.Fatalf("corruption names %s at %d, want test.log at %d (%v)", ce.File, ce.Offset, want.corrupt, err)
		}
	}
	return want
}

// prefixReader reads logs whose records should be a prefix of want, reusing
// one Reader so that tests which read thousands of logs stay fast.
type prefixReader struct {
	r    *Reader
	src  bytes.Reader
	want [][]byte
}

func newPrefixReader(want [][]byte) *prefixReader {
	return &prefixReader{r: NewReader(nil, "test.log"), want: want}
}

// read reads data and returns how many records it held, the error that
// ended it and the final Offset. It fails t if a record is not the
// expected one.
func (p *prefixReader) read(t testing.TB, data []byte) (n int, err error, offset int64) {
	t.Helper()
	p.src.Reset(data)
	p.r.reset(&p.src, "test.log")
	for {
		rec, err := p.r.Next()
		if err != nil {
			return n, err, p.r.Offset()
		}
		if n >= len(p.want) || !bytes.Equal(rec, p.want[n]) {
			t.Fatalf("record %d is not the one written", n)
		}
		n++
	}
}
