package record

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/strata-db/strata/internal/base"
)

// strictLog writes records spanning two blocks and returns the file bytes,
// the records, and the offset of the last chunk header.
func strictLog(t *testing.T) ([]byte, [][]byte) {
	f := newTestFile(t)
	w := NewWriter(f)
	var recs [][]byte
	for i := 0; i < 6; i++ {
		rec := bytes.Repeat([]byte{byte('a' + i)}, 5500+i*7)
		recs = append(recs, rec)
		if _, err := w.WriteRecord(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return f.contents(t), recs
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
	data, recs := strictLog(t)
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
}

// TestStrictReaderFlips: a flipped byte anywhere is reported as corruption,
// except where the flip makes the final chunk claim more bytes than the file
// holds, which is indistinguishable from a torn write. No wrong record
// is ever returned.
func TestStrictReaderFlips(t *testing.T) {
	data, recs := strictLog(t)
	// Length bytes of the chunk headers in the last block: growing one of
	// them past the end of the file looks exactly like a torn write.
	lastBlock := (len(data) - 1) / BlockSize * BlockSize
	lengthBytes := map[int]bool{}
	lastChunkHeader := 0
	for off := 0; off < len(data); {
		blockLeft := BlockSize - off%BlockSize
		if blockLeft < headerSize {
			off += blockLeft
			continue
		}
		length := int(data[off+4]) | int(data[off+5])<<8
		if off >= lastBlock {
			lengthBytes[off+4], lengthBytes[off+5] = true, true
			lastChunkHeader = off
		}
		off += headerSize + length
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

// TestStrictReaderTails: the strict reader accepts a truncated last chunk
// and an all-zero tail as a torn tail, but only when nothing valid follows;
// a complete bad chunk is corruption even at the end.
func TestStrictReaderTails(t *testing.T) {
	a := rawChunk(fullChunk, "a", false)
	long := rawChunk(fullChunk, string(bytes.Repeat([]byte("b"), 100)), false)
	for _, tc := range []struct {
		name    string
		data    []byte
		corrupt bool
	}{
		{"truncated last chunk", cat(a, long[:50]), false},
		{"zeros after the last chunk", cat(a, make([]byte, 3*BlockSize)), false},
		{"zeros, then a valid chunk in the same block", cat(a, make([]byte, 40), a), true},
		{"zeros, then a valid chunk in a later block", laterBlock(cat(a, make([]byte, 40))), true},
		{"header cut short, then a valid chunk", cat(a, long[:headerSize], a), true},
		{"bad checksum at the end", cat(a, rawChunk(fullChunk, "b", true)), true},
	} {
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
