// Package vfs is the filesystem interface through which the engine does all
// of its file I/O, with three implementations:
//
//   - Default: the operating system's filesystem.
//   - NewMem: an in-memory filesystem that can simulate a crash. Data written
//     to a file survives a crash only once the file is synced; a file's
//     creation, rename or removal survives only once its directory is
//     synced. CrashClone returns the state a machine would find after
//     power loss, optionally with torn (partially persisted) unsynced tails.
//   - NewErrorFS: a wrapper that fails a chosen operation (the i-th, or those
//     matching a predicate), for fault-injection tests.
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

// FS is a filesystem. Names are paths in the FS's own syntax, built with
// PathJoin.
type FS interface {
	// Create creates or truncates the named file for writing (and reading).
	Create(name string) (File, error)
	// Open opens the named file for reading.
	Open(name string) (File, error)
	// OpenDir opens a directory so that it can be synced: Sync on the
	// returned File makes creations, renames and removals in it durable.
	OpenDir(name string) (File, error)
	// Remove removes the named file or empty directory.
	Remove(name string) error
	// RemoveAll removes a directory tree (for tests and tooling).
	RemoveAll(name string) error
	// Rename renames oldname to newname, replacing newname if it exists.
	Rename(oldname, newname string) error
	// Link creates newname as a hard link to oldname.
	Link(oldname, newname string) error
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
