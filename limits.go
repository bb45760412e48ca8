package strata

import (
	"errors"
	"fmt"

	"github.com/strata-db/strata/internal/base"
)

// The largest key and value. Every write that takes a key or a value
// refuses a larger one with an error matching ErrTooLarge: DB.Set,
// SetWithTTL, Merge (the operand is a value), Delete and DeleteRange (both
// bounds are keys), the same Batch methods, and TableWriter.Set and
// Delete for DB.Ingest.
//
// The formats allow more; the limits leave each of them room for the
// largest key with the largest value and their overhead:
//
//	format                   what bounds one key + value
//	batch (the WAL record)   3 GiB (maxBatchSize): lengths are uvarints
//	memtable                 a node of about key + value + 200 bytes in an
//	                         arena of 32-bit offsets: EntrySize (twice the
//	                         node) at most memtable.MaxAvailable, ~4 GiB
//	sstable data block       decoded at most 2 GiB - 1 (sstable.MaxBlockLen):
//	                         a value kept in the tree is in one block
//	value-log record         at most 4 GiB - 1 (vlog.MaxRecordLen): the
//	                         pointer holds its length in 32 bits
//
// so the binding one is the data block, at 2 GiB for both together, which
// is also the memtable's bound for one entry. A key of MaxKeySize bytes
// holds any Kafka message key (1 MiB by default for the whole message),
// and keys are copied into index blocks, the manifest's table bounds and
// every iterator, so they are kept far smaller than values. A batch holds
// several entries: one of at most 3 GiB whose memtable entries need more
// than a memtable can hold is refused with ErrBatchTooLarge (see the
// commit leader). A value a merge builds is not bounded here; a Merger
// whose results may pass MaxValueSize must keep them below 2 GiB.
const (
	// MaxKeySize is the largest key, in bytes: 1 MiB.
	MaxKeySize = 1 << 20
	// MaxValueSize is the largest value (or merge operand), in bytes:
	// 1 GiB.
	MaxValueSize = 1 << 30
)

// ErrTooLarge is returned by writes given a key larger than MaxKeySize or
// a value larger than MaxValueSize; nothing is written then.
var ErrTooLarge = errors.New("strata: key or value too large")

// maxKeySize and maxValueSize are the limits the checks apply: the
// constants, lowered by tests (TestSizeLimitsWritePath) that write values
// past the limit without allocating gigabytes.
var (
	maxKeySize   = MaxKeySize
	maxValueSize = MaxValueSize
)

// checkKeySize refuses a key longer than maxKeySize.
func checkKeySize(what string, n int) error {
	if n > maxKeySize {
		return fmt.Errorf("%w: %s of %d bytes, MaxKeySize is %d", ErrTooLarge, what, n, maxKeySize)
	}
	return nil
}

// checkValueSize refuses a value longer than maxValueSize.
func checkValueSize(what string, n int) error {
	if n > maxValueSize {
		return fmt.Errorf("%w: %s of %d bytes, MaxValueSize is %d", ErrTooLarge, what, n, maxValueSize)
	}
	return nil
}

// checkEntrySize refuses an entry of kind whose key or value is too
// large. The value of a range deletion is its end key; the values of the
// kinds only the engine writes (pointers, and a set with metadata, whose
// value SetWithTTL checks before adding the metadata) are not checked.
func checkEntrySize(kind base.Kind, keyLen, valueLen int) error {
	switch kind {
	case base.KindRangeDelete:
		if err := checkKeySize("start key", keyLen); err != nil {
			return err
		}
		return checkKeySize("end key", valueLen)
	case base.KindSet, base.KindMerge:
		if err := checkKeySize("key", keyLen); err != nil {
			return err
		}
		return checkValueSize("value", valueLen)
	}
	return checkKeySize("key", keyLen)
}
