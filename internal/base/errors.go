package base

import (
	"errors"
	"fmt"
)

// ErrNotFound is returned by Get when the key has no visible value.
var ErrNotFound = errors.New("strata: not found")

// ErrCorruption marks every error caused by bytes on disk that fail a
// checksum or cannot be decoded. Match it with errors.Is.
var ErrCorruption = errors.New("strata: corruption")

// ErrClosed is returned by operations on a closed DB, iterator or snapshot.
var ErrClosed = errors.New("strata: closed")

// CorruptionError describes corrupt bytes: which file, at what offset, and
// what was expected. It matches ErrCorruption with errors.Is.
type CorruptionError struct {
	File   string // file name (base name, not a full path)
	Offset int64  // byte offset in the file, or -1 when not known
	Detail string
}

func (e *CorruptionError) Error() string {
	if e.Offset >= 0 {
		return fmt.Sprintf("strata: corruption in %s at offset %d: %s", e.File, e.Offset, e.Detail)
	}
	return fmt.Sprintf("strata: corruption in %s: %s", e.File, e.Detail)
}

// Is makes errors.Is(err, ErrCorruption) true.
func (e *CorruptionError) Is(target error) bool { return target == ErrCorruption }

// CorruptionErrorf returns a CorruptionError for file at offset (-1 if
// unknown).
func CorruptionErrorf(file string, offset int64, format string, args ...any) error {
	return &CorruptionError{File: file, Offset: offset, Detail: fmt.Sprintf(format, args...)}
}

// ErrNewerFormat marks every error caused by a file whose format version
// is newer than this build reads: the database (or the store) was written
// by a newer Strata. Nothing is wrong with the bytes; a newer build reads
// them. Match it with errors.Is.
var ErrNewerFormat = errors.New("strata: written by a newer Strata")

// NewerFormatError describes a file of a format version this build does
// not read. It matches ErrNewerFormat with errors.Is (and not
// ErrCorruption).
type NewerFormatError struct {
	File    string // file or object name
	What    string // which format: "table", "value log", "manifest", ...
	Version uint64 // the version the file records
	Newest  uint64 // the newest version this build reads
}

func (e *NewerFormatError) Error() string {
	return fmt.Sprintf("strata: %s is of %s format version %d, written by a newer Strata (this build reads versions up to %d): open it with a newer build",
		e.File, e.What, e.Version, e.Newest)
}

// Is makes errors.Is(err, ErrNewerFormat) true.
func (e *NewerFormatError) Is(target error) bool { return target == ErrNewerFormat }
