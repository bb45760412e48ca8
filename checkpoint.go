package strata

import (
	"fmt"

	"github.com/strata-db/strata/checkpoint"
)

// Checkpoint writes a consistent copy of the database into dir (which must
// not exist or be empty), made of hard links to its immutable tables and a
// fresh manifest; Open can use dir directly, as an independent database.
//
// The copy holds every write acknowledged before Checkpoint was called, and
// is the state after some prefix of the writes: Checkpoint freezes the
// memtable (in order with concurrent writes), waits for its flush, and pins
// the version. Writers are held only while the memtable is swapped.
func (d *DB) Checkpoint(dir string) error {
	if d.opts.ReadOnly {
		// The memtable a checkpoint needs flushed cannot be.
		return ErrReadOnly
	}
	// Close waits for checkpoints in progress, so the directory and its
	// files stay while this one links them; one that starts after Close
	// began is refused.
	d.mu.Lock()
	if d.closed.Load() {
		d.mu.Unlock()
		return ErrClosed
	}
	d.checkpoints++
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		d.checkpoints--
		d.cond.Broadcast()
		d.mu.Unlock()
	}()
	if testHookEntry != nil {
		testHookEntry("checkpoint")
	}
	if err := d.flush(); err != nil {
		return err
	}
	d.mu.Lock()
	v := d.vs.Current()
	v.Ref()
	src := checkpoint.Source{
		FS:          d.fs,
		Dir:         d.dirname,
		Version:     v,
		LastSeq:     d.vs.LastSeq(),
		NextFileNum: d.vs.NewFileNum(),
	}
	d.mu.Unlock()
	defer v.Unref()
	if err := checkpoint.WriteLocal(src, dir); err != nil {
		return fmt.Errorf("strata: checkpoint: %w", err)
	}
	return nil
}
