package sstable

import (
	"bytes"

	"github.com/strata-db/strata/internal/base"
)

// Names of the built-in meta blocks.
const (
	// MetaFilterName is the meta block holding the Bloom filter.
	MetaFilterName = "strata.filter.bloom"
	// MetaPropertiesName is the meta block holding the Properties.
	MetaPropertiesName = "strata.properties"
	// MetaRangeDelName is the meta block holding the range tombstones.
	MetaRangeDelName = "strata.rangedel"
)

func isBuiltinMeta(name string) bool {
	return name == MetaFilterName || name == MetaPropertiesName || name == MetaRangeDelName || name == MetaLearnedName
}

// The meta-index block (restart interval 1) maps each meta block's name to
// its handle, sorted by name:
//
//	+---------------------+-------------------------------+
//	| key: name (bytes)   | value: block handle (uvarints)|
//	+---------------------+-------------------------------+
type metaIndex []metaEntry

type metaEntry struct {
	name   string
	handle blockHandle
}

func (m metaIndex) lookup(name string) (blockHandle, bool) {
	for _, e := range m {
		if e.name == name {
			return e.handle, true
		}
	}
	return blockHandle{}, false
}

func (m metaIndex) encode() []byte {
	w := newBlockWriter(1)
	var buf []byte
	for _, e := range m {
		buf = e.handle.append(buf[:0])
		w.add([]byte(e.name), buf)
	}
	return w.finish()
}

func decodeMetaIndex(b []byte, file string, off uint64) (metaIndex, error) {
	var m metaIndex
	err := forEachEntry(b, file, off, nil, func(k, v []byte) error {
		h, n := decodeHandle(v)
		if n <= 0 || n != len(v) {
			return base.CorruptionErrorf(file, int64(off), "meta-index entry %q: bad block handle", k)
		}
		m = append(m, metaEntry{name: string(k), handle: h})
		return nil
	})
	return m, err
}

// The range-del block (restart interval 16) holds the table's range
// tombstones in internal-key order of their start:
//
//	+-------------------------------------------+---------------------+
//	| key: start + trailer(seq, RANGEDEL) (LE)  | value: end (bytes)  |
//	+-------------------------------------------+---------------------+
//
// Keys are strictly increasing: start ascending, then seq descending.
func decodeRangeDels(b []byte, file string, off uint64) ([]base.RangeTombstone, error) {
	var ts []base.RangeTombstone
	err := forEachEntry(b, file, off, base.CompareEncoded, func(k, v []byte) error {
		ik, ok := base.DecodeInternalKey(k)
		if !ok || ik.Kind() != base.KindRangeDelete {
			return base.CorruptionErrorf(file, int64(off), "range-del block: bad key %x", k)
		}
		if bytes.Compare(ik.UserKey, v) >= 0 {
			return base.CorruptionErrorf(file, int64(off), "range-del block: empty range [%q, %q)", ik.UserKey, v)
		}
		// Keys may alias the iterator's buffer: copy both bounds.
		kv := make([]byte, 0, len(ik.UserKey)+len(v))
		kv = append(append(kv, ik.UserKey...), v...)
		n := len(ik.UserKey)
		ts = append(ts, base.RangeTombstone{Start: kv[:n:n], End: kv[n:], Seq: ik.SeqNum()})
		return nil
	})
	return ts, err
}
