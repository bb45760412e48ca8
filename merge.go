package strata

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/strata-db/strata/internal/base"
)

// Merge operands. DB.Merge (and Batch.Merge) records an operand for a key
// without reading its value; Options.Merger combines a key's operands with
// its value when the key is read, and flushes and compactions fold them
// ahead of time: into the value when it is in the same snapshot stripe,
// into one operand (PartialMerge) otherwise, never across an open
// snapshot's boundary. A value a merge produces at or above the separation
// threshold goes to a value log. Operands themselves stay in the tree, and
// a merged value carries no TTL.

// Merger combines merge operands. Its methods must be safe for concurrent
// use, deterministic, and must not retain their arguments.
type Merger interface {
	// Name identifies the merger; a database is meant to be reopened with
	// the same one.
	Name() string
	// Merge returns the value of key given its value before the operands
	// (existing; nil when the key had none: never written, deleted or
	// expired) and the operands, oldest first.
	Merge(key, existing []byte, operands [][]byte) ([]byte, error)
	// PartialMerge combines operands, oldest first, into one operand
	// without knowing the value below them; ok is false when it cannot,
	// and the operands are then kept as they are.
	PartialMerge(key []byte, operands [][]byte) (operand []byte, ok bool)
}

// ErrNoMerger is returned by Merge, and by reads that meet a merge
// operand, when Options.Merger is not set.
var ErrNoMerger = errors.New("strata: merge operand without Options.Merger")

// errNoMergerFor is ErrNoMerger for a read of key (the sentinel's prefix
// once, then the key).
func errNoMergerFor(key []byte) error { return fmt.Errorf("%w: key %q", ErrNoMerger, key) }

// Merge records operand for key; reads see Options.Merger's combination of
// the key's value and its operands.
func (d *DB) Merge(key, operand []byte, o *WriteOptions) error {
	if err := d.checkWritable(); err != nil {
		return err
	}
	if d.opts.Merger == nil {
		return ErrNoMerger
	}
	return d.writeOne(base.KindMerge, key, operand, true, o)
}

// Merge adds a merge operand for key.
func (b *Batch) Merge(key, operand []byte) error { return b.add(base.KindMerge, key, operand, true) }

// ListAppend is a Merger for list state: a value is a sequence of
// elements, each a uvarint length and its bytes; an operand is a sequence
// of elements in the same encoding (ListElement builds one), appended to
// the list. Appending never reads the list.
var ListAppend Merger = listAppend{}

type listAppend struct{}

func (listAppend) Name() string { return "strata.ListAppend" }

func (listAppend) Merge(_, existing []byte, operands [][]byte) ([]byte, error) {
	n := len(existing)
	for _, op := range operands {
		n += len(op)
	}
	out := make([]byte, 0, n)
	out = append(out, existing...)
	for _, op := range operands {
		out = append(out, op...)
	}
	return out, nil
}

func (listAppend) PartialMerge(_ []byte, operands [][]byte) ([]byte, bool) {
	out, _ := listAppend{}.Merge(nil, nil, operands)
	return out, true
}

// ListElement encodes one list element for ListAppend (append it to a
// buffer to encode several).
func ListElement(dst, elem []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(elem)))
	return append(dst, elem...)
}

// DecodeList returns the elements of a ListAppend value; they alias v.
func DecodeList(v []byte) ([][]byte, error) {
	var out [][]byte
	for len(v) > 0 {
		n, w := binary.Uvarint(v)
		if w <= 0 || n > uint64(len(v)-w) {
			return nil, fmt.Errorf("strata: malformed list value at element %d", len(out))
		}
		out = append(out, v[w:w+int(n)])
		v = v[w+int(n):]
	}
	return out, nil
}

// Counter is a Merger for counters: a value and an operand are 8-byte
// little-endian int64s (CounterDelta builds an operand); merging adds them.
var Counter Merger = counter{}

type counter struct{}

func (counter) Name() string { return "strata.Counter" }

// CounterDelta encodes n as a Counter operand (or value).
func CounterDelta(n int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(n)) }

// CounterValue decodes a Counter value.
func CounterValue(v []byte) (int64, error) {
	if len(v) != 8 {
		return 0, fmt.Errorf("strata: counter value of %d bytes, want 8", len(v))
	}
	return int64(binary.LittleEndian.Uint64(v)), nil
}

func (counter) sum(existing []byte, operands [][]byte) ([]byte, error) {
	var n int64
	if existing != nil {
		v, err := CounterValue(existing)
		if err != nil {
			return nil, err
		}
		n = v
	}
	for _, op := range operands {
		v, err := CounterValue(op)
		if err != nil {
			return nil, err
		}
		n += v
	}
	return CounterDelta(n), nil
}

func (c counter) Merge(_, existing []byte, operands [][]byte) ([]byte, error) {
	return c.sum(existing, operands)
}

func (c counter) PartialMerge(_ []byte, operands [][]byte) ([]byte, bool) {
	v, err := c.sum(nil, operands)
	return v, err == nil
}
