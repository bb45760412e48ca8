package vfs

import (
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"syscall"
)

// MemFS is an in-memory FS that can simulate a crash; see the package
// documentation for its exact semantics. Its methods are safe for
// concurrent use.
//
// Paths use "/" as separator and are cleaned like path.Clean. Every path is
// relative to the root: "/a/b", "a/b" and "./a/b" name the same file, and
// "", "." and "/" name the root directory, which always exists.
//
// The zero MemFS is an empty filesystem, like one from NewMem.
type MemFS struct {
	initOnce sync.Once
	// mu guards the directory tree: the entries and durable entries of every
	// directory node. Lock order: MemFS.mu before memNode.mu.
	mu   sync.RWMutex
	root *memNode
	// pending are the directory changes not yet made durable by a sync of
	// their directory, in the order they were made: what a journal may
	// have committed before a crash (see CrashOptions.LeakMetadata).
	pending []metaOp
}

// metaOp is one directory operation: one change, or two for a rename
// (which a journal commits as one).
type metaOp struct {
	changes [2]dirChange
	n       int
}

// dirChange sets name in dir to node, or removes it when node is nil.
type dirChange struct {
	dir  *memNode
	name string
	node *memNode
}

// logChangeLocked records a directory operation of one or two changes.
// MemFS.mu held for writing.
func (fs *MemFS) logChangeLocked(changes ...dirChange) {
	op := metaOp{n: len(changes)}
	copy(op.changes[:], changes)
	fs.pending = append(fs.pending, op)
}

var _ FS = (*MemFS)(nil)

// NewMem returns an empty in-memory filesystem holding only its root
// directory.
func NewMem() *MemFS {
	return &MemFS{root: newDirNode(0o755)}
}

// lock locks the tree for writing, creating the root of a zero MemFS.
func (fs *MemFS) lock() {
	fs.initOnce.Do(fs.initRoot)
	fs.mu.Lock()
}

// rlock locks the tree for reading, creating the root of a zero MemFS.
func (fs *MemFS) rlock() {
	fs.initOnce.Do(fs.initRoot)
	fs.mu.RLock()
}

func (fs *MemFS) initRoot() {
	if fs.root == nil {
		fs.root = newDirNode(0o755)
	}
}

// splitPath returns the elements of a cleaned name; nil means the root.
func splitPath(name string) []string {
	p := path.Clean("/" + name)
	if p == "/" {
		return nil
	}
	return strings.Split(p[1:], "/")
}

// pathBase is the base name reported by Stat: "/" for the root.
func pathBase(name string) string {
	return path.Base(path.Clean("/" + name))
}

// resolveLocked returns the node named by parts, looking only at current
// entries. It returns a bare errno for the caller to wrap. fs.mu must be
// held.
func (fs *MemFS) resolveLocked(parts []string) (*memNode, error) {
	n := fs.root
	for _, p := range parts {
		if !n.isDir {
			return nil, syscall.ENOTDIR
		}
		c, ok := n.entries[p]
		if !ok {
			return nil, syscall.ENOENT
		}
		n = c
	}
	return n, nil
}

// parentLocked returns the directory that holds (or would hold) the last
// element of parts, which must not be empty. fs.mu must be held.
func (fs *MemFS) parentLocked(parts []string) (*memNode, error) {
	dir, err := fs.resolveLocked(parts[:len(parts)-1])
	if err != nil {
		return nil, err
	}
	if !dir.isDir {
		return nil, syscall.ENOTDIR
	}
	return dir, nil
}

// Create creates the named file, or truncates it if it exists, and returns
// a read-write handle at offset 0. A new file's directory entry is not
// durable until the directory is synced; a truncation is not durable until
// the file is synced.
func (fs *MemFS) Create(name string) (File, error) {
	return fs.create(name, false)
}

// CreateExclusive creates the named file like Create, but fails with
// EEXIST if the name exists.
func (fs *MemFS) CreateExclusive(name string) (File, error) {
	return fs.create(name, true)
}

func (fs *MemFS) create(name string, excl bool) (File, error) {
	parts := splitPath(name)
	if len(parts) == 0 {
		err := syscall.EISDIR
		if excl {
			err = syscall.EEXIST
		}
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	fs.lock()
	defer fs.mu.Unlock()
	dir, err := fs.parentLocked(parts)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	base := parts[len(parts)-1]
	n, ok := dir.entries[base]
	switch {
	case ok && excl:
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EEXIST}
	case ok && n.isDir:
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EISDIR}
	case ok:
		n.truncate()
	default:
		n = newFileNode()
		dir.entries[base] = n
		fs.logChangeLocked(dirChange{dir, base, n})
	}
	return &memFile{fs: fs, name: name, n: n, writable: true}, nil
}

// Open opens the named file read-only. Opening a directory succeeds, as on
// the OS: reads from it fail and Sync syncs its entries.
func (fs *MemFS) Open(name string) (File, error) {
	fs.rlock()
	defer fs.mu.RUnlock()
	n, err := fs.resolveLocked(splitPath(name))
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	return &memFile{fs: fs, name: name, n: n}, nil
}

// OpenDir opens a directory so that it can be synced. Unlike the OS, it
// fails with ENOTDIR on a file.
func (fs *MemFS) OpenDir(name string) (File, error) {
	fs.rlock()
	defer fs.mu.RUnlock()
	n, err := fs.resolveLocked(splitPath(name))
	if err == nil && !n.isDir {
		err = syscall.ENOTDIR
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	return &memFile{fs: fs, name: name, n: n}, nil
}

// syncDir makes the current entries of dir durable, and drops its changes
// from the pending ones.
func (fs *MemFS) syncDir(dir *memNode) {
	fs.lock()
	defer fs.mu.Unlock()
	dir.durableEntries = maps.Clone(dir.entries)
	kept := fs.pending[:0]
	for _, op := range fs.pending {
		n := 0
		for _, c := range op.changes[:op.n] {
			if c.dir != dir {
				op.changes[n] = c
				n++
			}
		}
		if op.n = n; n > 0 {
			clear(op.changes[n:])
			kept = append(kept, op)
		}
	}
	clear(fs.pending[len(kept):])
	fs.pending = kept
}

// Remove removes the named file or empty directory. Open handles keep
// working. The removal is not durable until the parent is synced.
func (fs *MemFS) Remove(name string) error {
	parts := splitPath(name)
	if len(parts) == 0 {
		return &os.PathError{Op: "remove", Path: name, Err: syscall.EBUSY}
	}
	fs.lock()
	defer fs.mu.Unlock()
	dir, err := fs.parentLocked(parts)
	if err != nil {
		return &os.PathError{Op: "remove", Path: name, Err: err}
	}
	base := parts[len(parts)-1]
	n, ok := dir.entries[base]
	if !ok {
		return &os.PathError{Op: "remove", Path: name, Err: syscall.ENOENT}
	}
	if n.isDir && len(n.entries) > 0 {
		return &os.PathError{Op: "remove", Path: name, Err: syscall.ENOTEMPTY}
	}
	delete(dir.entries, base)
	fs.logChangeLocked(dirChange{dir, base, nil})
	return nil
}

// RemoveAll removes name and everything below it; a missing name is not an
// error. Like os.RemoveAll it refuses the root ("." or "/"), and "" is a
// no-op. Only the entry in the parent changes, so after a crash before the
// parent is synced the whole tree comes back as it was last made durable.
func (fs *MemFS) RemoveAll(name string) error {
	if name == "" {
		return nil
	}
	parts := splitPath(name)
	if len(parts) == 0 {
		return &os.PathError{Op: "RemoveAll", Path: name, Err: syscall.EINVAL}
	}
	fs.lock()
	defer fs.mu.Unlock()
	dir, err := fs.parentLocked(parts)
	if err == syscall.ENOENT {
		return nil
	}
	if err != nil {
		return &os.PathError{Op: "RemoveAll", Path: name, Err: err}
	}
	base := parts[len(parts)-1]
	if _, ok := dir.entries[base]; ok {
		delete(dir.entries, base)
		fs.logChangeLocked(dirChange{dir, base, nil})
	}
	return nil
}

// Rename renames oldname to newname, replacing a file at newname, or an
// empty directory when oldname is a directory, as rename(2) does. Renaming
// a directory onto a non-empty directory fails with ENOTEMPTY, a file onto
// a directory with EISDIR, and a directory onto a file with ENOTDIR;
// renaming a name onto another name of the same file does nothing. The
// change is not durable until both parents are synced.
func (fs *MemFS) Rename(oldname, newname string) error {
	linkErr := func(err error) error {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	op, np := splitPath(oldname), splitPath(newname)
	if len(op) == 0 || len(np) == 0 {
		return linkErr(syscall.EBUSY)
	}
	fs.lock()
	defer fs.mu.Unlock()
	odir, err := fs.parentLocked(op)
	if err != nil {
		return linkErr(err)
	}
	obase := op[len(op)-1]
	n, ok := odir.entries[obase]
	if !ok {
		return linkErr(syscall.ENOENT)
	}
	ndir, err := fs.parentLocked(np)
	if err != nil {
		return linkErr(err)
	}
	if n.isDir && len(np) > len(op) && slices.Equal(np[:len(op)], op) {
		// A directory cannot move below itself.
		return linkErr(syscall.EINVAL)
	}
	nbase := np[len(np)-1]
	if existing, ok := ndir.entries[nbase]; ok {
		switch {
		case existing == n:
			return nil
		case existing.isDir && !n.isDir:
			return linkErr(syscall.EISDIR)
		case existing.isDir && len(existing.entries) > 0:
			return linkErr(syscall.ENOTEMPTY)
		case n.isDir && !existing.isDir:
			return linkErr(syscall.ENOTDIR)
		}
	}
	delete(odir.entries, obase)
	ndir.entries[nbase] = n
	fs.logChangeLocked(dirChange{odir, obase, nil}, dirChange{ndir, nbase, n})
	return nil
}

// Link makes newname a second name of the file oldname: both names share
// one file. The new entry is not durable until its directory is synced.
func (fs *MemFS) Link(oldname, newname string) error {
	linkErr := func(err error) error {
		return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: err}
	}
	np := splitPath(newname)
	fs.lock()
	defer fs.mu.Unlock()
	n, err := fs.resolveLocked(splitPath(oldname))
	if err != nil {
		return linkErr(err)
	}
	if n.isDir {
		return linkErr(syscall.EPERM)
	}
	if len(np) == 0 {
		return linkErr(syscall.EEXIST)
	}
	ndir, err := fs.parentLocked(np)
	if err != nil {
		return linkErr(err)
	}
	nbase := np[len(np)-1]
	if _, ok := ndir.entries[nbase]; ok {
		return linkErr(syscall.EEXIST)
	}
	ndir.entries[nbase] = n
	fs.logChangeLocked(dirChange{ndir, nbase, n})
	return nil
}

// Mkdir creates the directory dir, whose parent must exist; it fails with
// EEXIST if dir exists. Like a file made by Create, the new directory's
// entry is not durable until its parent is synced.
func (fs *MemFS) Mkdir(dir string, perm os.FileMode) error {
	parts := splitPath(dir)
	if len(parts) == 0 {
		return &os.PathError{Op: "mkdir", Path: dir, Err: syscall.EEXIST}
	}
	fs.lock()
	defer fs.mu.Unlock()
	parent, err := fs.parentLocked(parts)
	if err != nil {
		return &os.PathError{Op: "mkdir", Path: dir, Err: err}
	}
	base := parts[len(parts)-1]
	if _, ok := parent.entries[base]; ok {
		return &os.PathError{Op: "mkdir", Path: dir, Err: syscall.EEXIST}
	}
	d := newDirNode(perm)
	parent.entries[base] = d
	fs.logChangeLocked(dirChange{parent, base, d})
	return nil
}

// MkdirAll creates dir and any missing parents. Like a file made by Create,
// each directory it creates is in its parent's entries at once, but its
// entry is not durable until the parent is synced: after a crash before
// then, the directory is gone with everything below it, synced or not.
// Directories that already exist are left as they are.
func (fs *MemFS) MkdirAll(dir string, perm os.FileMode) error {
	fs.lock()
	defer fs.mu.Unlock()
	n := fs.root
	for _, p := range splitPath(dir) {
		if !n.isDir {
			return &os.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
		}
		c, ok := n.entries[p]
		if !ok {
			c = newDirNode(perm)
			n.entries[p] = c
			fs.logChangeLocked(dirChange{n, p, c})
		}
		n = c
	}
	if !n.isDir {
		return &os.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
	}
	return nil
}

// List returns the base names of the current entries of dir, sorted.
func (fs *MemFS) List(dir string) ([]string, error) {
	fs.rlock()
	defer fs.mu.RUnlock()
	n, err := fs.resolveLocked(splitPath(dir))
	if err == nil && !n.isDir {
		err = syscall.ENOTDIR
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	return slices.Sorted(maps.Keys(n.entries)), nil
}

// Stat describes the named file or directory.
func (fs *MemFS) Stat(name string) (os.FileInfo, error) {
	fs.rlock()
	defer fs.mu.RUnlock()
	n, err := fs.resolveLocked(splitPath(name))
	if err != nil {
		return nil, &os.PathError{Op: "stat", Path: name, Err: err}
	}
	return n.info(pathBase(name)), nil
}

// PathJoin joins elements with "/", like path.Join.
func (*MemFS) PathJoin(elem ...string) string { return path.Join(elem...) }

// PathBase returns the last element of p, like path.Base.
func (*MemFS) PathBase(p string) string { return path.Base(p) }

// PathDir returns all but the last element of p, like path.Dir.
func (*MemFS) PathDir(p string) string { return path.Dir(p) }
