package vlog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/strata-db/strata/internal/base"
)

// FuzzDecodePointer: arbitrary bytes never panic, and every accepted
// encoding is the canonical one (Encode gives the bytes back).
func FuzzDecodePointer(f *testing.F) {
	f.Add([]byte{})
	f.Add(Pointer{FileNum: 7, Offset: 1234, Length: 4110, ValueLen: 4096}.Encode(nil))
	f.Add(Pointer{FileNum: 1 << 63, Offset: 1 << 40, Length: 1<<32 - 1, ValueLen: 1<<32 - 20}.Encode(nil))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 28, 0, 6})
	f.Add([]byte{7, 28, 0x80, 0x00, 6})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := DecodePointer(b)
		if err != nil {
			if !errors.Is(err, errBadPointer) {
				t.Fatalf("error %v does not wrap errBadPointer", err)
			}
			return
		}
		if enc := p.Encode(nil); !bytes.Equal(enc, b) {
			t.Fatalf("%x decodes to %s, which encodes to %x", b, p, enc)
		}
		if len(b) > MaxPointerLen || p.Offset < HeaderLen || p.Length < p.ValueLen+minRecordLen {
			t.Fatalf("accepted %x as %s", b, p)
		}
	})
}

// fuzzSeedFiles returns value logs to seed the reader fuzzers with.
func fuzzSeedFiles(tb testing.TB) [][]byte {
	rng := rand.New(rand.NewPCG(9, 9))
	finished, _ := buildFile(tb, []kv{{[]byte("a"), []byte("apple")}, {nil, nil}, {[]byte("k"), bytes.Repeat([]byte("v"), 300)}}, true)
	unfinished, _ := buildFile(tb, []kv{{[]byte("a"), []byte("apple")}, {[]byte("b"), []byte("banana")}}, false)
	random, _ := buildFile(tb, genRecords(rng, 8, false), true)
	empty, _ := buildFile(tb, nil, true)
	return [][]byte{finished, unfinished, unfinished[:len(unfinished)-2], random, empty, empty[:HeaderLen], finished[:HeaderLen-1]}
}

// FuzzReader opens arbitrary bytes as a value log. Nothing may panic;
// every error must be corruption; every record the Scanner returns must
// read back identically through Get and ReadAhead; Gets of arbitrary
// pointers must succeed or report corruption, and agree with the scan
// when they name a scanned record.
func FuzzReader(f *testing.F) {
	for _, d := range fuzzSeedFiles(f) {
		f.Add(d, []byte{})
		f.Add(d, Pointer{FileNum: testFileNum, Offset: HeaderLen, Length: 12, ValueLen: 5}.Encode(nil))
	}
	f.Fuzz(func(t *testing.T, data, ptrBytes []byte) {
		r, _, err := openBytes(data, ReaderOptions{})
		if err != nil {
			requireCorruption(t, err, 0)
			return
		}
		recs, ptrs, scanErr := scanAll(r)
		if scanErr != nil {
			requireCorruption(t, scanErr, -1)
			if !r.Finished() {
				t.Fatalf("scan of an unfinished file failed: %v", scanErr)
			}
		}
		scanned := make(map[Pointer]int, len(ptrs))
		ra := r.NewReadAhead(1 << 10)
		for i, p := range ptrs {
			scanned[p] = i
			for _, get := range []func(Pointer, []byte) ([]byte, error){r.Get, ra.Get} {
				v, err := get(p, recs[i].key)
				if err != nil || !bytes.Equal(v, recs[i].value) {
					t.Fatalf("record %d (%s) scanned but reads back as %q, %v", i, p, v, err)
				}
			}
		}
		// Arbitrary pointers: four little-endian fields of up to 8 bytes
		// per pointer, and the key as the rest of the scan's keys.
		for len(ptrBytes) > 0 {
			var fields [4]uint64
			for j := range fields {
				var b [8]byte
				n := copy(b[:], ptrBytes[:min(len(ptrBytes), 1+int(ptrBytes[0]%8))])
				ptrBytes = ptrBytes[n:]
				fields[j] = binary.LittleEndian.Uint64(b[:])
				if len(ptrBytes) == 0 {
					break
				}
			}
			p := Pointer{FileNum: testFileNum, Offset: fields[0] % (uint64(len(data)) + 2), Length: uint32(fields[1]), ValueLen: uint32(fields[2])}
			if fields[3]&1 == 1 {
				p.FileNum = base.FileNum(fields[3])
			}
			var key []byte
			if len(recs) > 0 {
				key = recs[int(fields[3]>>1)%len(recs)].key
			}
			for _, get := range []func(Pointer, []byte) ([]byte, error){r.Get, ra.Get} {
				v, err := get(p, key)
				if err != nil {
					requireCorruption(t, err, int64(p.Offset))
					continue
				}
				if i, ok := scanned[p]; ok && !bytes.Equal(v, recs[i].value) {
					t.Fatalf("Get(%s) = %q, the scan read %q", p, v, recs[i].value)
				}
			}
		}
	})
}

// FuzzRoundTrip writes records made from the fuzzer's bytes and reads them
// back every way.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte{3, 5, 0, 0, 1, 200}, []byte("hello, world"))
	f.Add([]byte{0, 0}, []byte{})
	f.Add([]byte{1, 255, 255, 2, 0, 4}, []byte("x"))
	f.Fuzz(func(t *testing.T, lengths, fill []byte) {
		if len(lengths) > 30 {
			lengths = lengths[:30]
		}
		var recs []kv
		for i := 0; i+2 < len(lengths); i += 3 {
			kl := int(lengths[i] % 32)
			vl := int(binary.LittleEndian.Uint16(lengths[i+1:]))
			if vl&1 == 1 {
				vl *= 5 // odd lengths up to ~320 KiB: past the Writer's buffer
			}
			rec := kv{key: make([]byte, kl), value: make([]byte, vl)}
			for j := range rec.key {
				if len(fill) > 0 {
					rec.key[j] = fill[(j+i)%len(fill)]
				}
			}
			for j := range rec.value {
				if len(fill) > 0 {
					rec.value[j] = fill[j%len(fill)] + byte(j>>8)
				}
			}
			recs = append(recs, rec)
		}
		data, ptrs := buildFile(t, recs, true)
		r, _, err := openBytes(data, ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !r.Finished() {
			t.Fatal("not finished")
		}
		got, gotPtrs, err := scanAll(r)
		if err != nil {
			t.Fatal(err)
		}
		requireRecs(t, recs, got)
		ra := r.NewReadAhead(64 << 10)
		for i, p := range ptrs {
			if gotPtrs[i] != p {
				t.Fatalf("scan pointer %s, writer pointer %s", gotPtrs[i], p)
			}
			for _, get := range []func(Pointer, []byte) ([]byte, error){r.Get, ra.Get} {
				v, err := get(p, recs[i].key)
				if err != nil || !bytes.Equal(v, recs[i].value) {
					t.Fatalf("record %d: %v", i, err)
				}
			}
		}
	})
}
