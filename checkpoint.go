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
	err := d.withPinnedVersion("checkpoint", nil, func(src checkpoint.Source) error {
		if err := checkpoint.WriteLocal(src, dir); err != nil {
			return fmt.Errorf("strata: checkpoint: %w", err)
		}
		return nil
	})
	return err
}
