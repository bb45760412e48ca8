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

// FuzzReader reads arbitrary bytes as a log. The reader must not panic and
// must agree with the model: the same records (so each record it returns
// was made of chunks whose checksums verify, in a valid sequence), the same
// end offset, and io.EOF or corruption at the same offset. The strict
// reader must return the same records and stop at the same place, turning
// at most a torn tail of a legacy log into corruption.
func FuzzReader(f *testing.F) {
	rng := rand.New(rand.NewPCG(42, 0))
	f.Add([]byte{})
	f.Add(make([]byte, 100))
	f.Add(writeLog(f, [][]byte{[]byte("a"), nil, []byte("hello world")}).data)
	f.Add(writeLog(f, randRecords(rng, 6, 2*BlockSize)).data)
	f.Add(writeLog(f, [][]byte{bytes.Repeat([]byte("x"), BlockSize-headerSize-3), []byte("y")}).data)
	synced := writeLogSyncing(f, randRecords(rng, 30, BlockSize), func(int) bool { return rng.IntN(3) == 0 }, false)
	f.Add(synced.data)
	f.Add(cat(syncedChunk(fullChunk, 0, "a", false), syncedChunk(fullChunk, 0, "b", true), syncedChunk(fullChunk, 16, "c", false)))
	f.Add(cat(syncedChunk(fullChunk, 0, "a", false), syncedChunk(fullChunk, 0, "b", true), syncedChunk(fullChunk, 17, "c", false)))
	f.Add(cat(syncedChunk(firstChunk, 0, "b", false), syncedChunk(fullChunk, 0, "c", false)))
	f.Add(writeLegacyLog(randRecords(rng, 6, 2*BlockSize)).data)
	f.Add(cat(rawChunk(legacyFirstChunk, "b", false), rawChunk(legacyFullChunk, "c", false)))
	f.Add(laterBlock(cat(rawChunk(legacyFullChunk, "a", false), rawChunk(legacyFullChunk, "b", true))))
	f.Fuzz(func(t *testing.T, data []byte) {
		want := checkAgainstModel(t, data)
		r := NewStrictReader(bytes.NewReader(data), "test.log")
		n := 0
		for {
			rec, err := r.Next()
			if err == nil {
				if n >= len(want.recs) || !bytes.Equal(rec, want.recs[n]) {
					t.Fatalf("strict reader: record %d is not the model's", n)
				}
				n++
				continue
			}
			if n != len(want.recs) || r.Offset() != want.offset {
				t.Fatalf("strict reader: %d records ending at %d, model %d ending at %d (%v)", n, r.Offset(), len(want.recs), want.offset, err)
			}
			var ce *base.CorruptionError
			if err != io.EOF && !errors.As(err, &ce) {
				t.Fatalf("strict reader: %v", err)
			}
			if want.corrupt >= 0 && (ce == nil || ce.Offset != want.corrupt) {
				t.Fatalf("strict reader: %v, model: corruption at %d", err, want.corrupt)
			}
			break
		}
	})
}

// FuzzRoundTrip writes records cut from the fuzzer's bytes (each record's
// length taken from two bytes, scaled up so records span blocks) and checks
// that they read back unchanged, with consistent offsets.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte{0, 0}, []byte("hello"))
	f.Add([]byte{0xff, 0x7f, 0, 0, 3, 0}, []byte("x"))
	f.Add([]byte{0xf9, 0x7f, 0xfa, 0x7f, 0x01, 0x00}, []byte("0123456789"))
	f.Fuzz(func(t *testing.T, lengths, fill []byte) {
		if len(lengths) > 16 {
			lengths = lengths[:16]
		}
		var recs [][]byte
		for i := 0; i+1 < len(lengths); i += 2 {
			n := int(binary.LittleEndian.Uint16(lengths[i:]))
			if n&1 != 0 {
				n *= 3 // odd lengths up to ~192 KiB: records spanning blocks
			}
			rec := make([]byte, n)
			for j := range rec {
				if len(fill) > 0 {
					rec[j] = fill[j%len(fill)]
				}
			}
			recs = append(recs, rec)
		}
		l := writeLog(t, recs)
		got, err, off := readAll(l.data)
		if err != io.EOF || len(got) != len(recs) || off != int64(len(l.data)) {
			t.Fatalf("read %d of %d records, offset %d of %d, err %v", len(got), len(recs), off, len(l.data), err)
		}
		for i := range recs {
			if !bytes.Equal(got[i], recs[i]) {
				t.Fatalf("record %d differs", i)
			}
			if i > 0 && l.starts[i] < l.ends[i-1] {
				t.Fatalf("record %d starts at %d, before the previous end %d", i, l.starts[i], l.ends[i-1])
			}
		}
	})
}
