package bench

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

type randSource = *rand.Rand

func newRandSource(seed uint64) randSource {
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// keyState tracks which key indexes exist, the same way for every engine,
// so live bytes (for space amplification) and the YCSB insert counter do
// not depend on the engine.
type keyState struct {
	keySize int
	num     uint64

	mu    sync.Mutex // guards bits, sizes and limit
	bits  []atomic.Uint64
	sizes []uint32 // each live key's value size
	limit uint64   // capacity of bits and sizes, in keys
	live  atomic.Int64
	// valueBytes adds up the live keys' value sizes: exact when value
	// sizes vary (distributions, the shifting phases).
	valueBytes atomic.Int64
	next       atomic.Uint64 // one past the largest key index written
}

func newKeyState(spec *Spec) *keyState {
	s := &keyState{keySize: spec.KeySize, num: uint64(spec.Num)}
	s.ensure(uint64(spec.Num))
	return s
}

// ensure makes room for key indexes below n.
func (s *keyState) ensure(n uint64) {
	s.mu.Lock()
	s.growLocked(n)
	s.mu.Unlock()
}

func (s *keyState) growLocked(n uint64) {
	if n <= s.limit {
		return
	}
	words := (n + n/4 + 63) / 64
	bits := make([]atomic.Uint64, words)
	for i := range s.bits {
		bits[i].Store(s.bits[i].Load())
	}
	s.bits = bits
	sizes := make([]uint32, words*64)
	copy(sizes, s.sizes)
	s.sizes = sizes
	s.limit = words * 64
}

// isLive reports whether key index i was written and not deleted since.
func (s *keyState) isLive(i uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return i < s.limit && s.bits[i/64].Load()&(1<<(i%64)) != 0
}

// setLive records that key index i now holds a value of size bytes.
func (s *keyState) setLive(i uint64, size int) {
	s.mu.Lock()
	s.growLocked(i + 1)
	old := s.bits[i/64].Or(1 << (i % 64))
	was := int64(0)
	if old&(1<<(i%64)) != 0 {
		was = int64(s.sizes[i])
	}
	s.sizes[i] = uint32(size)
	s.valueBytes.Add(int64(size) - was)
	s.mu.Unlock()
	if old&(1<<(i%64)) == 0 {
		s.live.Add(1)
	}
	for {
		n := s.next.Load()
		if i < n || s.next.CompareAndSwap(n, i+1) {
			return
		}
	}
}

func (s *keyState) clearLive(i uint64) {
	s.mu.Lock()
	var old uint64
	if i < s.limit {
		old = s.bits[i/64].And(^uint64(1 << (i % 64)))
		if old&(1<<(i%64)) != 0 {
			s.valueBytes.Add(-int64(s.sizes[i]))
		}
	}
	s.mu.Unlock()
	if old&(1<<(i%64)) != 0 {
		s.live.Add(-1)
	}
}

// keyRange is the number of key indexes reads and updates choose from: the
// spec's Num, or more once YCSB inserts went past it.
func (s *keyState) keyRange() uint64 { return max(s.num, s.next.Load()) }

func (s *keyState) liveBytes() int64 {
	return s.live.Load()*int64(s.keySize) + s.valueBytes.Load()
}

// workload is a planned benchmark: how many workers, how many operations in
// all, what each worker does, and an optional background writer.
type workload struct {
	threads    int
	total      int64
	run        func(ctx context.Context, eng Engine, t *thread) error
	background func(ctx context.Context, eng Engine, t *thread, stop <-chan struct{}) error
}

// Operations, each timed and counted.

func (t *thread) put(eng Engine, st *keyState, idx uint64) error {
	key := MakeKey(t.key, idx)
	v := t.values.next()
	start := time.Now()
	err := eng.Put(key, v)
	t.tickOp(opWrite, start)
	t.userBytes += int64(len(key) + len(v))
	t.moved += int64(len(key) + len(v))
	st.setLive(idx, len(v))
	return err
}

func (t *thread) get(eng Engine, idx uint64) error {
	key := MakeKey(t.key, idx)
	start := time.Now()
	v, found, err := eng.Get(key, t.getBuf)
	t.tickOp(opRead, start)
	t.getBuf = v
	t.reads++
	if found {
		t.found++
		t.moved += int64(len(key) + len(v))
	}
	return err
}

func (t *thread) del(eng Engine, st *keyState, idx uint64) error {
	key := MakeKey(t.key, idx)
	start := time.Now()
	err := eng.Delete(key)
	t.tickOp(opWrite, start)
	t.userBytes += int64(len(key))
	st.clearLive(idx)
	return err
}

func (t *thread) scan(eng Engine, idx uint64, n int) error {
	key := MakeKey(t.key, idx)
	start := time.Now()
	rows, bytes, err := eng.Scan(key, n)
	t.tickOp(opScan, start)
	t.rows += int64(rows)
	t.moved += bytes
	return err
}

// loop runs n operations, checking for cancellation now and then.
func loop(ctx context.Context, n int64, op func(i int64) error) error {
	for i := int64(0); i < n; i++ {
		if i&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if err := op(i); err != nil {
			return err
		}
	}
	return nil
}

// planWorkload turns a benchmark name into work.
func planWorkload(spec *Spec, name string, st *keyState) workload {
	num, reads, threads := spec.Num, spec.Reads, spec.Threads
	switch name {
	case FillSeq:
		return workload{threads: 1, total: num, run: func(ctx context.Context, eng Engine, t *thread) error {
			return loop(ctx, num, func(i int64) error { return t.put(eng, st, uint64(i)) })
		}}
	case FillRandom:
		perm := newRandSource(spec.Seed ^ 0xf111).Perm(int(num))
		return workload{threads: 1, total: num, run: func(ctx context.Context, eng Engine, t *thread) error {
			return loop(ctx, num, func(i int64) error { return t.put(eng, st, uint64(perm[i])) })
		}}
	case Overwrite:
		return workload{threads: 1, total: num, run: func(ctx context.Context, eng Engine, t *thread) error {
			pick := func() uint64 { return t.rng.Uint64N(st.keyRange()) }
			if spec.KeyDist == KeyZipfian {
				n := st.keyRange()
				z := newZipfian(n, spec.ZipfTheta)
				pick = func() uint64 { return fnv64(z.next(t.rng)) % n }
			}
			return loop(ctx, num, func(int64) error { return t.put(eng, st, pick()) })
		}}
	case DeleteRandom:
		return workload{threads: 1, total: num, run: func(ctx context.Context, eng Engine, t *thread) error {
			return loop(ctx, num, func(int64) error { return t.del(eng, st, t.rng.Uint64N(st.keyRange())) })
		}}
	case ReadRandom:
		return workload{threads: threads, total: reads * int64(threads), run: func(ctx context.Context, eng Engine, t *thread) error {
			return loop(ctx, reads, func(int64) error { return t.get(eng, t.rng.Uint64N(st.keyRange())) })
		}}
	case ReadSeq:
		return workload{threads: 1, total: int64(st.keyRange()), run: func(ctx context.Context, eng Engine, t *thread) error {
			key := MakeKey(t.key, 0)
			rows, bytes, err := eng.Scan(key, int(st.keyRange()))
			t.ops, t.rows, t.moved = int64(rows), int64(rows), bytes
			t.done.Add(int64(rows))
			return err
		}}
	case SeekRandom:
		seeks := SeekCount(spec)
		return workload{threads: threads, total: seeks * int64(threads), run: func(ctx context.Context, eng Engine, t *thread) error {
			return loop(ctx, seeks, func(int64) error { return t.scan(eng, t.rng.Uint64N(st.keyRange()), spec.SeekNexts+1) })
		}}
	case ReadWhileWriting:
		return workload{threads: threads, total: reads * int64(threads),
			run: func(ctx context.Context, eng Engine, t *thread) error {
				return loop(ctx, reads, func(int64) error { return t.get(eng, t.rng.Uint64N(st.keyRange())) })
			},
			background: func(ctx context.Context, eng Engine, t *thread, stop <-chan struct{}) error {
				for {
					select {
					case <-stop:
						return nil
					default:
					}
					if err := t.put(eng, st, t.rng.Uint64N(st.keyRange())); err != nil {
						return err
					}
				}
			}}
	}
	if isShift(name) {
		return planShift(spec, name, st)
	}
	return planYCSB(spec, name, st)
}

// SeekCount is the number of seeks per thread of seekrandom: enough that
// the rows read (a seek plus SeekNexts nexts each) add up to about Reads.
func SeekCount(spec *Spec) int64 {
	per := int64(spec.SeekNexts + 1)
	return max(1, (spec.Reads+per-1)/per)
}

// YCSB mixes: the share of reads, and what the rest is.
var ycsbMix = map[string]struct {
	readPct int
	other   string // "update", "insert", "rmw"
	latest  bool   // reads favour recently inserted keys (ycsb-d)
	scans   bool   // reads are scans (ycsb-e)
}{
	YCSBA: {50, "update", false, false},
	YCSBB: {95, "update", false, false},
	YCSBC: {100, "update", false, false},
	YCSBD: {95, "insert", true, false},
	YCSBE: {95, "insert", false, true},
	YCSBF: {50, "rmw", false, false},
}

// ycsbMaxScan is YCSB's default maximum scan length (ycsb-e draws
// uniformly in [1, 100]).
const ycsbMaxScan = 100

func planYCSB(spec *Spec, name string, st *keyState) workload {
	mix := ycsbMix[name]
	reads, threads := spec.Reads, spec.Threads
	return workload{threads: threads, total: reads * int64(threads), run: func(ctx context.Context, eng Engine, t *thread) error {
		z := newZipfian(st.keyRange(), spec.ZipfTheta)
		pick := func() uint64 {
			n := st.keyRange()
			if mix.latest {
				// Recently inserted keys are the popular ones.
				return n - 1 - z.next(t.rng)%n
			}
			return fnv64(z.next(t.rng)) % n
		}
		return loop(ctx, reads, func(i int64) error {
			if i&1023 == 0 {
				z.grow(st.keyRange())
			}
			if t.rng.IntN(100) < mix.readPct {
				if mix.scans {
					return t.scan(eng, pick(), 1+t.rng.IntN(ycsbMaxScan))
				}
				return t.get(eng, pick())
			}
			switch mix.other {
			case "insert":
				return t.put(eng, st, st.next.Add(1)-1)
			case "rmw":
				k := pick()
				if err := t.get(eng, k); err != nil {
					return err
				}
				t.ops-- // a read-modify-write is one operation
				return t.put(eng, st, k)
			}
			return t.put(eng, st, pick())
		})
	}}
}
