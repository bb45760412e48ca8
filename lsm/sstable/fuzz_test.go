package sstable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/strata-db/strata/index/learned"
	"github.com/strata-db/strata/internal/base"
)

// exercise reads everything an iterator can reach, in both directions and
// by seeks; it must terminate and never panic.
func exercise(it base.InternalIterator, keys [][]byte) {
	n := 0
	for ok := it.First(); ok && n < 100000; ok = it.Next() {
		_, _ = it.Key(), it.Value()
		n++
	}
	for ok := it.Last(); ok && n < 200000; ok = it.Prev() {
		_, _ = it.Key(), it.Value()
		n++
	}
	for _, k := range keys {
		if it.SeekGE(k) {
			it.Prev()
			it.Next()
			it.Next()
		}
		if it.SeekLT(k) {
			it.Next()
			it.Prev()
			it.Prev()
		}
	}
}

// blockIterAsIter adapts a blockIter to base.InternalIterator for exercise.
type blockIterAsIter struct {
	blockIter
	ok bool
}

func (b *blockIterAsIter) SeekGE(k []byte) bool {
	b.ok = b.blockIter.SeekGE(k, seekTrailer)
	return b.ok
}
func (b *blockIterAsIter) SeekLT(k []byte) bool {
	b.ok = b.blockIter.SeekLT(k, seekTrailer)
	return b.ok
}
func (b *blockIterAsIter) First() bool { b.ok = b.blockIter.First(); return b.ok }
func (b *blockIterAsIter) Last() bool  { b.ok = b.blockIter.Last(); return b.ok }
func (b *blockIterAsIter) Next() bool  { b.ok = b.ok && b.blockIter.Next(); return b.ok }
func (b *blockIterAsIter) Prev() bool  { b.ok = b.ok && b.blockIter.Prev(); return b.ok }
func (b *blockIterAsIter) Valid() bool { return b.ok }
func (b *blockIterAsIter) Key() base.InternalKey {
	if !b.ok {
		return base.InternalKey{}
	}
	return b.ikey()
}
func (b *blockIterAsIter) Value() []byte { return b.val }
func (b *blockIterAsIter) Error() error  { return b.err }
func (b *blockIterAsIter) Close() error  { return nil }

func sampleBlock(n, restartInterval int) []byte {
	rng := rand.New(rand.NewPCG(uint64(n), uint64(restartInterval)))
	w := newBlockWriter(restartInterval)
	for _, e := range genEntries(rng, n, false) {
		w.add(e.key.AppendEncoded(nil), e.value[:min(len(e.value), 8)])
	}
	return w.finish()
}

func FuzzBlockIter(f *testing.F) {
	f.Add(sampleBlock(0, 16), []byte("k"))
	f.Add(sampleBlock(5, 2), []byte("k100"))
	f.Add(sampleBlock(40, 16), []byte("k200/"))
	f.Add([]byte{0, 0, 0, 0, 1, 0, 0, 0}, []byte{})
	f.Fuzz(func(t *testing.T, data, key []byte) {
		var it blockIterAsIter
		if err := it.init(data, true, "fuzz", 0); err != nil {
			if !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("init error %v is not a corruption", err)
			}
			return
		}
		exercise(&it, [][]byte{key, nil, {0xff}})
		if it.err != nil && !errors.Is(it.err, base.ErrCorruption) {
			t.Fatalf("error %v is not a corruption", it.err)
		}
		// The same bytes as a plain block.
		err := forEachEntry(data, "fuzz", 0, nil, func(k, v []byte) error { return nil })
		if err != nil && !errors.Is(err, base.ErrCorruption) {
			t.Fatalf("forEachEntry error %v is not a corruption", err)
		}
	})
}

func fuzzSeedTables(f *testing.F) {
	rng := rand.New(rand.NewPCG(1, 1))
	for c := range numCompressions {
		spec := tableSpec{
			entries:   genEntries(rng, 30, false),
			rangeDels: genRangeDels(rng, 2),
			meta:      map[string][]byte{"m": []byte("meta")},
			userProps: map[string]string{"u": "v"},
		}
		file, _ := writeTable(f, spec, WriterOptions{Compression: c, BlockSize: 128})
		f.Add(file.contents(f))
	}
	file, _ := writeTable(f, tableSpec{}, WriterOptions{})
	f.Add(file.contents(f))
	// A table with a learned index.
	file, _ = writeTable(f, tableSpec{entries: genEntries(rng, 200, false)},
		WriterOptions{BlockSize: 256, Learned: &learned.Options{MinKeys: 1, MinKeysPerSegment: 1, MaxSpread: 1000, MaxShare: 1e9}})
	f.Add(file.contents(f))
}

func FuzzReader(f *testing.F) {
	fuzzSeedTables(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		checkFuzzedTable(t, data)
	})
}

func checkFuzzedTable(t *testing.T, data []byte) {
	r, err := NewReader(readOnly(t, data), int64(len(data)), ReaderOptions{})
	if err != nil {
		if !errors.Is(err, base.ErrCorruption) {
			t.Fatalf("NewReader error %v is not a corruption", err)
		}
		return
	}
	keys := [][]byte{nil, []byte("k100"), []byte("k2"), {0xff, 0xff}}
	it := r.NewIter()
	exercise(it, keys)
	if err := it.Close(); err != nil && !errors.Is(err, base.ErrCorruption) {
		t.Fatalf("iterator error %v is not a corruption", err)
	}
	for _, k := range keys {
		if _, _, _, _, err := r.Get(k, base.SeqNumMax); err != nil && !errors.Is(err, base.ErrCorruption) {
			t.Fatalf("Get error %v is not a corruption", err)
		}
	}
	for _, m := range r.meta {
		if _, _, err := r.MetaBlock(m.name); err != nil && !errors.Is(err, base.ErrCorruption) {
			t.Fatalf("MetaBlock error %v is not a corruption", err)
		}
	}
	_ = r.Properties().String()
}

// tableAround builds a well-formed table (valid checksums, index, properties,
// footer) whose only data block is the given bytes, so that fuzzing reaches
// the data-block decoders behind the checksums.
func tableAround(block []byte, c Compression) []byte {
	return tableAroundLearned(block, c, nil, 0)
}

// tableAroundLearned is tableAround with a learned-index block (when
// learnedBlock is not nil) and properties claiming numEntries entries, so
// that the learned index's checks of the table pass whatever the data
// block holds.
func tableAroundLearned(block []byte, c Compression, learnedBlock []byte, numEntries uint64) []byte {
	var buf []byte
	put := func(b []byte, typ Compression) blockHandle {
		h := blockHandle{Offset: uint64(len(buf)), Length: uint64(len(b))}
		buf = append(buf, b...)
		buf = append(buf, byte(typ))
		return h
	}
	seal := func(h blockHandle) {
		buf = binary.LittleEndian.AppendUint32(buf, checksum(buf[h.Offset:]))
	}
	stored, typ, _ := compressBlock(nil, block, c)
	dh := put(stored, typ)
	seal(dh)
	iw := newBlockWriter(1)
	iw.add(base.MakeInternalKey([]byte("zzzz"), base.SeqNumMax, base.KindMax).AppendEncoded(nil), dh.append(nil))
	ih := put(iw.finish(), NoCompression)
	seal(ih)
	var meta metaIndex
	if learnedBlock != nil {
		lh := put(learnedBlock, NoCompression)
		seal(lh)
		meta = append(meta, metaEntry{MetaLearnedName, lh})
	}
	ph := put((&Properties{NumEntries: numEntries}).encode(), NoCompression)
	seal(ph)
	meta = append(meta, metaEntry{MetaPropertiesName, ph})
	mh := put(meta.encode(), NoCompression)
	seal(mh)
	return append(buf, footer{metaIndex: mh, index: ih, version: formatVersion}.encode()...)
}

// FuzzLearnedDataBlock puts fuzzed bytes in the only data block of a table
// whose learned index says the block holds the 200 keys its model was
// fitted to: the learned lookup (a restart count taken from the index,
// cache lines loaded at estimated offsets, the inline entry decoder, and
// reading the block in place with its interval checksums) must report
// corruption, never fault, whatever the block holds.
func FuzzLearnedDataBlock(f *testing.F) {
	const n = 200
	key := func(i int) []byte { return binary.BigEndian.AppendUint64(nil, uint64(i)*1000+7) }
	tf := newTestFile(f)
	w := NewWriter(tf, WriterOptions{BlockSize: 1 << 20, Learned: &learned.Options{MaxShare: 1}}) // a small table: a model larger than 1%
	for i := range n {
		if err := w.Add(base.MakeInternalKey(key(i), base.SeqNum(i+1), base.KindSet), []byte("v")); err != nil {
			f.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		f.Fatal(err)
	}
	r := openTable(f, tf.reopen(f), ReaderOptions{})
	lb, found, err := r.MetaBlock(MetaLearnedName)
	if err != nil || !found || !r.Learned().Present {
		f.Fatalf("no learned index: %v %v %+v", found, err, r.Learned())
	}
	r.Close()
	good := newBlockWriter(16)
	good.sums = true
	for i := range n {
		good.add(base.MakeInternalKey(key(i), base.SeqNum(i+1), base.KindSet).AppendEncoded(nil), []byte("v"))
	}
	goodBlock := bytes.Clone(good.finish())
	f.Add(goodBlock)
	f.Add(sampleBlock(200, 16))
	f.Add(sampleBlock(40, 3))
	f.Add([]byte{0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, block []byte) {
		data := tableAroundLearned(block, NoCompression, lb, n)
		r, err := NewReader(readOnly(t, data), int64(len(data)), ReaderOptions{Cache: newMapCache()})
		if err != nil {
			if !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("NewReader error %v is not a corruption", err)
			}
			return
		}
		defer r.Close()
		if !r.Learned().Present {
			t.Fatalf("learned index not used: %+v", r.Learned())
		}
		// The same table as if mapped: lookups read the block in place
		// (heap memory stands in for the mapping).
		var st LearnedStats
		rm, err := NewReader(readOnly(t, data), int64(len(data)), ReaderOptions{LearnedStats: &st})
		if err != nil {
			t.Fatalf("second open: %v", err)
		}
		defer rm.Close()
		rm.mapped = data
		intact := bytes.Equal(block, goodBlock)
		for _, rd := range []*Reader{r, rm} {
			for _, i := range []int{0, 1, 15, 16, 17, 100, 199} {
				for j, k := range [][]byte{key(i), key(i)[:7], append(key(i), 0)} {
					_, _, _, found, err := rd.Get(k, base.SeqNumMax)
					if err != nil && !errors.Is(err, base.ErrCorruption) {
						t.Fatalf("Get error %v is not a corruption", err)
					}
					if intact && (err != nil || found != (j == 0)) {
						t.Fatalf("intact block: Get(%x) = %v, %v", k, found, err)
					}
				}
			}
		}
		if intact {
			st = LearnedStats{}
			for _, i := range []int{0, 1, 15, 16, 17, 100, 199} {
				rm.Get(key(i), base.SeqNumMax)
			}
			if got := st.Metrics(); got.InPlace != 7 {
				t.Fatalf("intact block: %d of 7 lookups of present keys in place", got.InPlace)
			}
		}
	})
}

func TestTableAround(t *testing.T) {
	b := sampleBlock(40, 4)
	for c := range numCompressions {
		r, err := NewReader(readOnly(t, tableAround(b, c)), int64(len(tableAround(b, c))), ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		it := r.NewIter()
		n := 0
		for ok := it.First(); ok; ok = it.Next() {
			n++
		}
		if err := it.Close(); err != nil || n != 40 {
			t.Fatalf("%d entries, %v", n, err)
		}
	}
}

func FuzzDataBlockInTable(f *testing.F) {
	f.Add(sampleBlock(10, 3), uint8(0))
	f.Add(sampleBlock(40, 16), uint8(2))
	f.Add([]byte{1, 2, 3}, uint8(1))
	f.Fuzz(func(t *testing.T, block []byte, c uint8) {
		checkFuzzedTable(t, tableAround(block, Compression(c%uint8(numCompressions))))
	})
}

// FuzzDecoders feeds arbitrary bytes to each decoder that runs after a
// block's checksum has verified.
func FuzzDecoders(f *testing.F) {
	var props Properties
	props.NumEntries = 5
	props.User = map[string]string{"a": "b"}
	f.Add(uint8(0), props.encode())
	f.Add(uint8(1), metaIndex{{"x", blockHandle{1, 2}}}.encode())
	w := newBlockWriter(16)
	w.add(base.MakeInternalKey([]byte("a"), 3, base.KindRangeDelete).AppendEncoded(nil), []byte("b"))
	f.Add(uint8(2), w.finish())
	f.Add(uint8(3), sampleBlock(3, 1))
	f.Add(uint8(4), buildFilter([]uint64{1, 2}, 10))
	f.Add(uint8(5), footer{version: formatVersion}.encode())
	for c := SnappyCompression; c < numCompressions; c++ {
		out, _, _ := compressBlock(nil, make([]byte, 1000), c)
		f.Add(uint8(6+c), out)
	}
	lw := newLearnedWriter(learned.Options{MinKeys: 1}, 4)
	for i := range 50 {
		lw.addKey(binary.BigEndian.AppendUint64(nil, uint64(i*i)), uint64(2*i))
	}
	lw.blockDone(60)
	lw.blockDone(100)
	f.Add(uint8(10), lw.finish(1<<20))
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		var err error
		if which%11 == 10 {
			var x *learnedIndex
			if x, _, err = decodeLearned(b, 2, 100, "f", 0); x != nil {
				for _, k := range [][]byte{nil, b, binary.BigEndian.AppendUint64(nil, 49)} {
					if lo, hi, ok := x.model.Predict(k); ok && lo <= hi {
						x.block(lo)
						x.block(hi)
					}
				}
			}
			if err != nil && !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("error %v is not a corruption", err)
			}
			return
		}
		switch which % 10 {
		case 0:
			_, err = decodeProperties(b, "f", 0)
		case 1:
			_, err = decodeMetaIndex(b, "f", 0)
		case 2:
			_, err = decodeRangeDels(b, "f", 0)
		case 3:
			r := &Reader{file: "f", dataEnd: 1 << 20}
			_, err = r.decodeIndex(b, 0)
		case 4:
			if fl, ok := decodeFilter(b); ok {
				fl.mayContain(filterHash(b))
			}
		case 5:
			if _, err = decodeFooter(b, "f", 0); errors.Is(err, base.ErrNewerFormat) {
				err = nil // a verified footer of a later version
			}
		default:
			typ := Compression(which%10 - 6)
			if n, err := decompressedLen(b, typ); err == nil && n < 1<<24 {
				decompressBlock(make([]byte, n), b, typ)
			}
		}
		if err != nil && !errors.Is(err, base.ErrCorruption) {
			t.Fatalf("error %v is not a corruption", err)
		}
	})
}
