package sstable

import (
	"encoding/binary"

	"github.com/strata-db/strata/internal/base"
)

// Names a public caller can use for the types this package's signatures
// take from internal/base (operators' tools read tables through them).
type (
	// FileNum is a file's number.
	FileNum = base.FileNum
	// SeqNum is a sequence number.
	SeqNum = base.SeqNum
	// Kind is an entry's kind (set, delete, value pointer, ...).
	Kind = base.Kind
	// InternalKey is a user key with its sequence number and kind.
	InternalKey = base.InternalKey
	// InternalIterator is what NewIter returns.
	InternalIterator = base.InternalIterator
	// RangeTombstone is a range deletion.
	RangeTombstone = base.RangeTombstone
)

// BlockInfo locates one block of a table, for tools that verify or print
// a table block by block.
type BlockInfo struct {
	// Type is "data", "index", "meta-index" or a meta block's name.
	Type string
	// Offset and Length locate the block, trailer excluded (Length + 5
	// bytes on disk).
	Offset, Length uint64
}

// Layout lists every block of the table, data blocks first, then the meta
// blocks, the index and the meta-index, in file order; the footer is the
// last FooterLen bytes.
func (r *Reader) Layout() ([]BlockInfo, error) {
	buf := make([]byte, footerLen)
	if err := r.readAt(buf, r.dataEnd); err != nil {
		return nil, err
	}
	ft, err := decodeFooter(buf, r.file, int64(r.dataEnd))
	if err != nil {
		return nil, err
	}
	var out []BlockInfo
	for _, e := range r.index.entries {
		out = append(out, BlockInfo{Type: "data", Offset: e.handle.Offset, Length: e.handle.Length})
	}
	var tail []BlockInfo
	for _, m := range r.meta {
		tail = append(tail, BlockInfo{Type: m.name, Offset: m.handle.Offset, Length: m.handle.Length})
	}
	tail = append(tail,
		BlockInfo{Type: "index", Offset: ft.index.Offset, Length: ft.index.Length},
		BlockInfo{Type: "meta-index", Offset: ft.metaIndex.Offset, Length: ft.metaIndex.Length})
	for i := 1; i < len(tail); i++ { // a few blocks: insertion sort by offset
		for j := i; j > 0 && tail[j].Offset < tail[j-1].Offset; j-- {
			tail[j], tail[j-1] = tail[j-1], tail[j]
		}
	}
	return append(out, tail...), nil
}

// FooterLen is the size in bytes of a table's footer.
const FooterLen = footerLen

// ReadBlock reads block b, verifies its checksum and decompresses it. It
// returns the decoded bytes and the compression the block was stored
// with; a checksum mismatch is an error matching base.ErrCorruption that
// names the file and the block's offset.
func (r *Reader) ReadBlock(b BlockInfo) ([]byte, Compression, error) {
	h := blockHandle{Offset: b.Offset, Length: b.Length}
	data, err := r.readBlock(h, nil)
	if err != nil {
		return nil, 0, err
	}
	var t [1]byte
	if err := r.readAt(t[:], b.Offset+b.Length); err != nil {
		return nil, 0, err
	}
	return data, Compression(t[0]), nil
}

// BlockEntries calls fn for each entry of a decoded data or index block
// (keys are encoded internal keys: see base.DecodeInternalKey), checking
// that the keys strictly increase. k and v are valid during the call only.
func (r *Reader) BlockEntries(b BlockInfo, data []byte, fn func(k, v []byte) error) error {
	return forEachEntry(data, r.file, b.Offset, base.CompareEncoded, fn)
}

// BlockRestarts returns the number of restart points of a decoded block.
func BlockRestarts(data []byte) int {
	if len(data) < 4 {
		return 0
	}
	return int(binary.LittleEndian.Uint32(data[len(data)-4:]) &^ sumsFlag)
}
