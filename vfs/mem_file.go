package vfs

import (
	"errors"
	"io"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// memNode is a file or a directory of a MemFS. A node is shared by every
// directory entry that names it (hard links) and by every open handle, so a
// file removed while open keeps working through its handles.
type memNode struct {
	isDir bool
	perm  os.FileMode // immutable

	// Directory state, guarded by MemFS.mu (not by mu below).
	//
	// entries are the current entries; durableEntries are the entries as of
	// the directory's last sync, which is what survives a crash.
	entries        map[string]*memNode
	durableEntries map[string]*memNode

	// File state, guarded by mu.
	mu sync.RWMutex
	// data is the current contents.
	data []byte
	// durable is the contents as of the last Sync: what survives a crash.
	durable []byte
	// appendOnly is true when nothing but appends happened since the last
	// sync.
	//
	// INVARIANT: if appendOnly, durable is a prefix of data and may share
	// its memory (bytes of data below len(durable) are never written while
	// appendOnly holds). If !appendOnly, durable shares no memory with data.
	appendOnly bool
	modTime    time.Time
}

func newDirNode(perm os.FileMode) *memNode {
	return &memNode{
		isDir:          true,
		perm:           perm.Perm(),
		entries:        map[string]*memNode{},
		durableEntries: map[string]*memNode{},
		modTime:        time.Now(),
	}
}

func newFileNode() *memNode {
	return &memNode{perm: 0o644, appendOnly: true, modTime: time.Now()}
}

// readAt copies contents at off into p. It returns io.EOF when fewer than
// len(p) bytes are available, like io.ReaderAt.
func (n *memNode) readAt(p []byte, off int64) (int, error) {
	n.mu.RLock()
	defer n.mu.RUnlock()
	if off >= int64(len(n.data)) {
		return 0, io.EOF
	}
	c := copy(p, n.data[off:])
	if c < len(p) {
		return c, io.EOF
	}
	return c, nil
}

// writeAt writes p at off, filling any gap beyond the current end with
// zeros, as a POSIX file does.
func (n *memNode) writeAt(p []byte, off int64) {
	if len(p) == 0 {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.appendOnly && off < int64(len(n.durable)) {
		// An overwrite of synced bytes: the durable contents stop being a
		// prefix of the current ones, so they must get their own memory.
		n.durable = slices.Clone(n.durable)
		n.appendOnly = false
	}
	oldLen := int64(len(n.data))
	end := off + int64(len(p))
	if end > oldLen {
		n.data = slices.Grow(n.data, int(end-oldLen))[:end]
		if off > oldLen {
			clear(n.data[oldLen:off])
		}
	}
	copy(n.data[off:], p)
	n.modTime = time.Now()
}

// truncate empties the file (Create of an existing file). The durable
// contents are kept: a truncation is not durable until the file is synced.
func (n *memNode) truncate() {
	n.mu.Lock()
	defer n.mu.Unlock()
	// data gets fresh memory, so durable (which may share the old memory)
	// is no longer written through data.
	n.data = nil
	n.appendOnly = len(n.durable) == 0
	n.modTime = time.Now()
}

// sync makes the current contents durable.
func (n *memNode) sync() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.durable = n.data[:len(n.data):len(n.data)]
	n.appendOnly = true
}

func (n *memNode) info(name string) os.FileInfo {
	if n.isDir {
		return &memFileInfo{name: name, mode: os.ModeDir | n.perm, modTime: n.modTime}
	}
	n.mu.RLock()
	defer n.mu.RUnlock()
	return &memFileInfo{name: name, size: int64(len(n.data)), mode: n.perm, modTime: n.modTime}
}

// memFileInfo is the os.FileInfo of a MemFS file or directory.
type memFileInfo struct {
	name    string
	size    int64
	mode    os.FileMode
	modTime time.Time
}

func (fi *memFileInfo) Name() string       { return fi.name }
func (fi *memFileInfo) Size() int64        { return fi.size }
func (fi *memFileInfo) Mode() os.FileMode  { return fi.mode }
func (fi *memFileInfo) ModTime() time.Time { return fi.modTime }
func (fi *memFileInfo) IsDir() bool        { return fi.mode.IsDir() }
func (fi *memFileInfo) Sys() any           { return nil }

// memFile is an open handle on a memNode.
type memFile struct {
	fs       *MemFS
	name     string // as given to Create, Open or OpenDir
	n        *memNode
	writable bool
	closed   atomic.Bool

	mu  sync.Mutex // guards off
	off int64      // offset of the next Read or Write
}

var _ File = (*memFile)(nil)

var errNegativeOffset = errors.New("negative offset")

func (f *memFile) pathErr(op string, err error) error {
	return &os.PathError{Op: op, Path: f.name, Err: err}
}

// Read reads at the handle's offset and advances it.
func (f *memFile) Read(p []byte) (int, error) {
	if f.closed.Load() {
		return 0, f.pathErr("read", os.ErrClosed)
	}
	if f.n.isDir {
		return 0, f.pathErr("read", syscall.EISDIR)
	}
	if len(p) == 0 {
		return 0, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.n.readAt(p, f.off)
	f.off += int64(n)
	if n > 0 {
		// Like os.File: a short read is not an error; the next Read
		// reports io.EOF.
		return n, nil
	}
	return 0, err
}

// ReadAt reads at off without moving the handle's offset. It may run
// concurrently with other reads and with writes through other handles.
func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	if f.closed.Load() {
		return 0, f.pathErr("read", os.ErrClosed)
	}
	if f.n.isDir {
		return 0, f.pathErr("read", syscall.EISDIR)
	}
	if off < 0 {
		return 0, f.pathErr("readat", errNegativeOffset)
	}
	if len(p) == 0 {
		return 0, nil
	}
	return f.n.readAt(p, off)
}

// Write writes at the handle's offset and advances it.
func (f *memFile) Write(p []byte) (int, error) {
	if f.closed.Load() {
		return 0, f.pathErr("write", os.ErrClosed)
	}
	if !f.writable {
		return 0, f.pathErr("write", syscall.EBADF)
	}
	// Shared with other writes and syncs, exclusive of CrashClone, which
	// must see every file as of one instant (see MemFS.CrashClone).
	f.fs.mu.RLock()
	defer f.fs.mu.RUnlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n.writeAt(p, f.off)
	f.off += int64(len(p))
	return len(p), nil
}

// Sync makes a file's contents durable, or a directory's current entries
// durable.
func (f *memFile) Sync() error {
	if f.closed.Load() {
		return f.pathErr("sync", os.ErrClosed)
	}
	if f.n.isDir {
		f.fs.syncDir(f.n)
		return nil
	}
	f.fs.mu.RLock() // as in Write
	defer f.fs.mu.RUnlock()
	f.n.sync()
	return nil
}

// Stat describes the open file; Name is the base name it was opened by.
func (f *memFile) Stat() (os.FileInfo, error) {
	if f.closed.Load() {
		return nil, f.pathErr("stat", os.ErrClosed)
	}
	return f.n.info(pathBase(f.name)), nil
}

// Close closes the handle; closing it again returns an error matching
// os.ErrClosed.
func (f *memFile) Close() error {
	if !f.closed.CompareAndSwap(false, true) {
		return f.pathErr("close", os.ErrClosed)
	}
	return nil
}
