package learned_test

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/strata-db/strata/index/learned"
	"github.com/strata-db/strata/index/learned/learnedtest"
)

// FuzzDecode feeds learned.Decode arbitrary bytes: it must never panic, and a model
// it accepts must encode back to the same bytes and answer every Predict
// with a window inside its positions.
func FuzzDecode(f *testing.F) {
	for i, ks := range learnedtest.KeySets {
		rng := rand.New(rand.NewPCG(uint64(i), 9))
		keys := ks.Gen(rng, 300)
		m, _ := build(learned.Options{MinKeys: 1, MinKeysPerSegment: 1, MaxSpread: 1000}, keys, positions(rng, len(keys), true))
		if m != nil {
			f.Add(m.Encode(nil), keys[0])
		}
	}
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, []byte("k"))
	f.Fuzz(func(t *testing.T, data, key []byte) {
		m, err := learned.Decode(data)
		if err != nil {
			return
		}
		if enc := m.Encode(nil); !bytes.Equal(enc, data) {
			t.Fatalf("re-encoding differs:\n%x\n%x", enc, data)
		}
		for _, k := range [][]byte{key, {}, bytes.Repeat([]byte{0xff}, 20), append(bytes.Clone(m.Prefix()), key...)} {
			lo, hi, ok := m.Predict(k)
			if ok && (lo < 0 || hi > m.LastPosition() || lo > hi+m.Bound()) {
				t.Fatalf("window [%d, %d] for last position %d", lo, hi, m.LastPosition())
			}
		}
	})
}
