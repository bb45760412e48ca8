package record

import (
	"encoding/binary"

	"github.com/strata-db/strata/internal/crc32c"
)

// BlockSize is the size of a log block. No chunk crosses a block boundary.
const BlockSize = 32 << 10

// headerSize is the size of the header of the chunks the Writer writes
// (types 5..8): checksum (4), length (2), type (1), synced offset (8).
const headerSize = 15

// legacyHeaderSize is the size of a legacy chunk's header (types 1..4,
// written by earlier versions): checksum (4), length (2), type (1).
const legacyHeaderSize = 7

// Chunk types. Type 0 is invalid so that zeroed space never parses as a
// chunk. Types 1..4 are legacy chunks, still read; the Writer writes only
// types 5..8, whose header carries the synced offset.
const (
	invalidChunk      byte = 0
	legacyFullChunk   byte = 1
	legacyFirstChunk  byte = 2
	legacyMiddleChunk byte = 3
	legacyLastChunk   byte = 4
	fullChunk         byte = 5
	firstChunk        byte = 6
	middleChunk       byte = 7
	lastChunk         byte = 8
)

// chunkHeaderSize returns the header size of a chunk of type typ, which
// must be valid.
func chunkHeaderSize(typ byte) int {
	if typ > legacyLastChunk {
		return headerSize
	}
	return legacyHeaderSize
}

// maskDelta is LevelDB's checksum mask constant.
const maskDelta = 0xa282ead8

// chunkChecksum returns the masked CRC-32C of b, which is everything in a
// chunk after its length: the type byte, the synced offset (in chunks that
// carry one) and the payload, adjacent on disk.
func chunkChecksum(b []byte) uint32 {
	c := crc32c.Checksum(b)
	return ((c >> 15) | (c << 17)) + maskDelta
}

// chunkAt returns the size (header and payload) of the chunk that b begins
// with and, for a chunk that carries one, its synced offset; size is 0 if b
// does not begin with a chunk of a valid type, whose length fits in b and
// whose checksum verifies.
func chunkAt(b []byte) (size int, synced uint64) {
	if len(b) < legacyHeaderSize {
		return 0, 0
	}
	typ := b[6]
	if typ == invalidChunk || typ > lastChunk {
		return 0, 0
	}
	hs := chunkHeaderSize(typ)
	end := hs + int(binary.LittleEndian.Uint16(b[4:6]))
	if end > len(b) || chunkChecksum(b[6:end]) != binary.LittleEndian.Uint32(b[0:4]) {
		return 0, 0
	}
	if hs == headerSize {
		synced = binary.LittleEndian.Uint64(b[7:15])
	}
	return end, synced
}
