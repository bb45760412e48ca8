package vfs

import (
	"fmt"
	"io"
	"path"
	"sync"
	"syscall"
)

// Locker is implemented by filesystems that can lock a file against other
// users: the engine locks its directory's LOCK file so that one database is
// opened by one DB at a time.
type Locker interface {
	// Lock creates the named file if needed and takes an exclusive lock on
	// it, failing at once if someone holds it. Close releases it.
	Lock(name string) (io.Closer, error)
}

// Unwrapper is implemented by filesystems that wrap another one (ErrorFS,
// or a user's instrumenting wrapper): Lock looks through them.
type Unwrapper interface {
	Unwrap() FS
}

// Lock locks the named file through fs: through fs itself if it is a
// Locker, or else through the filesystem it wraps (see Unwrapper), however
// deep. ok is false when no filesystem in the chain can lock.
func Lock(fs FS, name string) (closer io.Closer, ok bool, err error) {
	for fs != nil {
		if l, is := fs.(Locker); is {
			c, err := l.Lock(name)
			return c, true, err
		}
		u, is := fs.(Unwrapper)
		if !is {
			break
		}
		fs = u.Unwrap()
	}
	return nil, false, nil
}

// Lock takes an advisory lock (flock) on the named file of the operating
// system's filesystem. Another process, or another open of the same file in
// this process, fails to take it while it is held.
func (diskFS) Lock(name string) (io.Closer, error) {
	return lockFile(name)
}

// memLocks are the locks held on MemFS files, per filesystem.
var memLocks struct {
	sync.Mutex
	held map[memLockKey]bool
}

type memLockKey struct {
	fs   *MemFS
	name string
}

type memLock struct {
	key  memLockKey
	once sync.Once
}

func (l *memLock) Close() error {
	l.once.Do(func() {
		memLocks.Lock()
		delete(memLocks.held, l.key)
		memLocks.Unlock()
	})
	return nil
}

// Lock creates the named file if it does not exist and locks it within
// this MemFS: a second Lock of the same file fails until the first is
// closed. Locks do not survive CrashClone (a new machine holds none).
func (fs *MemFS) Lock(name string) (io.Closer, error) {
	if _, err := fs.Stat(name); err != nil {
		f, err := fs.Create(name)
		if err != nil {
			return nil, err
		}
		f.Close()
	}
	key := memLockKey{fs: fs, name: path.Clean("/" + name)}
	memLocks.Lock()
	defer memLocks.Unlock()
	if memLocks.held == nil {
		memLocks.held = make(map[memLockKey]bool)
	}
	if memLocks.held[key] {
		return nil, fmt.Errorf("lock %s: %w", name, syscall.EAGAIN)
	}
	memLocks.held[key] = true
	return &memLock{key: key}, nil
}
