package strata

import (
	"fmt"
	"io"
	"path/filepath"
	"sync"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/vfs"
)

// A database directory is opened by one DB at a time. The LOCK file is
// locked through the filesystem (vfs.Lock: the operating system's flock,
// MemFS's own locks), looking through wrappers such as vfs.ErrorFS that
// implement vfs.Unwrapper, so that a wrapped filesystem is locked like the
// one it wraps. A filesystem that cannot lock falls back to a registry of
// the directories open in this process.
//
// A read-only DB (Options.ReadOnly) takes no lock at all, not even a
// shared one: it must open a directory it cannot write (where LOCK cannot
// be created), and beside a writer that holds the exclusive lock. It
// writes nothing, so it cannot harm the writer; what it reads is the
// database as of its Open (see openReadOnly for a writer that changes the
// manifest meanwhile).
var openDirs struct {
	sync.Mutex
	m map[dirKey]bool
}

type dirKey struct {
	fs  vfs.FS
	dir string
}

type dirLock struct {
	key  dirKey
	file io.Closer // the lock on LOCK, or nil with the registry
	once sync.Once
}

func (l *dirLock) Close() error {
	var err error
	l.once.Do(func() {
		if l.file != nil {
			err = l.file.Close()
			return
		}
		openDirs.Lock()
		delete(openDirs.m, l.key)
		openDirs.Unlock()
	})
	return err
}

func lockDir(fs vfs.FS, dirname string) (io.Closer, error) {
	name := fs.PathJoin(dirname, base.MakeFilename(base.FileTypeLock, 0))
	lock, ok, err := vfs.Lock(fs, name)
	if err != nil {
		return nil, fmt.Errorf("strata: lock %q (is the database open elsewhere?): %w", dirname, err)
	}
	if ok {
		return &dirLock{file: lock}, nil
	}
	dir := dirname
	if abs, err := filepath.Abs(dirname); err == nil {
		dir = abs
	}
	key := dirKey{fs: fs, dir: dir}
	openDirs.Lock()
	defer openDirs.Unlock()
	if openDirs.m == nil {
		openDirs.m = make(map[dirKey]bool)
	}
	if openDirs.m[key] {
		return nil, fmt.Errorf("strata: database %q is already open in this process", dirname)
	}
	openDirs.m[key] = true
	return &dirLock{key: key}, nil
}
