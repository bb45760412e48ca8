package sstable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/strata-db/strata/index/learned"
	"github.com/strata-db/strata/index/learned/learnedtest"
	"github.com/strata-db/strata/internal/base"
)

// TestInPlaceEveryByte flips, one at a time, every fifth byte of the data
// blocks of a mapped table with a learned index, in the file under the
// open Reader (the mapping shows the change at once), and looks up every
// key of the damaged block, newest and at a random snapshot, and absent
// keys next to them: each lookup returns the right entry or a corruption,
// never a wrong entry. Most flips must be noticed by some lookup (a flip
// in bytes no lookup reads, such as an older version's value, may not be;
// a scan of the block notices every one).
func TestInPlaceEveryByte(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 31))
	keys := learnedtest.KeySets[0].Gen(rng, 2000)
	m := model(entriesFor(rng, keys, true))
	f, _ := writeTable(t, tableSpec{entries: m}, WriterOptions{BlockSize: 1024, BlockRestartInterval: 8, Learned: &learned.Options{MaxShare: 1}})
	var st LearnedStats
	r, path := openDiskTable(t, f.contents(t), ReaderOptions{Map: true, LearnedStats: &st})
	x := r.lidx
	if x == nil || !x.inPlace || r.mapped == nil {
		t.Fatalf("no in-place lookups: model %+v, mapped %v", r.Learned(), r.mapped != nil)
	}
	file, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()

	var maxSeq base.SeqNum
	for _, e := range m {
		maxSeq = max(maxSeq, e.key.SeqNum())
	}
	nblocks := len(x.blocks) - 1
	dataEnd := int(x.blocks[nblocks].off)
	step := 5 // about 13,000 flips
	if testing.Short() {
		step = 37
	}
	var flips, noticed int
	blk := 0
	for off := 0; off < dataEnd; off += step {
		for int(x.blocks[blk+1].off) <= off {
			blk++
		}
		var b [1]byte
		if _, err := file.ReadAt(b[:], int64(off)); err != nil {
			t.Fatal(err)
		}
		if _, err := file.WriteAt([]byte{b[0] ^ byte(1<<(off%8))}, int64(off)); err != nil {
			t.Fatal(err)
		}
		flips++
		seen := false
		check := func(uk []byte, snap base.SeqNum) {
			want, wantOK := m.get(uk, snap)
			v, kind, seq, ok, err := r.Get(uk, snap)
			if err != nil {
				if !errors.Is(err, base.ErrCorruption) {
					t.Fatalf("flip at %d: Get(%x): %v is not a corruption", off, uk, err)
				}
				seen = true
				return
			}
			if ok != wantOK || ok && (kind != want.key.Kind() || seq != want.key.SeqNum() || !bytes.Equal(v, want.value)) {
				t.Fatalf("flip at %d: Get(%x, %d) = %v %s#%d %x, want %v %s %x", off, uk, snap, ok, kind, seq, v, wantOK, want.key, want.value)
			}
		}
		// The block's entries, and the keys around them.
		lo, hi := int(x.blocks[blk].start), int(x.blocks[blk+1].start)
		for _, e := range m[max(lo-1, 0):min(hi+1, len(m))] {
			uk := e.key.UserKey
			check(uk, base.SeqNumMax)
			check(uk, base.SeqNum(rng.Uint64N(uint64(maxSeq)+1)))
			check(append(bytes.Clone(uk), 0), base.SeqNumMax)
		}
		if seen {
			noticed++
		}
		if _, err := file.WriteAt(b[:], int64(off)); err != nil {
			t.Fatal(err)
		}
	}
	got := st.Metrics()
	t.Logf("%d flips in %d data blocks, %d noticed by lookups; %d of %d lookups in place", flips, nblocks, noticed, got.InPlace, got.Hits)
	if noticed < flips*3/4 || got.InPlace < got.Hits/2 {
		t.Fatalf("only %d of %d flips noticed, %d of %d lookups in place", noticed, flips, got.InPlace, got.Hits)
	}
}

// TestInPlaceDeclines checks the cases where a lookup must not read the
// block in place, and that the ordinary read then gives the right answer:
// an interval checksum that does not match (the block itself intact, its
// trailer checksum recomputed), a block stored compressed, and a count
// word that disagrees with the block map.
func TestInPlaceDeclines(t *testing.T) {
	rng := rand.New(rand.NewPCG(32, 32))
	keys := learnedtest.KeySets[0].Gen(rng, 4000)
	m := model(entriesFor(rng, keys, false))
	f, _ := writeTable(t, tableSpec{entries: m}, WriterOptions{Learned: &learned.Options{}})
	data := f.contents(t)
	var st LearnedStats
	probe := func(name string, data []byte, wantInPlace bool) {
		t.Helper()
		st = LearnedStats{}
		r, _ := openDiskTable(t, data, ReaderOptions{Map: true, LearnedStats: &st})
		for _, e := range m {
			v, kind, seq, ok, err := r.Get(e.key.UserKey, base.SeqNumMax)
			if err != nil || !ok || kind != e.key.Kind() || seq != e.key.SeqNum() || !bytes.Equal(v, e.value) {
				t.Fatalf("%s: Get(%x) = %v %s#%d %v, want %s", name, e.key.UserKey, ok, kind, seq, err, e.key)
			}
		}
		got := st.Metrics()
		if inPlace := got.InPlace > got.Hits/2; inPlace != wantInPlace {
			t.Fatalf("%s: %d of %d lookups in place", name, got.InPlace, got.Hits)
		}
	}
	probe("intact", data, true)

	// Block 0 with its sums zeroed (and the trailer resealed): the
	// lookups in it decline, the others still read in place.
	r := openTable(t, f.reopen(t), ReaderOptions{})
	h := r.index.entries[0].handle
	r.Close()
	bad := bytes.Clone(data)
	block := bad[h.Offset : h.Offset+h.Length]
	n := int(binary.LittleEndian.Uint32(block[len(block)-4:]) &^ sumsFlag)
	clear(block[len(block)-4-4*n : len(block)-4])
	binary.LittleEndian.PutUint32(bad[h.Offset+h.Length+1:], checksum(bad[h.Offset:h.Offset+h.Length+1]))
	// Reading the whole block (as strata check does) notices the sums.
	visit := func(k, v []byte) error { return nil }
	if err := forEachEntry(data[h.Offset:h.Offset+h.Length], "f", h.Offset, base.CompareEncoded, visit); err != nil {
		t.Fatalf("intact block 0: %v", err)
	}
	if err := forEachEntry(block, "f", h.Offset, base.CompareEncoded, visit); !errors.Is(err, base.ErrCorruption) {
		t.Fatalf("block 0 with its sums zeroed: %v", err)
	}
	probe("sums of block 0 zeroed", bad, true)
	if got := st.Metrics(); got.InPlace == got.Hits {
		t.Fatalf("sums of block 0 zeroed: all %d lookups read in place", got.Hits)
	}

	// Every block compressed (values that compress well).
	squeezed := slices.Clone(m)
	for i := range squeezed {
		if squeezed[i].value != nil {
			squeezed[i].value = bytes.Repeat([]byte{'v'}, 40)
		}
	}
	cf, _ := writeTable(t, tableSpec{entries: squeezed}, WriterOptions{Learned: &learned.Options{}, Compression: S2Compression})
	orig := m
	m = squeezed
	probe("compressed", cf.contents(t), false)
	m = orig

	// Every count word without the flag (blocks resealed).
	unflagged := bytes.Clone(data)
	rr := openTable(t, f.reopen(t), ReaderOptions{})
	for _, e := range rr.index.entries {
		h := e.handle
		word := binary.LittleEndian.Uint32(unflagged[h.Offset+h.Length-4:])
		binary.LittleEndian.PutUint32(unflagged[h.Offset+h.Length-4:], word&^sumsFlag)
		binary.LittleEndian.PutUint32(unflagged[h.Offset+h.Length+1:], checksum(unflagged[h.Offset:h.Offset+h.Length+1]))
	}
	rr.Close()
	// Without the flag the sums read as entries' bytes; the ordinary path
	// then finds garbage at the end of the block, so only check that no
	// lookup reads in place and none returns a wrong entry.
	st = LearnedStats{}
	ur, _ := openDiskTable(t, unflagged, ReaderOptions{Map: true, LearnedStats: &st})
	for _, e := range m {
		v, kind, seq, ok, err := ur.Get(e.key.UserKey, base.SeqNumMax)
		if err == nil && (!ok || kind != e.key.Kind() || seq != e.key.SeqNum() || !bytes.Equal(v, e.value)) {
			t.Fatalf("unflagged: Get(%x) = %v %s#%d, want %s", e.key.UserKey, ok, kind, seq, e.key)
		}
	}
	if got := st.Metrics(); got.InPlace != 0 {
		t.Fatalf("unflagged: %d lookups in place", got.InPlace)
	}
}
