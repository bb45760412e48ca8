// Package vfs is the filesystem interface through which the engine does all
// of its file I/O, with three implementations:
//
//   - Default: the operating system's filesystem.
//   - NewMem: an in-memory filesystem (MemFS) that can simulate a crash.
//   - NewErrorFS: a wrapper (ErrorFS) that fails the operations an Injector
//     chooses (the i-th, or those matching a predicate), for
//     fault-injection tests.
//
// # MemFS crash semantics
//
// Every file has current contents and durable contents; File.Sync makes
// the current contents durable. Every directory has current entries and
// durable entries; Create (of a new file), CreateExclusive, Mkdir, MkdirAll
// (for each directory it creates), Rename, Remove, RemoveAll and Link change
// only current entries, and Sync on a directory opened with OpenDir (or
// Open) makes its current entries durable. The root directory always
// exists.
//
// CrashClone returns a new, independent MemFS with what a machine would find
// after power loss: starting from the root, only durable entries, each
// naming its file with the file's durable contents or its directory with the
// directory's durable entries. So a file created but whose directory was
// never synced disappears; a directory made by MkdirAll whose parent was
// never synced disappears with everything below it, even files and entries
// synced there (making a/b durable takes syncing both a and the root); a
// rename or removal not followed by a sync of the directory is undone;
// unsynced data is lost. Truncating an existing file with Create is not
// durable until the file is synced. With CrashOptions.TornWrites, each file
// also keeps a random prefix of the data written since its last sync (see
// CrashClone for the exact rule); with CrashOptions.ZeroedPages, some pages
// of that prefix hold zeros instead of their data (the size reached the
// disk, the data did not); with CrashOptions.LeakMetadata, a random prefix
// of the directory changes not yet synced survives too, in the order they
// were made, as a journal commits them.
//
// Otherwise MemFS behaves like a POSIX filesystem: hard links share one
// file, handles see writes made through other handles, a removed file stays
// usable through its open handles, Read and Write go at the handle's offset,
// and operations on a closed File fail with an error matching os.ErrClosed.
// Errors are *os.PathError or *os.LinkError around the errno the OS would
// give, so errors.Is(err, os.ErrNotExist) and errors.Is(err, os.ErrExist)
// work as on the OS.
//
// Tests of the engine depend on these semantics; keep them exact.
package vfs

import (
	"io"
	"os"
)

// File is an open file. ReadAt may be called concurrently with other ReadAt
// calls; writes to one file are made by one goroutine at a time.
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	io.Closer
	// Sync makes the file's written data durable.
	Sync() error
	// Stat returns the file's metadata; Size is what matters to the engine.
	Stat() (os.FileInfo, error)
}

// Prefetcher is implemented by files whose reads are slow to start (a
// shared file read from an object store through a cache, see package
// remote): a reader that knows which bytes it reads next asks for them
// at once, and the reads then find them on their way or arrived. A hint
// only: it returns at once and reports nothing.
type Prefetcher interface {
	Prefetch(off, n int64)
}

// Prefetch passes the hint to f if f is a Prefetcher.
func Prefetch(f File, off, n int64) {
	if p, ok := f.(Prefetcher); ok {
		p.Prefetch(off, n)
	}
}

// FS is a filesystem. Names are paths in the FS's own syntax, built with
// PathJoin.
type FS interface {
	// Create creates or truncates the named file for writing (and reading).
	Create(name string) (File, error)
	// CreateExclusive creates the named file for writing (and reading) like
	// Create, but fails with an error matching os.ErrExist if the name
	// exists (O_CREATE|O_EXCL): it never truncates or shares an existing
	// file, including one another process has just made.
	CreateExclusive(name string) (File, error)
	// Open opens the named file for reading.
	Open(name string) (File, error)
	// OpenDir opens a directory so that it can be synced: Sync on the
	// returned File makes creations, renames and removals in it durable.
	OpenDir(name string) (File, error)
	// Remove removes the named file or empty directory.
	Remove(name string) error
	// RemoveAll removes a directory tree (for tests and tooling).
	RemoveAll(name string) error
	// Rename renames oldname to newname atomically, replacing newname if it
	// exists, as rename(2) does: a file replaces a file, and a directory
	// replaces an empty directory. A directory onto a non-empty directory
	// fails with ENOTEMPTY (or EEXIST), a file onto a directory with EISDIR
	// and a directory onto a file with ENOTDIR.
	Rename(oldname, newname string) error
	// Link creates newname as a hard link to oldname.
	Link(oldname, newname string) error
	// Mkdir creates one directory, whose parent must exist. It fails with an
	// error matching os.ErrExist if the name exists, so of several callers
	// making one name exactly one succeeds.
	Mkdir(dir string, perm os.FileMode) error
	// MkdirAll creates a directory and its parents.
	MkdirAll(dir string, perm os.FileMode) error
	// List returns the names (base names) of the entries of dir.
	List(dir string) ([]string, error)
	// Stat describes the named file.
	Stat(name string) (os.FileInfo, error)
	// PathJoin joins path elements.
	PathJoin(elem ...string) string
	// PathBase returns the last element of a path.
	PathBase(path string) string
	// PathDir returns all but the last element of a path.
	PathDir(path string) string
}
