package record

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/vfs"
)

// bufSize is the capacity of the Writer's buffer: buffered bytes go to the
// file when the next chunk would not fit.
const bufSize = 64 << 10

// zeroPad is the padding written at a block tail shorter than a header.
var zeroPad [headerSize]byte

// errWriterClosed is returned by every call on a closed Writer.
var errWriterClosed = fmt.Errorf("record: writer closed: %w", base.ErrClosed)

// Writer appends records to a file in the log format (see the package
// documentation). It buffers up to about 64 KiB; Flush and Sync hand the
// buffer to the file. A Writer is not safe for concurrent use.
//
// The Writer assumes that the file is empty and that writes land at its
// end: offsets it reports count from the first byte it writes. Every chunk
// it writes carries the synced offset: how many bytes of the file its last
// successful Sync made durable when the chunk was written (0 before the
// first), which tells a Reader how much of the file a crash cannot have
// damaged.
//
// INVARIANT: synced <= the offset of every chunk written after it was set
// (a sync covers only bytes handed to the file before it), and it only
// grows; the Reader reports a chunk that claims more than its own offset
// as corruption.
//
// INVARIANT: once err is set it is returned by every later call; a failed
// write or sync leaves the file in an unknown state, and the Writer never
// reports success after it.
type Writer struct {
	f vfs.File
	// buf holds bytes not yet written to f; its capacity is bufSize.
	buf []byte
	// written is the number of bytes handed to f.
	written int64
	// blockOff is the offset inside the current block of the next byte to
	// be appended (counting buffered bytes).
	blockOff int
	// synced is the synced offset written into each chunk: written as of
	// the last successful Sync.
	synced int64
	err    error
	closed bool
}

// NewWriter returns a Writer that appends records to f, which must be empty.
func NewWriter(f vfs.File) *Writer {
	return &Writer{f: f, buf: make([]byte, 0, bufSize)}
}

// WriteRecord appends one record to the writer's buffer; it reaches the file
// on Flush or Sync, or once the buffer fills (about 64 KiB). It returns the
// file offset of the record's first chunk header (past any padding at the
// end of the previous block). p may be empty; the Writer does not retain p.
func (w *Writer) WriteRecord(p []byte) (int64, error) {
	if w.err != nil {
		return 0, w.err
	}
	// A block tail too short for a header is padding (a Reader skips a
	// tail this short after a chunk that carries a synced offset).
	if left := BlockSize - w.blockOff; left < headerSize {
		if err := w.reserve(left); err != nil {
			return 0, err
		}
		w.buf = append(w.buf, zeroPad[:left]...)
		w.blockOff = 0
	}
	start := w.written + int64(len(w.buf))
	first := true
	for {
		avail := BlockSize - w.blockOff - headerSize
		n := min(len(p), avail)
		last := n == len(p)
		var typ byte
		switch {
		case first && last:
			typ = fullChunk
		case first:
			typ = firstChunk
		case last:
			typ = lastChunk
		default:
			typ = middleChunk
		}
		if err := w.reserve(headerSize + n); err != nil {
			return 0, err
		}
		h := len(w.buf)
		w.buf = w.buf[:h+headerSize]
		binary.LittleEndian.PutUint16(w.buf[h+4:], uint16(n))
		w.buf[h+6] = typ
		binary.LittleEndian.PutUint64(w.buf[h+7:], uint64(w.synced))
		w.buf = append(w.buf, p[:n]...)
		binary.LittleEndian.PutUint32(w.buf[h:], chunkChecksum(w.buf[h+6:]))
		p = p[n:]
		w.blockOff += headerSize + n
		if last {
			break
		}
		// The block is full: the next chunk starts a new one.
		w.blockOff = 0
		first = false
	}
	return start, nil
}

// reserve makes room for n more bytes in the buffer (n <= bufSize), writing
// the buffered bytes to the file if they do not fit.
func (w *Writer) reserve(n int) error {
	if cap(w.buf)-len(w.buf) >= n {
		return nil
	}
	return w.Flush()
}

// Flush writes the buffered bytes to the file.
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	if len(w.buf) == 0 {
		return nil
	}
	n, err := w.f.Write(w.buf)
	w.written += int64(n)
	if err == nil && n < len(w.buf) {
		err = io.ErrShortWrite
	}
	if err != nil {
		w.err = fmt.Errorf("record: write: %w", err)
		return w.err
	}
	w.buf = w.buf[:0]
	return nil
}

// Sync flushes the buffer and then syncs the file. The chunks written after
// it succeeds carry the file's new size as their synced offset.
func (w *Writer) Sync() error {
	if err := w.Flush(); err != nil {
		return err
	}
	if err := w.f.Sync(); err != nil {
		w.err = fmt.Errorf("record: sync: %w", err)
		return w.err
	}
	w.synced = w.written
	return nil
}

// Size returns the logical size of the log: bytes written to the file plus
// bytes still buffered.
func (w *Writer) Size() int64 {
	return w.written + int64(len(w.buf))
}

// Close flushes and syncs the log and closes the file. The file is closed
// even when the flush or sync fails; the first error is returned. Every call
// after Close, a second Close included, returns an error.
func (w *Writer) Close() error {
	if w.closed {
		return errWriterClosed
	}
	w.closed = true
	err := w.Sync()
	if cerr := w.f.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("record: close: %w", cerr)
	}
	if w.err == nil {
		w.err = errWriterClosed
	}
	w.buf = nil
	return err
}
