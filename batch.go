package strata

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/memtable"
	"github.com/strata-db/strata/vlog"
)

// A Batch is a group of writes applied atomically by DB.Apply: a reader sees
// all of them or none. A Batch is not safe for concurrent use.
//
// Its encoding is also the WAL record format:
//
//	+-------------+-----------+-----------------------------------------+
//	| seq (8, LE) | count (4) | entry ... entry                         |
//	+-------------+-----------+-----------------------------------------+
//	entry: kind (1) | uvarint key len | key | [uvarint value len | value]
//
// The value is present for SET (the value), SETM (entry metadata, an
// expiry, then the value: see base.EntryMeta), RANGEDEL (the exclusive end
// key) and VPTR/VPTRM (an encoded value pointer, after metadata for VPTRM:
// the engine writes these when values go to value logs at commit and when
// garbage collection repoints keys), absent for DEL. Entry i gets sequence
// number seq+i.
type Batch struct {
	repr      []byte
	count     uint32
	memSize   int    // arena bytes the batch needs in a memtable
	userBytes uint64 // key and value bytes, for write amplification
	// merges counts the merge operands (DB.Apply checks them only when
	// there are some).
	merges uint32
	// clock gives SetWithTTL the time (the DB's clock for a batch from
	// DB.NewBatch; time.Now otherwise).
	clock func() time.Time
}

const batchHeaderLen = 12

// maxBatchSize bounds a batch's encoding, which is also its WAL record.
// The memtable bounds it further: a batch whose entries need more than
// the largest memtable holds (memtable.MaxAvailable, counted by EntrySize,
// about twice the batch's bytes) is refused when it is applied, unless
// separation at commit leaves its large values in a value log.
const maxBatchSize = 3 << 30

// maxMemtableNeed is the most memtable space (memtable.EntrySize summed
// over its entries) a batch may need: what the largest memtable holds.
// Lowered by TestBatchTooLargeForMemtable.
var maxMemtableNeed = memtable.MaxAvailable

// ErrBatchTooLarge is returned when a batch would exceed 3 GiB, and by
// Apply for a batch whose entries need more than a memtable can hold.
var ErrBatchTooLarge = errors.New("strata: batch too large")

// NewBatch returns an empty batch.
func (d *DB) NewBatch() *Batch { return &Batch{clock: d.opts.Clock} }

func (b *Batch) init() {
	if len(b.repr) < batchHeaderLen {
		b.repr = append(b.repr[:0], make([]byte, batchHeaderLen)...)
	}
}

func (b *Batch) add(kind base.Kind, key, value []byte, hasValue bool) error {
	if err := checkEntrySize(kind, len(key), len(value)); err != nil {
		return err
	}
	b.init()
	if len(b.repr)+len(key)+len(value)+2*binary.MaxVarintLen32+1 > maxBatchSize {
		return ErrBatchTooLarge
	}
	b.repr = append(b.repr, byte(kind))
	b.repr = binary.AppendUvarint(b.repr, uint64(len(key)))
	b.repr = append(b.repr, key...)
	if hasValue {
		b.repr = binary.AppendUvarint(b.repr, uint64(len(value)))
		b.repr = append(b.repr, value...)
	}
	b.count++
	b.memSize += memtable.EntrySize(len(key), len(value))
	b.userBytes += uint64(len(key) + len(value))
	return nil
}

// addPointer adds key -> value pointer p, an entry only the engine writes.
// It counts no user bytes.
func (b *Batch) addPointer(key []byte, p vlog.Pointer) error {
	var buf [vlog.MaxPointerLen]byte
	user := b.userBytes
	err := b.add(base.KindValuePointer, key, p.Encode(buf[:0]), true)
	b.userBytes = user
	return err
}

// addPointerMeta adds key -> value pointer p with entry metadata m.
func (b *Batch) addPointerMeta(key []byte, p vlog.Pointer, m base.EntryMeta) error {
	var buf [vlog.MaxPointerLen + 20]byte
	user := b.userBytes
	err := b.add(base.KindValuePointerMeta, key, p.Encode(m.Append(buf[:0])), true)
	b.userBytes = user
	return err
}

// Set adds key=value.
func (b *Batch) Set(key, value []byte) error { return b.add(base.KindSet, key, value, true) }

// Delete adds a deletion of key.
func (b *Batch) Delete(key []byte) error { return b.add(base.KindDelete, key, nil, false) }

// DeleteRange adds a deletion of every key in [start, end). An empty range
// (start == end) is accepted and deletes nothing; start after end is
// refused, as NewIter and Compact refuse such bounds (often swapped
// arguments, which would otherwise delete nothing without a word).
func (b *Batch) DeleteRange(start, end []byte) error {
	if err := checkDeleteRange(start, end); err != nil {
		return err
	}
	return b.add(base.KindRangeDelete, start, end, true)
}

// checkDeleteRange refuses a range deletion whose start is after its end.
func checkDeleteRange(start, end []byte) error {
	if base.Compare(start, end) > 0 {
		return fmt.Errorf("strata: DeleteRange: start %q is after end %q", start, end)
	}
	return nil
}

// Len returns the number of operations in the batch.
func (b *Batch) Len() int { return int(b.count) }

// Size returns the encoded size of the batch in bytes.
func (b *Batch) Size() int { return len(b.repr) }

// Empty reports whether the batch holds no operations.
func (b *Batch) Empty() bool { return b.count == 0 }

// Reset empties the batch, keeping its buffer.
func (b *Batch) Reset() {
	b.repr = b.repr[:0]
	b.count = 0
	b.memSize = 0
	b.userBytes = 0
	b.merges = 0
}

func (b *Batch) setSeq(seq base.SeqNum) {
	binary.LittleEndian.PutUint64(b.repr[0:8], uint64(seq))
	binary.LittleEndian.PutUint32(b.repr[8:12], b.count)
}

// batchReader decodes a batch representation.
type batchReader struct {
	data  []byte
	seq   base.SeqNum
	count uint32
	read  uint32
}

// reader returns a reader of b's entries before b is sequenced (its header
// holds its count only once setSeq has run).
func (b *Batch) reader() (batchReader, error) {
	r, err := newBatchReader(b.repr)
	r.count = b.count
	return r, err
}

func newBatchReader(repr []byte) (batchReader, error) {
	if len(repr) < batchHeaderLen {
		return batchReader{}, fmt.Errorf("batch of %d bytes is shorter than its header", len(repr))
	}
	return batchReader{
		data:  repr[batchHeaderLen:],
		seq:   base.SeqNum(binary.LittleEndian.Uint64(repr[0:8])),
		count: binary.LittleEndian.Uint32(repr[8:12]),
	}, nil
}

func (r *batchReader) bytes() ([]byte, bool) {
	n, w := binary.Uvarint(r.data)
	if w <= 0 || n > uint64(len(r.data)-w) {
		return nil, false
	}
	v := r.data[w : w+int(n)]
	r.data = r.data[w+int(n):]
	return v, true
}

// next returns the next entry; ok is false at the end. A malformed batch
// returns an error.
func (r *batchReader) next() (kind base.Kind, key, value []byte, ok bool, err error) {
	if len(r.data) == 0 {
		if r.read != r.count {
			return 0, nil, nil, false, fmt.Errorf("batch holds %d entries, header says %d", r.read, r.count)
		}
		return 0, nil, nil, false, nil
	}
	kind = base.Kind(r.data[0])
	r.data = r.data[1:]
	var good bool
	if key, good = r.bytes(); !good {
		return 0, nil, nil, false, fmt.Errorf("batch entry %d: truncated key", r.read)
	}
	switch kind {
	case base.KindSet, base.KindRangeDelete, base.KindValuePointer, base.KindSetMeta, base.KindValuePointerMeta, base.KindMerge:
		if value, good = r.bytes(); !good {
			return 0, nil, nil, false, fmt.Errorf("batch entry %d: truncated value", r.read)
		}
	case base.KindDelete, base.KindIngestMark:
	default:
		return 0, nil, nil, false, fmt.Errorf("batch entry %d: unknown kind %d", r.read, kind)
	}
	r.read++
	if r.read > r.count {
		return 0, nil, nil, false, fmt.Errorf("batch holds more entries than its header's %d", r.count)
	}
	return kind, key, value, true, nil
}
