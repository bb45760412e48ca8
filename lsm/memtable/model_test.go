package memtable

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/strata-db/strata/internal/base"
)

var seedFlag = flag.Uint64("memtable.seed", 0, "seed for randomized tests (0: time-based)")

// testRand returns a seeded generator and logs the seed so that a failure
// replays with -memtable.seed.
func testRand(t testing.TB) *rand.Rand {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -memtable.seed=%d)", seed, seed)
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// entry is one model entry.
type entry struct {
	key   base.InternalKey
	value []byte
}

// model is a sorted slice of entries: the reference the skiplist is
// compared against.
type model struct{ entries []entry }

func (m *model) find(k base.InternalKey) (int, bool) {
	return slices.BinarySearchFunc(m.entries, k, func(e entry, k base.InternalKey) int {
		return base.InternalCompare(e.key, k)
	})
}

func (m *model) add(k base.InternalKey, v []byte) bool {
	i, found := m.find(k)
	if found {
		return false
	}
	m.entries = slices.Insert(m.entries, i, entry{key: k.Clone(), value: bytes.Clone(v)})
	return true
}

// get mirrors MemTable.Get.
func (m *model) get(key []byte, snap base.SeqNum) (entry, bool) {
	i, _ := m.find(base.MakeSearchKey(key, min(snap, base.SeqNumMax)))
	if i < len(m.entries) && bytes.Equal(m.entries[i].key.UserKey, key) {
		return m.entries[i], true
	}
	return entry{}, false
}

// seekGE returns the index of the first entry with user key >= key.
func (m *model) seekGE(key []byte) int {
	i, _ := slices.BinarySearchFunc(m.entries, key, func(e entry, k []byte) int {
		if bytes.Compare(e.key.UserKey, k) < 0 {
			return -1
		}
		return 1
	})
	return i
}

// randomUserKey draws from a small alphabet with lengths around the 8-byte
// prefix boundary, so that prefixes collide and zero padding matters.
func randomUserKey(r *rand.Rand) []byte {
	alphabet := []byte{0x00, 0x01, 'a', 'b', 0xff}
	n := r.IntN(13)
	k := make([]byte, n)
	for i := range k {
		k[i] = alphabet[r.IntN(len(alphabet))]
	}
	return k
}

// randomIntKey returns a key that starts with a big-endian integer below
// 5000 (keys sharing their first 6 bytes, as integer keys do), followed by
// a few random bytes.
func randomIntKey(r *rand.Rand) []byte {
	k := binary.BigEndian.AppendUint64(nil, uint64(r.IntN(5000)))
	for range r.IntN(4) {
		k = append(k, byte(r.IntN(3)))
	}
	return k[:max(1, len(k)-r.IntN(2)*r.IntN(8))]
}

var pointKinds = []base.Kind{base.KindDelete, base.KindSet, base.KindMerge, base.KindValuePointer}

// checkInvariants walks every level of s and verifies the skiplist
// invariants: strict order at every level, upper levels are sublists of
// level 0, back links point backwards, count matches.
func checkInvariants(t testing.TB, s *skiplist) {
	t.Helper()
	a := s.a
	pos := map[uint32]int{s.head: -1}
	var prevKey base.InternalKey
	i := 0
	for nd := a.next(s.head, 0); nd != 0; nd = a.next(nd, 0) {
		k := base.InternalKey{UserKey: a.userKey(nd), Trailer: base.Trailer(a.trailer(nd))}
		if i > 0 && base.InternalCompare(prevKey, k) >= 0 {
			t.Fatalf("level 0 out of order at %d: %s then %s", i, prevKey, k)
		}
		if a.prefix(nd) != KeyPrefix(k.UserKey) {
			t.Fatalf("node %d: cached prefix %x, key %q", nd, a.prefix(nd), k.UserKey)
		}
		p := a.prev(nd)
		pi, ok := pos[p]
		if !ok || pi >= i {
			t.Fatalf("node %d (%s): back link %d does not point to an earlier node", nd, k, p)
		}
		pos[nd] = i
		prevKey = k
		i++
	}
	if int64(i) != s.count.Load() {
		t.Fatalf("level 0 has %d nodes, count %d", i, s.count.Load())
	}
	for l := 0; l < maxHeight; l++ {
		last := -1
		prev := s.head
		for nd := a.next(s.head, l); nd != 0; nd = a.next(nd, l) {
			pi, ok := pos[nd]
			if !ok || pi <= last {
				t.Fatalf("level %d: node %d not in level-0 order", l, nd)
			}
			if lk := a.link(prev, l); lk.prefix32() != s.sum.of(a.prefix(nd)) {
				t.Fatalf("level %d: link to node %d carries prefix %x, node has %x", l, nd, lk.prefix32(), a.prefix(nd))
			}
			prev = nd
			if int(a.height(nd)) <= l {
				t.Fatalf("level %d: node %d has height %d", l, nd, a.height(nd))
			}
			last = pi
		}
		if l >= int(s.height.Load()) && a.next(s.head, l) != 0 {
			t.Fatalf("level %d above height %d is linked", l, s.height.Load())
		}
	}
}

func fmtEntry(k base.InternalKey, v []byte) string { return fmt.Sprintf("%s=%q", k, v) }
