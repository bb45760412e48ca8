package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/vfs"
)

// copyParallel bounds the parts OpenCopy fetches at once (and so the
// parts' bytes it holds in memory).
const copyParallel = 8

// copyPrefix starts the names of OpenCopy's files in the cache directory
// (Start deletes them with every other name that is not a part's).
const copyPrefix = "copy-"

// OpenCopy opens a private local copy of the shared file t/num for one
// reader that will read most of it in no useful order: a garbage
// collection moving a value log's values out in the order of their keys,
// which through the cache would wait a round trip for nearly every value
// whose part is not cached, and would evict the parts other reads use.
// The parts the cache holds are copied from it; the others are fetched
// side by side, copyParallel at a time, and not kept in the cache: the
// copy costs about size/PartSize/copyParallel round trips. The copy lies
// in the cache directory, outside the cache's bound; closing the File
// deletes it (and Start does, after a crash).
//
// ok is false, with no error, when the file is not shared, has a whole
// local copy, or the cache holds half of it or more (Open serves it well
// then), and for a read-only Files.
func (f *Files) OpenCopy(ctx context.Context, t base.FileType, num base.FileNum) (_ vfs.File, ok bool, err error) {
	if f.o.ReadOnly {
		return nil, false, nil
	}
	f.mu.Lock()
	s := f.files[fileKey{t, num}]
	var cached int64
	if s != nil {
		for _, e := range s.parts {
			cached += e.Value.(*lruEntry).size
		}
	}
	if s == nil || s.whole != nil || s.released || 2*cached >= s.size {
		f.mu.Unlock()
		return nil, false, nil
	}
	f.mu.Unlock()

	path := f.o.FS.PathJoin(f.cacheDir, copyPrefix+strconv.FormatUint(rand.Uint64(), 16))
	w, err := f.o.FS.CreateExclusive(path)
	if err != nil {
		return nil, false, fmt.Errorf("remote: copy %s: %w", s.key.name(), err)
	}
	err = f.copyParts(ctx, s, w)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	var r vfs.File
	if err == nil {
		r, err = f.o.FS.Open(path)
	}
	if err != nil {
		_ = f.o.FS.Remove(path)
		return nil, false, fmt.Errorf("remote: copy %s: %w", s.key.name(), err)
	}
	f.stats.copies.Add(1)
	return &copyFile{File: r, fs: f.o.FS, path: path}, true, nil
}

// copyParts writes the parts of s, in order, to w: each from the cache
// when it holds the part, else fetched, up to copyParallel ahead of the
// one being written.
func (f *Files) copyParts(ctx context.Context, s *shared, w io.Writer) error {
	type result struct {
		data []byte
		err  error
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(f.ctx, cancel) // Close ends the copy too
	defer stop()
	n := (s.size + f.o.PartSize - 1) / f.o.PartSize
	slots := make([]chan result, n)
	launch := func(idx int64) {
		ch := make(chan result, 1)
		slots[idx] = ch
		go func() {
			data, err := f.copyPart(ctx, s, idx)
			ch <- result{data, err}
		}()
	}
	next := int64(0)
	for ; next < min(n, copyParallel); next++ {
		launch(next)
	}
	var err error
	// After a failure nothing more is launched: the loop ends with the
	// last part launched.
	for idx := int64(0); idx < next; idx++ {
		r := <-slots[idx]
		slots[idx] = nil
		if err == nil {
			err = r.err
		}
		if err == nil {
			if _, werr := w.Write(r.data); werr != nil {
				err = werr
			}
		}
		if err != nil {
			// Stop the fetches in flight and wait for them (none may
			// outlive the call); launch no more.
			cancel()
			continue
		}
		if next < n {
			launch(next)
			next++
		}
	}
	return err
}

// copyPart returns the bytes of part idx of s: the cache's, or fetched
// (a miss, counted as one; the part is not kept).
func (f *Files) copyPart(ctx context.Context, s *shared, idx int64) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	start := idx * f.o.PartSize
	size := min(f.o.PartSize, s.size-start)
	f.mu.Lock()
	e := s.parts[idx]
	if e != nil {
		f.lru.MoveToFront(e)
	}
	f.mu.Unlock()
	if e != nil {
		data := make([]byte, size)
		n, err := f.readLocalPart(s.key, idx, data, 0)
		if err == nil && int64(n) == size {
			f.stats.hits.Add(1)
			return data, nil
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		// Evicted since: fetch it.
	}
	f.stats.misses.Add(1)
	return f.fetchPart(ctx, s, idx)
}

// copyFile is OpenCopy's file: closing it deletes it.
type copyFile struct {
	vfs.File
	fs   vfs.FS
	path string
}

func (c *copyFile) Close() error {
	err := c.File.Close()
	if rerr := c.fs.Remove(c.path); err == nil {
		err = rerr
	}
	return err
}
