package sstable

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/strata-db/strata/cache"
	"github.com/strata-db/strata/index/learned"
	"github.com/strata-db/strata/index/learned/learnedtest"
	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/internal/cputime"
)

// learnedBenchKeys is the key count of the benchmark tables: about 18 MB
// of keys and pointer-sized values, a table compaction would write.
const learnedBenchKeys = 500_000

type learnedBenchTable struct {
	keys [][]byte
	f    *testFile
	size int64
	// cache holds the table's blocks for both modes: learned and binary
	// lookups read the very same block copies, so that where the memory
	// of a block lies (which moves a lookup's cost by a third on a
	// virtual machine) does not favour either.
	cache   *cache.Cache
	cacheID uint64
}

var learnedBenchTables = map[string]*learnedBenchTable{}

// learnedTable builds (once per key set and bound) a table of the set's
// keys, one entry each with a 9-byte value, with a learned index.
func learnedTable(b *testing.B, ks learnedtest.KeySet, eps int) *learnedBenchTable {
	name := fmt.Sprint(ks.Name, eps)
	if t, ok := learnedBenchTables[name]; ok {
		return t
	}
	rng := rand.New(rand.NewPCG(11, 12))
	keys := ks.Gen(rng, learnedBenchKeys)
	f := newTestFile(b)
	w := NewWriter(f, WriterOptions{Learned: &learned.Options{ErrorBound: eps}})
	for i, k := range keys {
		if err := w.Add(base.MakeInternalKey(k, base.SeqNum(i+1), base.KindValuePointer), randValue(rng, 9)); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	t := &learnedBenchTable{keys: keys, f: f, cache: cache.New(1 << 30)}
	t.cacheID = t.cache.NewID()
	t.size = int64(w.Metadata().Size)
	learnedBenchTables[name] = t
	return t
}

// BenchmarkLearnedGet compares point lookups of present keys, in random
// order, in a table whose blocks are all in the block cache: through the
// learned index, and by binary search of the index with the model
// ignored. Both modes read the same cached blocks. Each sub-benchmark
// reports the model's segments and memory (as a share of the table), and,
// on Linux, the CPU time per lookup, steadier than ns/op on a shared
// machine.
//
//	go test ./lsm/sstable -run '^$' -bench LearnedGet -count 3
func BenchmarkLearnedGet(b *testing.B) {
	for _, ks := range learnedtest.KeySets {
		for _, eps := range []int{8, 16} {
			for _, mode := range []string{"learned", "binary"} {
				b.Run(fmt.Sprintf("%s/eps=%d/%s", ks.Name, eps, mode), func(b *testing.B) {
					t := learnedTable(b, ks, eps)
					r, err := NewReader(t.f.reopen(b), t.size, ReaderOptions{Cache: t.cache, CacheID: t.cacheID, FileNum: 1, DisableLearned: mode == "binary"})
					if err != nil {
						b.Fatal(err)
					}
					defer r.Close()
					for _, k := range t.keys { // warm the cache
						r.Get(k, base.SeqNumMax)
					}
					// The probes, random keys of the table, are copied in
					// order into one buffer, so that fetching the next one
					// costs no cache miss of its own.
					rng := rand.New(rand.NewPCG(5, 6))
					picks := make([][]byte, 1<<16)
					size := 0
					for i := range picks {
						picks[i] = t.keys[rng.IntN(len(t.keys))]
						size += len(picks[i])
					}
					buf := make([]byte, 0, size)
					probes := make([][]byte, len(picks))
					for i, k := range picks {
						buf = append(buf, k...)
						probes[i] = buf[len(buf)-len(k):]
					}
					b.ReportAllocs()
					b.ResetTimer()
					cpu := cputime.Start()
					for i := range b.N {
						k := probes[i&(len(probes)-1)]
						if _, _, _, ok, err := r.Get(k, base.SeqNumMax); !ok || err != nil {
							b.Fatal("missing key", err)
						}
					}
					cpu.Stop(b)
					if info := r.Learned(); info.Present {
						b.ReportMetric(float64(info.Segments), "segments")
						b.ReportMetric(100*float64(info.Bytes)/float64(t.size), "%model")
					}
				})
			}
		}
	}
}
