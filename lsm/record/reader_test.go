package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/strata-db/strata/internal/base"
)

// smallRecs returns records for a log of a few blocks, of many sizes,
// including ones that span blocks and an empty one.
func smallRecs(blocks int) [][]byte {
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
	return recs
}

// smallLog returns a log of smallRecs(blocks) written by the Writer.
func smallLog(t testing.TB, blocks int) writtenLog {
	return writeLog(t, smallRecs(blocks))
}

// TestTruncation cuts a log at every byte offset, and also zero-fills the
// cut-off part as a preallocated file would hold it (or a file whose size
// reached the disk before its data). Either way the reader must return
// exactly the records that are wholly present and then io.EOF. Logs in
// both formats are cut; the synced one syncs now and then, so that its
// chunks carry synced offsets.
func TestTruncation(t *testing.T) {
	recs := smallRecs(3)
	rng := rand.New(rand.NewPCG(4, 4))
	for name, l := range map[string]writtenLog{
		"synced": writeLogSyncing(t, recs, func(int) bool { return rng.IntN(4) == 0 }, false),
		"legacy": writeLegacyLog(recs),
	} {
		t.Run(name, func(t *testing.T) { checkTruncation(t, l) })
	}
}

func checkTruncation(t *testing.T, l writtenLog) {
	if len(l.data) <= 2*BlockSize {
		t.Fatalf("log is only %d bytes", len(l.data))
	}
	// Steps coprime to the block size: the cuts still fall everywhere in
	// a block.
	step := 3
	if testing.Short() {
		step = 7
	}
	if raceEnabled {
		step = 19
	}
	zeroFilled := make([]byte, len(l.data))
	pr := newPrefixReader(l.recs)
	for cut := 0; cut <= len(l.data); cut += step {
		copy(zeroFilled, l.data[:cut])
		clear(zeroFilled[cut:])
		for _, data := range [][]byte{l.data[:cut], zeroFilled} {
			// A record is wholly present if it ends before the cut or,
			// zero-filled, if every byte of it after the cut was zero (the
			// high bytes of a synced offset often are).
			want := 0
			for want < len(l.ends) && (l.ends[want] <= int64(cut) ||
				len(data) == len(l.data) && allZero(l.data[cut:l.ends[want]])) {
				want++
			}
			wantOff := int64(0)
			if want > 0 {
				wantOff = l.ends[want-1]
			}
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

// chunkSpan is one chunk of a written log: [start, end), its record and
// the synced offset it carries.
type chunkSpan struct {
	start, end int64
	rec        int
	synced     int64
}

// chunkMap lists the chunks of a log written by writeLogSyncing or
// writeLegacyLog.
func chunkMap(l writtenLog) []chunkSpan {
	var spans []chunkSpan
	for i := range l.recs {
		pos := l.starts[i]
		for pos < l.ends[i] {
			hs := int64(chunkHeaderSize(l.data[pos+6]))
			n := int64(binary.LittleEndian.Uint16(l.data[pos+4:]))
			spans = append(spans, chunkSpan{pos, pos + hs + n, i, l.synced[i]})
			pos += hs + n
		}
	}
	return spans
}

// coveredBySync reports whether damage to spans[s] is corruption rather
// than a torn tail: a later chunk claims a synced offset past its start
// or, in a legacy log, any chunk follows it.
func coveredBySync(spans []chunkSpan, s int, legacy bool) bool {
	for _, c := range spans[s+1:] {
		if legacy || c.synced > spans[s].start {
			return true
		}
	}
	return false
}

// TestByteFlip changes every byte of a log in turn. A change inside a chunk
// must give the records before that chunk's record and then corruption
// naming the chunk if a later chunk claims it was synced (in a legacy log:
// if any chunk follows it), or io.EOF if nothing does (an unsynced write
// that a crash may have damaged); a change in block padding changes
// nothing. The logs end with small records so that their last block holds
// many chunks; the synced one syncs after a random third of its records,
// and once before its last few, so that every chunk but the last few is
// covered.
func TestByteFlip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	recs := smallRecs(4)
	for range 20 {
		recs = append(recs, randBytes(rng, rng.IntN(300)))
	}
	for _, tc := range []struct {
		name   string
		l      writtenLog
		legacy bool
	}{
		{"synced", writeLogSyncing(t, recs, func(i int) bool { return rng.IntN(3) == 0 || i == len(recs)-6 }, false), false},
		{"legacy", writeLegacyLog(recs), true},
	} {
		t.Run(tc.name, func(t *testing.T) { checkByteFlips(t, tc.l, tc.legacy, rand.New(rand.NewPCG(3, 3))) })
	}
}

func checkByteFlips(t *testing.T, l writtenLog, legacy bool, rng *rand.Rand) {
	spans := chunkMap(l)
	if last := spans[len(spans)-1].start / BlockSize; spans[len(spans)-10].start/BlockSize != last {
		t.Fatal("the last block holds fewer than 10 chunks")
	}
	step := 3 // coprime to the block size, as in checkTruncation
	if testing.Short() {
		step = 13
	}
	if raceEnabled {
		step = 31
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
			if coveredBySync(spans, s, legacy) {
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

// laterBlock pads b to the next block boundary and appends a valid legacy
// chunk there, so that anything bad in b is corruption rather than a torn tail.
func laterBlock(b []byte) []byte {
	b = append(b, make([]byte, BlockSize-len(b)%BlockSize)...)
	return append(b, rawChunk(legacyFullChunk, "later", false)...)
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// sequenceCase is a hand-built log and what reading it must give.
type sequenceCase struct {
	name    string
	data    []byte
	recs    []string
	corrupt int64 // -1: io.EOF
}

// checkSequences reads each case's log with a Reader, checking it against
// the model, and checks the model against the case.
func checkSequences(t *testing.T, cases []sequenceCase) {
	for _, tc := range cases {
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

// TestLegacyChunkSequences reads hand-built legacy logs: a bad chunk is a
// torn tail only if no valid chunk follows it.
func TestLegacyChunkSequences(t *testing.T) {
	full := func(s string) []byte { return rawChunk(legacyFullChunk, s, false) }
	first := func(s string) []byte { return rawChunk(legacyFirstChunk, s, false) }
	middle := func(s string) []byte { return rawChunk(legacyMiddleChunk, s, false) }
	last := func(s string) []byte { return rawChunk(legacyLastChunk, s, false) }
	a := full("a")
	checkSequences(t, []sequenceCase{
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
		{"bad checksum at end", cat(a, rawChunk(legacyFullChunk, "b", true)), []string{"a"}, -1},
		{"bad checksum, later block", laterBlock(cat(a, rawChunk(legacyFullChunk, "b", true))), []string{"a"}, int64(len(a))},
		{"bad checksum, valid chunk later in the same block", cat(a, rawChunk(legacyFullChunk, "b", true), a), []string{"a"}, int64(len(a))},
		{"bad checksum, zeros, valid chunk in the same block", cat(a, rawChunk(legacyFullChunk, "b", true), make([]byte, 100), a), []string{"a"}, int64(len(a))},
		{"type 0, valid chunk later in the same block", cat(a, make([]byte, 20), a), []string{"a"}, int64(len(a))},
		{"type 9, valid chunk later in the same block", cat(a, rawChunk(9, "b", false), a), []string{"a"}, int64(len(a))},
		{"length overruns file, valid chunk before the end", cat(a, rawChunk(legacyFullChunk, strings.Repeat("b", 100), false)[:legacyHeaderSize], a), []string{"a"}, int64(len(a))},
		{"bad checksum, valid chunk mid later block", cat(laterBlock(cat(a, rawChunk(legacyFullChunk, "b", true)))[:BlockSize], make([]byte, 50), a), []string{"a"}, int64(len(a))},
		{"bad checksum, garbage after", cat(a, rawChunk(legacyFullChunk, "b", true), []byte("\x01\x02\x03\x04\x05\x00\x01garbage")), []string{"a"}, -1},
		{"type 0, later block", laterBlock(cat(a, make([]byte, 20))), []string{"a"}, int64(len(a))},
		{"type 9, later block", laterBlock(cat(a, rawChunk(9, "b", false))), []string{"a"}, int64(len(a))},
		{"length overruns file", cat(a, rawChunk(legacyFullChunk, "bcd", false)[:legacyHeaderSize+2]), []string{"a"}, -1},
		{"torn header", cat(a, full("b")[:4]), []string{"a"}, -1},
		{"record torn across blocks", laterBlock(cat(a, first("b")))[:BlockSize+3], []string{"a"}, -1},
		{"zeros then valid later block", laterBlock(cat(a, make([]byte, 2*BlockSize))), []string{"a"}, int64(len(a))},
		{"zeros only", make([]byte, 2*BlockSize+5), nil, -1},
	})
}

// TestSyncedChunkSequences reads hand-built logs of chunks that carry a
// synced offset: a bad chunk is corruption only if a valid chunk after it
// claims a synced offset past it (or is a legacy chunk).
func TestSyncedChunkSequences(t *testing.T) {
	chunk := func(typ byte, synced uint64, s string) []byte { return syncedChunk(typ, synced, s, false) }
	full := func(s string) []byte { return chunk(fullChunk, 0, s) }
	bad := syncedChunk(fullChunk, 0, "b", true)
	a := full("a")
	x := uint64(len(a)) // the offset of the chunk after a
	// later pads b to the next block boundary and appends a valid chunk
	// there that claims synced offset synced.
	later := func(b []byte, synced uint64) []byte {
		b = append(b, make([]byte, BlockSize-len(b)%BlockSize)...)
		return append(b, chunk(fullChunk, synced, "later")...)
	}
	long := strings.Repeat("l", BlockSize-headerSize-(headerSize-1))
	checkSequences(t, []sequenceCase{
		{"empty file", nil, nil, -1},
		{"multi-chunk record", cat(a, chunk(firstChunk, 0, "b"), chunk(middleChunk, 0, "c"), chunk(lastChunk, 0, "d")), []string{"a", "bcd"}, -1},
		{"FIRST then end", cat(a, chunk(firstChunk, 0, "b")), []string{"a"}, -1},
		{"FIRST then FULL", cat(a, chunk(firstChunk, 0, "b"), full("c")), []string{"a"}, int64(2 * x)},
		{"MIDDLE outside record", cat(a, chunk(middleChunk, 0, "b"), full("c")), []string{"a"}, int64(x)},
		{"LAST outside record", cat(a, chunk(lastChunk, 0, "b")), []string{"a"}, int64(x)},
		{"bad checksum at end", cat(a, bad), []string{"a"}, -1},
		{"bad checksum, unsynced chunk after", cat(a, bad, full("c")), []string{"a"}, -1},
		{"bad checksum, chunk after synced up to it", cat(a, bad, chunk(fullChunk, x, "c")), []string{"a"}, -1},
		{"bad checksum, chunk after synced past it", cat(a, bad, chunk(fullChunk, x+1, "c")), []string{"a"}, int64(x)},
		{"bad checksum, later block synced up to it", later(cat(a, bad), x), []string{"a"}, -1},
		{"bad checksum, later block synced past it", later(cat(a, bad), x+1), []string{"a"}, int64(x)},
		{"bad checksum, legacy chunk after", cat(a, bad, rawChunk(legacyFullChunk, "c", false)), []string{"a"}, int64(x)},
		{"zero page, unsynced chunks after", cat(a, make([]byte, 4096), full("c"), full("d")), []string{"a"}, -1},
		{"zero page, chunk after synced past it", cat(a, make([]byte, 4096), full("c"), chunk(fullChunk, x+1, "d")), []string{"a"}, int64(x)},
		{"zeros then unsynced later block", later(cat(a, make([]byte, 2*BlockSize)), 0), []string{"a"}, -1},
		{"zeros then later block synced past them", later(cat(a, make([]byte, 2*BlockSize)), x+100), []string{"a"}, int64(x)},
		{"synced to its own offset", cat(a, chunk(fullChunk, x, "b")), []string{"a", "b"}, -1},
		{"synced past its own offset", cat(a, chunk(fullChunk, x+1, "b"), full("c")), []string{"a"}, int64(x)},
		{"after a bad chunk, one synced past its own offset", cat(a, bad, make([]byte, 10), chunk(fullChunk, 1000, "c")), []string{"a"}, int64(x)},
		{"synced offset of 2^64-1", cat(a, bad, chunk(fullChunk, 1<<64-1, "c")), []string{"a"}, int64(x)},
		{"a chunk inside a valid chunk's payload is payload", cat(a, bad, full(string(chunk(fullChunk, 1000, "c")))), []string{"a"}, -1},
		{"garbage in a block tail shorter than a header", cat(full(long), bytes.Repeat([]byte{0xff}, headerSize-1), full("b")), []string{long, "b"}, -1},
		{"torn header", cat(a, full("b")[:10]), []string{"a"}, -1},
		{"header shorter than a legacy one", cat(a, full("b")[:5]), []string{"a"}, -1},
		{"length overruns file", cat(a, full("bcd")[:headerSize+2]), []string{"a"}, -1},
		{"record torn across blocks", later(cat(a, chunk(firstChunk, 0, "b")), 0)[:BlockSize+3], []string{"a"}, -1},
		{"zeros only", make([]byte, 2*BlockSize+5), nil, -1},
	})
}

func TestLengthOverrunsBlock(t *testing.T) {
	// A chunk whose length runs past the end of a full block.
	b := rawChunk(legacyFullChunk, strings.Repeat("a", BlockSize-2*legacyHeaderSize), false)
	b = append(b, rawChunk(legacyFullChunk, "xxxxxxxxxxxxxxx", false)...)
	b = laterBlock(b[:BlockSize])
	if got := checkAgainstModel(t, b); got.corrupt != BlockSize-legacyHeaderSize {
		t.Fatalf("corrupt at %d", got.corrupt)
	}
	_, err, _ := readAll(b)
	if !strings.Contains(err.Error(), "test.log") || !strings.Contains(err.Error(), "overruns") {
		t.Fatalf("error does not say what went wrong: %v", err)
	}
}

func TestReaderErrorsAreSticky(t *testing.T) {
	data := laterBlock(cat(rawChunk(legacyFullChunk, "a", false), rawChunk(legacyFullChunk, "b", true)))
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
	data := cat(rawChunk(legacyFullChunk, "a", true), make([]byte, 2*BlockSize))
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
