package sstable

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/strata-db/strata/internal/base"
)

// modelBlock returns n random sorted entries and a block of them with
// restart interval ri.
func modelBlock(rng *rand.Rand, ri, n int) (model, []byte) {
	m := model(genEntries(rng, n, false))
	w := newBlockWriter(ri)
	for _, e := range m {
		w.add(e.key.AppendEncoded(nil), e.value)
	}
	return m, w.finish()
}

// TestBlockIterModel drives a blockIter over random blocks and compares
// every move with the sorted entries.
func TestBlockIterModel(t *testing.T) {
	for _, ri := range []int{1, 2, 3, 16, 1000} {
		for _, n := range []int{0, 1, 2, 17, 300} {
			t.Run(fmt.Sprintf("ri=%d/n=%d", ri, n), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(ri), uint64(n)))
				m, b := modelBlock(rng, ri, n)
				var it blockIter
				if err := it.init(b, true, "test", 0); err != nil {
					t.Fatal(err)
				}
				bi := &blockIterAdapter{it: &it}
				pos := -1
				for step := range 2000 {
					var ok bool
					var what string
					switch op := rng.IntN(8); {
					case op == 0:
						ok, pos, what = it.First(), 0, "First"
					case op == 1:
						ok, pos, what = it.Last(), len(m)-1, "Last"
					case op == 2:
						k := probeKey(rng, m)
						ok, pos, what = it.SeekGE(k, seekTrailer), m.seekGE(k), fmt.Sprintf("SeekGE(%q)", k)
					case op == 3:
						k := probeKey(rng, m)
						ok, pos, what = it.SeekLT(k, seekTrailer), m.seekLT(k), fmt.Sprintf("SeekLT(%q)", k)
					case op < 6:
						if pos < 0 || pos >= len(m) {
							continue
						}
						ok, pos, what = it.Next(), pos+1, "Next"
					default:
						if pos < 0 || pos >= len(m) {
							continue
						}
						ok, pos, what = it.Prev(), pos-1, "Prev"
					}
					bi.valid = ok
					checkAt(t, m, bi, ok, pos, fmt.Sprintf("step %d %s", step, what))
				}
			})
		}
	}
}

// TestBlockIterInitWindow checks that a block opened with initWindow, told
// the right restart count or a wrong one and any byte range, searches as
// one opened with init.
func TestBlockIterInitWindow(t *testing.T) {
	for _, ri := range []int{1, 3, 16} {
		for _, n := range []int{1, 17, 300} {
			t.Run(fmt.Sprintf("ri=%d/n=%d", ri, n), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(ri), uint64(n)))
				m, b := modelBlock(rng, ri, n)
				nr := (len(m) + ri - 1) / ri
				for _, claim := range []int{nr, nr - 1, nr + 1, 0, -1, 1 << 30} {
					from := rng.IntN(len(b)+200) - 100
					to := from + rng.IntN(len(b)+200) - 100
					var it blockIter
					if s := touchWindow(b, from, to); s >= 256*(maxWindowLines+1) {
						t.Fatalf("touchWindow sum %d", s)
					}
					if err := it.initWindow(b, true, "test", 0, claim); err != nil {
						t.Fatalf("claim %d: %v", claim, err)
					}
					if it.numRestarts != nr {
						t.Fatalf("claim %d: %d restarts, want %d", claim, it.numRestarts, nr)
					}
					for range 50 {
						k := probeKey(rng, m)
						ok, pos := it.SeekGE(k, seekTrailer), m.seekGE(k)
						checkAt(t, m, &blockIterAdapter{it: &it, valid: ok}, ok, pos, fmt.Sprintf("claim %d: SeekGE(%q)", claim, k))
					}
				}
			})
		}
	}
}

type blockIterAdapter struct {
	it    *blockIter
	valid bool
}

func (a *blockIterAdapter) Valid() bool           { return a.valid }
func (a *blockIterAdapter) Key() base.InternalKey { return a.it.ikey() }
func (a *blockIterAdapter) Value() []byte         { return a.it.val }
func (a *blockIterAdapter) Error() error          { return a.it.err }

func TestBlockPrefixCompression(t *testing.T) {
	w := newBlockWriter(16)
	for i := range 100 {
		w.add(fmt.Appendf(nil, "a-long-common-prefix-%04d", i), nil)
	}
	// 100 keys of 25 bytes stored with their 21-byte shared prefix elided
	// except at the 7 restart points.
	if got := len(w.finish()); got > 100*(3+4)+7*21+8*4+4 {
		t.Fatalf("block of %d bytes: keys not prefix-compressed", got)
	}
}

func TestBlockIterCorrupt(t *testing.T) {
	w := newBlockWriter(4)
	for i := range 20 {
		w.add(base.MakeInternalKey(fmt.Appendf(nil, "key%02d", i), 1, base.KindSet).AppendEncoded(nil), []byte("value"))
	}
	good := bytes.Clone(w.finish())
	cases := map[string][]byte{
		"empty":             {},
		"short":             {1, 0},
		"zero restarts":     {0, 0, 0, 0},
		"huge restarts":     {0xff, 0xff, 0xff, 0xff},
		"restart0 nonzero":  {5, 0, 0, 0, 1, 0, 0, 0},
		"value past end":    append([]byte{0, 9, 100}, append(make([]byte, 9), 0, 0, 0, 0, 1, 0, 0, 0)...),
		"short key":         {0, 2, 0, 'a', 'b', 0, 0, 0, 0, 1, 0, 0, 0},
		"truncated restart": good[:len(good)-3],
	}
	// A restart point that is past the entries.
	bad := bytes.Clone(good)
	bad[len(bad)-8] = 0xff
	cases["restart past entries"] = bad
	// A bad kind.
	bad = bytes.Clone(good)
	bad[3+5] = byte(base.KindRangeDelete) // first key's trailer low byte
	cases["rangedel kind"] = bad
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			var it blockIter
			err := it.init(b, true, "f.sst", 123)
			if werr := it.initWindow(b, true, "f.sst", 123, 5); (werr == nil) != (err == nil) {
				t.Fatalf("initWindow: %v, init: %v", werr, err)
			}
			if err == nil {
				for ok := it.First(); ok; ok = it.Next() {
				}
				for ok := it.Last(); ok; ok = it.Prev() {
				}
				it.SeekGE([]byte("key10"), seekTrailer)
				it.SeekLT([]byte("key10"), seekTrailer)
				err = it.err
			}
			if !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("error %v is not a corruption", err)
			}
			var ce *base.CorruptionError
			if !errors.As(err, &ce) || ce.File != "f.sst" || ce.Offset != 123 {
				t.Fatalf("error %v does not name the file and block offset", err)
			}
		})
	}
}
