package checkpoint

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/strata-db/strata/remote"
)

// Store is an object store that incremental checkpoints are written to
// and shared files live in (see remote.Store, whose name this is).
type Store = remote.Store

// ObjectInfo describes one stored object.
type ObjectInfo = remote.ObjectInfo

// ErrNotExist matches (errors.Is) the error of a Get of a missing object.
var ErrNotExist = remote.ErrNotExist

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

// Composer is a Store that can make an object from ranges of objects it
// already holds without the bytes passing through the caller: S3's
// UploadPartCopy, a file copy in a local directory. An Uploader that
// empties a sparse or small segment composes the new object from the old
// ones' live pieces when its store is a Composer, so moving a piece costs
// no upload; with any other store it reads the pieces back and uploads
// them.
type Composer interface {
	Store
	// Compose stores the concatenation of parts as the object name,
	// atomically as Put does, and returns how many of its bytes the store
	// copied from objects it holds; the others the caller sent (a store
	// may read back a range it cannot copy, such as one below S3's 5 MiB
	// minimum part size, and send it). A part that names a missing object
	// or a range outside it fails the Compose.
	Compose(ctx context.Context, name string, parts []Part) (copied int64, err error)
}

// Part is a piece of a composed object: Length bytes from R when R is not
// nil, otherwise the bytes [Offset, Offset+Length) of the stored object
// Object.
type Part struct {
	Object         string
	Offset, Length int64
	R              io.Reader
}

// partsSize returns the total length of parts, or an error for a
// negative one.
func partsSize(parts []Part) (int64, error) {
	var n int64
	for i, p := range parts {
		if p.Length < 0 || p.Offset < 0 {
			return 0, fmt.Errorf("checkpoint: compose: part %d has a negative offset or length", i)
		}
		n += p.Length
	}
	return n, nil
}

// partsReader reads parts one after the other, opening each stored range
// with s.Get only when it is reached; each must give exactly its Length.
type partsReader struct {
	ctx   context.Context
	s     Store
	parts []Part
	cur   io.ReadCloser
	lr    *io.LimitedReader
}

func (r *partsReader) Read(p []byte) (int, error) {
	for {
		if r.lr == nil {
			if len(r.parts) == 0 {
				return 0, io.EOF
			}
			part := r.parts[0]
			src := part.R
			if src == nil {
				rc, err := r.s.Get(r.ctx, part.Object, part.Offset, part.Length)
				if err != nil {
					return 0, err
				}
				r.cur, src = rc, rc
			}
			r.lr = &io.LimitedReader{R: src, N: part.Length}
		}
		n, err := r.lr.Read(p)
		if r.lr.N == 0 || err == io.EOF {
			if r.lr.N != 0 {
				return n, fmt.Errorf("checkpoint: compose: a part of %d bytes ended %d bytes short", r.parts[0].Length, r.lr.N)
			}
			r.close()
			r.parts = r.parts[1:]
			if n > 0 {
				return n, nil
			}
			continue
		}
		return n, err
	}
}

func (r *partsReader) close() {
	if r.cur != nil {
		r.cur.Close()
		r.cur = nil
	}
	r.lr = nil
}

// composeThrough composes parts by reading the stored ranges back from s
// and putting the concatenation: what a store without server-side copies
// does, and what LocalStore does (its "server" is the local disk).
func composeThrough(ctx context.Context, s Store, name string, parts []Part) error {
	size, err := partsSize(parts)
	if err != nil {
		return err
	}
	r := &partsReader{ctx: ctx, s: s, parts: parts}
	defer r.close()
	return s.Put(ctx, name, r, size)
}
