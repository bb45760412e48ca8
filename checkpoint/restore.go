package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/cespare/xxhash/v2"
	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/vfs"
)

// RestoreOptions configure Restore. The zero value restores everything.
type RestoreOptions struct {
	// Parallelism is how many files are downloaded at once (default 4).
	Parallelism int
	// Start and End bound a key-range restore, [Start, End) (nil: no
	// bound). Only the tables whose keys overlap the range are fetched,
	// with the value logs they reference; the restored directory's
	// manifest lists only those. Keys outside the range may remain in
	// them: strata.RestoreRangeFromStore clips them with range deletions.
	Start, End []byte
	// Prepare, if set, is called with the restored directory (complete,
	// synced, not yet renamed into place) before the rename; an error
	// fails the restore and removes the directory.
	Prepare func(fs vfs.FS, dir string) error
}

// Restore rebuilds checkpoint id of store s into dst on fs (nil: the
// operating system's), which must not exist or be an empty directory; strata.Open can open dst afterwards. It
// builds the database in a temporary directory next to dst, downloading
// files in parallel and verifying each one's checksum (a mismatch is an
// error matching strata's ErrCorruption), and renames the directory onto
// dst when it is complete, so a failure leaves dst as it was.
func Restore(ctx context.Context, s Store, id uint64, fs vfs.FS, dst string, opts *RestoreOptions) (err error) {
	var o RestoreOptions
	if opts != nil {
		o = *opts
	}
	if fs == nil {
		fs = vfs.Default
	}
	if o.Parallelism <= 0 {
		o.Parallelism = 4
	}
	if o.Start != nil && o.End != nil && bytes.Compare(o.Start, o.End) > 0 {
		return fmt.Errorf("checkpoint: restore range [%q, %q) has its start after its end", o.Start, o.End)
	}
	m, err := ReadManifest(ctx, s, id)
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
	ranged := o.Start != nil || o.End != nil
	if ranged {
		if v, err = clipVersion(v, o.Start, o.End); err != nil {
			return err
		}
	}
	var want []FileRef
	for _, name := range versionFileNames(v) {
		f, ok := refs[name]
		if !ok {
			return base.CorruptionErrorf(manifestName(id), -1, "the database's manifest lists %s, the checkpoint's files do not", name)
		}
		want = append(want, f)
	}

	return buildDest(fs, dst, func(tmp string) error {
		err := runParallel(ctx, o.Parallelism, len(want), func(ctx context.Context, i int) error {
			path := fs.PathJoin(tmp, want[i].Name)
			err := download(ctx, s, want[i], fs, path)
			if _, serr := fs.Stat(path); errors.Is(err, ErrNotExist) && errors.Is(serr, os.ErrNotExist) {
				// An upload since ReadManifest may have moved the file out of
				// a sparse segment and deleted the segment: look again.
				m2, err2 := ReadManifest(ctx, s, id)
				if err2 != nil {
					return errors.Join(err, err2)
				}
				for _, f := range m2.Files {
					if f.Name == want[i].Name && f.Checksum == want[i].Checksum && f.Object != want[i].Object {
						return download(ctx, s, f, fs, path)
					}
				}
			}
			return err
		})
		if err != nil {
			return err
		}
		if ranged {
			w, err := manifest.WriteSnapshot(fs, tmp, m.ManifestNum, v, m.NextFileNum, m.LastSeq, m.NextFileNum+1)
			if err != nil {
				return fmt.Errorf("checkpoint: %w", err)
			}
			if err := w.Close(); err != nil {
				return fmt.Errorf("checkpoint: close manifest: %w", err)
			}
		} else if err := writeNewFile(fs, fs.PathJoin(tmp, base.MakeFilename(base.FileTypeManifest, m.ManifestNum)), m.DBManifest); err != nil {
			return err
		}
		if err := manifest.SetCurrent(fs, tmp, m.ManifestNum, m.ManifestNum+1); err != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
		if o.Prepare != nil {
			if err := o.Prepare(fs, tmp); err != nil {
				return err
			}
		}
		return nil
	})
}

// checkFileName accepts only the names of tables and value logs, so that a
// damaged or hostile manifest cannot make Restore write elsewhere.
func checkFileName(name string) error {
	t, n, ok := base.ParseFilename(name)
	if !ok || (t != base.FileTypeTable && t != base.FileTypeVlog) || base.MakeFilename(t, n) != name {
		return fmt.Errorf("%q is not the name of a table or value log", name)
	}
	return nil
}

// decodeDBManifest returns the version m's strata manifest describes.
func decodeDBManifest(m *Manifest) (*manifest.Version, error) {
	mem := vfs.NewMem()
	name := base.MakeFilename(base.FileTypeManifest, m.ManifestNum)
	if err := writeNewFile(mem, name, m.DBManifest); err != nil {
		return nil, err
	}
	v, err := manifest.ReadVersion(mem, "", name)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: manifest of checkpoint %d: %w", m.ID, err)
	}
	return v, nil
}

// versionFileNames lists the tables and value logs of v.
func versionFileNames(v *manifest.Version) []string {
	var names []string
	v.Files(func(_ int, f *manifest.FileMetadata) {
		names = append(names, base.MakeFilename(base.FileTypeTable, f.FileNum))
	})
	for _, vl := range v.SortedVlogs() {
		names = append(names, base.MakeFilename(base.FileTypeVlog, vl.FileNum))
	}
	return names
}

// clipVersion returns v without the tables whose keys lie wholly outside
// [start, end) and the value logs no remaining table references. A table
// that does not overlap the range holds no entry, nor range deletion, that
// bears on a key in it.
func clipVersion(v *manifest.Version, start, end []byte) (*manifest.Version, error) {
	ve := &manifest.VersionEdit{}
	needed := map[base.FileNum]bool{}
	allVlogs := false
	v.Files(func(level int, f *manifest.FileMetadata) {
		outside := (end != nil && base.Compare(f.Smallest.UserKey, end) >= 0) ||
			(start != nil && !f.OverlapsRange(start, nil))
		if outside {
			ve.DeletedFiles = append(ve.DeletedFiles, manifest.DeletedFile{Level: level, FileNum: f.FileNum})
			return
		}
		if !f.VlogRefsKnown {
			allVlogs = true
		}
		for _, r := range f.VlogRefs {
			needed[r.FileNum] = true
		}
	})
	if !allVlogs {
		for num := range v.Vlogs {
			if !needed[num] {
				ve.DeletedVlogs = append(ve.DeletedVlogs, num)
			}
		}
	}
	nv, err := manifest.Apply(v, ve)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: clip to the key range: %w", err)
	}
	return nv, nil
}

// download fetches f into path (a new file), verifying its checksum
// (unknown for an external file, a shared file's object: its own
// checksums verify it when it is read), and syncs it.
func download(ctx context.Context, s Store, f FileRef, fs vfs.FS, path string) error {
	rc, err := s.Get(ctx, f.Object, f.Offset, f.Size)
	if err != nil {
		return err
	}
	defer rc.Close()
	out, err := fs.CreateExclusive(path)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	h := xxhash.New()
	n, err := io.Copy(io.MultiWriter(out, h), &ctxReader{ctx: ctx, r: rc})
	if err == nil && n != f.Size {
		err = base.CorruptionErrorf(f.Object, f.Offset+n, "%s: object ends after %d of its %d bytes", f.Name, n, f.Size)
	}
	if err == nil && !f.External && h.Sum64() != f.Checksum {
		err = base.CorruptionErrorf(f.Object, f.Offset, "%s (%d bytes): checksum mismatch: manifest %016x, downloaded %016x", f.Name, f.Size, f.Checksum, h.Sum64())
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if !errors.Is(err, base.ErrCorruption) {
			err = fmt.Errorf("checkpoint: download %s: %w", f.Name, err)
		}
		return err
	}
	return nil
}

// writeFile creates path with data, synced.
func writeNewFile(fs vfs.FS, path string, data []byte) error {
	f, err := fs.CreateExclusive(path)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("checkpoint: write %s: %w", path, err)
	}
	return nil
}
