package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/remote"
	"github.com/strata-db/strata/vfs"
)

// Reference writes into dst on fs (which must not exist or be an empty
// directory) a database that is checkpoint id of store s by reference:
// its manifest describes the checkpoint's tables and value logs as shared
// files, each the object range the registry says holds it, under a new
// instance id, and no file is downloaded. The instance holds the objects
// by one hold (package remote), written before the manifest names them,
// after the registry's markers (which a data object written before
// markers existed lacks); once it is written, the registry is read
// again, and the checkpoint must still be retained there with its files
// where they were (else the objects may have gone: the hold is dropped
// and it fails).
// Open the result with the store as Options.SharedStore; reads fetch what
// they need. On failure the hold it wrote is dropped and dst is as it
// was.
func Reference(ctx context.Context, s Store, id uint64, fs vfs.FS, dst, instance string) (err error) {
	if fs == nil {
		fs = vfs.Default
	}
	if err := remote.CheckInstanceID(instance); err != nil {
		return err
	}
	m, unmarked, err := readManifestUnmarked(ctx, s, id)
	if err != nil {
		return err
	}
	v, err := decodeDBManifest(m)
	if err != nil {
		return err
	}
	refs := map[string]FileRef{}
	for _, f := range m.Files {
		if err := checkFileName(f.Name); err != nil {
			return base.CorruptionErrorf(manifestName(id), -1, "%v", err)
		}
		refs[f.Name] = f
	}
	// Rule 2 has the instance join a holder that has a marker: the
	// registry's data objects written before markers existed have none
	// (unmarked), and the instance's release, finding its own marker the
	// last, would delete what the checkpoint uses. The registry's marker
	// is written for them, before the instance's; if the checkpoint is
	// dropped meanwhile (seen below), the next upload's sweep drops it as
	// stray. Uploads since markers exist wrote it before each Put, so a
	// checkpoint of theirs costs no round trip for it.
	var objects []string
	for _, f := range m.Files {
		if !slices.Contains(objects, f.Object) {
			objects = append(objects, f.Object)
		}
	}
	// In parallel: one round trip each would make Open wait for as many
	// as the checkpoint has objects.
	if _, err := remote.AddRefs(ctx, s, unmarked, registryOf(s).holder); err != nil {
		return err
	}
	done, err := holdObjects(ctx, s, fs, dst, objects, instance)
	if err != nil {
		return err
	}
	defer func() { done(ctx, err) }()
	if err := stillRetained(ctx, s, m); err != nil {
		return err
	}

	ve := v.SnapshotEdit()
	ve.InstanceID = instance
	for _, name := range versionFileNames(v) {
		f, ok := refs[name]
		if !ok {
			return base.CorruptionErrorf(manifestName(id), -1, "the database's manifest lists %s, the checkpoint's files do not", name)
		}
		t, num, _ := base.ParseFilename(name)
		ve.SharedFiles = append(ve.SharedFiles, manifest.SharedFile{Vlog: t == base.FileTypeVlog, FileNum: num,
			Ref: manifest.SharedRef{Object: f.Object, Offset: uint64(f.Offset)}})
	}
	nv, err := manifest.Apply(nil, ve)
	if err != nil {
		return base.CorruptionErrorf(manifestName(id), -1, "%v", err)
	}
	return writeInstance(fs, dst, nv, m.ManifestNum, m.NextFileNum, m.LastSeq)
}

// writeInstance writes into dst on fs (built aside, then put in place) a
// database whose manifest, number num, is version v of a new instance:
// past is past every file number v and its sources use, and lastSeq the
// largest sequence number in v's tables. The instance's own file numbers
// start at a base of its own (remote.NewFileNumBase): another instance
// opened from the same checkpoint allocates other numbers.
func writeInstance(fs vfs.FS, dst string, v *manifest.Version, num, past base.FileNum, lastSeq base.SeqNum) error {
	return buildDest(fs, dst, func(tmp string) error {
		w, err := manifest.WriteSnapshot(fs, tmp, num, v, past, lastSeq, remote.NewFileNumBase(past+1))
		if err != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
		if err := w.Close(); err != nil {
			return fmt.Errorf("checkpoint: close manifest: %w", err)
		}
		if err := manifest.SetCurrent(fs, tmp, num, num+1); err != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
		return nil
	})
}

// holdObjects has instance hold objects by one hold, once the
// registries' markers are on them (see Reference), for a database about
// to be written into dst. The hold is recorded locally first, beside dst
// (writePending): a crash before dst is in place leaves that record, and
// the next Reference into dst, or Destroy of it (RecoverReference), drops
// the hold, which nothing else would. Call done with the outcome once dst
// is written (or not): on failure it drops the hold, and either way the
// record goes. On failure holdObjects leaves no hold behind (or the
// record of one it could not drop).
func holdObjects(ctx context.Context, s Store, fs vfs.FS, dst string, objects []string, instance string) (done func(ctx context.Context, err error), err error) {
	if err := RecoverReference(ctx, s, fs, dst); err != nil {
		return nil, err
	}
	if err := writePending(fs, dst, instance); err != nil {
		return nil, err
	}
	holder := remote.InstanceHolder(instance)
	done = func(ctx context.Context, err error) {
		if err != nil {
			if remote.DropHold(context.WithoutCancel(ctx), s, holder, objects) != nil {
				return // the record stays, for the next Reference to drop it
			}
		}
		_ = removePending(fs, dst)
	}
	// The instance holds them all by one hold (remote.PutHold), one
	// round trip where a marker each would be as many as the checkpoint
	// has objects; the database turns it into markers after Open
	// (remote.ConvertHold).
	if err := remote.PutHold(ctx, s, holder, objects); err != nil {
		// Its outcome unknown: the hold may be there.
		done(ctx, err)
		return nil, err
	}
	return done, nil
}

// ErrNoStore is returned by RecoverReference without a store when a
// reference left a hold in one.
var ErrNoStore = errors.New("checkpoint: the store is needed")

// pendingSuffix names the record of a Reference under way into a
// directory: dst + pendingSuffix holds the instance id whose hold the
// Reference wrote.
const pendingSuffix = ".pending-instance"

// writePending records, durably, that instance holds objects for a
// database that will be written into dst.
func writePending(fs vfs.FS, dst, instance string) error {
	if err := mkdirAllDurable(fs, fs.PathDir(dst)); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err := vfs.WriteFileSynced(fs, dst+pendingSuffix, []byte(instance+"\n")); err != nil {
		return fmt.Errorf("checkpoint: record the reference into %s: %w", dst, err)
	}
	if err := manifest.SyncDir(fs, fs.PathDir(dst)); err != nil {
		return fmt.Errorf("checkpoint: record the reference into %s: %w", dst, err)
	}
	return nil
}

// removePending removes dst's record of a Reference, durably.
func removePending(fs vfs.FS, dst string) error {
	if err := fs.Remove(dst + pendingSuffix); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	return manifest.SyncDir(fs, fs.PathDir(dst))
}

// RecoverReference finishes what a Reference (or ReferenceRange) into dst
// that a crash or a failed request stopped left: if the hold it recorded
// belongs to an instance that dst does not hold (dst was never written),
// the instance's references are dropped from s (remote.DropInstance).
// Reference and ReferenceRange run it first, so that trying again cleans
// up; Destroy (package strata) runs it too. Without a record it does
// nothing. (A "<dst>.tmp-*" directory the stopped Reference was building
// may stay, as after any crash of a checkpoint's writer: it is no
// database and can be deleted.)
func RecoverReference(ctx context.Context, s Store, fs vfs.FS, dst string) error {
	if fs == nil {
		fs = vfs.Default
	}
	dst = fs.PathJoin(dst)
	data, err := vfs.ReadFile(fs, dst+pendingSuffix)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("checkpoint: read the record of a reference into %s: %w", dst, err)
	}
	instance := strings.TrimSpace(string(data))
	if err := remote.CheckInstanceID(instance); err != nil {
		// Cut short by a crash before its sync: no hold was written.
		return removePending(fs, dst)
	}
	// Did the database reach dst? Only a dst that is no database, or
	// the database of another instance, says no: a manifest that cannot
	// be read now may be the instance's own, which must keep its hold.
	reached := false
	if _, err := fs.Stat(fs.PathJoin(dst, base.MakeFilename(base.FileTypeCurrent, 0))); err == nil {
		in, err := remote.ReadInstance(fs, dst)
		if err != nil {
			return fmt.Errorf("checkpoint: a reference into %s did not finish, and the database there cannot be read: %w", dst, err)
		}
		reached = in.ID == instance
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("checkpoint: a reference into %s did not finish: %w", dst, err)
	}
	if !reached {
		if s == nil {
			return fmt.Errorf("checkpoint: a reference into %s did not finish: %w to drop what its instance %s holds", dst, ErrNoStore, instance)
		}
		if _, err := remote.DropInstance(ctx, s, instance); err != nil {
			return fmt.Errorf("checkpoint: drop the references of the unfinished instance %s of %s: %w", instance, dst, err)
		}
	}
	return removePending(fs, dst)
}

// stillRetained checks, once the objects of checkpoint m are held, that
// the registry still retains it with its files where they were: the
// registry held the objects before the hold, so they were there when it
// was written, and stay.
func stillRetained(ctx context.Context, s Store, m *Manifest) error {
	m2, err := ReadManifest(ctx, s, m.ID)
	if err != nil {
		if errors.Is(err, ErrNotExist) {
			return fmt.Errorf("checkpoint: checkpoint %d was dropped while it was being opened: %w", m.ID, err)
		}
		return err
	}
	if !slices.Equal(m.Files, m2.Files) {
		return fmt.Errorf("checkpoint: the files of checkpoint %d moved while it was being opened (an upload emptied their segments); try again", m.ID)
	}
	return nil
}
