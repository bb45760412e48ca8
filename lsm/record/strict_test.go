package record

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/strata-db/strata/internal/base"
)

// strictRecs returns records that span two blocks, the last of them
// crossing the block boundary.
func strictRecs() [][]byte {
	var recs [][]byte
	for i := 0; i < 6; i++ {
		recs = append(recs, bytes.Repeat([]byte{byte('a' + i)}, 5500+i*7))
	}
	return recs
}

// strictLog writes strictRecs as the manifest does, syncing after every
// record; with legacy, in the legacy format.
func strictLog(t *testing.T, legacy bool) writtenLog {
	recs := strictRecs()
	if legacy {
		return writeLegacyLog(recs)
	}
	l := writeLogSyncing(t, recs, func(int) bool { return true }, false)
	if l.starts[len(recs)-1]/BlockSize == l.ends[len(recs)-1]/BlockSize {
		t.Fatal("the last record does not cross a block boundary")
	}
	return l
}

func readAllStrict(data []byte) ([][]byte, error) {
	r := NewStrictReader(bytes.NewReader(data), "MANIFEST-000001")
	var out [][]byte
	for {
		rec, err := r.Next()
		if err != nil {
			return out, err
		}
		out = append(out, append([]byte(nil), rec...))
	}
}

// TestStrictReaderTruncation: a strict reader still treats truncation as a
// torn tail and returns the whole records before it.
func TestStrictReaderTruncation(t *testing.T) {
	formats(t, func(t *testing.T, legacy bool) {
		l := strictLog(t, legacy)
		data, recs := l.data, l.recs
		for cut := 0; cut <= len(data); cut += 97 {
			got, err := readAllStrict(data[:cut])
			if err != io.EOF {
				t.Fatalf("cut at %d: %v, want io.EOF", cut, err)
			}
			for i := range got {
				if !bytes.Equal(got[i], recs[i]) {
					t.Fatalf("cut at %d: record %d differs", cut, i)
				}
			}
		}
	})
}

// TestStrictReaderFlipsLegacy: in a legacy log, a flipped byte anywhere is
// reported as corruption, except where the flip makes the final chunk
// claim more bytes than the file holds, which is indistinguishable from a
// torn write. No wrong record is ever returned.
func TestStrictReaderFlipsLegacy(t *testing.T) {
	l := strictLog(t, true)
	data, recs := l.data, l.recs
	// Length bytes of the chunk headers in the last block: growing one of
	// them past the end of the file looks exactly like a torn write.
	lastBlock := (len(data) - 1) / BlockSize * BlockSize
	lengthBytes := map[int]bool{}
	lastChunkHeader := 0
	for off := 0; off < len(data); {
		blockLeft := BlockSize - off%BlockSize
		if blockLeft < legacyHeaderSize {
			off += blockLeft
			continue
		}
		length := int(data[off+4]) | int(data[off+5])<<8
		if off >= lastBlock {
			lengthBytes[off+4], lengthBytes[off+5] = true, true
			lastChunkHeader = off
		}
		off += legacyHeaderSize + length
	}
	step := 1
	if testing.Short() || raceEnabled {
		step = 7
	}
	for i := 0; i < len(data); i += step {
		flipped := bytes.Clone(data)
		flipped[i] ^= 0x40
		got, err := readAllStrict(flipped)
		for j := range got {
			if j >= len(recs) || !bytes.Equal(got[j], recs[j]) {
				t.Fatalf("flip at %d: record %d is wrong", i, j)
			}
		}
		switch {
		case errors.Is(err, base.ErrCorruption):
		case err == io.EOF && len(got) == len(recs):
			// The flip landed in zero padding at a block's end.
			if flipped[i] != 0x40 {
				t.Fatalf("flip at %d: all records read, but the byte was not padding", i)
			}
		case err == io.EOF && lengthBytes[i] && i >= lastChunkHeader:
			// The final chunk's length grew past the end of the file.
		default:
			t.Fatalf("flip at %d: %v after %d records", i, err, len(got))
		}
	}
}

// TestStrictReaderFlipsSynced: in a log that was synced after every record,
// a flipped byte in any record but the last is corruption, because the
// record after it says it was synced; a flip in the last record (both of
// its chunks, which lie in different blocks) leaves nothing to tell it
// from an unsynced append that a crash damaged, so it is a torn tail. A
// flip in block padding changes nothing. No wrong record is ever returned.
func TestStrictReaderFlipsSynced(t *testing.T) {
	l := strictLog(t, false)
	data, recs := l.data, l.recs
	last := len(recs) - 1
	step := 1
	if testing.Short() || raceEnabled {
		step = 7
	}
	for i := 0; i < len(data); i += step {
		flipped := bytes.Clone(data)
		flipped[i] ^= 0x40
		got, err := readAllStrict(flipped)
		for j := range got {
			if j >= len(recs) || !bytes.Equal(got[j], recs[j]) {
				t.Fatalf("flip at %d: record %d is wrong", i, j)
			}
		}
		rec := 0
		for rec < len(recs) && l.ends[rec] <= int64(i) {
			rec++
		}
		switch {
		case rec == len(recs) || int64(i) < l.starts[rec]:
			// Block padding.
			if err != io.EOF || len(got) != len(recs) {
				t.Fatalf("flip at %d, in padding: %v after %d records", i, err, len(got))
			}
		case rec == last:
			if err != io.EOF || len(got) != last {
				t.Fatalf("flip at %d, in the last record: %v after %d records, want io.EOF after %d", i, err, len(got), last)
			}
		default:
			var ce *base.CorruptionError
			if !errors.As(err, &ce) || ce.Offset < l.starts[rec] || ce.Offset >= l.ends[rec] || len(got) != rec {
				t.Fatalf("flip at %d, in record %d: %v after %d records, want corruption in it", i, rec, err, len(got))
			}
		}
	}
}

// TestStrictReaderTailsLegacy: in a legacy log, the strict reader accepts a
// truncated last chunk and an all-zero tail as a torn tail, but only when
// nothing valid follows; a complete bad chunk is corruption even at the
// end.
func TestStrictReaderTailsLegacy(t *testing.T) {
	a := rawChunk(legacyFullChunk, "a", false)
	long := rawChunk(legacyFullChunk, string(bytes.Repeat([]byte("b"), 100)), false)
	checkStrictTails(t, a, []strictTailCase{
		{"truncated last chunk", cat(a, long[:50]), false},
		{"zeros after the last chunk", cat(a, make([]byte, 3*BlockSize)), false},
		{"zeros, then a valid chunk in the same block", cat(a, make([]byte, 40), a), true},
		{"zeros, then a valid chunk in a later block", laterBlock(cat(a, make([]byte, 40))), true},
		{"header cut short, then a valid chunk", cat(a, long[:legacyHeaderSize], a), true},
		{"bad checksum at the end", cat(a, rawChunk(legacyFullChunk, "b", true)), true},
		{"bad type at the end", cat(a, rawChunk(9, "b", false)), true},
		{"length past the block at the end", cat(a, rawChunk(legacyFullChunk, "b", false)[:4], []byte{0xff, 0xff, legacyFullChunk}), true},
	})
	// With no valid chunk before it, a bad chunk's own type tells the
	// format: a legacy one is judged strictly.
	if _, err := readAllStrict(rawChunk(legacyFullChunk, "a", true)); !errors.Is(err, base.ErrCorruption) {
		t.Fatalf("bad legacy first chunk: %v, want corruption", err)
	}
}

// TestStrictReaderTailsSynced: in a log of chunks with synced offsets, the
// strict reader decides a bad chunk as Next does, so a complete bad last
// chunk (the manifest's last edit, complete in length but with a page that
// never reached the disk) is a torn tail, and a bad chunk is corruption
// only when a chunk after it says it was synced.
func TestStrictReaderTailsSynced(t *testing.T) {
	a := syncedChunk(fullChunk, 0, "a", false)
	x := uint64(len(a))
	long := syncedChunk(fullChunk, x, string(bytes.Repeat([]byte("b"), 100)), false)
	afterIt := syncedChunk(fullChunk, x+uint64(len(long)), "c", false) // synced past the chunk at x
	checkStrictTails(t, a, []strictTailCase{
		{"truncated last chunk", cat(a, long[:50]), false},
		{"zeros after the last chunk", cat(a, make([]byte, 3*BlockSize)), false},
		{"bad checksum at the end", cat(a, syncedChunk(fullChunk, x, "b", true)), false},
		{"bad type at the end", cat(a, syncedChunk(9, x, "b", false)), false},
		{"length past the block at the end", cat(a, long[:4], []byte{0xff, 0xff}, long[6:]), false},
		{"zeroed page inside the last chunk", cat(a, long[:40], make([]byte, 20), long[60:]), false},
		{"bad checksum, then an unsynced chunk", cat(a, syncedChunk(fullChunk, x, "b", true), syncedChunk(fullChunk, x, "c", false)), false},
		{"bad checksum, then a chunk synced past it", cat(a, syncedChunk(fullChunk, x, string(bytes.Repeat([]byte("b"), 100)), true), afterIt), true},
		{"zeros, then a chunk synced past them", cat(a, make([]byte, len(long)), afterIt), true},
		{"header cut short, then a chunk synced past it", cat(a, long[:headerSize], make([]byte, len(long)-headerSize), afterIt), true},
		{"bad checksum, then a legacy chunk", cat(a, syncedChunk(fullChunk, x, "b", true), rawChunk(legacyFullChunk, "c", false)), true},
	})
	if got, err := readAllStrict(syncedChunk(fullChunk, 0, "a", true)); err != io.EOF || len(got) != 0 {
		t.Fatalf("bad first chunk of the synced format: %d records, %v; want io.EOF", len(got), err)
	}
}

// strictTailCase is a log whose first record is "a", followed by a bad
// chunk at len(a) that is a torn tail or corruption.
type strictTailCase struct {
	name    string
	data    []byte
	corrupt bool
}

func checkStrictTails(t *testing.T, a []byte, cases []strictTailCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readAllStrict(tc.data)
			if len(got) != 1 || !bytes.Equal(got[0], []byte("a")) {
				t.Fatalf("records %q, want [a]", got)
			}
			var ce *base.CorruptionError
			switch {
			case !tc.corrupt && err != io.EOF:
				t.Fatalf("err = %v, want io.EOF", err)
			case tc.corrupt && (!errors.As(err, &ce) || ce.Offset != int64(len(a))):
				t.Fatalf("err = %v, want corruption at %d", err, len(a))
			}
		})
	}
}
