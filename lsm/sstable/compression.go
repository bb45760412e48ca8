package sstable

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// Compression is the codec applied to each block. Its numeric value is the
// block-type byte stored in every block trailer: never renumber.
type Compression uint8

const (
	// NoCompression stores blocks as they are.
	NoCompression Compression = iota
	// SnappyCompression uses the Snappy block format.
	SnappyCompression
	// S2Compression uses the S2 block format (a faster Snappy extension).
	S2Compression
	// ZstdCompression uses Zstandard at its fastest level.
	ZstdCompression

	numCompressions
)

var compressionNames = [numCompressions]string{"none", "snappy", "s2", "zstd"}

// String returns the name ParseCompression accepts.
func (c Compression) String() string {
	if c < numCompressions {
		return compressionNames[c]
	}
	return fmt.Sprintf("compression(%d)", uint8(c))
}

// ParseCompression parses "none", "snappy", "s2" or "zstd".
func ParseCompression(s string) (Compression, error) {
	for i, n := range compressionNames {
		if n == s {
			return Compression(i), nil
		}
	}
	return 0, fmt.Errorf("sstable: unknown compression %q (want none, snappy, s2 or zstd)", s)
}

// MaxBlockLen bounds the decoded size of any block. Restart offsets are
// uint32, and a decoded length above this is treated as corruption rather
// than an allocation request.
const MaxBlockLen = 1<<31 - 1

var errTooLarge = errors.New("decoded length too large")

var (
	zstdOnce sync.Once
	zstdEnc  *zstd.Encoder
	zstdDec  *zstd.Decoder
	zstdErr  error
)

// zstdCodecs returns the process-wide zstd encoder and decoder. Both are safe
// for concurrent EncodeAll/DecodeAll calls.
func zstdCodecs() (*zstd.Encoder, *zstd.Decoder, error) {
	zstdOnce.Do(func() {
		zstdEnc, zstdErr = zstd.NewWriter(nil,
			zstd.WithEncoderLevel(zstd.SpeedFastest),
			zstd.WithZeroFrames(true))
		if zstdErr != nil {
			return
		}
		zstdDec, zstdErr = zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(0), // GOMAXPROCS concurrent DecodeAll calls
			zstd.WithDecodeAllCapLimit(true),
			zstd.WithDecoderMaxMemory(MaxBlockLen))
	})
	return zstdEnc, zstdDec, zstdErr
}

// compressBlock compresses src with c into dst[:0] and returns the bytes to
// store and the block type. When compression saves less than 12.5% the
// block is stored raw: the result is src itself with type NoCompression.
func compressBlock(dst, src []byte, c Compression) ([]byte, Compression, error) {
	var out []byte
	switch c {
	case NoCompression:
		return src, NoCompression, nil
	case SnappyCompression:
		out = s2.EncodeSnappy(dst, src)
	case S2Compression:
		out = s2.Encode(dst, src)
	case ZstdCompression:
		enc, _, err := zstdCodecs()
		if err != nil {
			return nil, 0, fmt.Errorf("sstable: zstd: %w", err)
		}
		out = binary.AppendUvarint(dst[:0], uint64(len(src)))
		out = enc.EncodeAll(src, out)
	default:
		return nil, 0, fmt.Errorf("sstable: unknown compression %d", c)
	}
	if len(out) > len(src)-len(src)/8 {
		return src, NoCompression, nil
	}
	return out, c, nil
}

// decompressedLen returns the decoded length of a block stored with type t.
func decompressedLen(src []byte, t Compression) (int, error) {
	switch t {
	case SnappyCompression, S2Compression:
		n, err := s2.DecodedLen(src)
		if err != nil {
			return 0, err
		}
		if n > MaxBlockLen {
			return 0, errTooLarge
		}
		return n, nil
	case ZstdCompression:
		v, n := binary.Uvarint(src)
		if n <= 0 {
			return 0, errors.New("bad zstd length prefix")
		}
		if v > MaxBlockLen {
			return 0, errTooLarge
		}
		return int(v), nil
	}
	return 0, fmt.Errorf("unknown block type %d", t)
}

// decompressBlock decodes src (stored with type t, not NoCompression) into
// dst, whose length must be the decoded length reported by decompressedLen.
// It returns dst filled, or an error if src does not decode to exactly
// len(dst) bytes.
func decompressBlock(dst, src []byte, t Compression) ([]byte, error) {
	n := len(dst)
	switch t {
	case SnappyCompression, S2Compression:
		out, err := s2.Decode(dst, src)
		if err != nil {
			return nil, err
		}
		if len(out) != n || (n > 0 && &out[0] != &dst[0]) {
			return nil, errors.New("decoded length mismatch")
		}
		return out, nil
	case ZstdCompression:
		_, hdr := binary.Uvarint(src)
		if hdr <= 0 {
			return nil, errors.New("bad zstd length prefix")
		}
		_, dec, err := zstdCodecs()
		if err != nil {
			return nil, err
		}
		out, err := dec.DecodeAll(src[hdr:], dst[:0:n])
		if err != nil {
			return nil, err
		}
		if len(out) != n || (n > 0 && &out[0] != &dst[0]) {
			return nil, fmt.Errorf("decoded %d bytes, header says %d", len(out), n)
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown block type %d", t)
}
