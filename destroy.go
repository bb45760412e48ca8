package strata

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/strata-db/strata/internal/base"
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
// again; a database whose Destroy failed must not be used any more, since
// objects it reads may be gone. A directory that does not exist is not
// an error.
func Destroy(ctx context.Context, dir string, opts *Options) error {
	var o Options
	if opts != nil {
		o = *opts
	}
	fs := o.FS
	if fs == nil {
		fs = vfs.Default
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
			if _, err := remote.DropInstance(ctx, o.SharedStore, in.ID); err != nil {
				return fmt.Errorf("strata: destroy %s: %w", dir, err)
			}
		}
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
