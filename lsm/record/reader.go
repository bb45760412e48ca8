package record

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/strata-db/strata/internal/base"
)

// Reader returns the records of a log in order. It reads the log one block
// at a time; a Reader is not safe for concurrent use.
type Reader struct {
	src      io.Reader
	fileName string
	// buf holds the current block: buf[:n] was read from the file starting
	// at blockStart, and pos is the offset in it of the next chunk.
	buf        []byte
	n          int
	pos        int
	blockStart int64
	// eof is set once the source has returned its last byte; a block
	// shorter than BlockSize is always the last.
	eof bool
	// rec assembles a record that spans chunks; it is reused.
	rec []byte
	// offset is the file offset just past the last record returned.
	offset int64
	// err is sticky: io.EOF at the end of the valid prefix, or the error
	// that stopped the reader.
	err error
	// strict: see NewStrictReader.
	strict bool
}

// NewReader returns a Reader of the log in r; fileName is used only in error
// messages.
func NewReader(r io.Reader, fileName string) *Reader {
	rd := &Reader{buf: make([]byte, BlockSize)}
	rd.reset(r, fileName)
	return rd
}

// NewStrictReader is NewReader for logs whose every record was synced
// before anything depended on it (the manifest). It accepts only a
// truncation as a torn tail: the file ending inside the last chunk, or an
// all-zero header, and either only when no valid chunk follows it (as for
// Next). A chunk that is complete but fails its checksum, has an invalid
// type, claims a length past its block's end, or seems cut short while a
// valid chunk follows it in the block is corruption wherever it is, because
// a torn write leaves a prefix of what was written, not different bytes.
func NewStrictReader(r io.Reader, fileName string) *Reader {
	rd := NewReader(r, fileName)
	rd.strict = true
	return rd
}

// reset makes the Reader read a new log from r, keeping its buffers.
func (r *Reader) reset(src io.Reader, fileName string) {
	*r = Reader{src: src, fileName: fileName, buf: r.buf, rec: r.rec[:0], strict: r.strict}
}

// Offset returns the file offset just past the last record returned by
// Next. After Next returns io.EOF it is the end of the log's valid prefix.
func (r *Reader) Offset() int64 { return r.offset }

// Next returns the next record. The returned slice is valid until the next
// call to Next.
//
// At the clean end of the log, or at a torn tail (an incomplete or
// checksum-failing chunk or record that no valid chunk follows anywhere in
// the file), Next returns io.EOF. A bad chunk that a valid chunk follows,
// later in the same block or in a later one, or a valid chunk out of
// sequence, is corruption: the error matches base.ErrCorruption and names
// the offset of the bad chunk (and, for a bad chunk, where the valid chunk
// after it starts). Errors from the underlying reader are returned wrapped.
// Once Next returns an error it returns the same error on every later call.
func (r *Reader) Next() ([]byte, error) {
	if r.err != nil {
		return nil, r.err
	}
	inRecord := false
	var recStart int64
	for {
		if r.n-r.pos < headerSize {
			// Past the last chunk of the block; the rest, if any, is
			// padding (or, in the last block, a torn header).
			if err := r.readBlock(); err != nil {
				return nil, r.fail(err)
			}
			continue
		}
		chunkOff := r.blockStart + int64(r.pos)
		h := r.buf[r.pos : r.pos+headerSize]
		length := int(binary.LittleEndian.Uint16(h[4:6]))
		typ := h[6]
		end := r.pos + headerSize + length
		switch {
		case typ == invalidChunk || typ > lastChunk:
			if r.strict && !allZero(h) {
				return nil, r.fail(r.corrupt(chunkOff, badType, int64(typ), 0))
			}
			return nil, r.fail(r.badChunk(chunkOff, badType, int64(typ), 0))
		case end > r.n:
			// A strict reader accepts a chunk that seems cut short only
			// at the end of the file; badChunk then rules out a valid
			// chunk after it.
			if r.strict && (!r.eof || end > BlockSize) {
				return nil, r.fail(r.corrupt(chunkOff, badLength, int64(length), int64(r.n-r.pos-headerSize)))
			}
			return nil, r.fail(r.badChunk(chunkOff, badLength, int64(length), int64(r.n-r.pos-headerSize)))
		}
		stored := binary.LittleEndian.Uint32(h[0:4])
		if sum := chunkChecksum(r.buf[r.pos+6 : end]); sum != stored {
			if r.strict {
				return nil, r.fail(r.corrupt(chunkOff, badChecksum, int64(stored), int64(sum)))
			}
			return nil, r.fail(r.badChunk(chunkOff, badChecksum, int64(stored), int64(sum)))
		}
		// Capped so that a caller appending to a returned record cannot
		// overwrite the chunks after it in the block.
		payload := r.buf[r.pos+headerSize : end : end]
		r.pos = end
		switch typ {
		case fullChunk:
			if inRecord {
				return nil, r.fail(r.outOfSequence(chunkOff, typ, recStart))
			}
			r.offset = chunkOff + int64(headerSize+length)
			return payload, nil
		case firstChunk:
			if inRecord {
				return nil, r.fail(r.outOfSequence(chunkOff, typ, recStart))
			}
			inRecord = true
			recStart = chunkOff
			r.rec = append(r.rec[:0], payload...)
		case middleChunk:
			if !inRecord {
				return nil, r.fail(r.outOfSequence(chunkOff, typ, -1))
			}
			r.rec = append(r.rec, payload...)
		case lastChunk:
			if !inRecord {
				return nil, r.fail(r.outOfSequence(chunkOff, typ, -1))
			}
			r.rec = append(r.rec, payload...)
			r.offset = chunkOff + int64(headerSize+length)
			return r.rec, nil
		}
	}
}

// fail makes err sticky and returns it.
func (r *Reader) fail(err error) error {
	r.err = err
	return err
}

// readBlock reads the next block into buf. It returns io.EOF when the source
// has no more bytes.
func (r *Reader) readBlock() error {
	if r.eof {
		return io.EOF
	}
	r.blockStart += int64(r.n)
	r.pos = 0
	n, err := io.ReadFull(r.src, r.buf)
	r.n = n
	switch err {
	case nil:
		return nil
	case io.ErrUnexpectedEOF:
		r.eof = true
		return nil
	case io.EOF:
		r.eof = true
		return io.EOF
	default:
		return fmt.Errorf("record: reading %s at offset %d: %w", r.fileName, r.blockStart+int64(n), err)
	}
}

// Kinds of bad chunk, formatted only when the bad chunk is corruption rather
// than a torn tail (a torn tail is the common case at every recovery, so it
// does not pay for an error message).
const (
	badType = iota
	badLength
	badChecksum
)

// badChunk decides what the bad chunk at off (the one at r.pos) means: a
// chunk that fails its checksum, has an invalid type, or claims a length
// past the end of its block (or of the file). If a valid chunk follows it
// anywhere later in the file, later in the same block included, the bad
// chunk is corruption; if nothing valid follows, the log ends in a torn
// tail and badChunk returns io.EOF. Errors from the underlying reader are
// passed on.
//
// The rule relies on how logs are written: a file starts empty and is only
// appended to (WAL files are never recycled), and every Sync syncs the
// whole file. A crash during an append then leaves a prefix of what was
// written, perhaps followed by zeros, so a torn chunk is the last thing in
// the file. A valid chunk after a bad one means that bytes written after
// the bad chunk survived while the bad chunk did not: that is damage, not a
// torn append, and the records after it may have been acknowledged as
// synced. The cost of this choice: if a crash persisted some later unsynced
// pages without earlier ones, or a torn final chunk's payload happens to
// hold a well-formed chunk, the log is reported as corrupt instead of
// losing its unsynced tail quietly. Data safety comes first: a false alarm
// needs an operator, a silent loss of synced writes is never noticed.
//
// The scan looks at every byte offset after off, in the current block and
// in each later one, but checksums only candidates with a valid type and a
// length that fits their block. It runs only on this error path; a torn
// tail is normally the end of the file, so there is little to scan.
func (r *Reader) badChunk(off int64, kind int, a, b int64) error {
	from := r.pos + 1
	for {
		if i := r.validChunkFrom(from); i >= 0 {
			return base.CorruptionErrorf(r.fileName, off, "%s; a valid chunk follows at offset %d",
				badChunkDetail(kind, a, b), r.blockStart+int64(i))
		}
		if err := r.readBlock(); err != nil {
			return err // io.EOF: nothing valid follows
		}
		from = 0
	}
}

// corrupt reports a bad chunk as corruption without looking further.
func (r *Reader) corrupt(off int64, kind int, a, b int64) error {
	return base.CorruptionErrorf(r.fileName, off, "%s", badChunkDetail(kind, a, b))
}

func badChunkDetail(kind int, a, b int64) string {
	switch kind {
	case badType:
		return fmt.Sprintf("invalid chunk type %d", a)
	case badLength:
		return fmt.Sprintf("chunk length %d overruns the block (%d bytes left)", a, b)
	}
	return fmt.Sprintf("chunk checksum mismatch: stored %#08x, computed %#08x", uint32(a), uint32(b))
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// outOfSequence returns the error for a valid chunk of type typ at off that
// cannot follow what came before it. recStart is the offset of the open
// record's FIRST chunk, or -1 if no record is open.
func (r *Reader) outOfSequence(off int64, typ byte, recStart int64) error {
	if recStart >= 0 {
		return base.CorruptionErrorf(r.fileName, off,
			"%s chunk inside the record that starts at offset %d", typeName(typ), recStart)
	}
	return base.CorruptionErrorf(r.fileName, off, "%s chunk outside a record", typeName(typ))
}

// validChunkFrom returns the offset in the current block of the first valid
// chunk that starts at or after from, or -1 if there is none. Only
// candidates with a valid type are checksummed (validChunkAt also skips
// those whose length does not fit the block), which keeps the scan cheap
// over zeros and garbage.
func (r *Reader) validChunkFrom(from int) int {
	b := r.buf[:r.n]
	for i := from; i+headerSize <= len(b); i++ {
		if typ := b[i+6]; typ == invalidChunk || typ > lastChunk {
			continue
		}
		if validChunkAt(b[i:]) {
			return i
		}
	}
	return -1
}

// validChunkAt reports whether b begins with a chunk that is well formed and
// passes its checksum.
func validChunkAt(b []byte) bool {
	if len(b) < headerSize {
		return false
	}
	length := int(binary.LittleEndian.Uint16(b[4:6]))
	typ := b[6]
	if typ == invalidChunk || typ > lastChunk || headerSize+length > len(b) {
		return false
	}
	return chunkChecksum(b[6:headerSize+length]) == binary.LittleEndian.Uint32(b[0:4])
}

func typeName(typ byte) string {
	switch typ {
	case fullChunk:
		return "FULL"
	case firstChunk:
		return "FIRST"
	case middleChunk:
		return "MIDDLE"
	case lastChunk:
		return "LAST"
	}
	return fmt.Sprintf("type-%d", typ)
}
