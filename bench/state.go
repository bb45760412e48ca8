package bench

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/strata-db/strata"
)

// Stream-state workloads: the two things a stream processor's keyed state
// asks of its store beyond puts and gets.
//
// listappend is list state (Flink's ListState; a join's key -> list of
// records): Num operations on ListKeys lists picked by KeyDist, each an
// append of one element (a value of the spec's sizes) or, ListReadPercent
// of the time, a read of a whole list. A list is a sequence of elements,
// each a uvarint length and its bytes (strata.ListElement's encoding), so
// an append is the concatenation of the list and the encoded element: an
// engine with a merge operator (Merger) appends without reading the list;
// one without reads it and writes it back (Updater, or Get then Put).
//
// ttl is state that expires: Num writes of distinct keys, in random order,
// in ttlPhases phases, each write with time to live Spec.TTL. Between two
// phases time passes by the TTL, so each phase's keys have expired before
// the next phase ends, and the run writes ttlPhases times the data that is
// live at its end (the last phase's). How time passes depends on the
// engine (TTLWriter): one that follows Config.Clock sees the runner's clock
// jump; one on the real clock makes the workload wait (untimed); one
// without TTLs gets explicit deletes of the expired phase's keys, as an
// application would have to issue them (timed, not counted as
// operations).

// ttlPhases is the number of phases of the ttl workload: the run writes
// this many times the data live at its end.
const ttlPhases = 4

// realClockSlack is what the ttl workload waits past a TTL on an engine
// that decides expiry by the real clock: Badger keeps expiry times in whole
// seconds.
const realClockSlack = time.Second

// clockSlack is what the ttl workload moves the clock past a TTL, so that
// an entry written in the same millisecond as the phase's end has expired
// too (Strata keeps expiry times in milliseconds).
const clockSlack = time.Millisecond

// listKeyBase is the key index of listappend's first list: lists live far
// above the keys of the other benchmarks (indexes below Num, or a little
// more after YCSB inserts), so the two never meet.
const listKeyBase = 1 << 48

// maxListKeys bounds Spec.ListKeys (the workload keeps a counter per list).
const maxListKeys = 1 << 26

// ListKey is the key of list i of the listappend workload (keySize bytes,
// at least 8).
func ListKey(keySize int, i uint64) []byte {
	return MakeKey(make([]byte, keySize), listKeyBase+i)
}

// clock is the runner's clock of one engine run (Config.Clock): the real
// time, moved forward by what the ttl workload advanced it. It lasts
// across the run's benchmarks, as the engine's data does, so that what
// expired stays expired when the engine is opened again.
type clock struct{ offset atomic.Int64 }

func (c *clock) now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

func (c *clock) advance(d time.Duration) { c.offset.Add(int64(d)) }

// lists counts what listappend appended to each list, the same way for
// every engine.
type lists struct {
	elems []int64      // elements of each list; guarded by keyState.mu
	bytes atomic.Int64 // key and encoded element bytes of the lists
}

// ensureLists makes room for n lists.
func (s *keyState) ensureLists(n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if int64(len(s.lists.elems)) >= n {
		return
	}
	elems := make([]int64, n)
	copy(elems, s.lists.elems)
	s.lists.elems = elems
}

// listElems returns the number of elements appended to list i.
func (s *keyState) listElems(i uint64) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i >= uint64(len(s.lists.elems)) {
		return 0
	}
	return s.lists.elems[i]
}

// appended counts an element of n encoded bytes appended to list i.
func (s *keyState) appended(i uint64, n int) {
	s.mu.Lock()
	s.lists.elems[i]++
	first := s.lists.elems[i] == 1
	s.mu.Unlock()
	if first {
		s.lists.bytes.Add(int64(s.keySize))
	}
	s.lists.bytes.Add(int64(n))
}

// listMode says how an engine appends to a list, for the result's note.
func listMode(eng Engine) string {
	switch eng.(type) {
	case Merger:
		return "appends by merge operator"
	case Updater:
		return "appends by read-modify-write in a transaction (no merge operator)"
	}
	return "appends by read-modify-write: Get, then Put of the longer list (no merge operator)"
}

func planListAppend(spec *Spec, st *keyState) workload {
	num, lists := spec.Num, uint64(spec.ListKeys)
	st.ensureLists(spec.ListKeys)
	return workload{threads: 1, total: num, run: func(ctx context.Context, eng Engine, t *thread) error {
		t.note = listMode(eng)
		pick := func() uint64 { return t.rng.Uint64N(lists) }
		if spec.KeyDist == KeyZipfian {
			z := newZipfian(lists, spec.ZipfTheta)
			pick = func() uint64 { return fnv64(z.next(t.rng)) % lists }
		}
		var elem []byte
		return loop(ctx, num, func(int64) error {
			i := pick()
			if t.rng.IntN(100) < spec.ListReadPercent {
				return t.get(eng, listKeyBase+i)
			}
			elem = strata.ListElement(elem[:0], t.values.next())
			return t.appendList(eng, st, i, elem)
		})
	}}
}

// appendList appends the encoded element elem to list i, timed as one
// operation however the engine does it.
func (t *thread) appendList(eng Engine, st *keyState, i uint64, elem []byte) error {
	key := MakeKey(t.key, listKeyBase+i)
	start := time.Now()
	var err error
	switch e := eng.(type) {
	case Merger:
		err = e.Merge(key, elem)
	case Updater:
		err = e.Update(key, func(old []byte) ([]byte, error) {
			t.listBuf = append(append(t.listBuf[:0], old...), elem...)
			return t.listBuf, nil
		})
	default:
		var v []byte
		v, _, err = eng.Get(key, t.listBuf)
		if err == nil {
			t.listBuf = append(v, elem...)
			err = eng.Put(key, t.listBuf)
		}
	}
	t.tick(start)
	if err != nil {
		return err
	}
	t.userBytes += int64(len(key) + len(elem))
	t.moved += int64(len(key) + len(elem))
	st.appended(i, len(elem))
	return nil
}

func planTTL(spec *Spec, st *keyState) workload {
	num, ttl := spec.Num, spec.TTL
	perm := newRandSource(spec.Seed ^ 0x7711).Perm(int(num))
	return workload{threads: 1, total: num, run: func(ctx context.Context, eng Engine, t *thread) error {
		tw, _ := eng.(TTLWriter)
		per := (num + ttlPhases - 1) / ttlPhases
		var deleted int64
		for lo := int64(0); lo < num; lo += per {
			phase := perm[lo:min(num, lo+per)]
			err := loop(ctx, int64(len(phase)), func(j int64) error {
				return t.putTTL(eng, tw, st, uint64(phase[j]), ttl)
			})
			if err != nil {
				return err
			}
			if lo+per >= num {
				break // the last phase stays live
			}
			// Time passes: this phase's keys expire.
			switch {
			case tw != nil && tw.FollowsClock():
				st.clock.advance(ttl + clockSlack)
			case tw != nil:
				wait := ttl + realClockSlack
				start := time.Now()
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(wait):
				}
				t.paused += time.Since(start)
			default:
				for _, k := range phase {
					if err := eng.Delete(MakeKey(t.key, uint64(k))); err != nil {
						return err
					}
				}
				deleted += int64(len(phase))
			}
			for _, k := range phase {
				st.clearLive(uint64(k))
			}
		}
		switch {
		case tw != nil && tw.FollowsClock():
			t.note = fmt.Sprintf("the engine's clock moved %s forward after each of %d phases", ttl+clockSlack, ttlPhases-1)
		case tw != nil:
			t.note = fmt.Sprintf("waited %s for the real clock (untimed)", t.paused.Round(time.Millisecond))
		default:
			t.note = fmt.Sprintf("no TTL: %d expired keys deleted explicitly (timed, not counted as operations)", deleted)
		}
		return nil
	}}
}

// putTTL writes key idx with time to live ttl (a plain put on an engine
// without TTLs).
func (t *thread) putTTL(eng Engine, tw TTLWriter, st *keyState, idx uint64, ttl time.Duration) error {
	if tw == nil {
		return t.put(eng, st, idx)
	}
	key := MakeKey(t.key, idx)
	v := t.values.next()
	start := time.Now()
	err := tw.PutTTL(key, v, ttl)
	t.tick(start)
	t.userBytes += int64(len(key) + len(v))
	t.moved += int64(len(key) + len(v))
	st.setLive(idx, len(v))
	return err
}
