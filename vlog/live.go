package vlog

import (
	"errors"
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
//
// Full buffers are written by a goroutine of the LiveWriter's own (see
// Writer.handoff), at most maxPending of them waiting, so that Add returns
// without waiting for a write of up to 2 MiB (which, when the page cache
// allocates a huge page for it, can take milliseconds, with every writer
// of the commit pipeline queued behind it). Sync and Finish wait for them.
type LiveWriter struct {
	mu   sync.RWMutex // guards w's buffer and written, and the fields below, against Get and the flusher
	cond *sync.Cond   // on mu: pending shrank, or the flusher should look again
	// fileMu keeps the file open while Get reads it without mu: Get takes
	// it (shared) before it lets go of mu, closing the file takes it
	// (exclusive) with mu held. So a pread, or a reader the scheduler
	// sets aside in the middle of one, never holds up Add.
	fileMu sync.RWMutex
	w      *Writer
	name   string
	// meta describes the file once Finish has returned; after that Get
	// refuses and the caller reads through a Reader.
	meta *manifest.VlogMetadata

	// pending are the buffers handed off and not yet written, in file
	// order: together they hold the file's bytes [fileEnd, w.written).
	pending []pendingWrite
	// fileEnd is the end of what the flusher has written to the file.
	fileEnd uint64
	// free holds written buffers for reuse.
	free [][]byte
	// flushing: the flusher goroutine runs; stop: it should end once
	// pending is empty.
	flushing, stop bool
	// aborted: Abort has run; Get refuses.
	aborted bool
}

type pendingWrite struct {
	off uint64
	b   []byte
}

// maxPending bounds the buffers waiting for the flusher: Add waits beyond.
const maxPending = 2

// NewLiveWriter returns a LiveWriter for the empty file f of value log num;
// f must be open for reading and writing.
func NewLiveWriter(f vfs.File, num base.FileNum) *LiveWriter {
	l := &LiveWriter{w: NewWriter(f, num), name: base.MakeFilename(base.FileTypeVlog, num)}
	l.cond = sync.NewCond(&l.mu)
	l.w.handoff = l.handoff
	l.w.newBuf = l.newBuf
	return l
}

// newBuf returns an empty buffer for the Writer, a written one if any.
// l.mu held.
func (l *LiveWriter) newBuf() []byte {
	if n := len(l.free); n > 0 {
		b := l.free[n-1]
		l.free = l.free[:n-1]
		return b[:0]
	}
	return make([]byte, 0, writerBufStart)
}

// handoff queues b, the file's bytes from off on, for the flusher, and
// waits while maxPending buffers are queued already. l.mu held (by Add,
// Sync or Finish, on the appending goroutine).
func (l *LiveWriter) handoff(off uint64, b []byte) {
	l.pending = append(l.pending, pendingWrite{off, b})
	if !l.flushing {
		l.flushing = true
		go l.flushLoop()
	}
	l.cond.Broadcast()
	for len(l.pending) > maxPending && l.w.err == nil {
		l.cond.Wait()
	}
}

// flushLoop writes the pending buffers in order until told to stop.
func (l *LiveWriter) flushLoop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		for len(l.pending) == 0 && !l.stop {
			l.cond.Wait()
		}
		if len(l.pending) == 0 {
			l.flushing = false
			l.cond.Broadcast()
			return
		}
		p := l.pending[0]
		l.mu.Unlock()
		n, err := l.w.f.Write(p.b)
		if err == nil && n != len(p.b) {
			err = errors.New("short write")
		}
		l.mu.Lock()
		if err != nil {
			// The file may now hold part of the buffer: nothing after it
			// can be written. Add, Sync and Finish report the error.
			if l.w.err == nil {
				l.w.err = fmt.Errorf("vlog: writing %s: %w", l.name, err)
			}
			l.pending = nil
			l.cond.Broadcast()
			continue
		}
		if len(l.pending) == 0 || l.pending[0].off != p.off {
			continue // Abort dropped the queue meanwhile
		}
		l.fileEnd = p.off + uint64(len(p.b))
		l.pending = l.pending[1:]
		if len(l.free) < maxPending {
			l.free = append(l.free, p.b)
		}
		l.cond.Broadcast()
	}
}

// drainLocked waits until the flusher has written every pending buffer
// (or failed). l.mu held.
func (l *LiveWriter) drainLocked() {
	for len(l.pending) > 0 && l.w.err == nil {
		l.cond.Wait()
	}
}

// stopLocked ends the flusher, once it has nothing left to write, and
// waits for it. l.mu held.
func (l *LiveWriter) stopLocked() {
	l.stop = true
	l.cond.Broadcast()
	for l.flushing {
		l.cond.Wait()
	}
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
	l.drainLocked()
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
	l.drainLocked()
	l.stopLocked()
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
	l.fileMu.Lock()
	err = l.w.closeFile()
	l.fileMu.Unlock()
	if err != nil {
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
	l.pending = nil
	l.aborted = true
	l.stopLocked()
	l.fileMu.Lock()
	defer l.fileMu.Unlock()
	l.w.Abort()
}

// Finished returns the file's metadata once Finish has returned, or nil.
func (l *LiveWriter) Finished() *manifest.VlogMetadata {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.meta
}

// errFinished is returned by Get on a finished LiveWriter, errAborted on
// an aborted one.
var (
	errFinished = fmt.Errorf("vlog: value log finished: read it through a Reader")
	errAborted  = fmt.Errorf("vlog: value log abandoned")
)

// Get reads the value p locates and appends it to dst, verified like
// Reader.Get verifies it; with dst nil the result is a fresh slice. It
// reads from the buffer what has not reached the file. After Finish it
// fails: read through a Reader then (Finished gives the metadata).
//
// Only the copy from the buffers holds the lock Add takes; the file is
// read, and the record verified, without it.
func (l *LiveWriter) Get(p Pointer, key, dst []byte) ([]byte, error) {
	if p.Length < minRecordLen {
		return nil, base.CorruptionErrorf(l.name, int64(p.Offset), "pointer %s shorter than a record", p)
	}
	// The record is read into dst's spare room (grown if need be), and its
	// value then moved to where dst ends: no buffer of its own.
	base0 := len(dst)
	dst = slices.Grow(dst, int(p.Length))
	rec := dst[base0 : base0+int(p.Length)]

	l.mu.RLock()
	if l.meta != nil || l.aborted {
		l.mu.RUnlock()
		if l.aborted {
			return nil, errAborted
		}
		return nil, errFinished
	}
	w := l.w
	if p.FileNum != w.fileNum {
		l.mu.RUnlock()
		return nil, base.CorruptionErrorf(l.name, int64(p.Offset), "pointer %s is not into this file", p)
	}
	size := w.Size()
	if p.Offset < HeaderLen || p.Offset > size || uint64(p.Length) > size-p.Offset {
		l.mu.RUnlock()
		return nil, base.CorruptionErrorf(l.name, int64(p.Offset), "pointer %s outside the records [%d, %d)", p, HeaderLen, size)
	}
	// rec[:m] is in the file, written by the flusher: those bytes do not
	// change. The rest is copied from the buffers waiting for the
	// flusher, then from the Writer's own.
	var m int
	if p.Offset < l.fileEnd {
		m = int(min(uint64(p.Length), l.fileEnd-p.Offset))
	}
	n := m
	for _, pw := range l.pending {
		off := p.Offset + uint64(n)
		if n == len(rec) || off >= pw.off+uint64(len(pw.b)) {
			continue
		}
		n += copy(rec[n:], pw.b[off-pw.off:])
	}
	if n < len(rec) {
		start := p.Offset + uint64(n) - w.written
		copy(rec[n:], w.buf[start:start+uint64(len(rec)-n)])
	}
	if m > 0 {
		l.fileMu.RLock() // before mu goes: the file stays open
	}
	l.mu.RUnlock()
	if m > 0 {
		got, err := w.f.ReadAt(rec[:m], int64(p.Offset))
		l.fileMu.RUnlock()
		if got != m {
			if err == nil {
				err = fmt.Errorf("short read")
			}
			return nil, fmt.Errorf("vlog: reading %s at offset %d: %w", l.name, p.Offset, err)
		}
	}
	r := Reader{fileNum: w.fileNum, name: l.name}
	v, err := r.verify(rec, p, key)
	if err != nil {
		return nil, err
	}
	return append(dst[:base0], v...), nil // v lies after base0: a move down
}
