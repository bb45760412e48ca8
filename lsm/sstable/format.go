package sstable

import (
	"encoding/binary"
	"fmt"

	"github.com/cespare/xxhash/v2"
	"github.com/strata-db/strata/internal/base"
)

// blockHandle locates a block in the file: Length excludes the block's
// 5-byte trailer.
//
//	+-----------------+-----------------+
//	| offset (uvarint)| length (uvarint)|
//	+-----------------+-----------------+
type blockHandle struct {
	Offset, Length uint64
}

// maxHandleLen is the longest encoded handle (two 10-byte uvarints).
const maxHandleLen = 2 * binary.MaxVarintLen64

func (h blockHandle) append(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, h.Offset)
	return binary.AppendUvarint(dst, h.Length)
}

// decodeHandle decodes a handle from the front of src and returns the number
// of bytes it used; n <= 0 means src does not start with a valid handle.
func decodeHandle(src []byte) (h blockHandle, n int) {
	off, n1 := binary.Uvarint(src)
	if n1 <= 0 {
		return blockHandle{}, -1
	}
	length, n2 := binary.Uvarint(src[n1:])
	if n2 <= 0 {
		return blockHandle{}, -1
	}
	return blockHandle{Offset: off, Length: length}, n1 + n2
}

// blockTrailerLen is the size of the trailer after every stored block:
//
//	+-----------+-----------------------------------------------+
//	| type (1B) | checksum (4B LE) = uint32(xxhash64(block|type))|
//	+-----------+-----------------------------------------------+
const blockTrailerLen = 5

// checksum is the low 32 bits of xxhash64 over b.
func checksum(b []byte) uint32 { return uint32(xxhash.Sum64(b)) }

// Footer: the last footerLen bytes of every table.
//
//	+---------------------------+--------------------+---------+----------+---------+
//	| meta-index handle         | index handle       | version | checksum | magic   |
//	| uvarints, zero-padded     | uvarints, padded   | u32 LE  | u32 LE   | 8 bytes |
//	| to 20 bytes               | to 20 bytes        |         |          |         |
//	+---------------------------+--------------------+---------+----------+---------+
//	 0                           20                   40        44         48       56
//
// checksum = uint32(xxhash64(footer[0:44])).
const (
	footerLen    = 2*maxHandleLen + 4 + 4 + 8
	footerSumOff = 2*maxHandleLen + 4
	footerMagic  = "\x89STRATA\n"
	// formatVersion is the newest version written in footers. Version 2
	// tables may hold entries with metadata (kinds SETM and VPTRM: an
	// expiry ahead of the value or pointer); version 3 tables (those with
	// a learned index) have data blocks with interval checksums (see
	// block_writer.go); other tables are written as version 2. A reader
	// of version 3 reads 1 and 2 too.
	formatVersion = 3
	// minFormatVersion is the oldest version this build reads.
	minFormatVersion = 1
)

type footer struct {
	metaIndex, index blockHandle
	version          uint32
}

func (f footer) encode() []byte {
	buf := make([]byte, footerLen)
	f.metaIndex.append(buf[:0])
	f.index.append(buf[maxHandleLen:maxHandleLen])
	binary.LittleEndian.PutUint32(buf[2*maxHandleLen:], f.version)
	binary.LittleEndian.PutUint32(buf[footerSumOff:], checksum(buf[:footerSumOff]))
	copy(buf[footerSumOff+4:], footerMagic)
	return buf
}

// decodeFooter parses the footer of file, read at offset off. A footer
// that does not verify is an error matching base.ErrCorruption; a verified
// footer of a version newer than formatVersion is a *base.NewerFormatError
// (the table was written by a newer build, and is not damaged).
func decodeFooter(buf []byte, file string, off int64) (footer, error) {
	f, problem := parseFooter(buf)
	if problem != "" {
		return f, base.CorruptionErrorf(file, off, "footer: %s", problem)
	}
	if f.version > formatVersion {
		return f, &base.NewerFormatError{File: file, What: "table", Version: uint64(f.version), Newest: formatVersion}
	}
	return f, nil
}

// parseFooter parses a footer; the string names what is wrong when it
// does not verify. A verified footer of a newer version is returned
// without its handles: what they mean is the newer version's business.
func parseFooter(buf []byte) (f footer, problem string) {
	if len(buf) != footerLen {
		return f, "short footer"
	}
	if string(buf[footerSumOff+4:]) != footerMagic {
		return f, "bad magic number (not a table, or truncated)"
	}
	if got, want := binary.LittleEndian.Uint32(buf[footerSumOff:]), checksum(buf[:footerSumOff]); got != want {
		return f, "footer checksum mismatch"
	}
	f.version = binary.LittleEndian.Uint32(buf[2*maxHandleLen:])
	if f.version < minFormatVersion {
		return f, fmt.Sprintf("unknown format version %d (versions start at %d)", f.version, minFormatVersion)
	}
	if f.version > formatVersion {
		return f, ""
	}
	for i, h := range []*blockHandle{&f.metaIndex, &f.index} {
		field := buf[i*maxHandleLen : (i+1)*maxHandleLen]
		var n int
		*h, n = decodeHandle(field)
		if n <= 0 {
			return f, "bad block handle in footer"
		}
		for _, b := range field[n:] {
			if b != 0 {
				return f, "non-zero footer padding"
			}
		}
	}
	return f, ""
}
