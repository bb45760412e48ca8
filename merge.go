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
// use, deterministic, and must not retain their arguments. The database
// takes a panic in Merge for its error, and one in PartialMerge for a
// refusal (see guardMerger): a merger that fails on some operand fails
// the reads of that key, not the database.
type Merger interface {
	// Name identifies the merger. A database records the name of the
	// merger it is first opened with, and Open refuses another
	// (ErrMergerMismatch).
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

// OperandValidator is implemented by a Merger that can tell from an
// operand alone that its Merge would refuse it (ListAppend and Counter
// do). DB.Merge, and DB.Apply for a batch holding merge operands, call
// ValidateOperand on every operand before anything is written, and refuse
// the whole write with an error matching ErrInvalidOperand (and the
// validator's error) if it fails for one. ValidateOperand must be cheap,
// deterministic and safe for concurrent use, and must not retain its
// arguments.
//
// A Merger without it, or an operand written before it existed, may still
// put an operand Merge refuses in the database: flushes and compactions
// then keep that key's entries unfolded, and reads of the key fail with an
// error naming it, until a Set or Delete of the key shadows the operands.
type OperandValidator interface {
	ValidateOperand(key, operand []byte) error
}

// ErrInvalidOperand is returned (wrapped, with the key and the reason) by
// DB.Merge and DB.Apply when Options.Merger's ValidateOperand refuses an
// operand (see OperandValidator). Nothing of the write is applied.
var ErrInvalidOperand = errors.New("strata: invalid merge operand")

// validateOperand returns the error of m's validation of operand for key,
// nil if m has none or it accepts it.
func validateOperand(m Merger, key, operand []byte) error {
	v, ok := m.(OperandValidator)
	if !ok {
		return nil
	}
	if err := v.ValidateOperand(key, operand); err != nil {
		return fmt.Errorf("%w: key %q: %w", ErrInvalidOperand, key, err)
	}
	return nil
}

// checkMerges refuses a batch with merge operands when there is no Merger
// or the Merger's validation refuses one of them. Batches without merge
// operands pass at the cost of one comparison.
func (d *DB) checkMerges(b *Batch) error {
	if b.merges == 0 {
		return nil
	}
	m := d.opts.Merger
	if m == nil {
		return ErrNoMerger
	}
	if _, ok := m.(OperandValidator); !ok {
		return nil
	}
	r, err := b.reader()
	if err != nil {
		return err
	}
	for {
		kind, key, value, ok, err := r.next()
		if err != nil || !ok {
			return err
		}
		if kind == base.KindMerge {
			if err := validateOperand(m, key, value); err != nil {
				return err
			}
		}
	}
}

// ErrNoMerger is returned by Merge, by Apply of a batch holding merge
// operands, and by reads that meet a merge operand, when Options.Merger is
// not set.
var ErrNoMerger = errors.New("strata: merge operand without Options.Merger")

// errNoMergerFor is ErrNoMerger for a read of key (the sentinel's prefix
// once, then the key).
func errNoMergerFor(key []byte) error { return fmt.Errorf("%w: key %q", ErrNoMerger, key) }

// Merge records operand for key; reads see Options.Merger's combination of
// the key's value and its operands. An operand the Merger's validation
// refuses (see OperandValidator) is not written: the error matches
// ErrInvalidOperand.
func (d *DB) Merge(key, operand []byte, o *WriteOptions) error {
	if err := d.checkWritable(); err != nil {
		return err
	}
	if d.opts.Merger == nil {
		return ErrNoMerger
	}
	// Sizes first: the validator need not look at what cannot be written.
	if err := checkEntrySize(base.KindMerge, len(key), len(operand)); err != nil {
		return err
	}
	if err := validateOperand(d.opts.Merger, key, operand); err != nil {
		return err
	}
	return d.writeOne(base.KindMerge, key, operand, true, o)
}

// Merge adds a merge operand for key. The batch does not know the DB's
// Merger: DB.Apply checks the operands (see OperandValidator).
func (b *Batch) Merge(key, operand []byte) error {
	if err := b.add(base.KindMerge, key, operand, true); err != nil {
		return err
	}
	b.merges++
	return nil
}

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

// ValidateOperand accepts a sequence of elements (ListElement), none
// included.
func (listAppend) ValidateOperand(_, operand []byte) error {
	if n, ok := listElements(operand); !ok {
		return fmt.Errorf("list operand malformed at element %d", n)
	}
	return nil
}

// listElements walks v as a sequence of list elements: it returns their
// number, or false and the index of the first malformed one.
func listElements(v []byte) (int, bool) {
	n := 0
	for len(v) > 0 {
		l, w := binary.Uvarint(v)
		if w <= 0 || l > uint64(len(v)-w) {
			return n, false
		}
		v = v[w+int(l):]
		n++
	}
	return n, true
}

// ListElement encodes one list element for ListAppend (append it to a
// buffer to encode several).
func ListElement(dst, elem []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(elem)))
	return append(dst, elem...)
}

// DecodeList returns the elements of a ListAppend value; they alias v.
func DecodeList(v []byte) ([][]byte, error) {
	n, ok := listElements(v)
	if !ok {
		return nil, fmt.Errorf("strata: malformed list value at element %d", n)
	}
	if n == 0 {
		return nil, nil
	}
	out := make([][]byte, 0, n)
	for len(v) > 0 {
		l, w := binary.Uvarint(v)
		out = append(out, v[w:w+int(l)])
		v = v[w+int(l):]
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
	n, err := counterInt(v, "value")
	if err != nil {
		return 0, fmt.Errorf("strata: %w", err)
	}
	return n, nil
}

// counterInt decodes a Counter value or operand (what). Its error has no
// "strata:" prefix: the engine wraps it in one that has.
func counterInt(v []byte, what string) (int64, error) {
	if len(v) != 8 {
		return 0, fmt.Errorf("counter %s of %d bytes, want 8", what, len(v))
	}
	return int64(binary.LittleEndian.Uint64(v)), nil
}

// ValidateOperand accepts an 8-byte operand (CounterDelta).
func (counter) ValidateOperand(_, operand []byte) error {
	_, err := counterInt(operand, "operand")
	return err
}

func (counter) sum(existing []byte, operands [][]byte) ([]byte, error) {
	var n int64
	if existing != nil {
		v, err := counterInt(existing, "value")
		if err != nil {
			return nil, err
		}
		n = v
	}
	for _, op := range operands {
		v, err := counterInt(op, "operand")
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

// guardMerger returns m as the database calls it, or nil: a panic in the
// user's Merge becomes that merge's error, one in PartialMerge a refusal
// to combine, and one in ValidateOperand a refused operand. A merger that
// panics on some operand (a decoder indexing past its end) then fails the
// reads of that key, as a Merge error does, and flushes and compactions
// keep the key's entries unfolded, instead of killing the process from a
// background flush that every reopen would repeat while the operand sits
// in the WAL.
func guardMerger(m Merger) Merger {
	switch m.(type) {
	case nil:
		return nil
	case guardedMerger, guardedValidator:
		return m
	}
	g := guardedMerger{m}
	if v, ok := m.(OperandValidator); ok {
		return guardedValidator{g, v}
	}
	return g
}

type guardedMerger struct{ m Merger }

func (g guardedMerger) Name() string { return g.m.Name() }

func (g guardedMerger) Merge(key, existing []byte, operands [][]byte) (v []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, fmt.Errorf("strata: merger %q panicked: %v", g.m.Name(), r)
		}
	}()
	return g.m.Merge(key, existing, operands)
}

func (g guardedMerger) PartialMerge(key []byte, operands [][]byte) (op []byte, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			op, ok = nil, false
		}
	}()
	return g.m.PartialMerge(key, operands)
}

type guardedValidator struct {
	guardedMerger
	v OperandValidator
}

func (g guardedValidator) ValidateOperand(key, operand []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("strata: merger %q panicked validating an operand: %v", g.m.Name(), r)
		}
	}()
	return g.v.ValidateOperand(key, operand)
}
