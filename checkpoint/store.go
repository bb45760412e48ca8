package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Store is an object store that incremental checkpoints are written to: a
// flat namespace of immutable-or-replaced objects, as S3 has. Names are
// relative paths of '/'-separated parts (see ValidName). Implementations
// must be safe for concurrent use.
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

// ValidName reports, as an error, whether name may name an object: one or
// more parts separated by '/', each non-empty, made of ASCII letters,
// digits, '.', '_' and '-', not beginning with '.' (so never "." or "..":
// a name cannot reach outside the store), at most 1024 bytes in all. A
// leading '/' (an absolute name) is refused.
func ValidName(name string) error {
	if name == "" || len(name) > 1024 {
		return fmt.Errorf("checkpoint: invalid object name %q: empty or longer than 1024 bytes", name)
	}
	for _, part := range strings.Split(name, "/") {
		if part == "" {
			return fmt.Errorf("checkpoint: invalid object name %q: empty part (absolute or with \"//\")", name)
		}
		if part[0] == '.' {
			return fmt.Errorf("checkpoint: invalid object name %q: a part begins with '.'", name)
		}
		for i := 0; i < len(part); i++ {
			c := part[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
				return fmt.Errorf("checkpoint: invalid object name %q: character %q", name, c)
			}
		}
	}
	return nil
}

// getAll reads a whole object.
func getAll(ctx context.Context, s Store, name string) ([]byte, error) {
	rc, err := s.Get(ctx, name, 0, -1)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: read %s: %w", name, err)
	}
	return b, nil
}
