package strata

import "errors"

// Bulk loads. A state store that rebuilds its state from a changelog (goka
// recovering a table, a stream processor restoring a partition) writes a
// lot of state that it can write again after a crash, and needs it durable
// only once the load is complete. BeginBulkLoad and EndBulkLoad bracket
// such a load: in between, writes skip the WAL (with values separated at
// commit still written once, to a value log), and EndBulkLoad freezes the
// memtable and waits for every memtable to be flushed, which makes the
// whole load durable at once.
//
// Crash semantics, exactly:
//
//   - Writes acknowledged before BeginBulkLoad keep the usual guarantees.
//   - After a crash during the load (before EndBulkLoad returned), the DB
//     opens with those writes and a prefix, possibly empty, of the load's
//     writes in commit order: the writes of the memtables flushed before
//     the crash (a full memtable, Flush, or a write budget flushes as
//     usual, oldest first). Nothing written after the lost ones survives.
//   - Once EndBulkLoad returns nil, every write of the load is in a table
//     and survives any crash. Writes that follow it go to the WAL again,
//     and EndBulkLoad holds them back until the flush is done, so none
//     can survive a crash that the load's writes do not.
//   - A write with Sync during a load fails with ErrBulkLoadSync: it could
//     not be durable when acknowledged. "During" is decided in commit
//     order, not when the write is called: a Sync write queued behind
//     BeginBulkLoad is refused, one queued behind EndBulkLoad is logged and
//     synced as usual. Close during a load flushes first, like EndBulkLoad.
//
// Reads see the load's writes as soon as they are acknowledged, as always.

// ErrBulkLoadSync is returned for a write with Sync during a bulk load.
var ErrBulkLoadSync = errors.New("strata: synced write during a bulk load (EndBulkLoad makes the load durable)")

// BeginBulkLoad starts a bulk load: until EndBulkLoad, writes skip the WAL
// (see bulk.go for what a crash keeps). Writes in flight before it keep
// their WAL records. Beginning a load already under way does nothing.
func (d *DB) BeginBulkLoad() error {
	if err := d.checkWritable(); err != nil {
		return err
	}
	return d.writeOp(nil, false, opBulkBegin)
}

// EndBulkLoad ends a bulk load, returning once every write of it is
// durable: it freezes the memtable and waits for the flushes, holding
// later writes back until then. Without a load under way it does nothing.
func (d *DB) EndBulkLoad() error {
	if err := d.checkWritable(); err != nil {
		return err
	}
	if testHookEntry != nil {
		testHookEntry("endbulk")
	}
	return d.writeOp(nil, false, opBulkEnd)
}

// BulkLoading reports whether a bulk load is under way.
func (d *DB) BulkLoading() bool { return d.bulkLoad.Load() }

// endBulkLoadLeader runs on the commit leader (so no write comes in
// between): it freezes the memtable, waits until every frozen memtable is
// flushed, and then lets writes reach the WAL again.
func (d *DB) endBulkLoadLeader() error {
	c := &d.commit
	if !c.bulk {
		return nil
	}
	if err := d.flushAllLeader(); err != nil {
		return err
	}
	c.bulk = false
	d.bulkLoad.Store(false)
	return nil
}
