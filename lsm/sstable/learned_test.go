package sstable

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/strata-db/strata/index/learned"
	"github.com/strata-db/strata/index/learned/learnedtest"
	"github.com/strata-db/strata/internal/base"
)

// entriesFor returns the point entries of a table holding keys: each key
// has one entry, or with versions set, up to four (sets and deletes at
// decreasing seqs), and values of pointer size.
func entriesFor(rng *rand.Rand, keys [][]byte, versions bool) []kv {
	var out []kv
	seq := base.SeqNum(1)
	for _, k := range keys {
		n := 1
		if versions && rng.IntN(8) == 0 {
			n += rng.IntN(4)
		}
		var vs []kv
		for range n {
			seq += base.SeqNum(1 + rng.IntN(3))
			kind := base.KindValuePointer
			if rng.IntN(10) == 0 {
				kind = base.KindDelete
			}
			var v []byte
			if kind != base.KindDelete {
				v = randValue(rng, 9)
			}
			vs = append(vs, kv{base.MakeInternalKey(k, seq, kind), v})
		}
		slices.Reverse(vs) // newest first
		out = append(out, vs...)
	}
	return out
}

// absentProbes returns keys close to those of keys but not among them.
func absentProbes(rng *rand.Rand, keys [][]byte, n int) [][]byte {
	probes := [][]byte{{}, {0}, bytes.Repeat([]byte{0xff}, 30)}
	for len(probes) < n {
		k := bytes.Clone(keys[rng.IntN(len(keys))])
		switch rng.IntN(4) {
		case 0:
			k = append(k, byte(rng.Uint32()))
		case 1:
			k[rng.IntN(len(k))] ^= byte(1 + rng.IntN(255))
		case 2:
			k = k[:rng.IntN(len(k))]
		case 3:
			k[len(k)-1]++
		}
		if _, found := slices.BinarySearchFunc(keys, k, bytes.Compare); !found {
			probes = append(probes, k)
		}
	}
	return probes
}

// TestLearnedKeySets checks point lookups through the learned index on
// every key set, with and without several versions per key and at several
// error bounds: every present key is found (its newest entry, and the
// right entry at random snapshots), every absent key is reported absent,
// the recorded bound holds, and the answers match those of the same table
// read without its model. Key sets the model refuses must record why and
// still be read correctly.
func TestLearnedKeySets(t *testing.T) {
	for _, ks := range learnedtest.KeySets {
		for _, eps := range []int{2, 8, 32} {
			for _, versions := range []bool{false, true} {
				name := fmt.Sprintf("%s/eps=%d/versions=%v", ks.Name, eps, versions)
				t.Run(name, func(t *testing.T) {
					rng := rand.New(rand.NewPCG(uint64(eps), uint64(len(ks.Name))))
					keys := ks.Gen(rng, 20000+rng.IntN(5000))
					m := model(entriesFor(rng, keys, versions))
					lo := &learned.Options{ErrorBound: eps}
					f, _ := writeTable(t, tableSpec{entries: m}, WriterOptions{Learned: lo})
					r := openTable(t, f, ReaderOptions{Cache: newMapCache()})
					defer r.Close()
					plain := openTable(t, f.reopen(t), ReaderOptions{DisableLearned: true})
					defer plain.Close()
					// The same table on disk, mapped: lookups read its
					// windows in place.
					var st LearnedStats
					mapped, _ := openDiskTable(t, f.contents(t), ReaderOptions{Map: true, LearnedStats: &st})
					if plain.Learned().Present || plain.Learned().Reason != learned.ReasonDisabled {
						t.Fatalf("model used though disabled: %+v", plain.Learned())
					}

					info := r.Learned()
					switch {
					case ks.Refused == learned.ReasonSharedBytes:
						if info.Present || info.Reason != ks.Refused {
							t.Fatalf("model %+v, want refusal for %v", info, ks.Refused)
						}
					case !info.Present:
						// A tight bound, or decimal keys, may need more
						// segments than a model is allowed.
						if info.Reason != learned.ReasonTooManySegments && info.Reason != learned.ReasonTooLarge ||
							eps > 2 && ks.Name != "decimal" {
							t.Fatalf("no model: %v", info.Reason)
						}
					case info.Bound > eps || info.Segments < 1:
						t.Fatalf("bound %d (want <= %d), %d segments", info.Bound, eps, info.Segments)
					}

					var maxSeq base.SeqNum
					for _, e := range m {
						maxSeq = max(maxSeq, e.key.SeqNum())
					}
					check := func(uk []byte, snap base.SeqNum) {
						want, wantOK := m.get(uk, snap)
						for _, rd := range []*Reader{r, plain, mapped} {
							v, kind, seq, ok, err := rd.Get(uk, snap)
							if err != nil {
								t.Fatalf("Get(%x, %d): %v", uk, snap, err)
							}
							if ok != wantOK || ok && (kind != want.key.Kind() || seq != want.key.SeqNum() || !bytes.Equal(v, want.value)) {
								t.Fatalf("Get(%x, %d) (model %v) = %v %s#%d, want %v %s", uk, snap, rd == r, ok, kind, seq, wantOK, want.key)
							}
						}
					}
					for _, k := range keys {
						check(k, base.SeqNumMax)
						check(k, base.SeqNum(rng.Uint64N(uint64(maxSeq)+1)))
					}
					for _, k := range absentProbes(rng, keys, 3000) {
						check(k, base.SeqNumMax)
					}
					if got := st.Metrics(); info.Present && (got.InPlace == 0 || got.InPlace < got.Hits*3/4) {
						t.Fatalf("%d of %d learned lookups read in place", got.InPlace, got.Hits)
					}
				})
			}
		}
	}
}

// TestLearnedCompatibility reads tables written without the block (as
// before it existed) and tables whose block records a refusal, and
// checks what LearnedStats counts.
func TestLearnedCompatibility(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	keys := learnedtest.KeySets[0].Gen(rng, 20000)
	m := model(entriesFor(rng, keys, true))
	stats := new(LearnedStats)

	old, _ := writeTable(t, tableSpec{entries: m}, WriterOptions{})
	r := openTable(t, old, ReaderOptions{LearnedStats: stats})
	if _, found, _ := r.MetaBlock(MetaLearnedName); found {
		t.Fatal("a table written without a learned index has the block")
	}
	if info := r.Learned(); info.Present || info.Reason != learned.ReasonDisabled {
		t.Fatalf("old table: %+v", info)
	}
	for _, k := range keys[:500] {
		if _, _, _, ok, err := r.Get(k, base.SeqNumMax); !ok || err != nil {
			t.Fatalf("Get(%x): %v %v", k, ok, err)
		}
	}

	few, _ := writeTable(t, tableSpec{entries: m[:10]}, WriterOptions{Learned: &learned.Options{}})
	r2 := openTable(t, few, ReaderOptions{LearnedStats: stats})
	if info := r2.Learned(); info.Present || info.Reason != learned.ReasonTooFewKeys {
		t.Fatalf("tiny table: %+v", info)
	}

	with, _ := writeTable(t, tableSpec{entries: m}, WriterOptions{Learned: &learned.Options{}})
	r3 := openTable(t, with, ReaderOptions{LearnedStats: stats})
	if !r3.Learned().Present {
		t.Fatalf("no model: %+v", r3.Learned())
	}
	for _, k := range keys[:300] {
		r3.Get(k, base.SeqNumMax)
	}
	got := stats.Metrics()
	if got.Tables != 1 || got.Without != 2 || got.Hits != 300 || got.Fallbacks != 500 ||
		got.Segments != int64(r3.Learned().Segments) || got.Bytes != int64(r3.Learned().Bytes) || got.TableBytes == 0 {
		t.Fatalf("stats %+v", got)
	}
	if share := float64(got.Bytes) / float64(got.TableBytes); share >= 0.01 {
		t.Fatalf("model takes %.2f%% of its table", 100*share)
	}
	for _, rd := range []*Reader{r, r2, r3} {
		rd.Close()
	}
	if got := stats.Metrics(); got.Tables != 0 || got.Without != 0 || got.Segments != 0 || got.Bytes != 0 || got.TableBytes != 0 {
		t.Fatalf("gauges after Close: %+v", got)
	}
}

// TestLearnedBlockDecode checks that a learned-index block that does not
// match its table is corruption, and that a later version is ignored.
func TestLearnedBlockDecode(t *testing.T) {
	lw := newLearnedWriter(learned.Options{MinKeys: 1}, 4)
	for i := range 100 {
		lw.addKey(binary.BigEndian.AppendUint64([]byte("key"), uint64(i)), uint64(i))
		if i%10 == 9 {
			lw.blockDone(uint64(i + 1))
		}
	}
	good := lw.finish(1 << 20)
	if x, reason, err := decodeLearned(good, 10, 100, "f", 9); err != nil || x == nil || reason != learned.ReasonNone {
		t.Fatalf("decode: %v %v %v", x, reason, err)
	}
	for _, c := range []struct {
		blocks  int
		entries uint64
		b       []byte
	}{
		{9, 100, good},
		{10, 99, good},
		{10, 100, good[:len(good)-1]},
		{10, 100, good[:3]},
		{10, 100, []byte{learnedBlockVersion}},
		{10, 100, []byte{learnedBlockVersion, byte(learned.ReasonTooFewKeys), 0}},
	} {
		if _, _, err := decodeLearned(c.b, c.blocks, c.entries, "f", 9); !errors.Is(err, base.ErrCorruption) {
			t.Fatalf("%d blocks, %d entries, %d bytes: err %v", c.blocks, c.entries, len(c.b), err)
		}
	}
	later := append([]byte{learnedBlockVersion + 1}, good[1:]...)
	if x, reason, err := decodeLearned(later, 10, 100, "f", 9); x != nil || err != nil || reason != learned.ReasonDisabled {
		t.Fatalf("later version: %v %v %v", x, reason, err)
	}
	// A model larger than a hundredth of the table is refused.
	lw = newLearnedWriter(learned.Options{MinKeys: 1}, 4)
	for i := range 100 {
		lw.addKey(binary.BigEndian.AppendUint64([]byte("key"), uint64(i)), uint64(i))
	}
	lw.blockDone(100)
	if b := lw.finish(1000); len(b) != 2 || learned.Reason(b[1]) != learned.ReasonTooLarge {
		t.Fatalf("oversized model: %x", b)
	}
}

// TestLearnedRestartIntervals checks lookups through the learned index
// for restart intervals that are and are not powers of two (the window
// arithmetic shifts for the former and divides for the others), and for
// small blocks, so that windows often span blocks.
func TestLearnedRestartIntervals(t *testing.T) {
	for _, riv := range []int{1, 3, 5, 16, 100} {
		for _, blockSize := range []int{256, 4096} {
			t.Run(fmt.Sprintf("riv=%d/block=%d", riv, blockSize), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(riv), uint64(blockSize)))
				keys := learnedtest.KeySets[0].Gen(rng, 5000)
				m := model(entriesFor(rng, keys, true))
				f, _ := writeTable(t, tableSpec{entries: m}, WriterOptions{
					BlockRestartInterval: riv,
					BlockSize:            blockSize,
					Learned:              &learned.Options{ErrorBound: 8, MaxShare: 1}, // small blocks: a large block map
				})
				r := openTable(t, f, ReaderOptions{Cache: newMapCache()})
				defer r.Close()
				if !r.Learned().Present {
					t.Fatalf("no model: %+v", r.Learned())
				}
				var maxSeq base.SeqNum
				for _, e := range m {
					maxSeq = max(maxSeq, e.key.SeqNum())
				}
				check := func(uk []byte, snap base.SeqNum) {
					want, wantOK := m.get(uk, snap)
					v, kind, seq, ok, err := r.Get(uk, snap)
					if err != nil {
						t.Fatalf("Get(%x, %d): %v", uk, snap, err)
					}
					if ok != wantOK || ok && (kind != want.key.Kind() || seq != want.key.SeqNum() || !bytes.Equal(v, want.value)) {
						t.Fatalf("Get(%x, %d) = %v %s#%d, want %v %s", uk, snap, ok, kind, seq, wantOK, want.key)
					}
				}
				for _, k := range keys {
					check(k, base.SeqNumMax)
					check(k, base.SeqNum(rng.Uint64N(uint64(maxSeq)+1)))
				}
				for _, k := range absentProbes(rng, keys, 1000) {
					check(k, base.SeqNumMax)
				}
			})
		}
	}
}

// TestLearnedFarOffsets checks that a table whose blocks lie past 4 GiB
// (offsets the learned index cannot hold in 32 bits) takes its block
// offsets from the index instead, and still finds every key.
func TestLearnedFarOffsets(t *testing.T) {
	x := &learnedIndex{blocks: make([]learnedBlock, 3)}
	x.setOffsets(&indexArray{entries: []indexEntry{{handle: blockHandle{Offset: 0}}, {handle: blockHandle{Offset: 1 << 33}}}})
	if !x.farOffsets {
		t.Fatal("an offset past 4 GiB did not set farOffsets")
	}

	rng := rand.New(rand.NewPCG(7, 7))
	keys := learnedtest.KeySets[0].Gen(rng, 20000)
	m := model(entriesFor(rng, keys, true))
	f, _ := writeTable(t, tableSpec{entries: m}, WriterOptions{Learned: &learned.Options{}})
	r := openTable(t, f, ReaderOptions{Cache: newMapCache()})
	defer r.Close()
	if r.lidx == nil {
		t.Fatalf("no model: %+v", r.Learned())
	}
	r.lidx.farOffsets = true
	for _, k := range keys {
		want, wantOK := m.get(k, base.SeqNumMax)
		v, kind, seq, ok, err := r.Get(k, base.SeqNumMax)
		if err != nil || ok != wantOK || ok && (kind != want.key.Kind() || seq != want.key.SeqNum() || !bytes.Equal(v, want.value)) {
			t.Fatalf("Get(%x) = %v %s#%d %v, want %v %s", k, ok, kind, seq, err, wantOK, want.key)
		}
	}
}

// TestLearnedBlockMap checks the position-to-block map on every key set and
// on a table whose blocks hold very different entry counts: for every
// position, block returns the block holding it, whether the table's map is
// the arithmetic guess or the slot table (both are checked on each table),
// and the arithmetic guess is taken only where it holds.
func TestLearnedBlockMap(t *testing.T) {
	type table struct {
		name    string
		entries []kv
	}
	var tables []table
	for _, ks := range learnedtest.KeySets {
		rng := rand.New(rand.NewPCG(11, uint64(len(ks.Name))))
		tables = append(tables, table{ks.Name, entriesFor(rng, ks.Gen(rng, 20000), true)})
	}
	// Runs of small and large values: blocks of a few entries and of
	// hundreds.
	rng := rand.New(rand.NewPCG(12, 13))
	var uneven []kv
	for i := range 20000 {
		n := 9
		if i/500%2 == 1 {
			n = 900
		}
		k := binary.BigEndian.AppendUint64(nil, uint64(i)*7)
		uneven = append(uneven, kv{base.MakeInternalKey(k, 1, base.KindSet), randValue(rng, n)})
	}
	tables = append(tables, table{"uneven", uneven})

	modes := map[bool]int{}
	for _, tb := range tables {
		t.Run(tb.name, func(t *testing.T) {
			f, _ := writeTable(t, tableSpec{entries: tb.entries}, WriterOptions{Learned: &learned.Options{}})
			r := openTable(t, f, ReaderOptions{})
			defer r.Close()
			x := r.lidx
			if x == nil {
				t.Skipf("no model: %v", r.Learned().Reason)
			}
			n := len(x.blocks) - 1
			check := func(mode string) {
				for p := range int(x.blocks[n].start) {
					want, _ := slices.BinarySearchFunc(x.blocks[1:], uint32(p), func(b learnedBlock, p uint32) int {
						return cmp.Compare(b.start, p+1)
					})
					if got := x.block(p); got != want {
						t.Fatalf("%s map: block(%d) = %d, want %d", mode, p, got, want)
					}
				}
			}
			arith := x.blockOf == nil
			modes[arith]++
			if arith {
				check("arithmetic")
				x.buildSlots()
				check("slot")
			} else {
				check("slot")
				// The guess must indeed be off by more than the bound
				// somewhere.
				if over, short, _ := x.guessSpread(); over+short <= maxInterpSteps {
					t.Fatalf("slot map although the guess is off by at most %d blocks", over+short)
				}
			}
		})
	}
	if modes[true] == 0 || modes[false] == 0 {
		t.Fatalf("tables by map (arithmetic: true): %v; both maps must be exercised", modes)
	}
	t.Logf("tables by map (arithmetic: true): %v", modes)
}
