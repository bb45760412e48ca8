package checkpoint

// This file owns the writing of an upload's data: the files and moved
// pieces packed into objects (planObjects: large files alone, small ones
// into segments by lifetime), and the objects put into the store, several
// at once (write, putObject), each file's XXH64 computed as it is read.

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/cespare/xxhash/v2"
	"github.com/strata-db/strata/remote"
)

// write packs the files and pieces to write into objects and puts them,
// Parallelism at a time, noting each in written before its Put begins.
//
// Crash safety: every object gets a name no registry holds (the new
// checkpoint's id, which no committed checkpoint has, its index and a
// random number), so a Put never replaces an object a checkpoint uses.
// Until commit, no registry names these objects: a failure has abort
// delete them, a crash leaves them to the next upload's sweep.
func (up *upload) write() error {
	up.objs = up.u.planObjects(up.id, up.writes)
	var mu sync.Mutex
	return runParallel(up.ctx, up.u.opts.Parallelism, len(up.objs), func(ctx context.Context, i int) error {
		o := up.objs[i]
		mu.Lock()
		up.written = append(up.written, o.name)
		mu.Unlock()
		// The registry's marker first: an object never exists without
		// one (see package remote), so an instance that opens a
		// checkpoint can hold the object by a marker of its own.
		if err := remote.AddRef(ctx, up.u.store, o.name, up.u.reg.holder); err != nil {
			return err
		}
		return up.u.putObject(ctx, up.src, o)
	})
}

// plannedObject is a data object to upload: one large file, or a segment
// of small ones.
type plannedObject struct {
	name    string
	files   []*localFile
	size    int64
	segment bool
	group   int
	sums    []uint64 // per file, by uploadIdx, filled by putObject
	// composed: bytes of the object the store copied from its own
	// objects, filled by putObject
	composed int64
}

// planObjects groups the files to upload into objects, large files alone
// and small ones packed into segments of about SegmentSize. Files of
// different groups go to different segments: a segment whose files die
// together is deleted whole, with nothing to re-upload.
func (u *Uploader) planObjects(id uint64, files []*localFile) []*plannedObject {
	var objs []*plannedObject
	newObj := func(segment bool, group int) *plannedObject {
		o := &plannedObject{name: fmt.Sprintf("%s%020d-%04d-%08x", u.reg.data, id, len(objs), rand.Uint32()), segment: segment, group: group}
		objs = append(objs, o)
		return o
	}
	// A group with less than an eighth of a segment to upload joins the
	// group with the most: a segment of its own would add an object per
	// checkpoint for a few bytes (with values separated, the tables of a
	// checkpoint are a small share of its bytes), while its pieces in
	// another group's segment lower that segment's live ratio by little
	// when they die.
	var bytes [numGroups]int64
	for _, f := range files {
		if f.size < u.opts.SmallFileSize {
			bytes[f.group] += f.size
		}
	}
	pool := 0
	for g := range groupExpiring {
		if bytes[g] > bytes[pool] {
			pool = g
		}
	}
	segGroup := func(g int) int {
		if g != groupExpiring && bytes[g] < u.opts.SegmentSize/8 {
			return pool
		}
		return g
	}
	segs := map[int]*plannedObject{}
	for _, f := range files {
		var o *plannedObject
		if f.size >= u.opts.SmallFileSize {
			o = newObj(false, f.group)
		} else {
			g := segGroup(f.group)
			if seg := segs[g]; seg == nil || seg.size >= u.opts.SegmentSize {
				segs[g] = newObj(true, g)
			}
			o = segs[g]
		}
		f.uploadIdx = len(o.files)
		o.files = append(o.files, f)
		o.size += f.size
	}
	return objs
}

// putObject uploads o, reading its files from src and computing their
// checksums on the way. Into a Composer, an object holding moved pieces is
// composed: the store copies the pieces from their old objects, and only
// the new files are sent.
func (u *Uploader) putObject(ctx context.Context, src Source, o *plannedObject) error {
	if c, ok := u.store.(Composer); ok && slices.ContainsFunc(o.files, func(f *localFile) bool { return f.reupload }) {
		return u.composeObject(ctx, c, src, o)
	}
	r := &filesReader{ctx: ctx, store: u.store, src: src, files: o.files}
	defer r.close()
	if err := u.store.Put(ctx, o.name, r, o.size); err != nil {
		return err
	}
	if r.i != len(o.files) {
		return fmt.Errorf("checkpoint: put %s: the store read %d of its %d files", o.name, r.i, len(o.files))
	}
	o.sums = r.sums
	return nil
}

// filesReader reads files one after the other, each exactly its size,
// computing each one's XXH64.
type filesReader struct {
	ctx   context.Context
	store Store  // where remote files are read from
	src   Source // and the others
	files []*localFile
	i     int
	cur   io.ReadCloser
	lr    *io.LimitedReader
	h     *xxhash.Digest
	sums  []uint64
}

func (r *filesReader) Read(p []byte) (int, error) {
	for {
		if r.i == len(r.files) {
			return 0, io.EOF
		}
		f := r.files[r.i]
		if r.cur == nil {
			var file io.ReadCloser
			var err error
			if f.remote {
				file, err = r.store.Get(r.ctx, f.moveFrom.Object, f.moveFrom.Offset, f.size)
			} else {
				file, err = r.src.open(f.name)
			}
			if err != nil {
				return 0, fmt.Errorf("checkpoint: %w", err)
			}
			r.cur, r.lr, r.h = file, &io.LimitedReader{R: file, N: f.size}, xxhash.New()
		}
		n, err := r.lr.Read(p)
		r.h.Write(p[:n])
		if err == io.EOF || (err == nil && r.lr.N == 0) {
			if r.lr.N != 0 {
				return n, fmt.Errorf("checkpoint: %s is %d bytes shorter than the %d the version records", f.name, r.lr.N, f.size)
			}
			r.sums = append(r.sums, r.h.Sum64())
			r.cur.Close()
			r.cur = nil
			r.i++
			if n > 0 {
				return n, nil
			}
			continue
		}
		if err != nil {
			return n, fmt.Errorf("checkpoint: read %s: %w", f.name, err)
		}
		return n, nil
	}
}

func (r *filesReader) close() {
	if r.cur != nil {
		r.cur.Close()
		r.cur = nil
	}
}

// runParallel runs fn(ctx, i) for i in [0, n) on up to workers goroutines,
// and returns the first error; after one, the rest are not started and
// ctx is cancelled for those running.
func runParallel(ctx context.Context, workers, n int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		firstErr error
		nextIdx  int
		wg       sync.WaitGroup
	)
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if firstErr != nil || nextIdx == n {
					mu.Unlock()
					return
				}
				i := nextIdx
				nextIdx++
				mu.Unlock()
				if err := fn(ctx, i); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
						cancel()
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr == nil {
		firstErr = ctx.Err() // the caller's context, done before the end
	}
	return firstErr
}
