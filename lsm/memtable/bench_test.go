package memtable

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/btree"

	"github.com/strata-db/strata/internal/base"
)

const (
	benchKeyLen   = 16
	benchValueLen = 100
)

// benchKeys returns n random 16-byte keys in one backing buffer.
func benchKeys(n int) [][]byte {
	r := rand.New(rand.NewPCG(42, 43))
	buf := make([]byte, n*benchKeyLen)
	for i := 0; i < len(buf); i += 8 {
		v := r.Uint64()
		for j := 0; j < 8; j++ {
			buf[i+j] = byte(v >> (8 * j))
		}
	}
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = buf[i*benchKeyLen : (i+1)*benchKeyLen : (i+1)*benchKeyLen]
	}
	return keys
}

var (
	benchKeysOnce sync.Once
	benchKeys1M   [][]byte
)

func sharedBenchKeys() [][]byte {
	benchKeysOnce.Do(func() { benchKeys1M = benchKeys(1 << 20) })
	return benchKeys1M
}

// cpuMeter measures the CPU time of the benchmark goroutine, pinned to its
// thread. Unlike wall time it is not inflated when other processes compete
// for the cores; it is reported as cpu-ns/op beside ns/op.
type cpuMeter struct {
	b       *testing.B
	t0, sum int64
}

func newCPUMeter(b *testing.B) *cpuMeter {
	runtime.LockOSThread()
	return &cpuMeter{b: b}
}

func (c *cpuMeter) start() { c.t0 = threadCPUNanos() }
func (c *cpuMeter) stop()  { c.sum += threadCPUNanos() - c.t0 }

// report stops the meter and reports CPU time per op, dividing by perOp
// entries per benchmark iteration.
func (c *cpuMeter) report(perOp int) {
	c.stop()
	runtime.UnlockOSThread()
	if c.t0 >= 0 {
		c.b.ReportMetric(float64(c.sum)/float64(c.b.N*perOp), "cpu-ns/op")
	}
}

// skiplistFor returns a memtable holding keys[:n] with sequence numbers
// 1..n.
func skiplistFor(b *testing.B, keys [][]byte, n int) *MemTable {
	m := New(n * EntrySize(benchKeyLen, benchValueLen))
	val := make([]byte, benchValueLen)
	for i := 0; i < n; i++ {
		if err := m.Add(base.MakeInternalKey(keys[i], base.SeqNum(i+1), base.KindSet), val); err != nil {
			b.Fatal(err)
		}
	}
	return m
}

// BenchmarkAdd inserts random 16-byte keys with 100-byte values into a
// 64 MiB memtable, starting a new one when it fills up.
func BenchmarkAdd(b *testing.B) {
	b.SetBytes(benchKeyLen + benchValueLen)
	benchAdd(b, sharedBenchKeys(), func() *MemTable { return New(64 << 20) })
}

// benchAdd inserts keys (cycling; len(keys) a power of two) with 100-byte
// values into memtables from newMem, taking a new one when one fills up,
// and reports CPU time per insert.
func benchAdd(b *testing.B, keys [][]byte, newMem func() *MemTable) {
	val := make([]byte, benchValueLen)
	m := newMem()
	cpu := newCPUMeter(b)
	b.ReportAllocs()
	b.ResetTimer()
	cpu.start()
	for i := 0; i < b.N; i++ {
		k := base.MakeInternalKey(keys[i&(len(keys)-1)], base.SeqNum(i+1), base.KindSet)
		err := m.Add(k, val)
		if err == ErrArenaFull {
			b.StopTimer()
			cpu.stop()
			m = newMem()
			cpu.start()
			b.StartTimer()
			err = m.Add(k, val)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	cpu.report(1)
}

// BenchmarkGet looks up random present keys in a 500k-entry memtable.
func BenchmarkGet(b *testing.B) {
	const n = 500_000
	keys := sharedBenchKeys()
	m := skiplistFor(b, keys, n)
	r := rand.New(rand.NewPCG(1, 2))
	cpu := newCPUMeter(b)
	b.ReportAllocs()
	b.ResetTimer()
	cpu.start()
	for i := 0; i < b.N; i++ {
		if _, _, _, ok := m.Get(keys[r.IntN(n)], base.SeqNumMax); !ok {
			b.Fatal("not found")
		}
	}
	cpu.report(1)
}

// BenchmarkGetSizes shows how Get cost follows the table size: small
// tables stay in cache, large ones pay a memory access per node visited.
func BenchmarkGetSizes(b *testing.B) {
	keys := sharedBenchKeys()
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			m := skiplistFor(b, keys, n)
			r := rand.New(rand.NewPCG(1, 2))
			cpu := newCPUMeter(b)
			b.ReportAllocs()
			b.ResetTimer()
			cpu.start()
			for i := 0; i < b.N; i++ {
				if _, _, _, ok := m.Get(keys[r.IntN(n)], base.SeqNumMax); !ok {
					b.Fatal("not found")
				}
			}
			cpu.report(1)
		})
	}
}

// BenchmarkIterNext measures one Next (plus Key and Value) over a
// 500k-entry memtable.
func BenchmarkIterNext(b *testing.B) {
	const n = 500_000
	m := skiplistFor(b, sharedBenchKeys(), n)
	it := m.NewIter()
	it.First()
	var sink int
	cpu := newCPUMeter(b)
	b.ReportAllocs()
	b.ResetTimer()
	cpu.start()
	for i := 0; i < b.N; i++ {
		if !it.Next() {
			it.First()
		}
		sink += int(it.Key().UserKey[0]) + int(it.Value()[0])
	}
	cpu.report(1)
	_ = sink
}

// BenchmarkAddConcurrentReaders is BenchmarkAdd with one reader goroutine
// alternating Gets and short scans on the same memtable.
func BenchmarkAddConcurrentReaders(b *testing.B) {
	keys := sharedBenchKeys()
	val := make([]byte, benchValueLen)
	var cur atomic.Pointer[MemTable]
	var written atomic.Int64
	cur.Store(New(64 << 20))
	var stop atomic.Bool
	var reads atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		r := rand.New(rand.NewPCG(3, 4))
		for !stop.Load() {
			m := cur.Load()
			w := int(written.Load())
			if w == 0 {
				continue
			}
			m.Get(keys[r.IntN(min(w, len(keys)))], base.SeqNumMax)
			it := m.NewIter()
			j := 0
			for ok := it.SeekGE(keys[r.IntN(len(keys))]); ok && j < 10; ok = it.Next() {
				j++
			}
			reads.Add(1)
		}
	}()
	cpu := newCPUMeter(b)
	b.SetBytes(benchKeyLen + benchValueLen)
	b.ReportAllocs()
	b.ResetTimer()
	cpu.start()
	m := cur.Load()
	for i := 0; i < b.N; i++ {
		k := base.MakeInternalKey(keys[i&(len(keys)-1)], base.SeqNum(i+1), base.KindSet)
		err := m.Add(k, val)
		if err == ErrArenaFull {
			b.StopTimer()
			cpu.stop()
			m = New(64 << 20)
			cur.Store(m)
			written.Store(0)
			cpu.start()
			b.StartTimer()
			err = m.Add(k, val)
		}
		if err != nil {
			b.Fatal(err)
		}
		written.Add(1)
	}
	b.StopTimer()
	cpu.report(1)
	stop.Store(true)
	wg.Wait()
	b.ReportMetric(float64(reads.Load())/float64(b.N), "reads/add")
}

// btreeItem is an entry of the B-tree memtable used for comparison.
type btreeItem struct {
	key     []byte
	trailer uint64
	value   []byte
}

func btreeLess(a, b btreeItem) bool {
	if c := bytes.Compare(a.key, b.key); c != 0 {
		return c < 0
	}
	return a.trailer > b.trailer
}

// btreeMemTable is the alternative design measured against the skiplist: a
// google/btree BTreeG of degree 32 behind a RWMutex, keys and values copied
// into a slab (one allocation per MiB, not per entry).
type btreeMemTable struct {
	mu   sync.RWMutex
	tr   *btree.BTreeG[btreeItem]
	slab []byte
}

func newBTreeMemTable() *btreeMemTable {
	return &btreeMemTable{tr: btree.NewG[btreeItem](32, btreeLess)}
}

func (t *btreeMemTable) add(key base.InternalKey, value []byte) {
	n := len(key.UserKey) + len(value)
	if cap(t.slab)-len(t.slab) < n {
		t.slab = make([]byte, 0, max(n, 1<<20))
	}
	off := len(t.slab)
	t.slab = append(t.slab, key.UserKey...)
	t.slab = append(t.slab, value...)
	k := t.slab[off : off+len(key.UserKey) : off+len(key.UserKey)]
	v := t.slab[off+len(key.UserKey) : off+n : off+n]
	t.mu.Lock()
	t.tr.ReplaceOrInsert(btreeItem{key: k, trailer: uint64(key.Trailer), value: v})
	t.mu.Unlock()
}

func (t *btreeMemTable) get(key []byte, snap base.SeqNum) (value []byte, found bool) {
	t.mu.RLock()
	t.tr.AscendGreaterOrEqual(btreeItem{key: key, trailer: uint64(base.MakeTrailer(snap, base.KindMax))},
		func(it btreeItem) bool {
			if bytes.Equal(it.key, key) {
				value, found = it.value, true
			}
			return false
		})
	t.mu.RUnlock()
	return value, found
}

const compareN = 1 << 20

// BenchmarkCompare measures the skiplist against the B-tree on 1M random
// 16-byte keys with 100-byte values: inserting all of them into an empty
// table (ns/key), random Gets on the full table (ns/op), and a full
// in-order scan that reads the first byte of every key and value (ns/key).
// cpu-ns/op is the same per key or per Get, in CPU time.
func BenchmarkCompare(b *testing.B) {
	keys := sharedBenchKeys()[:compareN]
	val := make([]byte, benchValueLen)
	perKey := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*compareN), "ns/key")
	}
	b.Run("insert1M/skiplist", func(b *testing.B) {
		cpu := newCPUMeter(b)
		cpu.start()
		for i := 0; i < b.N; i++ {
			skiplistFor(b, keys, compareN)
		}
		cpu.report(compareN)
		perKey(b)
	})
	b.Run("insert1M/btree", func(b *testing.B) {
		cpu := newCPUMeter(b)
		cpu.start()
		for i := 0; i < b.N; i++ {
			t := newBTreeMemTable()
			for j, k := range keys {
				t.add(base.MakeInternalKey(k, base.SeqNum(j+1), base.KindSet), val)
			}
		}
		cpu.report(compareN)
		perKey(b)
	})

	var sl *MemTable
	var bt *btreeMemTable
	build := func(b *testing.B) {
		if sl != nil {
			return
		}
		sl = skiplistFor(b, keys, compareN)
		bt = newBTreeMemTable()
		for j, k := range keys {
			bt.add(base.MakeInternalKey(k, base.SeqNum(j+1), base.KindSet), val)
		}
	}
	b.Run("get1M/skiplist", func(b *testing.B) {
		build(b)
		r := rand.New(rand.NewPCG(5, 6))
		cpu := newCPUMeter(b)
		b.ReportAllocs()
		b.ResetTimer()
		cpu.start()
		for i := 0; i < b.N; i++ {
			if _, _, _, ok := sl.Get(keys[r.IntN(compareN)], base.SeqNumMax); !ok {
				b.Fatal("not found")
			}
		}
		cpu.report(1)
	})
	b.Run("get1M/btree", func(b *testing.B) {
		build(b)
		r := rand.New(rand.NewPCG(5, 6))
		cpu := newCPUMeter(b)
		b.ReportAllocs()
		b.ResetTimer()
		cpu.start()
		for i := 0; i < b.N; i++ {
			if _, ok := bt.get(keys[r.IntN(compareN)], base.SeqNumMax); !ok {
				b.Fatal("not found")
			}
		}
		cpu.report(1)
	})
	var sink int
	b.Run("scan1M/skiplist", func(b *testing.B) {
		build(b)
		cpu := newCPUMeter(b)
		b.ReportAllocs()
		b.ResetTimer()
		cpu.start()
		for i := 0; i < b.N; i++ {
			it := sl.NewIter()
			for ok := it.First(); ok; ok = it.Next() {
				sink += int(it.Key().UserKey[0]) + int(it.Value()[0])
			}
		}
		cpu.report(compareN)
		perKey(b)
	})
	b.Run("scan1M/btree", func(b *testing.B) {
		build(b)
		cpu := newCPUMeter(b)
		b.ReportAllocs()
		b.ResetTimer()
		cpu.start()
		for i := 0; i < b.N; i++ {
			bt.mu.RLock()
			bt.tr.Ascend(func(it btreeItem) bool {
				sink += int(it.key[0]) + int(it.value[0])
				return true
			})
			bt.mu.RUnlock()
		}
		cpu.report(compareN)
		perKey(b)
	})
	_ = sink
}

// BenchmarkAddIntKeys inserts 16-byte keys that start with a big-endian
// integer below 2^20 (keys sharing their first 5 bytes, as integer keys
// and keys behind a short common prefix do), in random order, into a
// 64 MiB memtable: with the default link summaries (the first 4 bytes,
// all equal) and with links tuned to the key range.
func BenchmarkAddIntKeys(b *testing.B) {
	keys := make([][]byte, 1<<20)
	r := rand.New(rand.NewPCG(42, 43))
	for i := range keys {
		k := make([]byte, benchKeyLen)
		binary.BigEndian.PutUint64(k, r.Uint64N(1<<20))
		keys[i] = k
	}
	for _, tuned := range []bool{false, true} {
		b.Run(fmt.Sprintf("tuned=%t", tuned), func(b *testing.B) {
			benchAdd(b, keys, func() *MemTable {
				m := New(64 << 20)
				if tuned {
					m.TuneLinks(0, 1<<20-1)
				}
				return m
			})
		})
	}
}
