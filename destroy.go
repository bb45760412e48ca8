package strata

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/strata-db/strata/checkpoint"
	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/remote"
	"github.com/strata-db/strata/vfs"
)

// Destroy removes the database in dir (opts.FS; nil opts: the disk),
// which must not be open. A database that shares files (its instance
// holds objects in Options.SharedStore, which must then be set) first
// drops every reference its instance holds in the store, deleting the
// objects nothing else holds (remote.DropInstance): what a stream
// processor does with an instance a rescale replaced, whose files its
// successors and its retained checkpoints reference (they keep what they
// use). If it fails, dir is left in place and Destroy may be called
// again; a database whose Destroy failed (or was stopped by a crash) is
// marked so, and Open refuses it with ErrDestroying, since objects it
// reads may be gone. A directory that does not exist is not an error.
// Destroy also drops the hold an OpenFromStore or OpenRangeFromStore
// into dir that a crash stopped left in the store
// (checkpoint.RecoverReference): run it on such a directory, or open
// from the store into it again.
func Destroy(ctx context.Context, dir string, opts *Options) error {
	var o Options
	if opts != nil {
		o = *opts
	}
	fs := o.FS
	if fs == nil {
		fs = vfs.Default
	}
	// An OpenFromStore into dir that a crash stopped may have left a
	// hold in the store that only its record beside dir knows of.
	if err := checkpoint.RecoverReference(ctx, o.SharedStore, fs, dir); err != nil {
		if errors.Is(err, checkpoint.ErrNoStore) {
			return fmt.Errorf("strata: destroy %s: %w (%v)", dir, ErrSharedStoreRequired, err)
		}
		return fmt.Errorf("strata: destroy %s: %w", dir, err)
	}
	if _, err := fs.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	lock, err := lockDir(fs, dir)
	if err != nil {
		return err
	}
	defer func() {
		if lock != nil {
			lock.Close()
		}
	}()
	if _, err := fs.Stat(fs.PathJoin(dir, base.MakeFilename(base.FileTypeCurrent, 0))); err == nil {
		in, err := remote.ReadInstance(fs, dir)
		if err != nil {
			return fmt.Errorf("strata: destroy %s: %w", dir, err)
		}
		if in.ID != "" {
			if o.SharedStore == nil {
				return fmt.Errorf("strata: destroy %s: %w (its instance %s holds objects in it)", dir, ErrSharedStoreRequired, in.ID)
			}
			// Marked first: a crash while the references go leaves a
			// directory that Open refuses (ErrDestroying) and an audit
			// does not count as holding anything.
			if err := remote.MarkDestroying(fs, dir); err != nil {
				return fmt.Errorf("strata: destroy %s: %w", dir, err)
			}
			if _, err := remote.DropInstance(ctx, o.SharedStore, in.ID); err != nil {
				return fmt.Errorf("strata: destroy %s: %w", dir, err)
			}
		}
	}
	// CURRENT first, so that a crash in the middle of the removal leaves
	// no directory that looks like a database (one whose mark went first
	// would open with its references dropped).
	if err := fs.Remove(fs.PathJoin(dir, base.MakeFilename(base.FileTypeCurrent, 0))); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("strata: destroy %s: %w", dir, err)
	}
	if err := manifest.SyncDir(fs, dir); err != nil {
		return fmt.Errorf("strata: destroy %s: %w", dir, err)
	}
	err = lock.Close()
	lock = nil
	if err != nil {
		return err
	}
	if err := fs.RemoveAll(dir); err != nil {
		return fmt.Errorf("strata: destroy %s: %w", dir, err)
	}
	return nil
}
