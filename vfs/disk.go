package vfs

import (
	"os"
	"path/filepath"
	"syscall"
)

// Default is the operating system's filesystem.
var Default FS = diskFS{}

type diskFS struct{}

type diskFile struct{ *os.File }

// Sync uses fdatasync where the platform has it: file sizes are kept in
// metadata that fdatasync also flushes, and the engine never depends on
// modification times.
func (f diskFile) Sync() error { return fdatasync(f.File) }

func (diskFS) Create(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC|syscall.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, err
	}
	return diskFile{f}, nil
}

func (diskFS) CreateExclusive(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL|syscall.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, err
	}
	return diskFile{f}, nil
}

func (diskFS) Open(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return diskFile{f}, nil
}

func (diskFS) OpenDir(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return dirFile{f}, nil
}

// dirFile syncs with fsync: fdatasync on a directory is not portable.
type dirFile struct{ *os.File }

func (f dirFile) Sync() error { return f.File.Sync() }

func (diskFS) Remove(name string) error                 { return os.Remove(name) }
func (diskFS) RemoveAll(name string) error              { return os.RemoveAll(name) }
func (diskFS) Link(oldname, newname string) error       { return os.Link(oldname, newname) }
func (diskFS) Mkdir(dir string, p os.FileMode) error    { return os.Mkdir(dir, p) }
func (diskFS) MkdirAll(dir string, p os.FileMode) error { return os.MkdirAll(dir, p) }
func (diskFS) Stat(name string) (os.FileInfo, error)    { return os.Stat(name) }
func (diskFS) PathJoin(elem ...string) string           { return filepath.Join(elem...) }
func (diskFS) PathBase(p string) string                 { return filepath.Base(p) }
func (diskFS) PathDir(p string) string                  { return filepath.Dir(p) }

// Rename calls rename(2) directly: os.Rename refuses every existing
// directory as the target, where rename(2) replaces an empty one (on
// Windows, syscall.Rename does not replace directories).
func (diskFS) Rename(oldname, newname string) error {
	for {
		err := syscall.Rename(oldname, newname)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
		}
		return nil
	}
}

func (diskFS) List(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}
