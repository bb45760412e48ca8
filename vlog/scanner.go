package vlog

import (
	"encoding/binary"

	"github.com/strata-db/strata/internal/base"
)

// scanBufSize is the size of the Scanner's reads.
const scanBufSize = 256 << 10

// Scanner reads the records of a file in file order, for verification and
// garbage collection. In a finished file it reads every record up to the
// footer, and any record that does not verify, or totals that disagree
// with the footer, end the scan with a base.CorruptionError. In an
// unfinished file it reads up to the first record that does not verify
// (the torn tail a crash leaves) and ends there without an error.
//
// A Scanner is not safe for concurrent use. Key and Value are valid until
// the next call of Next.
type Scanner struct {
	r *Reader
	// off is the offset of the next record.
	off uint64
	// buf holds the bytes of the file at [bufOff, bufOff+len(buf)).
	buf    []byte
	bufOff uint64

	key, value []byte
	ptr        Pointer
	count      uint64
	valueBytes uint64
	err        error
	done       bool
}

// NewScanner returns a Scanner positioned before the first record.
func (r *Reader) NewScanner() *Scanner {
	return &Scanner{r: r, off: HeaderLen}
}

// Next moves to the next record. It returns false at the end of the
// records, at the torn tail of an unfinished file, and on an error (see
// Err).
func (s *Scanner) Next() bool {
	if s.done {
		return false
	}
	r := s.r
	s.key, s.value, s.ptr = nil, nil, Pointer{}
	if s.off == r.recordsEnd {
		if r.finished && (s.count != r.footer.count || s.valueBytes != r.footer.valueBytes) {
			s.fail(base.CorruptionErrorf(r.name, int64(r.recordsEnd),
				"footer counts %d records of %d value bytes, the file holds %d records of %d value bytes",
				r.footer.count, r.footer.valueBytes, s.count, s.valueBytes))
		}
		s.done = true
		return false
	}
	limit := r.recordsEnd - s.off
	hdr, ok := s.fill(min(maxRecordHeaderLen, limit))
	if !ok {
		return false
	}
	h, problem := decodeRecordHeader(hdr, limit)
	if problem != "" {
		return s.bad(problem)
	}
	rec, ok := s.fill(h.total())
	if !ok {
		return false
	}
	if got, want := binary.LittleEndian.Uint32(rec), crc(rec[recordChecksumLen:]); got != want {
		return s.bad("record checksum mismatch")
	}
	kEnd := uint64(h.hdrLen) + h.keyLen
	s.key = rec[h.hdrLen:kEnd:kEnd]
	s.value = rec[kEnd:len(rec):len(rec)]
	s.ptr = Pointer{FileNum: r.fileNum, Offset: s.off, Length: uint32(h.total()), ValueLen: uint32(h.valueLen)}
	s.off += h.total()
	s.count++
	s.valueBytes += h.valueLen
	return true
}

// fill makes the buffer hold the n bytes at s.off and returns them. n
// does not reach past the records.
func (s *Scanner) fill(n uint64) ([]byte, bool) {
	if s.off < s.bufOff || s.off+n > s.bufOff+uint64(len(s.buf)) {
		want := min(max(n, scanBufSize), s.r.recordsEnd-s.off)
		if uint64(cap(s.buf)) < want {
			s.buf = make([]byte, want)
		}
		s.buf, s.bufOff = s.buf[:want], s.off
		if err := s.r.readAt(s.buf, s.off); err != nil {
			s.buf = s.buf[:0]
			s.fail(err)
			return nil, false
		}
	}
	start := s.off - s.bufOff
	return s.buf[start : start+n], true
}

// bad ends the scan at a record that does not verify: an error in a
// finished file, the end of the valid records in an unfinished one.
func (s *Scanner) bad(problem string) bool {
	if s.r.finished {
		s.fail(base.CorruptionErrorf(s.r.name, int64(s.off), "%s", problem))
	} else {
		s.done = true
	}
	return false
}

func (s *Scanner) fail(err error) {
	s.key, s.value, s.ptr = nil, nil, Pointer{}
	s.err, s.done = err, true
}

// Key returns the current record's key.
func (s *Scanner) Key() []byte { return s.key }

// Value returns the current record's value.
func (s *Scanner) Value() []byte { return s.value }

// Pointer returns the pointer to the current record.
func (s *Scanner) Pointer() Pointer { return s.ptr }

// Offset returns the offset just past the last record Next returned (the
// header's end before the first). After the scan of an unfinished file
// ends without an error, it is where the valid records end.
func (s *Scanner) Offset() uint64 { return s.off }

// Err returns the error that ended the scan, or nil.
func (s *Scanner) Err() error { return s.err }
