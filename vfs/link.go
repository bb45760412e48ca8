package vfs

import (
	"errors"
	"fmt"
	"io"
	"syscall"
)

// LinkOrCopy hard-links src to dst or, when fs cannot link there (see
// CannotLink), copies src into a new file dst and syncs it. It never
// replaces or truncates an existing dst, which might be a link to a live
// file: if dst exists it fails with an error matching os.ErrExist. The
// caller syncs dst's directory.
func LinkOrCopy(fs FS, src, dst string) error {
	err := fs.Link(src, dst)
	if err == nil {
		return nil
	}
	if !CannotLink(err) {
		return err
	}
	return CopyFile(fs, src, dst)
}

// CannotLink reports whether a Link error means that the filesystem cannot
// make this link at all, so a copy is the way: across devices (EXDEV),
// where hard links are not permitted or not supported (EPERM, ENOTSUP,
// EOPNOTSUPP), or when the file has as many links as allowed (EMLINK).
// Any other error, above all EEXIST, is a failure.
func CannotLink(err error) bool {
	for _, errno := range []syscall.Errno{syscall.EXDEV, syscall.EPERM, syscall.ENOTSUP, syscall.EOPNOTSUPP, syscall.EMLINK} {
		if errors.Is(err, errno) {
			return true
		}
	}
	return false
}

// CopyFile copies src into dst, which it creates exclusively, and syncs
// it. If the copy fails, it removes dst, which is its own.
func CopyFile(fs FS, src, dst string) error {
	in, err := fs.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := fs.CreateExclusive(dst)
	if err != nil {
		return err
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
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return nil
}

// WriteFileSynced writes data into a new file at path, which it creates
// exclusively, and syncs it. The caller syncs its directory.
func WriteFileSynced(fs FS, path string, data []byte) error {
	w, err := fs.CreateExclusive(path)
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		w.Close()
		return err
	}
	if err := w.Sync(); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// ReadFile returns the contents of the file at path.
func ReadFile(fs FS, path string) ([]byte, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}
