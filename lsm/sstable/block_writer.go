package sstable

import (
	"encoding/binary"
	"hash/crc32"
)

// Block format, shared by data, index and meta blocks:
//
//	+---------+---------+-----+---------+-----------+-----------+-----+--------------+
//	| entry 0 | entry 1 | ... | entry n | restart 0 | restart 1 | ... | num restarts |
//	|         |         |     |         | (u32 LE)  | (u32 LE)  |     | (u32 LE)     |
//	+---------+---------+-----+---------+-----------+-----------+-----+--------------+
//
// Each entry stores its key as a suffix of the previous entry's key:
//
//	+-----------------+-------------------+-----------------+---------------+-------+
//	| shared (uvarint)| unshared (uvarint)| value len (uvar)| key[shared:]  | value |
//	+-----------------+-------------------+-----------------+---------------+-------+
//
// Every restartInterval-th entry is a restart point: it has shared == 0 and
// its offset is listed in the restart array, so a reader can binary-search
// the restart points and decode forward from one. The restart array always
// holds at least one offset (0), even in an empty block. Data, index and
// range-del blocks hold encoded internal keys; the properties and meta-index
// blocks hold plain names.
//
// A data block of a table with a learned index (format version 3) also
// carries a checksum of each restart interval, so that a point lookup can
// read a window of the block in place and verify just the bytes it reads;
// the high bit of the count word says so:
//
//	+---------+-----------+-----+-----------+-------+-----+---------------------+
//	| entries | restart 0 | ... | restart n | sum 0 | ... | n | 1<<31 (u32 LE)  |
//	+---------+-----------+-----+-----------+-------+-----+---------------------+
//
// sum j = CRC-32 (IEEE) of the entry bytes [restart j, restart j+1) (the last
// interval ends where the restart array begins). The block's own checksum
// (in its trailer) still covers all of it.
type blockWriter struct {
	restartInterval int
	// sums: finish appends the interval checksums (data blocks of tables
	// with a learned index).
	sums     bool
	buf      []byte
	restarts []uint32
	counter  int // entries since the last restart point
	nEntries int
	prevKey  []byte
}

func newBlockWriter(restartInterval int) blockWriter {
	w := blockWriter{restartInterval: restartInterval}
	w.reset()
	return w
}

func (w *blockWriter) reset() {
	w.buf = w.buf[:0]
	w.restarts = append(w.restarts[:0], 0)
	w.counter = 0
	w.nEntries = 0
	w.prevKey = w.prevKey[:0]
}

func (w *blockWriter) empty() bool { return w.nEntries == 0 }

// add appends an entry. Keys must be added in the block's order.
func (w *blockWriter) add(key, value []byte) {
	shared := 0
	if w.counter >= w.restartInterval {
		w.restarts = append(w.restarts, uint32(len(w.buf)))
		w.counter = 0
	} else {
		n := min(len(key), len(w.prevKey))
		for shared < n && key[shared] == w.prevKey[shared] {
			shared++
		}
	}
	w.buf = binary.AppendUvarint(w.buf, uint64(shared))
	w.buf = binary.AppendUvarint(w.buf, uint64(len(key)-shared))
	w.buf = binary.AppendUvarint(w.buf, uint64(len(value)))
	w.buf = append(w.buf, key[shared:]...)
	w.buf = append(w.buf, value...)
	w.prevKey = append(w.prevKey[:0], key...)
	w.counter++
	w.nEntries++
}

// estimatedSize is the size finish would return now.
func (w *blockWriter) estimatedSize() int {
	n := len(w.buf) + 4*len(w.restarts) + 4
	if w.sums {
		n += 4 * len(w.restarts)
	}
	return n
}

// finish appends the restart array (and the interval checksums) and
// returns the block. The result is valid until the next reset or add.
func (w *blockWriter) finish() []byte {
	end := len(w.buf)
	for _, r := range w.restarts {
		w.buf = binary.LittleEndian.AppendUint32(w.buf, r)
	}
	count := uint32(len(w.restarts))
	if w.sums {
		for j, r := range w.restarts {
			next := end
			if j+1 < len(w.restarts) {
				next = int(w.restarts[j+1])
			}
			w.buf = binary.LittleEndian.AppendUint32(w.buf, intervalSum(w.buf[r:next]))
		}
		count |= sumsFlag
	}
	w.buf = binary.LittleEndian.AppendUint32(w.buf, count)
	return w.buf
}

// sumsFlag marks, in a block's count word, a block that carries interval
// checksums.
const sumsFlag = 1 << 31

// intervalSum is the checksum of one restart interval's entry bytes:
// CRC-32 with the IEEE polynomial, which Go computes by carry-less
// multiplication 3-4x faster than CRC-32C on the few hundred bytes of an
// interval (a point lookup verifies one or two).
func intervalSum(b []byte) uint32 { return crc32.ChecksumIEEE(b) }
