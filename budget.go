package strata

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// WriteBudget bounds the memtable memory of every DB whose
// Options.MemoryBudget points at it, the way a process with many databases
// (a state store opens one per partition) wants: memory goes where the
// writes are, and the total stays under one limit.
//
// The memory counted is what the memtables' arenas hold (they grow in
// 256 KiB chunks as they fill), mutable and frozen ones alike, until a
// flushed memtable is released. When the total reaches 7/8 of the limit,
// the largest mutable memtable of any DB sharing the budget is frozen and
// flushed; while the total is at the limit (less a chunk per DB, the most
// a write admitted just below it adds unless its batch is larger), writes
// to every DB sharing it wait for flushes to give memory back, as long as
// one is under way: a budget smaller than the DBs' empty memtables does
// not stop writes.
//
// Each DB's MemTableSize still applies: a memtable is frozen at that size
// whatever the budget. Create one with NewWriteBudget; it is safe for
// concurrent use.
type WriteBudget struct {
	limit   int64
	flushAt int64
	used    atomic.Int64

	mu   sync.Mutex
	cond sync.Cond
	dbs  map[*DB]struct{}
	ndbs atomic.Int64 // len(dbs)
}

// NewWriteBudget returns a budget of limit bytes of memtable memory.
func NewWriteBudget(limit int64) (*WriteBudget, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("strata: write budget of %d bytes: must be positive", limit)
	}
	b := &WriteBudget{limit: limit, flushAt: limit - limit/8, dbs: map[*DB]struct{}{}}
	b.cond.L = &b.mu
	return b, nil
}

// Limit returns the budget in bytes.
func (b *WriteBudget) Limit() int64 { return b.limit }

// Used returns the memtable memory of every DB sharing the budget.
func (b *WriteBudget) Used() int64 { return b.used.Load() }

func (b *WriteBudget) register(d *DB) {
	b.mu.Lock()
	b.dbs[d] = struct{}{}
	b.ndbs.Store(int64(len(b.dbs)))
	b.mu.Unlock()
}

// unregister removes d (at Close); writers waiting on the budget look
// again.
func (b *WriteBudget) unregister(d *DB) {
	b.mu.Lock()
	delete(b.dbs, d)
	b.ndbs.Store(int64(len(b.dbs)))
	b.cond.Broadcast()
	b.mu.Unlock()
}

// charge adds delta bytes to the total. Memory given back wakes waiting
// writers.
func (b *WriteBudget) charge(delta int64) {
	if delta == 0 {
		return
	}
	b.used.Add(delta)
	if delta < 0 {
		b.mu.Lock()
		b.cond.Broadcast()
		b.mu.Unlock()
	}
}

// maybeFlush freezes the largest mutable memtable when the memory not
// already on its way back has reached the flush point.
func (b *WriteBudget) maybeFlush() {
	if b.used.Load() >= b.flushAt {
		b.flushLargest()
	}
}

// flushLargest asks the DB with the largest mutable memtable to freeze and
// flush it, when the memory of the memtables that are neither frozen nor
// being frozen is at the flush point. It reports whether memory is on its
// way back: a frozen memtable waiting for its flush, or a rotation
// under way (requested now or before).
func (b *WriteBudget) flushLargest() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	var (
		freeing int64
		target  *DB
		largest int64
	)
	for d := range b.dbs {
		if d.hasBgErr.Load() {
			continue // no flush gives its memory back before Close
		}
		freeing += d.budget.frozen.Load()
		n := d.budget.mutable.Load()
		if d.budget.rotating.Load() {
			freeing += n
			continue
		}
		if n > largest && !d.closed.Load() {
			target, largest = d, n
		}
	}
	// A memtable holding no more than its first chunk is not worth a
	// flush: its successor takes a chunk too.
	if target != nil && largest > chunkBytes && b.used.Load()-freeing >= b.flushAt {
		target.budget.rotating.Store(true)
		freeing += largest
		go target.rotateForBudget()
	}
	return freeing > 0
}

// stallAt is the total at which writes wait: the limit less a chunk for
// each DB, as a write admitted just below it may grow its memtable by a
// chunk; at most an eighth of the limit.
func (b *WriteBudget) stallAt() int64 {
	return b.limit - min(b.limit/8, b.ndbs.Load()*chunkBytes)
}

// chunkBytes is the memtable arena's growth step.
const chunkBytes = 256 << 10

// wait holds a writer back while the total is at the limit and memory is
// on its way back.
func (b *WriteBudget) wait(d *DB) {
	if b.used.Load() < b.stallAt() {
		return
	}
	waited := false
	for b.used.Load() >= b.stallAt() && !d.closed.Load() {
		if !b.flushLargest() {
			return
		}
		b.mu.Lock()
		if b.used.Load() >= b.stallAt() && !d.closed.Load() {
			if !waited {
				d.stats.budgetWaits.Add(1)
				waited = true
			}
			b.cond.Wait()
		}
		b.mu.Unlock()
	}
}

// dbBudget is a DB's side of its WriteBudget.
type dbBudget struct {
	// mutable is the memory charged for the mutable memtable.
	mutable atomic.Int64
	// rotating is set while a rotation the budget asked for is under way.
	rotating atomic.Bool
	// frozen is the memory charged for frozen memtables not yet flushed,
	// which their flushes will give back.
	frozen atomic.Int64
}

// rotateForBudget freezes the mutable memtable so the background flush
// writes it out. Runs on its own goroutine: it goes through the commit
// pipeline like Flush, without waiting for the flush itself.
func (d *DB) rotateForBudget() {
	defer func() {
		d.budget.rotating.Store(false)
		b := d.opts.MemoryBudget
		b.mu.Lock()
		b.cond.Broadcast()
		b.mu.Unlock()
	}()
	if d.closed.Load() {
		return
	}
	if err := d.writeOp(nil, false, opRotate); err != nil && !d.closed.Load() {
		d.opts.Logger.Warn("strata: freezing a memtable for the shared write budget failed", "err", err)
	}
}

// chargeMem brings the budget up to date with the memory of the mutable
// memtable m. The commit leader, or Open before any write.
func (d *DB) chargeMem(m *memTable) {
	b := d.writeBudget()
	if b == nil {
		return
	}
	d.budget.mutable.Store(chargeTo(b, m))
}

// chargeTo brings b up to date with m's memory and returns it.
func chargeTo(b *WriteBudget, m *memTable) int64 {
	m.budget = b
	n := m.Memory()
	if old := m.charged.Swap(n); old != n {
		b.charge(n - old)
	}
	return n
}

// chargeFrozen charges the budget for m, frozen now, as memory on its way
// back. d.mu held or Open; m is no longer written.
func (d *DB) chargeFrozen(m *memTable) {
	b := d.writeBudget()
	if b == nil {
		return
	}
	n := chargeTo(b, m)
	m.frozenCharge = n
	d.budget.frozen.Add(n)
	m.frozen.Store(&d.budget)
}

// flushed stops counting m, flushed now, as memory on its way back: a read
// state may hold it for a long time yet (an open iterator), and writers
// must not wait for that.
func (m *memTable) flushed() {
	if p := m.frozen.Swap(nil); p != nil {
		p.frozen.Add(-m.frozenCharge)
	}
}

// uncharge gives m's memory back to its budget; m is being released.
func (m *memTable) uncharge() {
	if m.budget == nil {
		return
	}
	m.flushed()
	m.budget.charge(-m.charged.Swap(0))
}

// writeBudget returns Options.MemoryBudget, or nil for a read-only DB,
// which writes nothing and takes no part in it.
func (d *DB) writeBudget() *WriteBudget {
	if d.opts.ReadOnly {
		return nil
	}
	return d.opts.MemoryBudget
}
