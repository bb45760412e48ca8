package checkpoint

import (
	"errors"
	"fmt"
	"io"
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

// linkOrCopy hard-links src to dst or, when the filesystem cannot link
// there (see cannotLink), copies it into a new file (synced). It never
// replaces or truncates an existing dst, which might be a link to a live
// file: if dst exists it fails with an error matching os.ErrExist.
func linkOrCopy(fs vfs.FS, src, dst string) error {
	err := fs.Link(src, dst)
	if err == nil {
		return nil
	}
	if !cannotLink(err) {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return copyFile(fs, src, dst)
}

// cannotLink reports whether a Link error means that the filesystem cannot
// make this link at all, so a copy is the way: across devices (EXDEV),
// where hard links are not permitted or not supported (EPERM, ENOTSUP,
// EOPNOTSUPP), or when the file has as many links as allowed (EMLINK).
// Any other error, above all EEXIST, is a failure.
func cannotLink(err error) bool {
	for _, errno := range []syscall.Errno{syscall.EXDEV, syscall.EPERM, syscall.ENOTSUP, syscall.EOPNOTSUPP, syscall.EMLINK} {
		if errors.Is(err, errno) {
			return true
		}
	}
	return false
}

// copyFile copies src into dst, which it creates exclusively, and syncs
// it. If the copy fails, it removes dst, which is its own.
func copyFile(fs vfs.FS, src, dst string) error {
	in, err := fs.Open(src)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	defer in.Close()
	out, err := fs.CreateExclusive(dst)
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
		_ = fs.Remove(dst)
		return fmt.Errorf("checkpoint: copy %s: %w", src, err)
	}
	return nil
}
