package vlog

import (
	"cmp"
	"encoding/binary"
	"errors"
	"slices"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
)

// RefsBlock is the name of the SSTable meta block that records, per value
// log, how much of it the table's value pointers reference. The manifest
// records the same references with the table (manifest.FileMetadata's
// VlogRefs), which is where garbage collection reads them; the block keeps
// a table self-describing (for tools, and for databases whose manifest
// predates the manifest field).
//
//	+----------------+-----------------------------------------------+
//	| uvarint count  | count x (uvarint file number, uvarint bytes,  |
//	|                |          uvarint pointers), by file number    |
//	+----------------+-----------------------------------------------+
//
// bytes counts whole records (header, key and value), so that a file's
// referenced bytes and its size are in the same unit.
const RefsBlock = "strata.vlog-refs"

// RefCounter accumulates the value-log references of one table as its
// pointers are written. The zero value is ready to use.
type RefCounter struct {
	refs map[base.FileNum]manifest.VlogRef
}

// Add counts pointer p.
func (c *RefCounter) Add(p Pointer) {
	if c.refs == nil {
		c.refs = make(map[base.FileNum]manifest.VlogRef)
	}
	r := c.refs[p.FileNum]
	r.FileNum = p.FileNum
	r.Bytes += uint64(p.Length)
	r.Pointers++
	c.refs[p.FileNum] = r
}

// Take returns the references counted so far, by file number, and resets
// the counter.
func (c *RefCounter) Take() []manifest.VlogRef {
	out := make([]manifest.VlogRef, 0, len(c.refs))
	for _, r := range c.refs {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b manifest.VlogRef) int { return cmp.Compare(a.FileNum, b.FileNum) })
	clear(c.refs)
	return out
}

// EncodeRefs encodes refs, sorted by file number, as a RefsBlock.
func EncodeRefs(refs []manifest.VlogRef) []byte {
	out := binary.AppendUvarint(nil, uint64(len(refs)))
	for _, r := range refs {
		out = binary.AppendUvarint(out, uint64(r.FileNum))
		out = binary.AppendUvarint(out, r.Bytes)
		out = binary.AppendUvarint(out, r.Pointers)
	}
	return out
}

var errBadRefs = errors.New("malformed value-log references block")

// DecodeRefs decodes a RefsBlock. The error is plain; callers mark it as
// corruption of the table it came from.
func DecodeRefs(b []byte) ([]manifest.VlogRef, error) {
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
	out := make([]manifest.VlogRef, 0, count)
	for i := uint64(0); i < count; i++ {
		var v [3]uint64
		for j := range v {
			if v[j], ok = next(); !ok {
				return nil, errBadRefs
			}
		}
		r := manifest.VlogRef{FileNum: base.FileNum(v[0]), Bytes: v[1], Pointers: v[2]}
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
