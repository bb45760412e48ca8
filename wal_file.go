package strata

import (
	"fmt"
	"os"
	"sync"

	"github.com/strata-db/strata/vfs"
)

// walFile sits between the WAL's record writer and its file so that writes
// without Sync never wait for a system call: Write only appends to a
// pending buffer, and the WAL flusher goroutine hands that buffer to the
// operating system in the background, while the commit leader goes on
// inserting into the memtable (on the other core). Sync writes the pending
// bytes, in order, and then syncs.
//
// Acknowledged writes without Sync can therefore be lost by a process crash
// as well as a machine crash, for as long as the flusher takes to catch up
// (microseconds when it keeps up); acknowledged Sync writes never are.
//
// INVARIANT: bytes reach the file in the order they were written; a failed
// write makes every later Write and Sync fail.
type walFile struct {
	f vfs.File

	mu      sync.Mutex // guards pending, spare, err
	pending []byte
	spare   []byte
	err     error

	writeMu sync.Mutex // serialises writes to f, keeping them in order
	// closed is set, under writeMu, once Close closed f: a Sync after it
	// has nothing to do (closing syncs), and must not record the closed
	// file's error as the WAL's (an ingest's presync may hold a WAL that a
	// rotation closes).
	closed bool
}

var _ vfs.File = (*walFile)(nil)

func newWALFile(f vfs.File) *walFile { return &walFile{f: f} }

// Write queues p for the background flusher.
func (w *walFile) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return 0, w.err
	}
	w.pending = append(w.pending, p...)
	return len(p), nil
}

// flushPending writes the queued bytes to the file.
func (w *walFile) flushPending() error {
	w.writeMu.Lock()
	defer w.writeMu.Unlock()
	w.mu.Lock()
	buf := w.pending
	w.pending = w.spare[:0]
	err := w.err
	w.mu.Unlock()
	if err != nil || len(buf) == 0 {
		w.mu.Lock()
		w.spare = buf[:0]
		w.mu.Unlock()
		return err
	}
	if _, err = w.f.Write(buf); err != nil {
		err = fmt.Errorf("strata: write WAL: %w", err)
	}
	w.mu.Lock()
	if err != nil && w.err == nil {
		w.err = err
	}
	// buf becomes the spare buffer (pending now uses the previous spare);
	// one that grew very large is dropped instead. Either way spare never
	// aliases pending.
	w.spare = nil
	if cap(buf) <= 4<<20 {
		w.spare = buf[:0]
	}
	w.mu.Unlock()
	return err
}

// Sync writes the queued bytes and syncs the file.
func (w *walFile) Sync() error {
	if err := w.flushPending(); err != nil {
		return err
	}
	w.writeMu.Lock()
	defer w.writeMu.Unlock()
	if w.closed {
		return nil
	}
	if err := w.f.Sync(); err != nil {
		err = fmt.Errorf("strata: sync WAL: %w", err)
		w.mu.Lock()
		if w.err == nil {
			w.err = err
		}
		w.mu.Unlock()
		return err
	}
	return nil
}

// Close writes what is queued and closes the file (the record writer syncs
// before closing).
func (w *walFile) Close() error {
	err := w.flushPending()
	w.writeMu.Lock()
	defer w.writeMu.Unlock()
	w.closed = true
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (w *walFile) Read(p []byte) (int, error)              { return w.f.Read(p) }
func (w *walFile) ReadAt(p []byte, off int64) (int, error) { return w.f.ReadAt(p, off) }
func (w *walFile) Stat() (os.FileInfo, error)              { return w.f.Stat() }

// walFlushLoop hands queued WAL bytes to the operating system until the DB
// closes. Wake-ups coalesce: one flush takes everything queued so far.
func (d *DB) walFlushLoop() {
	defer d.bgWG.Done()
	for range d.walFlushCh {
		if f := d.walFile.Load(); f != nil {
			if testHookWALFlush != nil {
				testHookWALFlush(f)
			}
			if err := f.flushPending(); err != nil {
				// The WAL may end in a partial record: no write may follow.
				d.reportBackgroundError(err)
			}
		}
	}
}

// testHookWALFlush, when set (by TestIngestPresyncOfRetiredWAL), runs in
// the WAL flusher between loading the current WAL and flushing it.
var testHookWALFlush func(*walFile)

// scheduleWALFlush wakes the WAL flusher without blocking.
func (d *DB) scheduleWALFlush() {
	select {
	case d.walFlushCh <- struct{}{}:
	default:
	}
}
