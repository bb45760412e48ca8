package checkpoint

import (
	"errors"
	"fmt"
	"io"
	"os"

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
}

// WriteLocal writes a checkpoint of src into dst, which must not exist or
// be an empty directory. Every file is durable when it returns (files
// synced, then the directory). On error the partial checkpoint is removed.
func WriteLocal(src Source, dst string) (err error) {
	fs := src.FS
	if err := prepareDir(fs, dst); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = fs.RemoveAll(dst)
		}
	}()
	var linkErr error
	src.Version.Files(func(_ int, f *manifest.FileMetadata) {
		if linkErr != nil {
			return
		}
		name := base.MakeFilename(base.FileTypeTable, f.FileNum)
		linkErr = linkOrCopy(fs, fs.PathJoin(src.Dir, name), fs.PathJoin(dst, name))
	})
	for _, vl := range src.Version.SortedVlogs() {
		if linkErr != nil {
			break
		}
		name := base.MakeFilename(base.FileTypeVlog, vl.FileNum)
		linkErr = linkOrCopy(fs, fs.PathJoin(src.Dir, name), fs.PathJoin(dst, name))
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
	w, err := manifest.WriteSnapshot(fs, dst, manifestNum, src.Version, next, src.LastSeq, next+1)
	if err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("checkpoint: close manifest: %w", err)
	}
	return manifest.SetCurrent(fs, dst, manifestNum, tempNum)
}

func prepareDir(fs vfs.FS, dst string) error {
	names, err := fs.List(dst)
	switch {
	case err == nil && len(names) > 0:
		return fmt.Errorf("checkpoint: %s already exists and is not empty", dst)
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err := fs.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	// Make the new directory's entry in its parent durable.
	if err := manifest.SyncDir(fs, fs.PathDir(dst)); err != nil {
		return fmt.Errorf("checkpoint: sync parent directory: %w", err)
	}
	return nil
}

// linkOrCopy hard-links src to dst, or copies it (synced) when the
// filesystem cannot link, e.g. across devices.
func linkOrCopy(fs vfs.FS, src, dst string) error {
	if err := fs.Link(src, dst); err == nil {
		return nil
	}
	in, err := fs.Open(src)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	defer in.Close()
	out, err := fs.Create(dst)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("checkpoint: copy %s: %w", src, err)
	}
	return nil
}
