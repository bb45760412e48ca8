package strata

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/vfs"
)

// A database directory is opened by one DB at a time. Within the process a
// registry of open directories enforces it for every filesystem; on the
// operating system's filesystem an advisory lock on the LOCK file also keeps
// other processes out.
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
	file *os.File
	once sync.Once
}

func (l *dirLock) Close() error {
	var err error
	l.once.Do(func() {
		if l.file != nil {
			err = unlockFile(l.file)
		}
		openDirs.Lock()
		delete(openDirs.m, l.key)
		openDirs.Unlock()
	})
	return err
}

func lockDir(fs vfs.FS, dirname string) (io.Closer, error) {
	dir := dirname
	if fs == vfs.Default {
		if abs, err := filepath.Abs(dirname); err == nil {
			dir = abs
		}
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
	l := &dirLock{key: key}
	if fs == vfs.Default {
		f, err := lockFile(filepath.Join(dir, base.MakeFilename(base.FileTypeLock, 0)))
		if err != nil {
			return nil, fmt.Errorf("strata: lock %q: %w", dirname, err)
		}
		l.file = f
	}
	openDirs.m[key] = true
	return l, nil
}
