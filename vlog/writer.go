package vlog

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/internal/crc32c"
	"github.com/strata-db/strata/vfs"
)

// writerBufSize is the capacity of the Writer's buffer, and the alignment
// of its writes: the file sees writes that end on a multiple of this size
// (except the last, and those cut short by a Sync), whatever the record
// sizes, and so, in the usual run, writes of exactly this size at offsets
// that are multiples of it. It is vfs.MapAlign, so that a finished file's
// mapping (see ReaderOptions.Map) uses huge pages: a read of a random
// value then takes no TLB miss and no page fault beyond one per 2 MiB.
// Written in smaller pieces, the same file was mapped 4 KiB at a time,
// and a scan of values at random places in the file paid a TLB miss and a
// share of a page fault per value.
const writerBufSize = vfs.MapAlign

// writerBufStart is the buffer's first capacity: it doubles as records
// fill it, up to writerBufSize, so that a value log that receives little
// (a database that separates few values) holds little memory.
const writerBufStart = 64 << 10

// errWriterDone is returned by calls on a Writer after Finish or Abort.
var errWriterDone = fmt.Errorf("vlog: writer already finished or aborted: %w", base.ErrClosed)

// Writer appends records to a new value-log file. It buffers up to 2 MiB
// and writes the buffer when it fills to the next 2 MiB boundary of the
// file (see writerBufSize); Finish writes the rest with the
// footer, syncs and closes the file. A Writer is not safe for concurrent
// use.
//
// The Writer assumes the file is empty: the offsets in the pointers it
// returns count from the first byte it writes.
//
// INVARIANT: once err is set it is returned by every later call. A failed
// write leaves the file in an unknown state; the Writer never reports
// success after it, and the caller removes the file.
type Writer struct {
	f       vfs.File
	fileNum base.FileNum
	// buf holds the bytes not yet written to f; its capacity grows from
	// writerBufStart to writerBufSize, and it is dropped once the footer
	// is written.
	buf []byte
	// written counts the bytes handed to f.
	written    uint64
	count      uint64
	valueBytes uint64
	// scratch holds a record's checksum and lengths while the record is
	// appended; a field rather than a local so that Add does not allocate.
	scratch [maxRecordHeaderLen]byte
	err     error
	done    bool // Finish or Abort was called; f is closed
	// handoff, if set, takes each buffer the Writer would write (the
	// bytes of the file from off on) instead of writing it: the Writer
	// counts them as written and goes on with a new buffer from newBuf.
	// LiveWriter writes them on a goroutine of its own, so that the commit
	// path never waits for a 2 MiB write.
	handoff func(off uint64, b []byte)
	newBuf  func() []byte
}

// NewWriter returns a Writer for the value log fileNum, which appends to f
// (which must be empty). The header goes into the buffer at once.
func NewWriter(f vfs.File, fileNum base.FileNum) *Writer {
	w := &Writer{f: f, fileNum: fileNum, buf: make([]byte, 0, writerBufStart)}
	w.buf = encodeHeader(w.buf, fileNum)
	return w
}

// Add appends a record holding key and value and returns its pointer. It
// copies key and value, so the caller may reuse them at once, and does not
// allocate. The record reaches the file when the buffer fills or at
// Finish; the pointer must not be made durable anywhere before Finish
// returns nil.
//
// A record longer than MaxRecordLen is refused with an error that leaves
// the Writer usable. Any other error is sticky.
func (w *Writer) Add(key, value []byte) (Pointer, error) {
	if w.err != nil {
		return Pointer{}, w.err
	}
	n := recordChecksumLen
	n += binary.PutUvarint(w.scratch[n:], uint64(len(key)))
	n += binary.PutUvarint(w.scratch[n:], uint64(len(value)))
	total := uint64(n) + uint64(len(key)) + uint64(len(value))
	if total > MaxRecordLen {
		return Pointer{}, fmt.Errorf("vlog: record of %d bytes (key %d, value %d) exceeds the maximum of %d",
			total, len(key), len(value), uint64(MaxRecordLen))
	}
	sum := crc32c.Update(0, w.scratch[recordChecksumLen:n])
	sum = crc32c.Update(sum, key)
	sum = crc32c.Update(sum, value)
	binary.LittleEndian.PutUint32(w.scratch[:], sum)

	p := Pointer{
		FileNum:  w.fileNum,
		Offset:   w.Size(),
		Length:   uint32(total),
		ValueLen: uint32(len(value)),
	}
	w.append(w.scratch[:n])
	w.append(key)
	w.append(value)
	if w.err != nil {
		return Pointer{}, w.err
	}
	w.count++
	w.valueBytes += uint64(len(value))
	return p, nil
}

// append copies b into the buffer, writing the buffer each time it fills
// up to the next writerBufSize boundary of the file. With the buffer
// empty, the part of b that reaches one or more boundaries goes to the
// file directly, ending on the last of them.
func (w *Writer) append(b []byte) {
	for len(b) > 0 && w.err == nil {
		// The buffer holds the file's bytes from w.written on; it fills up
		// to the next boundary after w.written.
		limit := writerBufSize - int(w.written%writerBufSize)
		if len(w.buf) == 0 && len(b) >= limit && w.handoff == nil {
			n := limit + (len(b)-limit)/writerBufSize*writerBufSize
			w.write(b[:n])
			b = b[n:]
			continue
		}
		n := copy(w.buf[len(w.buf):min(limit, cap(w.buf))], b)
		w.buf = w.buf[:len(w.buf)+n]
		b = b[n:]
		switch {
		case len(w.buf) == limit:
			w.flush()
		case len(w.buf) == cap(w.buf):
			// Full short of the boundary: double it (never past
			// writerBufSize, which bounds limit).
			nb := make([]byte, len(w.buf), min(2*max(cap(w.buf), writerBufStart/2), writerBufSize))
			copy(nb, w.buf)
			w.buf = nb
		}
	}
}

// flush writes the buffer to the file, or hands it off (see handoff).
func (w *Writer) flush() {
	if len(w.buf) > 0 && w.err == nil {
		if w.handoff != nil {
			b, off := w.buf, w.written
			w.written += uint64(len(b))
			w.buf = w.newBuf()
			w.handoff(off, b)
			return
		}
		w.write(w.buf)
		w.buf = w.buf[:0]
	}
}

func (w *Writer) write(b []byte) {
	n, err := w.f.Write(b)
	w.written += uint64(n)
	if err == nil && n != len(b) {
		err = errors.New("short write")
	}
	if err != nil {
		w.err = fmt.Errorf("vlog: writing %s: %w", w.name(), err)
	}
}

// Size returns the file's size so far, buffered bytes included (and the
// footer not yet).
func (w *Writer) Size() uint64 { return w.written + uint64(len(w.buf)) }

// Count returns the number of records added.
func (w *Writer) Count() uint64 { return w.count }

// ValueBytes returns the sum of the lengths of the values added.
func (w *Writer) ValueBytes() uint64 { return w.valueBytes }

// FileNum returns the number of the file being written.
func (w *Writer) FileNum() base.FileNum { return w.fileNum }

func (w *Writer) name() string { return base.MakeFilename(base.FileTypeVlog, w.fileNum) }

// Finish writes the footer, syncs and closes the file. Only after Finish
// returns nil may pointers into the file be made durable elsewhere (see
// invariant 2 in the design). The file is closed whatever Finish returns;
// on an error the caller removes it.
func (w *Writer) Finish() error {
	if err := w.writeFooter(); err != nil {
		return err
	}
	return w.syncAndClose()
}

// writeFooter appends the footer and writes everything buffered to the
// file: the first half of Finish. No record can be added after it.
func (w *Writer) writeFooter() error {
	if w.done {
		return errWriterDone
	}
	w.done = true
	if w.err == nil {
		ft := footer{count: w.count, valueBytes: w.valueBytes, recordsEnd: w.Size(), fileNum: w.fileNum}
		var fb [FooterLen]byte
		w.append(ft.encode(fb[:0]))
		w.flush()
	}
	w.buf = nil // everything is in the file
	return nil
}

// syncAndClose syncs and closes the file: the second half of Finish,
// after writeFooter.
func (w *Writer) syncAndClose() error {
	if w.err == nil {
		if err := w.f.Sync(); err != nil {
			w.err = fmt.Errorf("vlog: syncing %s: %w", w.name(), err)
		}
	}
	return w.closeFile()
}

// closeFile closes the file, after writeFooter and a sync.
func (w *Writer) closeFile() error {
	if err := w.f.Close(); err != nil && w.err == nil {
		w.err = fmt.Errorf("vlog: closing %s: %w", w.name(), err)
	}
	if w.err != nil {
		return w.err
	}
	w.err = errWriterDone
	return nil
}

// Abort closes the file without writing the footer or the buffered
// records; the caller removes the file. After Finish or a previous Abort
// it does nothing and returns nil, so it can sit in a deferred cleanup.
func (w *Writer) Abort() error {
	if w.done {
		return nil
	}
	w.done = true
	if w.err == nil {
		w.err = errWriterDone
	}
	w.buf = nil
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("vlog: closing %s: %w", w.name(), err)
	}
	return nil
}
