package record

import (
	"bytes"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"testing"
)

// FuzzReader reads arbitrary bytes as a log. The reader must not panic and
// must agree with the model: the same records (so each record it returns
// was made of chunks whose checksums verify, in a valid sequence), the same
// end offset, and io.EOF or corruption at the same offset.
func FuzzReader(f *testing.F) {
	rng := rand.New(rand.NewPCG(42, 0))
	f.Add([]byte{})
	f.Add(make([]byte, 100))
	f.Add(writeLog(f, [][]byte{[]byte("a"), nil, []byte("hello world")}).data)
	f.Add(writeLog(f, randRecords(rng, 6, 2*BlockSize)).data)
	f.Add(cat(rawChunk(firstChunk, "b", false), rawChunk(fullChunk, "c", false)))
	f.Add(laterBlock(cat(rawChunk(fullChunk, "a", false), rawChunk(fullChunk, "b", true))))
	f.Add(writeLog(f, [][]byte{bytes.Repeat([]byte("x"), BlockSize-headerSize-3), []byte("y")}).data)
	f.Fuzz(func(t *testing.T, data []byte) {
		checkAgainstModel(t, data)
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
