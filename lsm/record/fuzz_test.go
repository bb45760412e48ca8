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
	f.Add(zeroPage(synced.data, int64(len(synced.data))/2))
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

// FuzzDamage damages a log written by the Writer, with syncs at points the
// fuzzer picks, by zeroing pages, flipping bytes and cutting the file at
// offsets it picks. The reader must return exactly the records the damage
// left whole, never another, then io.EOF or corruption; and when all the
// damage lies past the last sync, io.EOF.
func FuzzDamage(f *testing.F) {
	f.Add(uint64(1), uint64(0x1111), []byte{0, 0x80, 0, 0})
	f.Add(uint64(2), uint64(1), []byte{1, 0x10, 0, 0, 2, 0xf0, 0xff, 0xff})
	f.Add(uint64(3), uint64(0xffff), []byte{0, 0x40, 0, 0, 0, 0xc0, 0, 0})
	f.Fuzz(func(t *testing.T, seed, syncs uint64, ops []byte) {
		rng := rand.New(rand.NewPCG(seed, 0))
		recs := randRecords(rng, 16, 2*BlockSize)
		l := writeLogSyncing(t, recs, func(i int) bool { return syncs>>i&1 != 0 }, false)
		lastSync := int64(0)
		if len(l.syncs) > 0 {
			lastSync = l.syncs[len(l.syncs)-1]
		}
		data := bytes.Clone(l.data)
		damaged := int64(len(data)) // the first damaged offset
		// Each op is 4 bytes: what to do, then where (a fraction of the
		// file, 24 bits).
		for ; len(ops) >= 4 && len(data) > 0; ops = ops[4:] {
			p := int64(uint64(ops[1])|uint64(ops[2])<<8|uint64(ops[3])<<16) * int64(len(data)) >> 24
			switch ops[0] % 3 {
			case 0:
				p = p / pageSize * pageSize
				clearPage(data, p)
			case 1:
				data[p] ^= ops[0] | 1
			case 2:
				data = data[:p]
			}
			damaged = min(damaged, p)
		}
		n, err, _ := newPrefixReader(l.recs).read(t, data)
		if want := intactPrefix(l, data); n != want {
			t.Fatalf("read %d records, %d are intact (err %v)", n, want, err)
		}
		if err != io.EOF && !errors.Is(err, base.ErrCorruption) {
			t.Fatal(err)
		}
		if damaged >= lastSync && err != io.EOF {
			t.Fatalf("damage from %d, past the last sync at %d: %v", damaged, lastSync, err)
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
