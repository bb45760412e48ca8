package vlog

import (
	"fmt"
	"slices"
	"sync"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/vfs"
)

// LiveWriter is a value log being appended to while it is read: the
// commit pipeline's active value log, which holds the values separated at
// commit time. One goroutine appends (Add, Sync, Finish); any number read
// (Get) concurrently, including records still in the Writer's buffer, which
// no pread could reach.
//
// Durability is the caller's to order: a pointer from Add may be made
// durable elsewhere (the WAL) only after Sync returns, or, for writes not
// acknowledged as synced, recovery must check the record exists (see
// ValidPrefix).
type LiveWriter struct {
	mu   sync.RWMutex // guards w's buffer and written against Get
	w    *Writer
	name string
	// meta describes the file once Finish has returned; after that Get
	// refuses and the caller reads through a Reader.
	meta *manifest.VlogMetadata
}

// NewLiveWriter returns a LiveWriter for the empty file f of value log num;
// f must be open for reading and writing.
func NewLiveWriter(f vfs.File, num base.FileNum) *LiveWriter {
	return &LiveWriter{w: NewWriter(f, num), name: base.MakeFilename(base.FileTypeVlog, num)}
}

// FileNum returns the value log's number.
func (l *LiveWriter) FileNum() base.FileNum { return l.w.fileNum }

// Size returns the bytes appended so far (header included).
func (l *LiveWriter) Size() uint64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.w.Size()
}

// Add appends a record, as Writer.Add.
func (l *LiveWriter) Add(key, value []byte) (Pointer, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Add(key, value)
}

// Sync writes the buffered records to the file and syncs it: every pointer
// Add returned before is then durable.
func (l *LiveWriter) Sync() error {
	l.mu.Lock()
	l.w.flush()
	err := l.w.err
	l.mu.Unlock()
	if err != nil {
		return err
	}
	if err := l.w.f.Sync(); err != nil {
		return fmt.Errorf("vlog: syncing %s: %w", l.name, err)
	}
	return nil
}

// Finish completes the file (footer, sync, close) and returns its metadata
// for the manifest.
//
// The sync, the slow part, runs without the lock: Get goes on reading
// the records (all in the file by then) while it runs.
func (l *LiveWriter) Finish() (*manifest.VlogMetadata, error) {
	l.mu.Lock()
	err := l.w.writeFooter()
	l.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if l.w.err == nil {
		// Only the finishing goroutine writes w.err from here on.
		if err := l.w.f.Sync(); err != nil {
			l.mu.Lock()
			l.w.err = fmt.Errorf("vlog: syncing %s: %w", l.w.name(), err)
			l.mu.Unlock()
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.w.closeFile(); err != nil {
		return nil, err
	}
	w := l.w
	l.meta = &manifest.VlogMetadata{FileNum: w.fileNum, Size: w.Size(), Records: w.Count(), ValueBytes: w.ValueBytes()}
	// A finished LiveWriter stays known (its metadata) while the file
	// lives; its buffer is not needed any more.
	w.buf = nil
	return l.meta, nil
}

// Abort closes the file without finishing it; the caller removes it.
func (l *LiveWriter) Abort() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.w.Abort()
}

// Finished returns the file's metadata once Finish has returned, or nil.
func (l *LiveWriter) Finished() *manifest.VlogMetadata {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.meta
}

// errFinished is returned by Get on a finished LiveWriter.
var errFinished = fmt.Errorf("vlog: value log finished: read it through a Reader")

// Get reads the value p locates and appends it to dst, verified like
// Reader.Get verifies it; with dst nil the result is a fresh slice. It
// reads from the buffer what has not reached the file. After Finish it
// fails: read through a Reader then (Finished gives the metadata).
func (l *LiveWriter) Get(p Pointer, key, dst []byte) ([]byte, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.meta != nil {
		return nil, errFinished
	}
	w := l.w
	if p.FileNum != w.fileNum {
		return nil, base.CorruptionErrorf(l.name, int64(p.Offset), "pointer %s is not into this file", p)
	}
	size := w.Size()
	if p.Offset < HeaderLen || p.Offset > size || uint64(p.Length) > size-p.Offset || p.Length < minRecordLen {
		return nil, base.CorruptionErrorf(l.name, int64(p.Offset), "pointer %s outside the records [%d, %d)", p, HeaderLen, size)
	}
	// The record is read into dst's spare room (grown if need be), and its
	// value then moved to where dst ends: no buffer of its own.
	base0 := len(dst)
	dst = slices.Grow(dst, int(p.Length))
	rec := dst[base0 : base0+int(p.Length)]
	n := 0
	if p.Offset < w.written {
		// The part already handed to the file.
		m := min(uint64(p.Length), w.written-p.Offset)
		got, err := w.f.ReadAt(rec[:m], int64(p.Offset))
		if uint64(got) != m {
			if err == nil {
				err = fmt.Errorf("short read")
			}
			return nil, fmt.Errorf("vlog: reading %s at offset %d: %w", l.name, p.Offset, err)
		}
		n = int(m)
	}
	if n < len(rec) {
		start := p.Offset + uint64(n) - w.written
		copy(rec[n:], w.buf[start:start+uint64(len(rec)-n)])
	}
	r := Reader{fileNum: w.fileNum, name: l.name}
	v, err := r.verify(rec, p, key)
	if err != nil {
		return nil, err
	}
	return append(dst[:base0], v...), nil // v lies after base0: a move down
}
