package learned_test

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/strata-db/strata/index/learned"
	"github.com/strata-db/strata/index/learned/learnedtest"
)

// build fits a model to keys at positions pos (pos[i] for keys[i]).
func build(o learned.Options, keys [][]byte, pos []uint64) (*learned.Model, learned.Reason) {
	b := learned.NewBuilder(o)
	for i, k := range keys {
		b.Add(k, pos[i])
	}
	return b.Finish()
}

// positions returns increasing positions for n keys: consecutive, or with
// random gaps (as keys with several entries leave in a table).
func positions(rng *rand.Rand, n int, gaps bool) []uint64 {
	pos := make([]uint64, n)
	p := uint64(0)
	for i := range pos {
		pos[i] = p
		p++
		if gaps && rng.IntN(10) == 0 {
			p += uint64(rng.IntN(4))
		}
	}
	return pos
}

// lookup finds key among keys using the model's window, as a caller would:
// it returns key's index, or -1 when the model says the key is absent or
// the window does not hold it.
func lookup(m *learned.Model, keys [][]byte, pos []uint64, key []byte) int {
	lo, hi, ok := m.Predict(key)
	if !ok {
		return -1
	}
	// keys whose position lies in [lo, hi]
	i, _ := slices.BinarySearch(pos, uint64(lo))
	for ; i < len(keys) && pos[i] <= uint64(hi); i++ {
		if bytes.Equal(keys[i], key) {
			return i
		}
	}
	return -1
}

// absentKeys returns keys near and between those of keys that are not in
// it: each key with a byte changed or appended, and keys before the first
// and after the last.
func absentKeys(rng *rand.Rand, keys [][]byte, n int) [][]byte {
	var out [][]byte
	for len(out) < n {
		k := bytes.Clone(keys[rng.IntN(len(keys))])
		switch rng.IntN(4) {
		case 0:
			k = append(k, byte(rng.Uint32()))
		case 1:
			k[rng.IntN(len(k))] ^= byte(1 + rng.IntN(255))
		case 2:
			k = k[:rng.IntN(len(k))]
		case 3:
			k = append([]byte{byte(rng.Uint32())}, k...)
		}
		if _, found := slices.BinarySearchFunc(keys, k, bytes.Compare); !found {
			out = append(out, k)
		}
	}
	return append(out, []byte{}, bytes.Repeat([]byte{0xff}, 40))
}

// TestModelProperties checks, for every key set, error bound and both
// position layouts: the model exists when expected, every key lies in its
// window, the bound holds and is what the builder was asked for at most,
// no absent key is found, and the encoding round-trips to the same
// predictions.
func TestModelProperties(t *testing.T) {
	for _, ks := range learnedtest.KeySets {
		for _, eps := range []int{1, 4, 8, 32} {
			for _, gaps := range []bool{false, true} {
				seed := uint64(len(ks.Name)*1000 + eps)
				rng := rand.New(rand.NewPCG(seed, 1))
				n := 2000 + rng.IntN(20000)
				keys := ks.Gen(rng, n)
				pos := positions(rng, len(keys), gaps)
				// A generous segment limit, so that every set that can be
				// fitted is, at every bound.
				o := learned.Options{ErrorBound: eps, MinKeysPerSegment: 1}
				m, reason := build(o, keys, pos)
				if ks.Refused == learned.ReasonSharedBytes {
					if reason != ks.Refused {
						t.Fatalf("%s eps %d: reason %v, want %v", ks.Name, eps, reason, ks.Refused)
					}
					continue
				}
				if m == nil {
					t.Fatalf("%s eps %d gaps %v: no model: %v", ks.Name, eps, gaps, reason)
				}
				if m.Bound() > eps {
					t.Fatalf("%s eps %d: bound %d", ks.Name, eps, m.Bound())
				}
				for i, k := range keys {
					lo, hi, ok := m.Predict(k)
					if !ok || uint64(lo) > pos[i] || pos[i] > uint64(hi) {
						t.Fatalf("%s eps %d gaps %v: key %d (%x) at %d, window [%d, %d] ok %v",
							ks.Name, eps, gaps, i, k, pos[i], lo, hi, ok)
					}
					if hi-lo > 2*m.Bound()+m.Spread() {
						t.Fatalf("%s: window [%d, %d] wider than the bound allows", ks.Name, lo, hi)
					}
				}
				for _, k := range absentKeys(rng, keys, 2000) {
					if i := lookup(m, keys, pos, k); i >= 0 {
						t.Fatalf("%s: absent key %x found at %d", ks.Name, k, i)
					}
					if lo, hi, ok := m.Predict(k); ok && (lo < 0 || lo > hi || hi > int(pos[len(pos)-1])) {
						t.Fatalf("%s: absent key %x: window [%d, %d]", ks.Name, k, lo, hi)
					}
				}
				m2, err := learned.Decode(m.Encode(nil))
				if err != nil {
					t.Fatalf("%s: decode: %v", ks.Name, err)
				}
				for _, k := range keys[:min(len(keys), 500)] {
					lo, hi, ok := m.Predict(k)
					lo2, hi2, ok2 := m2.Predict(k)
					if lo != lo2 || hi != hi2 || ok != ok2 {
						t.Fatalf("%s: decoded model predicts differently", ks.Name)
					}
				}
			}
		}
	}
}

// TestModelDefaults reports, for each key set, what the default options
// make of 100,000 keys, and checks the sets that must get a model do.
func TestModelDefaults(t *testing.T) {
	for _, ks := range learnedtest.KeySets {
		rng := rand.New(rand.NewPCG(42, 42))
		keys := ks.Gen(rng, 100_000)
		pos := positions(rng, len(keys), false)
		m, reason := build(learned.Options{}, keys, pos)
		if m == nil {
			t.Logf("%-15s refused: %v", ks.Name, reason)
			if reason != ks.Refused {
				t.Errorf("%s: refused (%v) with the default options", ks.Name, reason)
			}
			continue
		}
		if ks.Refused != learned.ReasonNone {
			t.Errorf("%s: got a model, want refusal (%v)", ks.Name, ks.Refused)
		}
		t.Logf("%-15s %6d segments (%5.0f keys each), bound %d, spread %d, %7d bytes (%.2f per key)",
			ks.Name, m.Segments(), float64(len(keys))/float64(m.Segments()), m.Bound(), m.Spread(), m.Size(),
			float64(m.Size())/float64(len(keys)))
	}
}

func TestBuilderEdges(t *testing.T) {
	// Too few keys.
	b := learned.NewBuilder(learned.Options{})
	b.Add([]byte("a"), 0)
	if m, r := b.Finish(); m != nil || r != learned.ReasonTooFewKeys {
		t.Fatalf("one key: %v %v", m, r)
	}
	if m, r := learned.NewBuilder(learned.Options{}).Finish(); m != nil || r != learned.ReasonTooFewKeys {
		t.Fatalf("no keys: %v %v", m, r)
	}
	// Positions past learned.MaxPosition.
	b = learned.NewBuilder(learned.Options{MinKeys: 1})
	b.Add([]byte("a"), learned.MaxPosition+1)
	if m, r := b.Finish(); m != nil || r != learned.ReasonTooManyPositions {
		t.Fatalf("huge position: %v %v", m, r)
	}
	// One key that is a prefix of all others, and keys that only differ in
	// trailing zero bytes (they share an integer).
	keys := [][]byte{[]byte("k"), []byte("k\x00"), []byte("k\x00\x00"), []byte("k\x01")}
	for i := range 100 {
		keys = append(keys, []byte{'k', 2, byte(i)})
	}
	m, r := build(learned.Options{MinKeys: 1, MaxSpread: 10}, keys, positions(nil, len(keys), false))
	if m == nil {
		t.Fatalf("no model: %v", r)
	}
	if m.Spread() != 2 {
		t.Fatalf("spread %d, want 2", m.Spread())
	}
	for i, k := range keys {
		if j := lookup(m, keys, positions(nil, len(keys), false), k); j != i {
			t.Fatalf("key %x found at %d, want %d", k, j, i)
		}
	}
	// A set where every key is a prefix-extension of the first.
	keys = [][]byte{[]byte("abc")}
	for i := range 200 {
		keys = append(keys, append([]byte("abc"), binary.BigEndian.AppendUint64(nil, uint64(i)*977)...))
	}
	m, r = build(learned.Options{MinKeys: 1}, keys, positions(nil, len(keys), false))
	if m == nil {
		t.Fatalf("no model: %v", r)
	}
	for i, k := range keys {
		if j := lookup(m, keys, positions(nil, len(keys), false), k); j != i {
			t.Fatalf("key %x found at %d, want %d", k, j, i)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	if err := (learned.Options{}).Validate(); err != nil {
		t.Fatal(err)
	}
	err := learned.Options{ErrorBound: -1, MinKeys: -1, MinKeysPerSegment: -1, MaxSpread: -1}.Validate()
	if err == nil {
		t.Fatal("bad options accepted")
	}
	for _, field := range []string{"ErrorBound", "MinKeys", "MinKeysPerSegment", "MaxSpread"} {
		if !bytes.Contains([]byte(err.Error()), []byte(field)) {
			t.Errorf("error %q does not name %s", err, field)
		}
	}
}
