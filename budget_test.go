package strata

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/strata-db/strata/cache"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// heapInUse returns the Go heap in use after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// TestManyDBsHeap: 32 DBs opened with default options hold well under
// 200 MiB of Go heap before any write (each memtable holds one arena
// chunk, not MemTableSize).
func TestManyDBsHeap(t *testing.T) {
	dir := t.TempDir()
	before := heapInUse()
	dbs := make([]*DB, 32)
	for i := range dbs {
		db, err := Open(fmt.Sprintf("%s/db%02d", dir, i), nil)
		require.NoError(t, err)
		dbs[i] = db
	}
	grew := int64(heapInUse()) - int64(before)
	t.Logf("32 DBs with default options: Go heap in use grew by %.1f MiB", float64(grew)/(1<<20))
	require.Less(t, grew, int64(200<<20))
	var memtables int64
	for _, db := range dbs {
		memtables += db.Metrics().MemTable.Memory
		require.NoError(t, db.Close())
	}
	require.LessOrEqual(t, memtables, int64(32*chunkBytes))
}

// TestWriteBudgetBoundsManyDBs: 32 DBs share a write budget and a block
// cache; under writes to all of them the memtable memory of all of them,
// read from Metrics, stays within the budget, flushes making room; every
// write is readable afterwards.
func TestWriteBudgetBoundsManyDBs(t *testing.T) {
	limit, perDB := int64(256<<20), 10<<20
	if testing.Short() || readRaceEnabled {
		// The race detector makes the full size take a minute; a plain
		// run (CI's invariants pass among them) keeps 256 MiB.
		limit, perDB = 32<<20, 1500<<10
	}
	budget, err := NewWriteBudget(limit)
	require.NoError(t, err)
	shared := cache.New(16 << 20)
	fs := vfs.NewMem()
	dbs := make([]*DB, 32)
	for i := range dbs {
		db, err := Open(fmt.Sprintf("db%02d", i), &Options{FS: fs, MemoryBudget: budget, Cache: shared})
		require.NoError(t, err)
		dbs[i] = db
	}
	// dbOf spreads writer w's n-th write over the DBs, unevenly.
	dbOf := func(w, n int) int { return int(rand.New(rand.NewPCG(uint64(w), uint64(n))).Uint64()%97) % len(dbs) }
	const valueLen = 900 // below the separation threshold: in the memtable
	value := make([]byte, valueLen)
	done := make(chan struct{})
	var maxUsed, maxSum int64
	var sampler sync.WaitGroup
	sampler.Add(1)
	go func() {
		defer sampler.Done()
		for {
			var sum int64
			for _, db := range dbs {
				m := db.Metrics()
				sum += m.MemTable.Memory
				maxUsed = max(maxUsed, m.MemTable.Budget.Used)
			}
			maxSum = max(maxSum, sum)
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < 32*perDB/valueLen/4; n++ {
				db := dbs[dbOf(w, n)]
				key := binary.BigEndian.AppendUint64([]byte(fmt.Sprintf("w%d-", w)), uint64(n))
				if err := db.Set(key, value, NoSync); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(done)
	sampler.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	var flushes uint64
	for _, db := range dbs {
		m := db.Metrics()
		flushes += m.Flush.Count
		require.Equal(t, limit, m.MemTable.Budget.Limit)
	}
	t.Logf("budget %d MiB: max in use %.1f MiB (Metrics summed over DBs: %.1f MiB), %d flushes",
		limit>>20, float64(maxUsed)/(1<<20), float64(maxSum)/(1<<20), flushes)
	require.LessOrEqual(t, maxUsed, limit)
	require.LessOrEqual(t, maxSum, limit)
	require.Positive(t, flushes, "the budget flushed nothing")
	require.Greater(t, maxUsed, limit/2, "the load never came near the budget")
	// Every write is there.
	for w := 0; w < 4; w++ {
		for n := 0; n < 32*perDB/valueLen/4; n += 97 {
			db := dbs[dbOf(w, n)]
			key := binary.BigEndian.AppendUint64([]byte(fmt.Sprintf("w%d-", w)), uint64(n))
			ok, err := db.Has(key)
			require.NoError(t, err)
			require.True(t, ok, "key %q", key)
		}
	}
	for _, db := range dbs {
		require.NoError(t, db.Close())
	}
	require.Zero(t, budget.Used(), "closed DBs still charged to the budget")
}

// TestWriteBudgetFlushesLargest: with two DBs sharing a budget, writes to
// the second flush the first, which holds the largest memtable.
func TestWriteBudgetFlushesLargest(t *testing.T) {
	_, a, b := twoBudgetDBs(t, 4<<20)
	v := make([]byte, 500)
	for i := 0; a.Metrics().MemTable.Memory < 3<<20; i++ {
		require.NoError(t, a.Set([]byte(fmt.Sprintf("a%06d", i)), v, NoSync))
	}
	require.Zero(t, a.Metrics().Flush.Count)
	for i := 0; i < 2000; i++ {
		require.NoError(t, b.Set([]byte(fmt.Sprintf("b%06d", i)), v, NoSync))
	}
	// The flush of a runs in the background: wait for it.
	deadline := time.Now().Add(10 * time.Second)
	for a.Metrics().Flush.Count == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	require.Positive(t, a.Metrics().Flush.Count, "the largest memtable was not flushed")
	require.Zero(t, b.Metrics().Flush.Count)
	m := b.Metrics()
	require.Equal(t, int64(4<<20), m.MemTable.Budget.Limit)
	require.InDelta(t, float64(m.MemTable.Budget.Charged)/float64(4<<20), m.MemTable.Budget.Share, 1e-9)
	require.Contains(t, m.String(), "write budget: ")

	_, err := NewWriteBudget(0)
	require.Error(t, err)
	require.NoError(t, a.Close())
	require.True(t, errors.Is(a.Set([]byte("x"), v, NoSync), ErrClosed))
}

// TestWriteBudgetCloseUnderLoad: DBs sharing a small budget close while
// writers hammer all of them; every writer returns (nil or ErrClosed),
// none is left waiting on the budget, and the budget ends empty.
func TestWriteBudgetCloseUnderLoad(t *testing.T) {
	budget, err := NewWriteBudget(3 << 20)
	require.NoError(t, err)
	fs := vfs.NewMem()
	dbs := make([]*DB, 4)
	for i := range dbs {
		dbs[i], err = Open(fmt.Sprintf("db%d", i), &Options{FS: fs, MemoryBudget: budget})
		require.NoError(t, err)
	}
	var wg sync.WaitGroup
	v := make([]byte, 700)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				err := dbs[(w+n)%len(dbs)].Set([]byte(fmt.Sprintf("w%d-%d", w, n)), v, NoSync)
				if errors.Is(err, ErrClosed) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	time.Sleep(200 * time.Millisecond) // let the load reach the budget
	for _, db := range dbs {
		require.NoError(t, db.Close())
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(30 * time.Second):
		t.Fatal("writers still blocked after every DB closed")
	}
	require.Zero(t, budget.Used())
}

// TestWriteBudgetIteratorHoldsMemtable: an open iterator keeps a flushed
// memtable (and its charge) alive; writes under the budget, even from the
// goroutine that holds the iterator, do not wait for it to close.
func TestWriteBudgetIteratorHoldsMemtable(t *testing.T) {
	budget, a, b := twoBudgetDBs(t, 3<<20)
	v := make([]byte, 700)
	for i := 0; a.Metrics().MemTable.Memory < 2<<20; i++ {
		require.NoError(t, a.Set([]byte(fmt.Sprintf("a%06d", i)), v, NoSync))
	}
	it, err := a.NewIter(nil)
	require.NoError(t, err)
	require.NoError(t, a.Flush())
	require.GreaterOrEqual(t, budget.Used(), int64(2<<20), "the iterator's memtable is still charged")
	done := make(chan error, 1)
	go func() {
		for i := 0; i < 20000; i++ {
			if err := b.Set([]byte(fmt.Sprintf("b%06d", i)), v, NoSync); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(60 * time.Second):
		t.Fatal("writes waited on a memtable an open iterator holds")
	}
	require.True(t, it.First())
	require.NoError(t, it.Close())
}

// twoBudgetDBs opens DBs a and b on one in-memory filesystem sharing a
// write budget of limit bytes; they close when the test ends.
func twoBudgetDBs(t *testing.T, limit int64) (*WriteBudget, *DB, *DB) {
	t.Helper()
	budget, err := NewWriteBudget(limit)
	require.NoError(t, err)
	fs := vfs.NewMem()
	a, err := Open("a", &Options{FS: fs, MemoryBudget: budget})
	require.NoError(t, err)
	t.Cleanup(func() { a.Close() })
	b, err := Open("b", &Options{FS: fs, MemoryBudget: budget})
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	return budget, a, b
}
