package record

import "hash/crc32"

// BlockSize is the size of a log block. No chunk crosses a block boundary.
const BlockSize = 32 << 10

// headerSize is the size of a chunk header: checksum (4), length (2),
// type (1).
const headerSize = 7

// Chunk types. Type 0 is invalid so that zeroed space never parses as a
// chunk.
const (
	invalidChunk byte = 0
	fullChunk    byte = 1
	firstChunk   byte = 2
	middleChunk  byte = 3
	lastChunk    byte = 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// maskDelta is LevelDB's checksum mask constant.
const maskDelta = 0xa282ead8

// chunkChecksum returns the masked CRC-32C of typeAndPayload, which is the
// chunk's type byte followed by its payload (they are adjacent on disk).
func chunkChecksum(typeAndPayload []byte) uint32 {
	c := crc32.Checksum(typeAndPayload, castagnoli)
	return ((c >> 15) | (c << 17)) + maskDelta
}
