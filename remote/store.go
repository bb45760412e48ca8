package remote

import (
	"context"
	"errors"
	"io"
)

// Store is an object store: a flat namespace of immutable-or-replaced
// objects, as S3 has. Names are relative paths of '/'-separated parts
// (checkpoint.ValidName says which). Implementations must be safe for
// concurrent use. package checkpoint names it checkpoint.Store and has the
// implementations (a local directory, S3).
type Store interface {
	// Put stores size bytes read from r as the object name, atomically:
	// readers see the old object (or none) until Put returns, then the new
	// one whole, never a part. A failed Put leaves no object of that name
	// that was not there before.
	Put(ctx context.Context, name string, r io.Reader, size int64) error
	// Get returns length bytes of the object from offset off (length < 0:
	// to the end). A missing object is an error matching ErrNotExist; a
	// range past the object's end is an error.
	Get(ctx context.Context, name string, off, length int64) (io.ReadCloser, error)
	// List returns the objects whose names begin with prefix, sorted by
	// name.
	List(ctx context.Context, prefix string) ([]ObjectInfo, error)
	// Delete removes the object; deleting a missing object is not an error.
	Delete(ctx context.Context, name string) error
}

// ObjectInfo describes one stored object.
type ObjectInfo struct {
	Name string
	Size int64
}

// ErrNotExist matches (errors.Is) the error of a Get of a missing object.
var ErrNotExist = errors.New("checkpoint: object does not exist")
