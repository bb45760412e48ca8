package compaction

import (
	"cmp"
	"encoding/binary"
	"errors"
	"slices"

	"github.com/strata-db/strata/internal/base"
)

// VlogRefsBlock is the name of the SSTable meta block that records, per
// value-log file, how much of it the table's value pointers reference.
// Garbage collection builds its reverse index (value log -> tables still
// pointing into it) from these blocks.
//
//	+----------------+-----------------------------------------------+
//	| uvarint count  | count x (uvarint file number, uvarint bytes,  |
//	|                |          uvarint pointers), by file number    |
//	+----------------+-----------------------------------------------+
//
// bytes counts whole records (header, key and value), so that a file's
// referenced bytes and its size are in the same unit.
const VlogRefsBlock = "strata.vlog-refs"

// VlogRef is what one table references in one value log.
type VlogRef struct {
	FileNum  base.FileNum
	Bytes    uint64
	Pointers uint64
}

// EncodeVlogRefs encodes refs (any order) as a VlogRefsBlock.
func EncodeVlogRefs(refs map[base.FileNum]VlogRef) []byte {
	sorted := make([]VlogRef, 0, len(refs))
	for _, r := range refs {
		sorted = append(sorted, r)
	}
	slices.SortFunc(sorted, func(a, b VlogRef) int { return cmp.Compare(a.FileNum, b.FileNum) })
	out := binary.AppendUvarint(nil, uint64(len(sorted)))
	for _, r := range sorted {
		out = binary.AppendUvarint(out, uint64(r.FileNum))
		out = binary.AppendUvarint(out, r.Bytes)
		out = binary.AppendUvarint(out, r.Pointers)
	}
	return out
}

var errBadRefs = errors.New("malformed value-log references block")

// DecodeVlogRefs decodes a VlogRefsBlock. The error is plain; callers mark
// it as corruption of the table it came from.
func DecodeVlogRefs(b []byte) ([]VlogRef, error) {
	next := func() (uint64, bool) {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, false
		}
		b = b[n:]
		return v, true
	}
	count, ok := next()
	if !ok || count > uint64(len(b)) {
		return nil, errBadRefs
	}
	out := make([]VlogRef, 0, count)
	for i := uint64(0); i < count; i++ {
		var v [3]uint64
		for j := range v {
			if v[j], ok = next(); !ok {
				return nil, errBadRefs
			}
		}
		r := VlogRef{FileNum: base.FileNum(v[0]), Bytes: v[1], Pointers: v[2]}
		if len(out) > 0 && out[len(out)-1].FileNum >= r.FileNum {
			return nil, errBadRefs
		}
		out = append(out, r)
	}
	if len(b) != 0 {
		return nil, errBadRefs
	}
	return out, nil
}
