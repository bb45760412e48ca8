package memtable

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/strata-db/strata/internal/base"
)

// concurrentValue is the value written for key at seq, so a reader can
// check any entry it sees without sharing state with the writer.
func concurrentValue(key []byte, seq base.SeqNum) []byte {
	v := binary.BigEndian.AppendUint64(nil, uint64(seq))
	return append(v, key...)
}

// TestConcurrentReaders runs one writer inserting entries with increasing
// sequence numbers while readers scan forward and backward, random-walk
// with Next and Prev, and Get at the published sequence number. Every
// observed order must be sorted, every entry must carry its value, every
// scan must include everything published before it started, and Get at
// the published sequence must return exactly the newest version.
func TestConcurrentReaders(t *testing.T) {
	r := testRand(t)
	n := 20000
	if testing.Short() {
		n = 5000
	}
	pool := make([][]byte, 2000)
	for i := range pool {
		pool[i] = fmt.Appendf(nil, "key-%06d", r.IntN(1_000_000))
		if i%4 == 0 {
			pool[i] = pool[i][:1+r.IntN(8)]
		}
	}
	// The schedule: entry i has sequence number i+1.
	keys := make([][]byte, n)
	seqsOf := map[string][]base.SeqNum{}
	for i := range keys {
		keys[i] = pool[r.IntN(len(pool))]
		seqsOf[string(keys[i])] = append(seqsOf[string(keys[i])], base.SeqNum(i+1))
	}
	m := New(n * EntrySize(16, 24))
	var published atomic.Uint64 // every seq <= published is in the table
	var done atomic.Bool
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	fail := func(format string, args ...any) {
		select {
		case errc <- fmt.Errorf(format, args...):
		default:
		}
	}

	check := func(k base.InternalKey, v []byte) bool {
		if !bytes.Equal(v, concurrentValue(k.UserKey, k.SeqNum())) {
			fail("entry %s has value %q", k, v)
			return false
		}
		return true
	}

	// Long-lived iterator: full forward and backward scans.
	wg.Add(1)
	go func() {
		defer wg.Done()
		it := m.NewIter()
		defer it.Close()
		for pass := 0; !done.Load() || pass < 2; pass++ {
			floor := base.SeqNum(published.Load())
			seen := 0
			var prev base.InternalKey
			first := true
			next, start := it.Next, it.First
			if pass%2 == 1 {
				next, start = it.Prev, it.Last
			}
			for ok := start(); ok; ok = next() {
				k := it.Key()
				if !first {
					c := base.InternalCompare(prev, k)
					if (pass%2 == 0 && c >= 0) || (pass%2 == 1 && c <= 0) {
						fail("pass %d: %s then %s", pass, prev, k)
						return
					}
				}
				if !check(k, it.Value()) {
					return
				}
				if k.SeqNum() <= floor {
					seen++
				}
				prev, first = k, false
			}
			// Sequence numbers are 1..n in insertion order, so exactly
			// floor entries were in the table when the pass started.
			if seen != int(floor) {
				fail("pass %d: saw %d entries with seq <= %d, want %d", pass, seen, floor, floor)
				return
			}
		}
	}()

	// Random walk mixing seeks, Next and Prev.
	walkSeed, getSeed := r.Uint64(), r.Uint64()
	wg.Add(1)
	go func() {
		defer wg.Done()
		r := rand.New(rand.NewPCG(walkSeed, 1))
		it := m.NewIter()
		for !done.Load() {
			if !it.SeekGE(pool[r.IntN(len(pool))]) {
				continue
			}
			cur := it.Key().Clone()
			for step := 0; step < 50; step++ {
				forward := r.IntN(2) == 0
				var ok bool
				if forward {
					ok = it.Next()
				} else {
					ok = it.Prev()
				}
				if !ok {
					break
				}
				k := it.Key()
				c := base.InternalCompare(cur, k)
				if (forward && c >= 0) || (!forward && c <= 0) {
					fail("walk: %s then %s (forward %v)", cur, k, forward)
					return
				}
				if !check(k, it.Value()) {
					return
				}
				cur = k.Clone()
			}
		}
	}()

	// Gets at the published sequence number and at older snapshots.
	wg.Add(1)
	go func() {
		defer wg.Done()
		r := rand.New(rand.NewPCG(getSeed, 2))
		for !done.Load() {
			snap := base.SeqNum(published.Load())
			if r.IntN(2) == 0 && snap > 0 {
				snap = base.SeqNum(r.IntN(int(snap)))
			}
			key := pool[r.IntN(len(pool))]
			seqs := seqsOf[string(key)]
			i, _ := slices.BinarySearch(seqs, snap+1)
			v, kind, seq, ok := m.Get(key, snap)
			if i == 0 {
				if ok {
					fail("Get(%q, %d) found seq %d, want none", key, snap, seq)
					return
				}
				continue
			}
			if !ok || seq != seqs[i-1] || kind != base.KindSet {
				fail("Get(%q, %d) = %v seq %d %s, want seq %d", key, snap, ok, seq, kind, seqs[i-1])
				return
			}
			if !check(base.MakeInternalKey(key, seq, kind), v) {
				return
			}
		}
	}()

	for i, k := range keys {
		seq := base.SeqNum(i + 1)
		if err := m.Add(base.MakeInternalKey(k, seq, base.KindSet), concurrentValue(k, seq)); err != nil {
			t.Fatalf("Add %d: %v", i, err)
		}
		published.Store(uint64(seq))
	}
	done.Store(true)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	checkInvariants(t, &m.points)
}
