package vfs

import (
	"errors"
	"os"
	"path"
	"sync/atomic"
)

// ErrorFS wraps an FS and fails the operations its Injector chooses, for
// fault-injection tests. Before each operation of the FS, and of each File
// it returns, it asks the injector; a non-nil error is returned as is and
// the operation is not performed at all: a failed Write writes nothing, a
// failed Rename renames nothing, a failed Create creates no file.
//
// File.Close is never failed and never shown to the injector: it is passed
// straight through, since a caller can do nothing useful about a failed
// close. PathJoin, PathBase and PathDir are pure and are not operations.
//
// Injection can be switched off and on at run time with SetEnabled; while
// it is off the injector is not consulted, so an IndexInjector counts only
// the operations of the phases in which injection is on.
type ErrorFS struct {
	inner    FS
	inj      Injector
	disabled atomic.Bool
}

var _ FS = (*ErrorFS)(nil)

// NewErrorFS returns inner wrapped so that inj can fail its operations.
// Injection starts enabled. A nil inj never fails anything; with a nil
// inner every operation fails.
func NewErrorFS(inner FS, inj Injector) *ErrorFS {
	return &ErrorFS{inner: inner, inj: inj}
}

// SetEnabled switches injection on or off. It is safe to call while other
// goroutines use the FS.
func (fs *ErrorFS) SetEnabled(on bool) { fs.disabled.Store(!on) }

// Enabled reports whether injection is on.
func (fs *ErrorFS) Enabled() bool { return !fs.disabled.Load() }

// Unwrap returns the wrapped FS.
func (fs *ErrorFS) Unwrap() FS { return fs.inner }

// errNoInner is returned by every operation of an ErrorFS built without an
// inner FS.
var errNoInner = errors.New("vfs: ErrorFS has no inner FS")

func (fs *ErrorFS) maybeError(kind OpKind, path, newPath string) error {
	if fs.inner == nil {
		return errNoInner
	}
	if fs.inj == nil || fs.disabled.Load() {
		return nil
	}
	return fs.inj.MaybeError(Op{Kind: kind, Path: path, NewPath: newPath})
}

func (fs *ErrorFS) wrap(f File, name string, dir bool) File {
	return &errorFile{inner: f, fs: fs, name: name, dir: dir}
}

// Create creates or truncates name (OpCreate).
func (fs *ErrorFS) Create(name string) (File, error) {
	if err := fs.maybeError(OpCreate, name, ""); err != nil {
		return nil, err
	}
	f, err := fs.inner.Create(name)
	if err != nil {
		return nil, err
	}
	return fs.wrap(f, name, false), nil
}

// CreateExclusive creates name, failing if it exists (OpCreateExclusive).
func (fs *ErrorFS) CreateExclusive(name string) (File, error) {
	if err := fs.maybeError(OpCreateExclusive, name, ""); err != nil {
		return nil, err
	}
	f, err := fs.inner.CreateExclusive(name)
	if err != nil {
		return nil, err
	}
	return fs.wrap(f, name, false), nil
}

// Open opens name for reading (OpOpen).
func (fs *ErrorFS) Open(name string) (File, error) {
	if err := fs.maybeError(OpOpen, name, ""); err != nil {
		return nil, err
	}
	f, err := fs.inner.Open(name)
	if err != nil {
		return nil, err
	}
	return fs.wrap(f, name, false), nil
}

// OpenDir opens a directory (OpOpenDir); the Sync of the File it returns is
// OpSyncDir.
func (fs *ErrorFS) OpenDir(name string) (File, error) {
	if err := fs.maybeError(OpOpenDir, name, ""); err != nil {
		return nil, err
	}
	f, err := fs.inner.OpenDir(name)
	if err != nil {
		return nil, err
	}
	return fs.wrap(f, name, true), nil
}

// Remove removes name (OpRemove).
func (fs *ErrorFS) Remove(name string) error {
	if err := fs.maybeError(OpRemove, name, ""); err != nil {
		return err
	}
	return fs.inner.Remove(name)
}

// RemoveAll removes a tree (OpRemoveAll).
func (fs *ErrorFS) RemoveAll(name string) error {
	if err := fs.maybeError(OpRemoveAll, name, ""); err != nil {
		return err
	}
	return fs.inner.RemoveAll(name)
}

// Rename renames oldname to newname (OpRename).
func (fs *ErrorFS) Rename(oldname, newname string) error {
	if err := fs.maybeError(OpRename, oldname, newname); err != nil {
		return err
	}
	return fs.inner.Rename(oldname, newname)
}

// Link links newname to oldname (OpLink).
func (fs *ErrorFS) Link(oldname, newname string) error {
	if err := fs.maybeError(OpLink, oldname, newname); err != nil {
		return err
	}
	return fs.inner.Link(oldname, newname)
}

// Mkdir creates one directory (OpMkdir).
func (fs *ErrorFS) Mkdir(dir string, perm os.FileMode) error {
	if err := fs.maybeError(OpMkdir, dir, ""); err != nil {
		return err
	}
	return fs.inner.Mkdir(dir, perm)
}

// MkdirAll creates dir and its parents (OpMkdirAll).
func (fs *ErrorFS) MkdirAll(dir string, perm os.FileMode) error {
	if err := fs.maybeError(OpMkdirAll, dir, ""); err != nil {
		return err
	}
	return fs.inner.MkdirAll(dir, perm)
}

// List lists dir (OpList).
func (fs *ErrorFS) List(dir string) ([]string, error) {
	if err := fs.maybeError(OpList, dir, ""); err != nil {
		return nil, err
	}
	return fs.inner.List(dir)
}

// Stat describes name (OpStat).
func (fs *ErrorFS) Stat(name string) (os.FileInfo, error) {
	if err := fs.maybeError(OpStat, name, ""); err != nil {
		return nil, err
	}
	return fs.inner.Stat(name)
}

// PathJoin is the wrapped FS's PathJoin.
func (fs *ErrorFS) PathJoin(elem ...string) string {
	if fs.inner == nil {
		return path.Join(elem...)
	}
	return fs.inner.PathJoin(elem...)
}

// PathBase is the wrapped FS's PathBase.
func (fs *ErrorFS) PathBase(p string) string {
	if fs.inner == nil {
		return path.Base(p)
	}
	return fs.inner.PathBase(p)
}

// PathDir is the wrapped FS's PathDir.
func (fs *ErrorFS) PathDir(p string) string {
	if fs.inner == nil {
		return path.Dir(p)
	}
	return fs.inner.PathDir(p)
}

// errorFile is a File of an ErrorFS.
type errorFile struct {
	inner File
	fs    *ErrorFS
	name  string
	dir   bool // opened with OpenDir
}

func (f *errorFile) Read(p []byte) (int, error) {
	if err := f.fs.maybeError(OpRead, f.name, ""); err != nil {
		return 0, err
	}
	return f.inner.Read(p)
}

func (f *errorFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.fs.maybeError(OpReadAt, f.name, ""); err != nil {
		return 0, err
	}
	return f.inner.ReadAt(p, off)
}

func (f *errorFile) Write(p []byte) (int, error) {
	if err := f.fs.maybeError(OpWrite, f.name, ""); err != nil {
		return 0, err
	}
	return f.inner.Write(p)
}

func (f *errorFile) Sync() error {
	kind := OpSync
	if f.dir {
		kind = OpSyncDir
	}
	if err := f.fs.maybeError(kind, f.name, ""); err != nil {
		return err
	}
	return f.inner.Sync()
}

func (f *errorFile) Stat() (os.FileInfo, error) {
	if err := f.fs.maybeError(OpFileStat, f.name, ""); err != nil {
		return nil, err
	}
	return f.inner.Stat()
}

// Close is passed through without consulting the injector.
func (f *errorFile) Close() error { return f.inner.Close() }
