package checkpoint

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"syscall"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/vfs"
)

// Source describes what to copy: the pinned version v of the database in
// Dir, whose tables hold every entry up to LastSeq, and the database's next
// unused file number.
type Source struct {
	FS          vfs.FS
	Dir         string
	Version     *manifest.Version
	LastSeq     base.SeqNum
	NextFileNum base.FileNum
	// Open, if set, opens a file of the version that is not in Dir (a
	// shared file whose local copy is not cached: see package remote);
	// a local checkpoint copies it from there, and an upload reads it
	// from there. A file the version does not record as shared may be
	// one too: the database shared it after the version was pinned, and
	// its cache evicted the local copy.
	Open func(t base.FileType, num base.FileNum) (vfs.File, error)
}

// open opens the version's file name: in Dir, or else through Open.
func (src Source) open(name string) (vfs.File, error) {
	f, err := src.FS.Open(src.FS.PathJoin(src.Dir, name))
	if err == nil || src.Open == nil || !errors.Is(err, os.ErrNotExist) {
		return f, err
	}
	t, num, ok := base.ParseFilename(name)
	if !ok {
		return nil, err
	}
	return src.Open(t, num)
}

// WriteLocal writes a checkpoint of src into dst, which must not exist or
// be an empty directory. It builds the checkpoint in a temporary directory
// of its own next to dst and renames that onto dst, so that it never writes
// into a directory another caller uses: of concurrent checkpoints into one
// dst, exactly one succeeds. Every file is durable when it returns (files
// synced, then the directories). On error it removes what it created, and
// nothing else; dst is left as it was, except after a failure to sync dst's
// parent, when dst holds the complete checkpoint whose durability is not
// known.
func WriteLocal(src Source, dst string) (err error) {
	return buildDest(src.FS, dst, func(tmp string) error { return fill(src, tmp) })
}

// buildDest makes dst, which must not exist or be an empty directory:
// build fills a new private directory beside it (see beginDest), which
// then takes dst's place (commitDest). On any failure the directory is
// removed and dst is as it was.
func buildDest(fs vfs.FS, dst string, build func(tmp string) error) error {
	dst = fs.PathJoin(dst) // cleaned: "ckpt/" is "ckpt"
	tmp, err := beginDest(fs, dst)
	if err != nil {
		return err
	}
	defer func() {
		if tmp != "" {
			_ = fs.RemoveAll(tmp)
		}
	}()
	if err := build(tmp); err != nil {
		return err
	}
	renamed, err := commitDest(fs, tmp, dst)
	if renamed {
		tmp = "" // it is dst now, which is never removed
	}
	return err
}

// commitDest renames the finished directory tmp to dst and makes that
// durable, reporting whether the rename happened (tmp is then gone). As
// rename(2), Rename replaces dst only if it is missing or an empty
// directory, atomically; if another checkpoint (or anything else) got
// there first, it fails and dst keeps what it holds.
func commitDest(fs vfs.FS, tmp, dst string) (renamed bool, err error) {
	if err := fs.Rename(tmp, dst); err != nil {
		if errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
			return false, fmt.Errorf("checkpoint: %s already exists and is not empty: %w", dst, err)
		}
		return false, fmt.Errorf("checkpoint: %w", err)
	}
	if err := manifest.SyncDir(fs, fs.PathDir(dst)); err != nil {
		return true, fmt.Errorf("checkpoint: sync parent directory: %w", err)
	}
	return true, nil
}

// beginDest prepares to build a directory that will be renamed to dst:
// it checks that dst can take it (checkDest), creates dst's parents
// durably, and returns a new temporary directory beside dst that belongs
// to this call alone. The caller removes it unless it renamed it.
func beginDest(fs vfs.FS, dst string) (tmp string, err error) {
	if err := checkDest(fs, dst); err != nil {
		return "", err
	}
	if err := mkdirAllDurable(fs, fs.PathDir(dst)); err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	return makeTempDir(fs, dst)
}

// checkDest fails early when dst cannot take a checkpoint. It is only a
// courtesy that saves linking files in vain: dst can change after it, and
// the rename into place is what decides.
func checkDest(fs vfs.FS, dst string) error {
	fi, err := fs.Stat(dst)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("checkpoint: %w", err)
	case !fi.IsDir():
		return fmt.Errorf("checkpoint: %s already exists and is not a directory", dst)
	}
	names, err := fs.List(dst)
	if errors.Is(err, os.ErrNotExist) {
		// Replaced or removed since the Stat (listing a directory that
		// another checkpoint's rename has just replaced gives ENOENT).
		return nil
	}
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if len(names) > 0 {
		return fmt.Errorf("checkpoint: %s already exists and is not empty", dst)
	}
	return nil
}

// mkdirAllDurable creates dir and its missing parents, and makes the entry
// of each directory it creates durable in its parent.
func mkdirAllDurable(fs vfs.FS, dir string) error {
	var missing []string
	for d := dir; ; d = fs.PathDir(d) {
		if _, err := fs.Stat(d); !errors.Is(err, os.ErrNotExist) {
			break
		}
		missing = append(missing, d)
		if fs.PathDir(d) == d {
			break
		}
	}
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, d := range missing {
		if err := manifest.SyncDir(fs, fs.PathDir(d)); err != nil {
			return fmt.Errorf("sync directory: %w", err)
		}
	}
	return nil
}

// makeTempDir creates a new directory named dst + ".tmp-" + a random
// suffix, next to dst, for building the checkpoint in. Mkdir fails if the
// name exists, so the directory belongs to this call alone.
func makeTempDir(fs vfs.FS, dst string) (string, error) {
	var err error
	for range 10 {
		name := fmt.Sprintf("%s.tmp-%016x", dst, rand.Uint64())
		if err = fs.Mkdir(name, 0o755); err == nil {
			return name, nil
		}
		if !errors.Is(err, os.ErrExist) {
			break
		}
	}
	return "", fmt.Errorf("checkpoint: create temporary directory: %w", err)
}

// fill writes the checkpoint's files into dir, which this call created:
// links to (or copies of) the version's tables and value logs, a manifest
// and CURRENT; then it syncs dir.
func fill(src Source, dir string) error {
	fs := src.FS
	var linkErr error
	src.Version.Files(func(_ int, f *manifest.FileMetadata) {
		if linkErr != nil {
			return
		}
		linkErr = placeFile(src, base.FileTypeTable, f.FileNum, int64(f.Size), dir)
	})
	for _, vl := range src.Version.SortedVlogs() {
		if linkErr != nil {
			break
		}
		linkErr = placeFile(src, base.FileTypeVlog, vl.FileNum, int64(vl.Size), dir)
	}
	if linkErr != nil {
		return linkErr
	}
	// The checkpoint's manifest and CURRENT temp file take numbers past
	// everything it holds; its log number is past them too, so no WAL is
	// replayed.
	manifestNum := src.NextFileNum
	tempNum := manifestNum + 1
	next := manifestNum + 2
	w, err := manifest.WriteSnapshot(fs, dir, manifestNum, src.Version.Detached(), next, src.LastSeq, next+1)
	if err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("checkpoint: close manifest: %w", err)
	}
	// SetCurrent syncs dir.
	return manifest.SetCurrent(fs, dir, manifestNum, tempNum)
}

// placeFile puts a file of src's version into dir: a link to (or copy
// of) the file in src.Dir, or, for a shared file without a local copy, a
// copy read through src.Open.
func placeFile(src Source, t base.FileType, num base.FileNum, size int64, dir string) error {
	fs := src.FS
	name := base.MakeFilename(t, num)
	err := linkOrCopy(fs, fs.PathJoin(src.Dir, name), fs.PathJoin(dir, name))
	if err == nil || src.Open == nil || !errors.Is(err, os.ErrNotExist) {
		return err
	}
	in, oerr := src.Open(t, num)
	if oerr != nil {
		return fmt.Errorf("checkpoint: %s: %w", name, oerr)
	}
	defer in.Close()
	out, cerr := fs.CreateExclusive(fs.PathJoin(dir, name))
	if cerr != nil {
		return fmt.Errorf("checkpoint: %w", cerr)
	}
	n, cerr := io.Copy(out, io.NewSectionReader(in, 0, size))
	if cerr == nil && n != size {
		cerr = fmt.Errorf("read %d of %d bytes", n, size)
	}
	if cerr == nil {
		cerr = out.Sync()
	}
	if err := out.Close(); cerr == nil {
		cerr = err
	}
	if cerr != nil {
		return fmt.Errorf("checkpoint: copy shared file %s: %w", name, cerr)
	}
	return nil
}

// linkOrCopy is vfs.LinkOrCopy with the package's error prefix.
func linkOrCopy(fs vfs.FS, src, dst string) error {
	if err := vfs.LinkOrCopy(fs, src, dst); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}
