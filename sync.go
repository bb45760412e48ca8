package strata

import "fmt"

// Sync makes every write acknowledged before it durable: when it returns
// nil, a crash keeps them all, as if each had been written with Sync. It
// is for writers that write without Sync and then need a point of
// durability, such as a stream processor that commits its input offsets
// after its state writes (Badger's DB.Sync, Pebble's LogData with Sync).
// It writes nothing and costs one WAL sync (with values separated at
// commit, the active value log's sync first).
//
// With Options.DisableWAL, writes become durable only in tables, so Sync
// flushes the memtables, as Flush does. During a bulk load it fails with
// ErrBulkLoadSync, decided in commit order like a Sync write: the load's
// writes become durable at EndBulkLoad.
func (d *DB) Sync() error {
	if err := d.checkWritable(); err != nil {
		return err
	}
	if d.opts.DisableWAL {
		return d.Flush()
	}
	return d.writeOp(nil, true, opSync)
}

// syncOpLeader runs DB.Sync's operation on the commit leader, so that the
// sync covers every write committed before it.
func (d *DB) syncOpLeader() error {
	if err := d.writableNow(); err != nil {
		return err
	}
	c := &d.commit
	if c.bulk {
		return ErrBulkLoadSync
	}
	if c.wal == nil {
		return nil
	}
	if err := d.syncLeader(); err != nil {
		err = fmt.Errorf("strata: sync WAL: %w", err)
		d.reportBackgroundError(err)
		return err
	}
	return nil
}

// syncLeader makes the current WAL durable up to what the leader has
// written to it, and everything that WAL's records depend on: older WALs
// and finished value logs (the sealer's jobs), the active value log's
// directory entry and its records. Leader only; the caller turns a failure
// into the background error.
func (d *DB) syncLeader() error {
	c := &d.commit
	start := latencyNow()
	// Older WALs and value logs first (see sealer).
	if err := d.waitAllSealed(); err != nil {
		return err
	}
	if c.active != nil && !c.activeDirSynced {
		if err := syncDirErr(d); err != nil {
			return err
		}
		c.activeDirSynced = true
	}
	if c.active != nil {
		// The values first: a synced WAL record must never point past
		// what is durable in the value log.
		if err := c.active.Sync(); err != nil {
			return err
		}
	}
	err := c.wal.Sync()
	d.stats.latency.walSync.since(start)
	return err
}
