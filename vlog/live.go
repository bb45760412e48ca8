package vlog

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/internal/stripe"
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
//
// Get takes no lock that Add takes (see liveView): with readers under a
// read lock, Add (on the commit pipeline's leader) waited for them, and
// readers arriving meanwhile parked behind it; a parked goroutine, once
// woken, waits for a processor, which with every processor busy took tens
// of microseconds to milliseconds, every writer queued behind the leader.
type LiveWriter struct {
	mu   sync.RWMutex // guards w, the fields below, and the buffers' contents past what view publishes
	cond *sync.Cond   // on mu: pending shrank, or the flusher should look again
	// fileMu keeps the file open while Get reads it with ReadAt: Get
	// takes it (shared) and checks fileClosed; closing the file takes it
	// (exclusive).
	fileMu     sync.RWMutex
	fileClosed bool // guarded by fileMu
	// mapped reads, through a read-only mapping of the file's first bytes
	// (see Map), the records the flusher has written; nil when the file
	// is not mapped. Set before any Get. Get loads it inside an epoch
	// (enter, exit), not under fileMu, so that concurrent reads share no
	// lock; unmap clears it and waits out the readers that may hold it
	// (synchronize) before unmapping.
	mapped atomic.Pointer[Reader]
	w      *Writer
	name   string
	// meta describes the file once Finish has returned; after that Get
	// refuses and the caller reads through a Reader.
	meta atomic.Pointer[manifest.VlogMetadata]

	// pending are the buffers handed off and not yet written, in file
	// order: together they hold the file's bytes [fileEnd, w.written).
	pending []*liveBuf
	// free holds written buffers for reuse, each past a grace period (no
	// reader can still copy from it; see synchronize).
	free [][]byte
	// flushing: the flusher goroutine runs; stop: it should end once
	// pending is empty.
	flushing, stop bool
	// aborted: Abort has run; Get refuses.
	aborted bool
	// reused counts buffers taken from free (for tests).
	reused int

	// What Get reads without mu. view is replaced (under mu) whenever the
	// buffers change, and its current buffer's length grows with each Add;
	// fileEnd is the end of what the flusher has written to the file (it
	// only grows, and grows before a written buffer leaves the view); size
	// is w.Size() as of the last Add.
	view    atomic.Pointer[liveView]
	fileEnd atomic.Uint64
	size    atomic.Uint64
	// Readers count themselves in readers[epoch&1], in their goroutine's
	// stripe (internal/stripe), while they copy from a view's buffers or
	// the mapping (enter, exit); synchronize waits them out before a
	// buffer is reused or the mapping goes. Striped, concurrent readers
	// do not move one count's line between processors on every read.
	epoch   atomic.Uint64
	readers [2][1 << stripe.Bits]paddedCount
	// graceMu keeps grace periods (synchronize) from overlapping: the
	// flusher's and unmap's.
	graceMu sync.Mutex
}

// liveView is what Get sees of the buffers: immutable but for cur.n.
type liveView struct {
	pending []*liveBuf // as LiveWriter.pending when the view was made
	cur     *liveBuf   // the Writer's buffer; nil once finished or aborted
}

// copyAt copies into dst what b holds of the file's bytes from off on,
// if it holds the byte at off, and returns how many it copied.
func (b *liveBuf) copyAt(dst []byte, off uint64) int {
	if end := b.off + b.n.Load(); len(dst) > 0 && off >= b.off && off < end {
		return copy(dst, b.b[off-b.off:end-b.off])
	}
	return 0
}

// missingErr is Get's error for a record whose bytes from rec[n] on are
// in no buffer of the view and not in the file.
func (l *LiveWriter) missingErr(p Pointer, n int) error {
	l.mu.RLock()
	werr := l.w.err
	l.mu.RUnlock()
	if werr != nil {
		return fmt.Errorf("vlog: reading %s at offset %d: %w", l.name, p.Offset, werr)
	}
	return base.CorruptionErrorf(l.name, int64(p.Offset), "pointer %s: bytes from %d neither written nor buffered", p, p.Offset+uint64(n))
}

// liveBuf is a buffer holding the file's bytes from off on: b[:n] are
// final (n only grows, and a buffer is reused only past a grace period).
type liveBuf struct {
	off uint64
	b   []byte
	n   atomic.Uint64
}

type paddedCount struct {
	n atomic.Int64
	_ [56]byte
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
	l.publishLocked()
	return l
}

// Map maps the file's first size bytes (rounded up to vfs.MapAlign)
// read-only, for Get to read the records the flusher has written from
// memory instead of with a system call each: the commit pipeline's value
// log holds the newest values, which reads and scans reach the most, and
// a read of a 4 KiB record from a mapping costs a fraction of a pread.
// Only bytes already written are read through it (the file grows, its
// written bytes never change). Records past the window are read with
// ReadAt, as they are when the filesystem cannot map (vfs.MapFile) or
// the mapping fails. Call it once, before any Get.
func (l *LiveWriter) Map(size int64) {
	if size <= 0 || l.mapped.Load() != nil {
		return
	}
	size = (size + vfs.MapAlign - 1) / vfs.MapAlign * vfs.MapAlign
	m, ok, err := vfs.MapFile(l.w.f, size)
	if err != nil || !ok {
		return
	}
	// Pointers are checked against the written bytes by Get; the Reader
	// only bounds them by the window.
	l.mapped.Store(&Reader{fileNum: l.w.fileNum, name: l.name, size: uint64(size), recordsEnd: uint64(size), mapped: m})
}

// unmap releases the mapping, once no Get can be reading through it.
// Called as the file closes.
func (l *LiveWriter) unmap() {
	if r := l.mapped.Swap(nil); r != nil {
		// A Get that loaded r entered before the swap; one entering later
		// finds nil.
		l.synchronize()
		_ = vfs.Unmap(r.mapped) // fails only for a mapping it did not make
	}
}

// newBuf returns an empty buffer for the Writer, a written one if any.
// l.mu held.
func (l *LiveWriter) newBuf() []byte {
	if n := len(l.free); n > 0 {
		b := l.free[n-1]
		l.free = l.free[:n-1]
		l.reused++
		return b[:0]
	}
	return make([]byte, 0, writerBufStart)
}

// handoff queues b, the file's bytes from off on, for the flusher, and
// waits while maxPending buffers are queued already. l.mu held (by Add,
// Sync or Finish, on the appending goroutine).
func (l *LiveWriter) handoff(off uint64, b []byte) {
	pb := &liveBuf{off: off, b: b}
	pb.n.Store(uint64(len(b)))
	l.pending = append(l.pending, pb)
	// Readers see b as pending, and the Writer's new buffer, before the
	// lock can go (in Wait below, or to the flusher).
	l.publishLocked()
	if !l.flushing {
		l.flushing = true
		go l.flushLoop()
	}
	l.cond.Broadcast()
	for len(l.pending) > maxPending && l.w.err == nil {
		l.cond.Wait()
	}
}

// publishLocked brings the view up to date with the Writer: a new view if
// its buffers changed, else the current buffer's new length; then size.
// l.mu held.
func (l *LiveWriter) publishLocked() {
	buf := l.w.buf
	v := l.view.Load()
	if v == nil || !l.viewCurrent(v, buf) {
		nv := &liveView{pending: slices.Clone(l.pending)}
		if !l.ended() {
			nv.cur = &liveBuf{off: l.w.written, b: buf[:cap(buf)]}
			nv.cur.n.Store(uint64(len(buf)))
		}
		l.view.Store(nv)
	} else if v.cur != nil {
		v.cur.n.Store(uint64(len(buf)))
	}
	l.size.Store(l.w.Size())
}

// ended: Finish has finished the file or Abort abandoned it. l.mu held.
func (l *LiveWriter) ended() bool { return l.meta.Load() != nil || l.aborted }

// viewCurrent reports whether v shows the LiveWriter's buffers as they
// are: the same pending buffers, and buf, at the same offset, as its
// current one. l.mu held.
func (l *LiveWriter) viewCurrent(v *liveView, buf []byte) bool {
	if !slices.Equal(v.pending, l.pending) {
		return false
	}
	if l.ended() || v.cur == nil {
		return l.ended() && v.cur == nil
	}
	return v.cur.off == l.w.written && cap(v.cur.b) == cap(buf) &&
		unsafe.SliceData(v.cur.b) == unsafe.SliceData(buf)
}

// liveEpoch is a reader's place in the counts: epoch and stripe.
type liveEpoch struct {
	e uint64
	s int
}

// enter counts a reader in, returning where to exit. A reader between
// enter and exit may copy from any buffer of a view it loaded, and read
// through the mapping it loaded.
func (l *LiveWriter) enter() liveEpoch {
	s := stripe.Of(stripe.Bits)
	for {
		e := l.epoch.Load()
		l.readers[e&1][s].n.Add(1)
		if l.epoch.Load() == e {
			return liveEpoch{e, s}
		}
		// A grace period began meanwhile and may not have counted us:
		// enter in the new epoch.
		l.readers[e&1][s].n.Add(-1)
	}
}

func (l *LiveWriter) exit(e liveEpoch) { l.readers[e.e&1][e.s].n.Add(-1) }

// synchronize waits until every reader that entered before it was called
// has exited, so that a buffer no view published since holds can be
// reused, or a mapping no reader can load any more unmapped. A reader
// copies a record at most, so the wait is short. Each stripe counts the
// readers that entered through it and have not exited (an exit takes
// from the stripe its enter added to), so a stripe read at zero holds
// none that entered before the epoch moved on.
func (l *LiveWriter) synchronize() {
	l.graceMu.Lock()
	defer l.graceMu.Unlock()
	e := l.epoch.Add(1) - 1
	for i := range l.readers[e&1] {
		for l.readers[e&1][i].n.Load() != 0 {
			runtime.Gosched()
		}
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
			l.publishLocked()
			l.cond.Broadcast()
			continue
		}
		if len(l.pending) == 0 || l.pending[0] != p {
			continue // Abort dropped the queue meanwhile
		}
		// The bytes are in the file before the buffer leaves the view.
		l.fileEnd.Store(p.off + uint64(len(p.b)))
		l.pending = l.pending[1:]
		l.publishLocked()
		l.cond.Broadcast()
		if len(l.free) < maxPending {
			// Reused only once no reader can still copy from it.
			l.mu.Unlock()
			l.synchronize()
			l.mu.Lock()
			l.free = append(l.free, p.b)
		}
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
func (l *LiveWriter) Size() uint64 { return l.size.Load() }

// Add appends a record, as Writer.Add.
func (l *LiveWriter) Add(key, value []byte) (Pointer, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p, err := l.w.Add(key, value)
	l.publishLocked()
	return p, err
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

// Presync makes the records added so far durable, as Sync does, for a
// caller other than the writer's owner that wants the owner's next Sync
// to find little left to write: the file sync runs without the lock, so
// Add goes on meanwhile. A writer that has ended is left alone. A failed
// sync becomes the writer's error, which the owner's next Sync or Finish
// returns.
func (l *LiveWriter) Presync() {
	l.mu.Lock()
	if l.ended() {
		l.mu.Unlock()
		return
	}
	l.w.flush()
	l.drainLocked()
	failed := l.w.err != nil
	l.mu.Unlock()
	if failed {
		return
	}
	l.fileMu.RLock()
	defer l.fileMu.RUnlock()
	if l.fileClosed {
		return
	}
	if err := l.w.f.Sync(); err != nil {
		l.mu.Lock()
		if l.w.err == nil {
			l.w.err = fmt.Errorf("vlog: syncing %s: %w", l.name, err)
		}
		l.mu.Unlock()
	}
}

// Finish completes the file (footer, sync, close) and returns its metadata
// for the manifest.
//
// The sync, the slow part, runs without the lock: Get goes on reading
// the records (all in the file by then) while it runs.
func (l *LiveWriter) Finish() (*manifest.VlogMetadata, error) {
	l.mu.Lock()
	err := l.w.writeFooter()
	l.publishLocked()
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
	l.unmap()
	l.fileMu.Lock()
	err = l.w.closeFile()
	l.fileClosed = true
	l.fileMu.Unlock()
	if err != nil {
		return nil, err
	}
	w := l.w
	meta := &manifest.VlogMetadata{FileNum: w.fileNum, Size: w.Size(), Records: w.Count(), ValueBytes: w.ValueBytes()}
	l.meta.Store(meta)
	// A finished LiveWriter stays known (its metadata) while the file
	// lives; its buffer is not needed any more.
	w.buf = nil
	l.publishLocked()
	return meta, nil
}

// Abort closes the file without finishing it; the caller removes it.
func (l *LiveWriter) Abort() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pending = nil
	l.aborted = true
	l.publishLocked()
	l.stopLocked()
	l.unmap()
	l.fileMu.Lock()
	defer l.fileMu.Unlock()
	l.fileClosed = true
	l.w.Abort()
}

// Finished returns the file's metadata once Finish has returned, or nil.
func (l *LiveWriter) Finished() *manifest.VlogMetadata { return l.meta.Load() }

// testHookBeforeCopy, if set, runs in Get between loading the view and
// fileEnd and copying from the view's buffers.
var testHookBeforeCopy func()

// endedErr is Get's error once the file is finished or abandoned. It
// takes l.mu, which Finish holds from closing the file until its
// metadata is set: so once Get has said the file is finished, Finished
// returns its metadata.
func (l *LiveWriter) endedErr() error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.aborted {
		return errAborted
	}
	return errFinished
}

// errFinished is returned by Get on a finished LiveWriter, errAborted on
// an aborted one.
var (
	errFinished = fmt.Errorf("vlog: value log finished: read it through a Reader")
	errAborted  = fmt.Errorf("vlog: value log abandoned")
)

// Get reads the value p locates and appends it to dst, verified like
// Reader.Get verifies it; with dst nil the result is a fresh slice. It
// reads from the buffers what has not reached the file. After Finish it
// fails: read through a Reader then (Finished gives the metadata).
//
// It takes no lock that Add takes: it copies from the buffers a view
// publishes, or from the mapping, inside an epoch that keeps them from
// reuse and the mapping from going, and reads the rest of the file under
// fileMu, which keeps it open.
func (l *LiveWriter) Get(p Pointer, key, dst []byte) ([]byte, error) {
	return l.GetAhead(p, key, dst, Ahead{})
}

// GetAhead is Get that, reading through the mapping, prefetches next while
// it verifies the value (see Reader.AppendValueAhead).
func (l *LiveWriter) GetAhead(p Pointer, key, dst []byte, next Ahead) ([]byte, error) {
	if p.Length < minRecordLen {
		return nil, base.CorruptionErrorf(l.name, int64(p.Offset), "pointer %s shorter than a record", p)
	}
	if p.FileNum != l.w.fileNum {
		return nil, base.CorruptionErrorf(l.name, int64(p.Offset), "pointer %s is not into this file", p)
	}
	// The record is read into dst's spare room (grown if need be), and its
	// value then moved to where dst ends: no buffer of its own.
	base0 := len(dst)
	dst = slices.Grow(dst, int(p.Length))
	rec := dst[base0 : base0+int(p.Length)]

	e := l.enter()
	v := l.view.Load()
	if v.cur == nil {
		l.exit(e)
		return nil, l.endedErr()
	}
	if size := l.size.Load(); p.Offset < HeaderLen || p.Offset > size || uint64(p.Length) > size-p.Offset {
		l.exit(e)
		return nil, base.CorruptionErrorf(l.name, int64(p.Offset), "pointer %s outside the records [%d, %d)", p, HeaderLen, size)
	}
	// rec[:m] is in the file, written by the flusher: those bytes do not
	// change. The rest is copied from the buffers, in file order: fileEnd
	// is loaded after the view, so a buffer the view lacks is in the file.
	var m int
	if fe := l.fileEnd.Load(); p.Offset < fe {
		m = int(min(uint64(p.Length), fe-p.Offset))
	}
	if m == len(rec) {
		if v, ok, err := l.getMapped(p, key, dst[:base0], next); ok {
			l.exit(e)
			return v, err
		}
	}
	if testHookBeforeCopy != nil {
		testHookBeforeCopy()
	}
	n := m
	for _, b := range v.pending {
		n += b.copyAt(rec[n:], p.Offset+uint64(n))
	}
	n += v.cur.copyAt(rec[n:], p.Offset+uint64(n))
	l.exit(e)
	if n < len(rec) {
		// Every byte below size is in the file or a buffer of the view,
		// unless a write of the flusher failed and dropped its buffers.
		return nil, l.missingErr(p, n)
	}
	if m > 0 {
		l.fileMu.RLock()
		if l.fileClosed {
			l.fileMu.RUnlock()
			return nil, l.endedErr()
		}
		got, err := l.w.f.ReadAt(rec[:m], int64(p.Offset))
		l.fileMu.RUnlock()
		if got != m {
			if err == nil {
				err = fmt.Errorf("short read")
			}
			return nil, fmt.Errorf("vlog: reading %s at offset %d: %w", l.name, p.Offset, err)
		}
	}
	r := Reader{fileNum: l.w.fileNum, name: l.name}
	val, err := r.verify(rec, p, key)
	if err != nil {
		return nil, err
	}
	return append(dst[:base0], val...), nil // v lies after base0: a move down
}

// Ahead locates the record p points to in the mapping, for a read of
// another record to prefetch (see Reader.Ahead, which bounds it by the
// window), if the flusher has written it whole; else the zero Ahead.
// Nothing is read: the Ahead stays harmless after the file is unmapped.
func (l *LiveWriter) Ahead(p Pointer) Ahead {
	r := l.mapped.Load()
	if r == nil || p.End() > l.fileEnd.Load() {
		return Ahead{}
	}
	return r.Ahead(p)
}

// getMapped is Get for a record the flusher has written whole: through
// the mapping, if the record lies inside it, verified and copied as a
// finished file's mapped read is (Reader.AppendValue); ok is false when
// it cannot be read so (no mapping, past the window, or the file closed).
func (l *LiveWriter) getMapped(p Pointer, key, dst []byte, next Ahead) (v []byte, ok bool, err error) {
	r := l.mapped.Load()
	if r == nil || p.End() > r.recordsEnd {
		return nil, false, nil
	}
	if testHookMappedRead != nil {
		testHookMappedRead()
	}
	v, err = r.AppendValueAhead(dst, p, key, next)
	return v, true, err
}

// testHookMappedRead, if set, runs in Get before a read through the
// mapping.
var testHookMappedRead func()
