package record

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/strata-db/strata/internal/base"
)

// smallLog returns a log of a few blocks with records of many sizes,
// including ones that span blocks and an empty one.
func smallLog(t testing.TB, blocks int) writtenLog {
	rng := rand.New(rand.NewPCG(11, uint64(blocks)))
	var recs [][]byte
	total := 0
	for total < blocks*BlockSize-BlockSize/2 {
		var size int
		switch rng.IntN(8) {
		case 0:
			size = 0
		case 1:
			size = BlockSize + rng.IntN(BlockSize/2)
		case 2:
			size = 2000 + rng.IntN(6000)
		default:
			size = rng.IntN(300)
		}
		recs = append(recs, randBytes(rng, size))
		total += size + headerSize
	}
	return writeLog(t, recs)
}

// TestTruncation cuts a log at every byte offset, and also zero-fills the
// cut-off part as a preallocated file would hold it. Either way the reader
// must return exactly the records that are wholly present and then io.EOF.
func TestTruncation(t *testing.T) {
	l := smallLog(t, 3)
	if len(l.data) <= 2*BlockSize {
		t.Fatalf("log is only %d bytes", len(l.data))
	}
	step := 1
	if testing.Short() || raceEnabled {
		step = 7 // coprime to the block size: the cuts still fall everywhere in a block
	}
	zeroFilled := make([]byte, len(l.data))
	pr := newPrefixReader(l.recs)
	for cut := 0; cut <= len(l.data); cut += step {
		want := 0
		for want < len(l.ends) && l.ends[want] <= int64(cut) {
			want++
		}
		wantOff := int64(0)
		if want > 0 {
			wantOff = l.ends[want-1]
		}
		copy(zeroFilled, l.data[:cut])
		clear(zeroFilled[cut:])
		for _, data := range [][]byte{l.data[:cut], zeroFilled} {
			got, err, off := pr.read(t, data)
			if err != io.EOF {
				t.Fatalf("cut at %d (len %d): err = %v, want io.EOF", cut, len(data), err)
			}
			if got != want || off != wantOff {
				t.Fatalf("cut at %d (len %d): %d records ending at %d, want %d ending at %d",
					cut, len(data), got, off, want, wantOff)
			}
		}
	}
}

// chunkSpan is one chunk of a written log: [start, end) and its record.
type chunkSpan struct {
	start, end int64
	rec        int
}

// chunkMap lists the chunks of a log written by writeLog.
func chunkMap(l writtenLog) []chunkSpan {
	var spans []chunkSpan
	for i := range l.recs {
		pos := l.starts[i]
		for pos < l.ends[i] {
			if BlockSize-pos%BlockSize < headerSize {
				pos = (pos/BlockSize + 1) * BlockSize
			}
			n := int64(l.data[pos+4]) | int64(l.data[pos+5])<<8
			spans = append(spans, chunkSpan{pos, pos + headerSize + n, i})
			pos += headerSize + n
		}
	}
	return spans
}

// TestByteFlip changes every byte of a log in turn. A change inside a chunk
// must give the records before that chunk's record and then corruption
// naming the chunk, or io.EOF if it is the log's last chunk (nothing valid
// follows it, so it is a torn tail); a change in block padding changes
// nothing. The log ends with small records so that its last block holds
// many chunks.
func TestByteFlip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	recs := smallLog(t, 4).recs
	for range 20 {
		recs = append(recs, randBytes(rng, rng.IntN(300)))
	}
	l := writeLog(t, recs)
	spans := chunkMap(l)
	if last := spans[len(spans)-1].start / BlockSize; spans[len(spans)-10].start/BlockSize != last {
		t.Fatal("the last block holds fewer than 10 chunks")
	}
	step := 1
	if testing.Short() || raceEnabled {
		step = 13
	}
	data := bytes.Clone(l.data)
	s := 0
	pr := newPrefixReader(l.recs)
	for pos := int64(0); pos < int64(len(data)); pos += int64(step) {
		for s < len(spans) && spans[s].end <= pos {
			s++
		}
		old := data[pos]
		data[pos] ^= byte(1 + rng.IntN(255))
		got, err, off := pr.read(t, data)
		data[pos] = old

		wantRecs, wantErrOff := len(l.recs), int64(-1)
		if s < len(spans) && spans[s].start <= pos {
			wantRecs = spans[s].rec
			if s < len(spans)-1 {
				wantErrOff = spans[s].start
			}
		}
		if got != wantRecs {
			t.Fatalf("flip at %d: %d records, want %d (err %v)", pos, got, wantRecs, err)
		}
		wantOff := int64(0)
		if wantRecs > 0 {
			wantOff = l.ends[wantRecs-1]
		}
		if off != wantOff {
			t.Fatalf("flip at %d: Offset %d, want %d", pos, off, wantOff)
		}
		if wantErrOff < 0 {
			if err != io.EOF {
				t.Fatalf("flip at %d: err = %v, want io.EOF", pos, err)
			}
			continue
		}
		var ce *base.CorruptionError
		if !errors.Is(err, base.ErrCorruption) || !errors.As(err, &ce) || ce.Offset != wantErrOff {
			t.Fatalf("flip at %d: err = %v, want corruption at %d", pos, err, wantErrOff)
		}
	}
}

// rawChunk encodes one chunk; bad corrupts its checksum.
func rawChunk(typ byte, payload string, bad bool) []byte {
	b := make([]byte, headerSize, headerSize+len(payload))
	b[4], b[5], b[6] = byte(len(payload)), byte(len(payload)>>8), typ
	b = append(b, payload...)
	sum := chunkChecksum(b[6:])
	if bad {
		sum++
	}
	b[0], b[1], b[2], b[3] = byte(sum), byte(sum>>8), byte(sum>>16), byte(sum>>24)
	return b
}

// laterBlock pads b to the next block boundary and appends a valid chunk
// there, so that anything bad in b is corruption rather than a torn tail.
func laterBlock(b []byte) []byte {
	b = append(b, make([]byte, BlockSize-len(b)%BlockSize)...)
	return append(b, rawChunk(fullChunk, "later", false)...)
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func TestChunkSequences(t *testing.T) {
	full := func(s string) []byte { return rawChunk(fullChunk, s, false) }
	first := func(s string) []byte { return rawChunk(firstChunk, s, false) }
	middle := func(s string) []byte { return rawChunk(middleChunk, s, false) }
	last := func(s string) []byte { return rawChunk(lastChunk, s, false) }
	a := full("a")
	for _, tc := range []struct {
		name    string
		data    []byte
		recs    []string
		corrupt int64 // -1: io.EOF
	}{
		{"empty file", nil, nil, -1},
		{"multi-chunk record", cat(a, first("b"), middle("c"), last("d")), []string{"a", "bcd"}, -1},
		{"FIRST then end", cat(a, first("b")), []string{"a"}, -1},
		{"FIRST MIDDLE then end", cat(a, first("b"), middle("c")), []string{"a"}, -1},
		{"FIRST then end, zero tail", cat(a, first("b"), make([]byte, 3*BlockSize)), []string{"a"}, -1},
		{"FIRST then FULL", cat(a, first("b"), full("c"), full("d")), []string{"a"}, int64(2 * len(a))},
		{"FIRST then FULL at end", cat(a, first("b"), full("c")), []string{"a"}, int64(2 * len(a))},
		{"FIRST then FIRST", cat(a, first("b"), first("c"), last("d")), []string{"a"}, int64(2 * len(a))},
		{"MIDDLE outside record", cat(a, middle("b"), full("c")), []string{"a"}, int64(len(a))},
		{"LAST outside record", cat(a, last("b")), []string{"a"}, int64(len(a))},
		{"bad checksum at end", cat(a, rawChunk(fullChunk, "b", true)), []string{"a"}, -1},
		{"bad checksum, later block", laterBlock(cat(a, rawChunk(fullChunk, "b", true))), []string{"a"}, int64(len(a))},
		{"bad checksum, valid chunk later in the same block", cat(a, rawChunk(fullChunk, "b", true), a), []string{"a"}, int64(len(a))},
		{"bad checksum, zeros, valid chunk in the same block", cat(a, rawChunk(fullChunk, "b", true), make([]byte, 100), a), []string{"a"}, int64(len(a))},
		{"type 0, valid chunk later in the same block", cat(a, make([]byte, 20), a), []string{"a"}, int64(len(a))},
		{"type 5, valid chunk later in the same block", cat(a, rawChunk(5, "b", false), a), []string{"a"}, int64(len(a))},
		{"length overruns file, valid chunk before the end", cat(a, rawChunk(fullChunk, strings.Repeat("b", 100), false)[:headerSize], a), []string{"a"}, int64(len(a))},
		{"bad checksum, valid chunk mid later block", cat(laterBlock(cat(a, rawChunk(fullChunk, "b", true)))[:BlockSize], make([]byte, 50), a), []string{"a"}, int64(len(a))},
		{"bad checksum, garbage after", cat(a, rawChunk(fullChunk, "b", true), []byte("\x01\x02\x03\x04\x05\x00\x01garbage")), []string{"a"}, -1},
		{"type 0, later block", laterBlock(cat(a, make([]byte, 20))), []string{"a"}, int64(len(a))},
		{"type 5, later block", laterBlock(cat(a, rawChunk(5, "b", false))), []string{"a"}, int64(len(a))},
		{"length overruns file", cat(a, rawChunk(fullChunk, "bcd", false)[:headerSize+2]), []string{"a"}, -1},
		{"torn header", cat(a, full("b")[:4]), []string{"a"}, -1},
		{"record torn across blocks", laterBlock(cat(a, first("b")))[:BlockSize+3], []string{"a"}, -1},
		{"zeros then valid later block", laterBlock(cat(a, make([]byte, 2*BlockSize))), []string{"a"}, int64(len(a))},
		{"zeros only", make([]byte, 2*BlockSize+5), nil, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := checkAgainstModel(t, tc.data)
			if want.corrupt != tc.corrupt {
				t.Fatalf("model: corrupt at %d, test expects %d", want.corrupt, tc.corrupt)
			}
			if len(want.recs) != len(tc.recs) {
				t.Fatalf("model: %d records, test expects %d", len(want.recs), len(tc.recs))
			}
			for i := range tc.recs {
				if string(want.recs[i]) != tc.recs[i] {
					t.Fatalf("model: record %d is %q, want %q", i, want.recs[i], tc.recs[i])
				}
			}
		})
	}
}

func TestLengthOverrunsBlock(t *testing.T) {
	// A chunk whose length runs past the end of a full block.
	b := rawChunk(fullChunk, strings.Repeat("a", BlockSize-2*headerSize), false)
	b = append(b, rawChunk(fullChunk, "xxxxxxxxxxxxxxx", false)...)
	b = laterBlock(b[:BlockSize])
	if got := checkAgainstModel(t, b); got.corrupt != BlockSize-headerSize {
		t.Fatalf("corrupt at %d", got.corrupt)
	}
	_, err, _ := readAll(b)
	if !strings.Contains(err.Error(), "test.log") || !strings.Contains(err.Error(), "overruns") {
		t.Fatalf("error does not say what went wrong: %v", err)
	}
}

func TestReaderErrorsAreSticky(t *testing.T) {
	data := laterBlock(cat(rawChunk(fullChunk, "a", false), rawChunk(fullChunk, "b", true)))
	r := NewReader(bytes.NewReader(data), "test.log")
	if rec, err := r.Next(); err != nil || string(rec) != "a" {
		t.Fatalf("first record %q, %v", rec, err)
	}
	_, err1 := r.Next()
	_, err2 := r.Next()
	if !errors.Is(err1, base.ErrCorruption) || err1 != err2 {
		t.Fatalf("errors %v then %v", err1, err2)
	}
	r = NewReader(bytes.NewReader(nil), "test.log")
	for range 3 {
		if _, err := r.Next(); err != io.EOF {
			t.Fatalf("empty log: %v", err)
		}
	}
}

// failingReader returns its data and then err.
type failingReader struct {
	data []byte
	err  error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestReaderPassesOnReadErrors(t *testing.T) {
	l := smallLog(t, 2)
	for _, cut := range []int{0, 100, BlockSize, BlockSize + 1, len(l.data) - 1} {
		r := NewReader(&failingReader{data: l.data[:cut], err: errInjected}, "test.log")
		var err error
		for err == nil {
			_, err = r.Next()
		}
		if !errors.Is(err, errInjected) || errors.Is(err, base.ErrCorruption) {
			t.Fatalf("cut %d: %v, want the read error", cut, err)
		}
	}
	// A read error while scanning for a valid later block is passed on too.
	data := cat(rawChunk(fullChunk, "a", true), make([]byte, 2*BlockSize))
	r := NewReader(&failingReader{data: data[:BlockSize+10], err: errInjected}, "test.log")
	if _, err := r.Next(); !errors.Is(err, errInjected) {
		t.Fatalf("scan: %v, want the read error", err)
	}
}

// oneByteReader returns one byte per Read, to check that the reader copes
// with short reads.
type oneByteReader struct{ data []byte }

func (r *oneByteReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	p[0] = r.data[0]
	r.data = r.data[1:]
	return 1, nil
}

func TestReaderShortReads(t *testing.T) {
	l := smallLog(t, 2)
	r := NewReader(&oneByteReader{l.data}, "test.log")
	for i, want := range l.recs {
		got, err := r.Next()
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatal(err)
	}
}

func TestNextDoesNotAllocate(t *testing.T) {
	// Small records (one chunk) and records spanning blocks.
	for _, size := range []int{100, 3 * BlockSize} {
		rng := rand.New(rand.NewPCG(9, uint64(size)))
		recs := make([][]byte, 2000*100/size+5)
		for i := range recs {
			recs[i] = randBytes(rng, size)
		}
		l := writeLog(t, recs)
		src := bytes.NewReader(l.data)
		r := NewReader(src, "test.log")
		// Warm up: let the record buffer reach its size.
		for range 3 {
			if _, err := r.Next(); err != nil {
				t.Fatal(err)
			}
		}
		allocs := testing.AllocsPerRun(len(recs)-5, func() {
			if _, err := r.Next(); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Fatalf("Next of %d-byte records: %v allocations", size, allocs)
		}
	}
}

// TestAppendToRecord checks that a caller appending to a returned record
// does not disturb the records after it.
func TestAppendToRecord(t *testing.T) {
	recs := [][]byte{[]byte("one"), []byte("two"), bytes.Repeat([]byte("3"), 2*BlockSize), []byte("four")}
	l := writeLog(t, recs)
	r := NewReader(bytes.NewReader(l.data), "test.log")
	for i, want := range recs {
		got, err := r.Next()
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("record %d: %q, %v", i, got, err)
		}
		_ = append(got, "garbage that must not land in the block"...)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatal(err)
	}
}
