package tool

import (
	"encoding/binary"
	"fmt"

	"github.com/strata-db/strata/internal/base"
)

// A WAL record is an encoded batch (see strata.Batch for the format):
//
//	seq (8, LE) | count (4, LE) | entries: kind (1) | uvarint key len | key | [uvarint value len | value]
//
// The value is present for every kind but DEL and INGEST (an Ingest's
// mark: one entry, with an empty key, per sequence number it gave its
// tables); SETM and VPTRM values start with entry metadata
// (base.EntryMeta).

const batchHeaderLen = 12

type batchEntry struct {
	kind       base.Kind
	key, value []byte
}

// decodeBatch decodes one WAL record.
func decodeBatch(rec []byte) (seq uint64, entries []batchEntry, err error) {
	if len(rec) < batchHeaderLen {
		return 0, nil, fmt.Errorf("batch of %d bytes is shorter than its header", len(rec))
	}
	seq = binary.LittleEndian.Uint64(rec[0:8])
	count := binary.LittleEndian.Uint32(rec[8:12])
	b := rec[batchHeaderLen:]
	field := func() ([]byte, bool) {
		n, w := binary.Uvarint(b)
		if w <= 0 || n > uint64(len(b)-w) {
			return nil, false
		}
		v := b[w : w+int(n)]
		b = b[w+int(n):]
		return v, true
	}
	for len(b) > 0 {
		e := batchEntry{kind: base.Kind(b[0])}
		b = b[1:]
		var ok bool
		if e.key, ok = field(); !ok {
			return seq, entries, fmt.Errorf("entry %d: truncated key", len(entries))
		}
		switch e.kind {
		case base.KindSet, base.KindRangeDelete, base.KindValuePointer, base.KindSetMeta, base.KindValuePointerMeta, base.KindMerge:
			if e.value, ok = field(); !ok {
				return seq, entries, fmt.Errorf("entry %d: truncated value", len(entries))
			}
		case base.KindDelete, base.KindIngestMark:
		default:
			return seq, entries, fmt.Errorf("entry %d: unknown kind %d", len(entries), e.kind)
		}
		entries = append(entries, e)
	}
	if uint32(len(entries)) != count {
		return seq, entries, fmt.Errorf("batch holds %d entries, its header says %d", len(entries), count)
	}
	return seq, entries, nil
}
