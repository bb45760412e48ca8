package strata

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
)

// TestReadStateReleasedOnceAfterReaders swaps read states under readers
// that hold them (as Gets and iterators do) and checks that each state
// lets go of its memtable exactly once, only once retired, and never while
// a reader holds it: the striped references must not let a state go under
// a reader whose reference sits in a stripe summed early, nor twice when
// the retiring writer and a reader both see zero.
func TestReadStateReleasedOnceAfterReaders(t *testing.T) {
	states := 3000
	if testing.Short() {
		states = 500
	}
	d := &DB{}
	inUse := make([]atomic.Int32, states)
	released := make([]atomic.Int32, states)
	retired := make([]atomic.Bool, states)
	var early, underReader atomic.Int32
	mems := make([]*memTable, states)
	publish := func(idx int) {
		m := &memTable{logNum: base.FileNum(idx)}
		mems[idx] = m
		m.release = func(*memTable) {
			if !retired[idx].Load() {
				early.Add(1)
			}
			if inUse[idx].Load() != 0 {
				underReader.Add(1)
			}
			released[idx].Add(1)
		}
		m.ref()
		rs := &readState{version: &manifest.Version{}, memtables: []*memTable{m}}
		rs.version.Ref()
		if idx > 0 {
			retired[idx-1].Store(true)
		}
		d.swapReadState(rs)
	}

	publish(0)
	var stop atomic.Bool
	var wg sync.WaitGroup
	var reads, lateReads atomic.Int64
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; !stop.Load(); n++ {
				r := d.loadReadState()
				if r.readState == nil {
					continue
				}
				idx := int(r.memtables[0].logNum)
				inUse[idx].Add(1)
				if released[idx].Load() != 0 {
					lateReads.Add(1) // holding a state already let go
				}
				if (n+g)%3 == 0 {
					runtime.Gosched() // hold it across a swap now and then
				}
				inUse[idx].Add(-1)
				r.unref()
				reads.Add(1)
			}
		}()
	}
	for idx := 1; idx < states; idx++ {
		publish(idx)
		if idx%8 == 0 {
			runtime.Gosched()
		}
	}
	retired[states-1].Store(true)
	d.swapReadState(nil) // as Close does
	require.Zero(t, d.loadReadState().readState, "a closed DB hands out no read state")
	stop.Store(true)
	wg.Wait()

	require.Zero(t, early.Load(), "states let go before they were retired")
	require.Zero(t, underReader.Load(), "states let go while a reader held them")
	require.Zero(t, lateReads.Load(), "readers got states already let go")
	for idx := range states {
		require.EqualValues(t, 1, released[idx].Load(), "state %d let go %d times", idx, released[idx].Load())
		// A second release would take the memtable's count below zero
		// (its release callback runs only at zero).
		require.Zero(t, mems[idx].refs.Load(), "state %d: memtable references", idx)
	}
	require.Positive(t, reads.Load())
}
