package sstable

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/strata-db/strata/internal/base"
)

// readWholeTable opens the table and reads every byte of it through the
// public API: all entries forward and backward, a Get of every entry and
// every meta block. Entries read must match the model. It returns the
// first error.
func readWholeTable(t *testing.T, f *testFile, size int64, spec tableSpec) error {
	t.Helper()
	r, err := NewReader(f, size, ReaderOptions{FileNum: 12})
	if err != nil {
		return err
	}
	m := model(spec.entries)
	it := r.NewIter()
	pos := 0
	for ok := it.First(); ok; ok = it.Next() {
		if pos >= len(m) || base.InternalCompare(it.Key(), m[pos].key) != 0 || it.Key().Trailer != m[pos].key.Trailer || !bytes.Equal(it.Value(), m[pos].value) {
			t.Fatalf("wrong entry %s at position %d", it.Key(), pos)
		}
		pos++
	}
	if err := it.Close(); err != nil {
		return err
	}
	if pos != len(m) {
		t.Fatalf("scan returned %d of %d entries without an error", pos, len(m))
	}
	for _, e := range m {
		v, kind, seq, ok, err := r.Get(e.key.UserKey, e.key.SeqNum())
		if err != nil {
			return err
		}
		if !ok || kind != e.key.Kind() || seq != e.key.SeqNum() || !bytes.Equal(v, e.value) {
			t.Fatalf("Get(%s) returned a wrong answer without an error", e.key)
		}
	}
	checkRangeDels(t, r.RangeTombstones(), spec.rangeDels)
	for name, want := range spec.meta {
		got, ok, err := r.MetaBlock(name)
		if err != nil {
			return err
		}
		if !ok || !bytes.Equal(got, want) {
			t.Fatalf("MetaBlock(%q) wrong without an error", name)
		}
	}
	for k, v := range spec.userProps {
		if r.Properties().User[k] != v {
			t.Fatalf("user property %q wrong without an error", k)
		}
	}
	return nil
}

func smallSpec(rng *rand.Rand) tableSpec {
	return tableSpec{
		entries:   genEntries(rng, 40, false),
		rangeDels: genRangeDels(rng, 3),
		meta:      map[string][]byte{"extra": []byte("meta block contents")},
		userProps: map[string]string{"p": "v"},
	}
}

// TestCorruptionEveryByte flips one bit in every byte of a small table in
// turn: every flip must be reported as corruption, and nothing wrong may be
// returned before that.
func TestCorruptionEveryByte(t *testing.T) {
	for _, c := range []Compression{NoCompression, SnappyCompression, ZstdCompression} {
		t.Run(c.String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(11, uint64(c)))
			spec := smallSpec(rng)
			f, _ := writeTable(t, spec, WriterOptions{Compression: c, BlockSize: 256, BlockRestartInterval: 4})
			data := f.contents(t)
			if err := readWholeTable(t, f, int64(len(data)), spec); err != nil {
				t.Fatal(err)
			}
			t.Logf("table of %d bytes", len(data))
			for i := range data {
				bad := bytes.Clone(data)
				bad[i] ^= 1 << (i % 8)
				err := readWholeTable(t, readOnly(t, bad), int64(len(bad)), spec)
				if err == nil {
					t.Fatalf("flip at byte %d went undetected", i)
				}
				if !errors.Is(err, base.ErrCorruption) {
					t.Fatalf("flip at byte %d: error %v is not a corruption", i, err)
				}
				var ce *base.CorruptionError
				if !errors.As(err, &ce) || ce.File != "000012.sst" || ce.Offset < 0 || ce.Offset > int64(i) {
					t.Fatalf("flip at byte %d: error %v does not name the file and the offset of the block", i, err)
				}
			}
		})
	}
}

func TestCorruptionTruncated(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 13))
	spec := smallSpec(rng)
	f, _ := writeTable(t, spec, WriterOptions{BlockSize: 256})
	data := f.contents(t)
	for n := range len(data) {
		// The size says n: the footer is read from the wrong place.
		if err := readWholeTable(t, readOnly(t, data[:n]), int64(n), spec); !errors.Is(err, base.ErrCorruption) {
			t.Fatalf("truncated to %d bytes: %v", n, err)
		}
		// The size is right but the file is shorter.
		if err := readWholeTable(t, readOnly(t, data[:n]), int64(len(data)), spec); !errors.Is(err, base.ErrCorruption) {
			t.Fatalf("file cut to %d bytes: %v", n, err)
		}
	}
	// Size larger than the file.
	if err := readWholeTable(t, f, int64(len(data))+10, spec); !errors.Is(err, base.ErrCorruption) {
		t.Fatalf("size beyond the file: %v", err)
	}
}

// TestCorruptionIterator checks that an iterator over a corrupt data block
// stops and reports the corruption, forward and backward.
func TestCorruptionIterator(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 15))
	spec := tableSpec{entries: genEntries(rng, 500, false)}
	f, _ := writeTable(t, spec, WriterOptions{BlockSize: 512})
	r := openTable(t, f, ReaderOptions{})
	// Corrupt the middle data block.
	mid := r.index.entries[len(r.index.entries)/2].handle
	data := f.contents(t)
	data[mid.Offset+mid.Length/2] ^= 0x10
	f.rewrite(t, data)
	it := r.NewIter()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	if !errors.Is(it.Error(), base.ErrCorruption) || n == 0 || n >= len(spec.entries) {
		t.Fatalf("forward scan: %d entries, error %v", n, it.Error())
	}
	var ce *base.CorruptionError
	if !errors.As(it.Error(), &ce) || ce.Offset != int64(mid.Offset) {
		t.Fatalf("error %v does not name block offset %d", it.Error(), mid.Offset)
	}
	it.Close()
	it = r.NewIter()
	n = 0
	for ok := it.Last(); ok; ok = it.Prev() {
		n++
	}
	if !errors.Is(it.Error(), base.ErrCorruption) || n == 0 || n >= len(spec.entries) {
		t.Fatalf("backward scan: %d entries, error %v", n, it.Error())
	}
	it.Close()
	// Some seek lands in the corrupt block and fails; seeks before it work.
	seekFailed := false
	for _, e := range spec.entries {
		it = r.NewIter()
		ok := it.SeekGE(e.key.UserKey)
		err := it.Close()
		if err != nil {
			if ok || !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("SeekGE(%q) = %v, %v", e.key.UserKey, ok, err)
			}
			seekFailed = true
			break
		}
		if !ok {
			t.Fatalf("SeekGE(%q) found nothing", e.key.UserKey)
		}
	}
	if !seekFailed {
		t.Fatal("no SeekGE hit the corrupt block")
	}
	for _, e := range spec.entries {
		_, _, _, _, err := r.Get(e.key.UserKey, e.key.SeqNum())
		if err != nil {
			if !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("Get error %v", err)
			}
			return
		}
	}
	t.Fatal("no Get hit the corrupt block")
}

func TestNewReaderGarbage(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 17))
	for n := range 300 {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		if n >= footerLen {
			copy(b[n-8:], footerMagic)
		}
		_, err := NewReader(readOnly(t, b), int64(n), ReaderOptions{FileName: fmt.Sprintf("g%d", n)})
		if !errors.Is(err, base.ErrCorruption) {
			t.Fatalf("%d garbage bytes: %v", n, err)
		}
	}
}
