package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/vfs"
)

// LocalStore is a Store in a directory: object "a/b" is the file dir/a/b.
// A Put writes a temporary file in dir/.tmp (which List never shows),
// syncs it, renames it into place and syncs the directory, so an object is
// either whole or absent, also after a crash. A crash leaves the
// temporary file: ListPartialUploads finds it, and an audit's Fix removes
// it once an hour old.
type LocalStore struct {
	fs  vfs.FS
	dir string
}

// localTmpDir holds Put's temporary files; object names never begin with
// '.', so it cannot collide with one.
const localTmpDir = ".tmp"

// NewLocalStore returns a store in dir on the operating system's
// filesystem, creating dir if needed.
func NewLocalStore(dir string) (*LocalStore, error) { return NewLocalStoreFS(vfs.Default, dir) }

// NewLocalStoreFS returns a store in dir on fs, creating dir if needed.
func NewLocalStoreFS(fs vfs.FS, dir string) (*LocalStore, error) {
	if err := mkdirAllDurable(fs, fs.PathJoin(dir, localTmpDir)); err != nil {
		return nil, fmt.Errorf("checkpoint: local store: %w", err)
	}
	return &LocalStore{fs: fs, dir: fs.PathJoin(dir)}, nil
}

func (s *LocalStore) path(name string) string {
	return s.fs.PathJoin(append([]string{s.dir}, strings.Split(name, "/")...)...)
}

// Put implements Store.
func (s *LocalStore) Put(ctx context.Context, name string, r io.Reader, size int64) (err error) {
	if err := ValidName(name); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	final := s.path(name)
	if err := mkdirAllDurable(s.fs, s.fs.PathDir(final)); err != nil {
		return fmt.Errorf("checkpoint: put %s: %w", name, err)
	}
	tmp := s.fs.PathJoin(s.dir, localTmpDir, fmt.Sprintf("%016x", rand.Uint64()))
	f, err := s.fs.CreateExclusive(tmp)
	if err != nil {
		return fmt.Errorf("checkpoint: put %s: %w", name, err)
	}
	defer func() {
		if err != nil {
			_ = s.fs.Remove(tmp)
		}
	}()
	n, err := io.Copy(f, &ctxReader{ctx: ctx, r: r})
	if err == nil && n != size {
		err = fmt.Errorf("read %d bytes, expected %d", n, size)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = s.fs.Rename(tmp, final)
	}
	if err == nil {
		err = manifest.SyncDir(s.fs, s.fs.PathDir(final))
		// The object is in place; only its durability is unknown. Leave
		// the temporary name alone: it is gone.
		if err != nil {
			return fmt.Errorf("checkpoint: put %s: sync directory: %w", name, err)
		}
	}
	if err != nil {
		return fmt.Errorf("checkpoint: put %s: %w", name, err)
	}
	return nil
}

// Get implements Store.
func (s *LocalStore) Get(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := s.fs.Open(s.path(name))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNotExist, name)
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint: get %s: %w", name, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("checkpoint: get %s: %w", name, err)
	}
	size := fi.Size()
	if length < 0 {
		length = size - off
	}
	if off < 0 || length < 0 || off+length > size {
		f.Close()
		return nil, fmt.Errorf("checkpoint: get %s: range %d+%d outside the object's %d bytes", name, off, length, size)
	}
	return &sectionReadCloser{SectionReader: io.NewSectionReader(f, off, length), c: f}, nil
}

// List implements Store.
func (s *LocalStore) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	var out []ObjectInfo
	var walk func(dir, rel string) error
	walk = func(dir, rel string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		names, err := s.fs.List(dir)
		if err != nil {
			return err
		}
		for _, n := range names {
			if strings.HasPrefix(n, ".") {
				continue // the temporary directory, or nothing of ours
			}
			name := n
			if rel != "" {
				name = rel + "/" + n
			}
			// Skip subtrees that cannot hold a name with the prefix.
			if !strings.HasPrefix(name, prefix) && !strings.HasPrefix(prefix, name+"/") {
				continue
			}
			p := s.fs.PathJoin(dir, n)
			fi, err := s.fs.Stat(p)
			if errors.Is(err, os.ErrNotExist) {
				continue // deleted meanwhile
			}
			if err != nil {
				return err
			}
			if fi.IsDir() {
				if err := walk(p, name); err != nil {
					return err
				}
				continue
			}
			if strings.HasPrefix(name, prefix) {
				out = append(out, ObjectInfo{Name: name, Size: fi.Size()})
			}
		}
		return nil
	}
	if err := walk(s.dir, ""); err != nil {
		return nil, fmt.Errorf("checkpoint: list %q: %w", prefix, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Delete implements Store.
func (s *LocalStore) Delete(ctx context.Context, name string) error {
	if err := ValidName(name); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	p := s.path(name)
	if err := s.fs.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("checkpoint: delete %s: %w", name, err)
	}
	if err := manifest.SyncDir(s.fs, s.fs.PathDir(p)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("checkpoint: delete %s: sync directory: %w", name, err)
	}
	return nil
}

type sectionReadCloser struct {
	*io.SectionReader
	c io.Closer
}

func (r *sectionReadCloser) Close() error { return r.c.Close() }

// ctxReader stops a copy when its context is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (r *ctxReader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}

// Compose implements Composer: the stored ranges are copied within the
// directory, so every byte of them counts as copied by the store.
func (s *LocalStore) Compose(ctx context.Context, name string, parts []Part) (int64, error) {
	if err := composeThrough(ctx, s, name, parts); err != nil {
		return 0, err
	}
	var copied int64
	for _, p := range parts {
		if p.R == nil {
			copied += p.Length
		}
	}
	return copied, nil
}

// ListPartialUploads implements PartialUploads: the temporary files of
// Puts and Composes that a crash stopped, in dir/.tmp, named ".tmp/" and
// the file's name (they do not record which object they were for, so
// only prefix "" lists them). A file whose modification time the
// filesystem does not keep counts as begun now (perhaps in flight).
func (s *LocalStore) ListPartialUploads(ctx context.Context, prefix string) ([]PartialUpload, error) {
	if prefix != "" {
		return nil, nil
	}
	dir := s.fs.PathJoin(s.dir, localTmpDir)
	names, err := s.fs.List(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("checkpoint: list the partial uploads: %w", err)
	}
	slices.Sort(names)
	var out []PartialUpload
	for _, n := range names {
		fi, err := s.fs.Stat(s.fs.PathJoin(dir, n))
		if errors.Is(err, os.ErrNotExist) {
			continue // finished or given up meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("checkpoint: list the partial uploads: %w", err)
		}
		at := fi.ModTime()
		if at.IsZero() {
			at = time.Now()
		}
		out = append(out, PartialUpload{Name: localTmpDir + "/" + n, ID: n, Initiated: at})
	}
	return out, nil
}

// AbortPartialUpload implements PartialUploads: it removes the temporary
// file.
func (s *LocalStore) AbortPartialUpload(ctx context.Context, u PartialUpload) error {
	if u.ID == "" || u.ID == "." || u.ID == ".." || strings.ContainsAny(u.ID, `/\`) {
		return fmt.Errorf("checkpoint: abort upload %q: not a temporary file of the store", u.ID)
	}
	if err := s.fs.Remove(s.fs.PathJoin(s.dir, localTmpDir, u.ID)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("checkpoint: abort upload %s: %w", u.ID, err)
	}
	return nil
}

var _ PartialUploads = (*LocalStore)(nil)
