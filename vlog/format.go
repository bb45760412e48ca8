package vlog

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/internal/crc32c"
	"github.com/strata-db/strata/lsm/manifest"
)

// The byte layouts below are described, with diagrams, in doc.go.

const (
	// formatVersion is the version written in every header. A reader
	// refuses a newer one (or a header with flags set) as a file written by
	// a newer Strata, and reads every version from 1 up to it.
	formatVersion = 1

	// headerMagic opens every value log; footerMagic closes a finished one.
	headerMagic = "\x89SVLOG\r\n"
	footerMagic = "\x89SVEND\r\n"

	// HeaderLen is the size of the file header: the first record starts at
	// this offset.
	HeaderLen = 8 + 4 + 4 + 8 + 4
	// headerSumOff is the offset of the header checksum, which covers the
	// bytes before it.
	headerSumOff = 8 + 4 + 4 + 8

	// FooterLen is the size of the footer Finish writes at the end of a
	// finished file.
	FooterLen = 8 + 8 + 8 + 8 + 4 + 8
	// footerSumOff is the offset of the footer checksum, which covers the
	// bytes before it.
	footerSumOff = 8 + 8 + 8 + 8

	// recordChecksumLen is the size of the checksum that opens a record.
	recordChecksumLen = 4
	// minRecordLen is the size of a record with an empty key and an empty
	// value: checksum and two one-byte uvarints.
	minRecordLen = recordChecksumLen + 2
	// maxRecordHeaderLen bounds the checksum and the two uvarint lengths.
	maxRecordHeaderLen = recordChecksumLen + 2*binary.MaxVarintLen64

	// MaxRecordLen is the largest record a value log holds: a pointer
	// carries the record length in 32 bits.
	MaxRecordLen = math.MaxUint32
)

// Every checksum in the format is a CRC-32C (package crc32c).
func crc(b []byte) uint32 { return crc32c.Checksum(b) }

// Unnumbered is the file number in the header and footer of a value log
// written outside a database, for ingestion (strata.TableWriter): such a
// file takes the number the database gives it, by a hard link, without a
// rewrite. No database file has number 0. Its records still name their
// keys, so a pointer into the wrong file is caught when the record is read.
const Unnumbered base.FileNum = 0

// encodeHeader appends the header of file fileNum to dst.
func encodeHeader(dst []byte, fileNum base.FileNum) []byte {
	start := len(dst)
	dst = append(dst, headerMagic...)
	dst = binary.LittleEndian.AppendUint32(dst, formatVersion)
	dst = binary.LittleEndian.AppendUint32(dst, 0) // flags: none defined
	dst = binary.LittleEndian.AppendUint64(dst, uint64(fileNum))
	return binary.LittleEndian.AppendUint32(dst, crc(dst[start:]))
}

// checkHeader verifies a header read from the start of file fileNum, named
// name. A header that does not verify is an error matching
// base.ErrCorruption; a verified header of a newer version, or with flags
// this build does not know, is a *base.NewerFormatError.
func checkHeader(buf []byte, fileNum base.FileNum, name string) error {
	if len(buf) < HeaderLen {
		return base.CorruptionErrorf(name, 0, "file shorter than the header")
	}
	buf = buf[:HeaderLen]
	if string(buf[:8]) != headerMagic {
		return base.CorruptionErrorf(name, 0, "bad magic number (not a value log)")
	}
	if got, want := binary.LittleEndian.Uint32(buf[headerSumOff:]), crc(buf[:headerSumOff]); got != want {
		return base.CorruptionErrorf(name, 0, "header checksum mismatch: stored %#08x, computed %#08x", got, want)
	}
	v := binary.LittleEndian.Uint32(buf[8:])
	if v == 0 {
		return base.CorruptionErrorf(name, 0, "format version 0 (versions start at 1)")
	}
	if f := binary.LittleEndian.Uint32(buf[12:]); v > formatVersion || f != 0 {
		// Flags are a later version's too: this one defines none.
		return &base.NewerFormatError{File: name, What: "value log", Version: uint64(max(v, formatVersion+1)), Newest: formatVersion}
	}
	if n := base.FileNum(binary.LittleEndian.Uint64(buf[16:])); n != fileNum && n != Unnumbered {
		return base.CorruptionErrorf(name, 0, "header names file %s, want %s", n, fileNum)
	}
	return nil
}

// footer is the summary Finish writes at the end of a file.
type footer struct {
	count      uint64 // number of records
	valueBytes uint64 // sum of the records' value lengths
	recordsEnd uint64 // offset just past the last record (= start of the footer)
	fileNum    base.FileNum
}

func (f footer) encode(dst []byte) []byte {
	start := len(dst)
	dst = binary.LittleEndian.AppendUint64(dst, f.count)
	dst = binary.LittleEndian.AppendUint64(dst, f.valueBytes)
	dst = binary.LittleEndian.AppendUint64(dst, f.recordsEnd)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(f.fileNum))
	dst = binary.LittleEndian.AppendUint32(dst, crc(dst[start:]))
	return append(dst, footerMagic...)
}

// decodeFooter parses the last FooterLen bytes of a file of size bytes
// belonging to fileNum. ok is false when they are not a valid footer of
// this file: then the file is unfinished.
func decodeFooter(buf []byte, size uint64, fileNum base.FileNum) (f footer, ok bool) {
	if len(buf) != FooterLen || size < HeaderLen+FooterLen {
		return f, false
	}
	if string(buf[footerSumOff+4:]) != footerMagic {
		return f, false
	}
	if binary.LittleEndian.Uint32(buf[footerSumOff:]) != crc(buf[:footerSumOff]) {
		return f, false
	}
	f = footer{
		count:      binary.LittleEndian.Uint64(buf[0:]),
		valueBytes: binary.LittleEndian.Uint64(buf[8:]),
		recordsEnd: binary.LittleEndian.Uint64(buf[16:]),
		fileNum:    base.FileNum(binary.LittleEndian.Uint64(buf[24:])),
	}
	// The footer must sit right after the records it describes, in the file
	// it names, and its totals must be possible for that many bytes. A
	// footer that verifies but fails these (say, the tail of a value that
	// happens to hold a footer) does not make the file finished.
	data := size - FooterLen - HeaderLen
	if (f.fileNum != fileNum && f.fileNum != Unnumbered) || f.recordsEnd != size-FooterLen ||
		f.valueBytes > data || f.count > data/minRecordLen {
		return footer{}, false
	}
	return f, true
}

// uvarintLen returns the encoded size of v as a uvarint.
func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// readUvarint decodes a canonical uvarint from the front of b: n is 0 when
// b ends inside it and negative when it overflows 64 bits or is not the
// shortest encoding of its value (so that every value has one encoding).
func readUvarint(b []byte) (v uint64, n int) {
	v, n = binary.Uvarint(b)
	if n > 1 && b[n-1] == 0 {
		return 0, -n
	}
	return v, n
}

// recordHeader is the decoded front of a record.
type recordHeader struct {
	keyLen, valueLen uint64
	// hdrLen is the length of the checksum and the two uvarints: the key
	// starts at this offset in the record.
	hdrLen int
}

// total returns the record's length; it does not overflow because both
// lengths were checked against a file offset by decodeRecordHeader.
func (h recordHeader) total() uint64 { return uint64(h.hdrLen) + h.keyLen + h.valueLen }

// decodeRecordHeader decodes the lengths at the front of rec, whose bytes
// run at most to limit bytes from the record's start. It returns what is
// wrong when they do not decode or do not fit.
func decodeRecordHeader(rec []byte, limit uint64) (h recordHeader, problem string) {
	if len(rec) < minRecordLen {
		return h, "record shorter than its header"
	}
	kl, n1 := readUvarint(rec[recordChecksumLen:])
	if n1 <= 0 {
		return h, "bad key length"
	}
	vl, n2 := readUvarint(rec[recordChecksumLen+n1:])
	if n2 <= 0 {
		return h, "bad value length"
	}
	h = recordHeader{keyLen: kl, valueLen: vl, hdrLen: recordChecksumLen + n1 + n2}
	if uint64(h.hdrLen) > limit {
		return h, "record header runs past the end of the records"
	}
	if rest := limit - uint64(h.hdrLen); kl > rest || vl > rest-kl {
		return h, fmt.Sprintf("record lengths (key %d, value %d) run past the end of the records", kl, vl)
	}
	if h.total() > MaxRecordLen {
		return h, fmt.Sprintf("record length %d exceeds the maximum %d", h.total(), uint64(MaxRecordLen))
	}
	return h, ""
}

// RecordBytes returns the bytes the records of a finished value log of
// size bytes take: the size less the header and footer.
func RecordBytes(size uint64) uint64 {
	if size < HeaderLen+FooterLen {
		return 0
	}
	return size - HeaderLen - FooterLen
}

// MetadataRecordBytes returns the bytes the records of value log m take:
// RecordBytes of its size for a finished file, and up to where its valid
// records end for one without a footer (see manifest.VlogMetadata).
func MetadataRecordBytes(m *manifest.VlogMetadata) uint64 {
	if m.RecordsEnd != 0 {
		return m.RecordsEnd - min(m.RecordsEnd, HeaderLen)
	}
	return RecordBytes(m.Size)
}
