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
	// lastType is the type of the last valid chunk read, invalidChunk
	// before the first. After a chunk that carries a synced offset, a
	// block tail shorter than its header is padding.
	lastType byte
	// rec assembles a record that spans chunks; it is reused.
	rec []byte
	// offset is the file offset just past the last record returned.
	offset int64
	// err is sticky: io.EOF at the end of the valid prefix, or the error
	// that stopped the reader.
	err error
	// strict: see NewStrictReader.
	strict bool
	// synced is the largest synced offset a valid chunk read so far
	// claims (see SyncedOffset).
	synced int64
}

// NewReader returns a Reader of the log in r; fileName is used only in error
// messages.
func NewReader(r io.Reader, fileName string) *Reader {
	rd := &Reader{buf: make([]byte, BlockSize)}
	rd.reset(r, fileName)
	return rd
}

// NewStrictReader is NewReader for logs whose every record was synced
// before anything depended on it (the manifest).
//
// In a log of chunks that carry a synced offset it decides a bad chunk as
// Next does: every valid chunk before a bad one claims a synced offset at
// or below its own offset, so a bad chunk always lies past the synced
// offset claimed before it and may be an unsynced write that a crash
// damaged; only a valid chunk after it that claims a synced offset past it
// makes it corruption. So the last record, if it fails its checksum and
// nothing follows it, is a torn tail: it cannot be told from an append
// that a crash interrupted before its sync.
//
// In a legacy log (types 1..4, whose chunks carry no synced offset) it
// accepts only a truncation as a torn tail: the file ending inside the
// last chunk, or an all-zero header, and either only when no valid chunk
// follows it (as for Next). A legacy chunk that is complete but fails its
// checksum, has an invalid type, claims a length past its block's end, or
// seems cut short while a valid chunk follows it in the block is
// corruption wherever it is, because a torn write leaves a prefix of what
// was written, not different bytes. A bad first chunk, with no valid chunk
// before it to tell the log's format, is judged by its own type byte.
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

// SyncedOffset returns the largest synced offset claimed by the valid
// chunks read so far: the writer had synced at least that many bytes of
// the file before it wrote them. It is 0 for a legacy log, and until a
// chunk written after the first sync is read.
func (r *Reader) SyncedOffset() int64 { return r.synced }

// Next returns the next record. The returned slice is valid until the next
// call to Next.
//
// At the clean end of the log, or at a torn tail, Next returns io.EOF. A
// torn tail is a bad chunk (an incomplete or checksum-failing chunk, or a
// record cut short) after which every valid chunk in the file carries a
// synced offset at or below the bad chunk's offset: the bad bytes were
// never synced, so nothing after them was either. A bad chunk that a
// valid chunk after it says was synced, or that a valid legacy chunk
// follows, is corruption, and so is a valid chunk out of sequence or one
// that claims a synced offset past its own offset: the error matches
// base.ErrCorruption and names the offset of the bad chunk and why. Errors
// from the underlying reader are returned wrapped. Once Next returns an
// error it returns the same error on every later call.
func (r *Reader) Next() ([]byte, error) {
	if r.err != nil {
		return nil, r.err
	}
	inRecord := false
	var recStart int64
	for {
		if left := r.n - r.pos; left < legacyHeaderSize || left < headerSize && r.lastType > legacyLastChunk {
			// Past the last chunk of the block; the rest, if any, is
			// padding (or, in the last block, a torn header).
			if err := r.readBlock(); err != nil {
				return nil, r.fail(err)
			}
			continue
		}
		chunkOff := r.blockStart + int64(r.pos)
		h := r.buf[r.pos:r.n]
		length := int(binary.LittleEndian.Uint16(h[4:6]))
		typ := h[6]
		if typ == invalidChunk || typ > lastChunk {
			if r.strict && !r.relaxed(typ) && !allZero(h[:legacyHeaderSize]) {
				return nil, r.fail(r.corrupt(chunkOff, badType, int64(typ), 0))
			}
			return nil, r.fail(r.badChunk(chunkOff, badType, int64(typ), 0))
		}
		hs := chunkHeaderSize(typ)
		end := r.pos + hs + length
		if end > r.n {
			// A strict reader accepts a legacy chunk that seems cut short
			// only at the end of the file; badChunk then rules out a valid
			// chunk after it.
			if r.strict && !r.relaxed(typ) && (!r.eof || end > BlockSize) {
				return nil, r.fail(r.corrupt(chunkOff, badLength, int64(length), int64(r.n-r.pos-hs)))
			}
			return nil, r.fail(r.badChunk(chunkOff, badLength, int64(length), int64(r.n-r.pos-hs)))
		}
		stored := binary.LittleEndian.Uint32(h[0:4])
		if sum := chunkChecksum(r.buf[r.pos+6 : end]); sum != stored {
			if r.strict && !r.relaxed(typ) {
				return nil, r.fail(r.corrupt(chunkOff, badChecksum, int64(stored), int64(sum)))
			}
			return nil, r.fail(r.badChunk(chunkOff, badChecksum, int64(stored), int64(sum)))
		}
		kind := typ
		if typ > legacyLastChunk {
			synced := binary.LittleEndian.Uint64(h[7:15])
			if synced > uint64(chunkOff) {
				return nil, r.fail(base.CorruptionErrorf(r.fileName, chunkOff,
					"chunk says the file was synced to offset %d, past the chunk itself", synced))
			}
			r.synced = max(r.synced, int64(synced))
			kind -= fullChunk - legacyFullChunk
		}
		r.lastType = typ
		// Capped so that a caller appending to a returned record cannot
		// overwrite the chunks after it in the block.
		payload := r.buf[r.pos+hs : end : end]
		r.pos = end
		switch kind {
		case legacyFullChunk:
			if inRecord {
				return nil, r.fail(r.outOfSequence(chunkOff, typ, recStart))
			}
			r.offset = chunkOff + int64(hs+length)
			return payload, nil
		case legacyFirstChunk:
			if inRecord {
				return nil, r.fail(r.outOfSequence(chunkOff, typ, recStart))
			}
			inRecord = true
			recStart = chunkOff
			r.rec = append(r.rec[:0], payload...)
		case legacyMiddleChunk:
			if !inRecord {
				return nil, r.fail(r.outOfSequence(chunkOff, typ, -1))
			}
			r.rec = append(r.rec, payload...)
		case legacyLastChunk:
			if !inRecord {
				return nil, r.fail(r.outOfSequence(chunkOff, typ, -1))
			}
			r.rec = append(r.rec, payload...)
			r.offset = chunkOff + int64(hs+length)
			return r.rec, nil
		}
	}
}

// relaxed reports whether a strict reader decides a bad chunk of type typ
// as Next does: in a log of chunks that carry a synced offset (see
// NewStrictReader). The log's format is that of the last valid chunk, or,
// before the first, the bad chunk's own type.
func (r *Reader) relaxed(typ byte) bool {
	if r.lastType != invalidChunk {
		return r.lastType > legacyLastChunk
	}
	return typ > legacyLastChunk && typ <= lastChunk
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
// past the end of its block (or of the file). It scans the rest of the file
// for valid chunks. If one carries a synced offset past off, or is a legacy
// chunk (which carries none), the bad chunk is corruption; if every valid
// chunk after it claims a synced offset at or below off, or none follows,
// the log ends in a torn tail and badChunk returns io.EOF. Errors from the
// underlying reader are passed on.
//
// The rule relies on how logs are written: a file starts empty and is only
// appended to (WAL files are never recycled), every Sync syncs the whole
// file, and each chunk records how far the file was synced when it was
// written. A crash may damage only what was not yet synced, and may damage
// it in any way a disk does: leave it out, keep the file's size but read
// back zeros (XFS does this for unwritten pages), or persist later pages
// without earlier ones. So damage past the last synced offset that any
// chunk records is a torn tail, whatever follows it; damage below it is
// corruption, and the records after it may have been acknowledged as
// synced. A legacy log records no synced offset: there a valid chunk after
// the bad one means that bytes written after it survived while it did not,
// which a crash that leaves a prefix of what was written cannot do.
//
// The cost of this choice: a sync that no later chunk records (the last one
// before a writer closes the file) is invisible here, so damage after the
// last recorded synced offset reads as a torn tail even if it hit synced
// bytes; and a legacy log that a crash damaged out of order is reported as
// corrupt instead of losing its unsynced tail quietly.
//
// The scan looks for a valid chunk at every byte offset after off,
// checksumming only candidates with a valid type and a length that fits
// their block; from a valid chunk it moves on to the end of that chunk,
// so that after the damage it reads the rest of the log chunk by chunk. It
// runs only on this error path.
func (r *Reader) badChunk(off int64, kind int, a, b int64) error {
	i := r.pos + 1
	for {
		blk := r.buf[:r.n]
		for i+legacyHeaderSize <= len(blk) {
			if typ := blk[i+6]; typ == invalidChunk || typ > lastChunk {
				i++
				continue
			}
			size, synced := chunkAt(blk[i:])
			if size == 0 {
				i++
				continue
			}
			at := r.blockStart + int64(i)
			if blk[i+6] <= legacyLastChunk {
				return base.CorruptionErrorf(r.fileName, off, "%s; a valid chunk follows at offset %d",
					badChunkDetail(kind, a, b), at)
			}
			if synced > uint64(off) {
				return base.CorruptionErrorf(r.fileName, off, "%s; the chunk at offset %d says the file was synced to offset %d",
					badChunkDetail(kind, a, b), at, synced)
			}
			i += size
		}
		if err := r.readBlock(); err != nil {
			return err // io.EOF: the tail is torn
		}
		i = 0
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

func typeName(typ byte) string {
	switch typ {
	case legacyFullChunk, fullChunk:
		return "FULL"
	case legacyFirstChunk, firstChunk:
		return "FIRST"
	case legacyMiddleChunk, middleChunk:
		return "MIDDLE"
	case legacyLastChunk, lastChunk:
		return "LAST"
	}
	return fmt.Sprintf("type-%d", typ)
}
