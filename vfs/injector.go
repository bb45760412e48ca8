package vfs

import (
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
)

// ErrInjected is matched (with errors.Is) by every error an IndexInjector
// injects. Injectors of one's own may wrap it too.
var ErrInjected = errors.New("vfs: injected error")

// OpKind is the kind of a filesystem operation seen by an Injector.
type OpKind int

// The operations of an ErrorFS and of the Files it returns. Close is not
// among them: it is never failed.
const (
	OpCreate    OpKind = iota // FS.Create
	OpOpen                    // FS.Open
	OpOpenDir                 // FS.OpenDir
	OpRemove                  // FS.Remove
	OpRemoveAll               // FS.RemoveAll
	OpRename                  // FS.Rename
	OpLink                    // FS.Link
	OpMkdirAll                // FS.MkdirAll
	OpList                    // FS.List
	OpStat                    // FS.Stat
	OpRead                    // File.Read
	OpReadAt                  // File.ReadAt
	OpWrite                   // File.Write
	OpSync                    // File.Sync of a file (or of a directory opened with Open)
	OpSyncDir                 // File.Sync of a directory opened with OpenDir
	OpFileStat                // File.Stat

	OpCreateExclusive // FS.CreateExclusive
	OpMkdir           // FS.Mkdir
	numOpKinds
)

var opKindNames = [numOpKinds]string{
	OpCreate:    "create",
	OpOpen:      "open",
	OpOpenDir:   "open-dir",
	OpRemove:    "remove",
	OpRemoveAll: "remove-all",
	OpRename:    "rename",
	OpLink:      "link",
	OpMkdirAll:  "mkdir-all",
	OpList:      "list",
	OpStat:      "stat",
	OpRead:      "read",
	OpReadAt:    "read-at",
	OpWrite:     "write",
	OpSync:      "sync",
	OpSyncDir:   "sync-dir",
	OpFileStat:  "file-stat",

	OpCreateExclusive: "create-exclusive",
	OpMkdir:           "mkdir",
}

// String returns the operation's name, such as "create" or "sync-dir".
func (k OpKind) String() string {
	if k >= 0 && k < numOpKinds {
		return opKindNames[k]
	}
	return "op(" + strconv.Itoa(int(k)) + ")"
}

// IsWrite reports whether the operation changes the filesystem: Create,
// CreateExclusive, Remove, RemoveAll, Rename, Link, Mkdir, MkdirAll, Write,
// Sync and SyncDir.
// Opening, listing, reading and stat-ing are not writes; nor is OpenDir,
// whose Sync is the write.
func (k OpKind) IsWrite() bool {
	switch k {
	case OpCreate, OpCreateExclusive, OpRemove, OpRemoveAll, OpRename,
		OpLink, OpMkdir, OpMkdirAll, OpWrite, OpSync, OpSyncDir:
		return true
	}
	return false
}

// Op describes one filesystem operation.
type Op struct {
	Kind OpKind
	// Path is the name the operation was given; for a File operation, the
	// name the file was opened by; for Rename and Link, the old name.
	Path string
	// NewPath is the new name of Rename and Link, and empty otherwise.
	NewPath string
}

// String returns the operation in the form kind(path) or
// kind(path, newpath).
func (op Op) String() string {
	if op.NewPath != "" {
		return fmt.Sprintf("%s(%s, %s)", op.Kind, op.Path, op.NewPath)
	}
	return fmt.Sprintf("%s(%s)", op.Kind, op.Path)
}

// Injector decides whether an operation of an ErrorFS fails.
type Injector interface {
	// MaybeError returns the error op fails with, or nil to let it run. It
	// may be called concurrently.
	MaybeError(op Op) error
}

// InjectorFunc adapts a function to the Injector interface, for
// predicate-driven faults.
type InjectorFunc func(op Op) error

// MaybeError returns f(op).
func (f InjectorFunc) MaybeError(op Op) error { return f(op) }

// IndexInjector numbers the operations it sees from 0, atomically, and
// fails the one with a chosen index (and, if sticky, every later one). Its
// methods are safe for concurrent use.
//
// The usual test runs a workload once with index -1, which never fails, to
// learn Count, then reruns it failing each index 0..Count-1 in turn.
type IndexInjector struct {
	index      int64
	sticky     bool
	writesOnly bool
	count      atomic.Int64
	injected   atomic.Int64
}

// IndexOption configures an IndexInjector.
type IndexOption func(*IndexInjector)

// WritesOnly makes the injector count and fail only operations whose kind
// IsWrite; other operations pass through unnumbered.
func WritesOnly() IndexOption {
	return func(ii *IndexInjector) { ii.writesOnly = true }
}

// OnIndex returns an injector that fails exactly the operation with index i
// (counting from 0). A negative i never fails.
func OnIndex(i int64, opts ...IndexOption) *IndexInjector {
	ii := &IndexInjector{index: i}
	for _, o := range opts {
		o(ii)
	}
	return ii
}

// OnIndexSticky returns an injector that fails the operation with index i
// and every operation after it, as a disk that has died would. A negative i
// never fails.
func OnIndexSticky(i int64, opts ...IndexOption) *IndexInjector {
	ii := OnIndex(i, opts...)
	ii.sticky = true
	return ii
}

// MaybeError numbers op and fails it if its index is the chosen one. The
// error matches ErrInjected and names the operation and its index.
func (ii *IndexInjector) MaybeError(op Op) error {
	if ii.writesOnly && !op.Kind.IsWrite() {
		return nil
	}
	idx := ii.count.Add(1) - 1
	if ii.index < 0 || idx < ii.index || (idx > ii.index && !ii.sticky) {
		return nil
	}
	ii.injected.Add(1)
	return fmt.Errorf("%w: %s (operation %d)", ErrInjected, op, idx)
}

// Count returns how many operations the injector has numbered.
func (ii *IndexInjector) Count() int64 { return ii.count.Load() }

// Injected returns how many errors the injector has returned.
func (ii *IndexInjector) Injected() int64 { return ii.injected.Load() }
