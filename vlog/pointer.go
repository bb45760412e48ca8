package vlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/strata-db/strata/internal/base"
)

// Pointer locates one record in a value log. The tree stores it, encoded,
// as the value of a base.KindValuePointer entry.
type Pointer struct {
	FileNum  base.FileNum
	Offset   uint64 // offset of the record's first byte
	Length   uint32 // the record's total length in bytes
	ValueLen uint32 // the value's length (for garbage accounting and stats)
}

// MaxPointerLen is the largest encoded size of a pointer: two uvarints of
// up to 64 bits and two of up to 32 bits.
const MaxPointerLen = 2*binary.MaxVarintLen64 + 2*5

// Encode appends the compact encoding of p to dst (see doc.go):
//
//	uvarint(FileNum) uvarint(Offset) uvarint(ValueLen) uvarint(Length-ValueLen)
//
// The last field is the record's overhead (checksum, lengths and key),
// which is small, so a pointer to a 4 KiB value in a file under 256 MiB
// takes 8 or 9 bytes. A pointer whose Length is less than its ValueLen
// (which no record has) encodes to bytes that DecodePointer rejects.
func (p Pointer) Encode(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(p.FileNum))
	dst = binary.AppendUvarint(dst, p.Offset)
	dst = binary.AppendUvarint(dst, uint64(p.ValueLen))
	return binary.AppendUvarint(dst, uint64(p.Length-p.ValueLen))
}

// errBadPointer is wrapped by every DecodePointer error.
var errBadPointer = errors.New("vlog: bad value pointer")

// DecodePointer decodes a pointer encoded by Encode. It is strict: every
// field must be a shortest-form uvarint in range, b must hold nothing
// else, the offset must be past the file header, and Length must leave
// room for a record header around ValueLen bytes. Errors are plain (they
// wrap no corruption marker): the caller knows which file held the bytes
// and reports them with base.CorruptionErrorf.
func DecodePointer(b []byte) (Pointer, error) {
	var f [4]uint64
	rest := b
	for i := range f {
		v, n := readUvarint(rest)
		if n <= 0 {
			return Pointer{}, fmt.Errorf("%w: field %d of %s does not decode", errBadPointer, i, hexBytes(b))
		}
		f[i], rest = v, rest[n:]
	}
	if len(rest) != 0 {
		return Pointer{}, fmt.Errorf("%w: %d trailing bytes in %s", errBadPointer, len(rest), hexBytes(b))
	}
	fileNum, off, valueLen, overhead := f[0], f[1], f[2], f[3]
	switch {
	case off < HeaderLen:
		return Pointer{}, fmt.Errorf("%w: offset %d inside the file header", errBadPointer, off)
	case valueLen > math.MaxUint32 || overhead > math.MaxUint32-valueLen:
		return Pointer{}, fmt.Errorf("%w: record length %d+%d overflows 32 bits", errBadPointer, valueLen, overhead)
	case overhead < uint64(recordChecksumLen+1+uvarintLen(valueLen)):
		return Pointer{}, fmt.Errorf("%w: record length %d too small for a %d-byte value", errBadPointer, valueLen+overhead, valueLen)
	case off > math.MaxUint64-(valueLen+overhead):
		return Pointer{}, fmt.Errorf("%w: record at offset %d overflows", errBadPointer, off)
	}
	return Pointer{
		FileNum:  base.FileNum(fileNum),
		Offset:   off,
		Length:   uint32(valueLen + overhead),
		ValueLen: uint32(valueLen),
	}, nil
}

// End returns the offset just past the record.
func (p Pointer) End() uint64 { return p.Offset + uint64(p.Length) }

// String formats p as file:offset+length (value bytes), for example
// "000007.vlog:1234+4110 (value 4096)".
func (p Pointer) String() string {
	return fmt.Sprintf("%s:%d+%d (value %d)",
		base.MakeFilename(base.FileTypeVlog, p.FileNum), p.Offset, p.Length, p.ValueLen)
}

// hexBytes formats b for an error message, eliding all but its start when
// it is long.
func hexBytes(b []byte) string {
	if len(b) > 2*MaxPointerLen {
		return fmt.Sprintf("%x... (%d bytes)", b[:2*MaxPointerLen], len(b))
	}
	return fmt.Sprintf("%x", b)
}
