package strata

import (
	"fmt"
	"slices"

	"github.com/strata-db/strata/internal/base"
)

// Merge operands in iterators. When the newest visible entry of a key is a
// merge operand, the iterator reads the key's older entries too, down to
// the value below the operands (a set, a pointer: its value is fetched),
// or a deletion, an expiry or a range deletion (no value), and returns
// Options.Merger's combination. Forward, the internal iterator is then
// past the key's entries (pastKey); backward, the entries arrive oldest
// first and the iterator folds them as they come (revMerge).

// mergeForward resolves the key at the internal iterator's position, whose
// newest visible entry k is a merge operand with value v.
func (i *Iterator) mergeForward(k base.InternalKey, v []byte) bool {
	m := i.db.opts.Merger
	if m == nil {
		i.err, i.valid = errNoMergerFor(k.UserKey), false
		return false
	}
	ops := append(i.mergeOps[:0], slices.Clone(v)) // newest first
	var (
		existing  []byte
		expiresAt int64 // existing's
	)
	for ok := i.iter.Next(); ok; ok = i.iter.Next() {
		k := i.iter.Key()
		if !base.Equal(k.UserKey, i.key) {
			i.pastKey = true
			break
		}
		if k.SeqNum() > i.snap {
			continue
		}
		if !i.checkKind(k) {
			return false
		}
		v := i.iter.Value()
		if i.deleted(k, v) {
			if i.err != nil {
				i.valid = false
				return false
			}
			break
		}
		if k.Kind() == base.KindMerge {
			ops = append(ops, slices.Clone(v))
			continue
		}
		p := payload(k, v)
		expiresAt = expiryOf(k, v)
		if k.Kind().IsPointer() {
			val, err := i.fetch(p)
			if err != nil {
				i.err, i.valid = err, false
				return false
			}
			existing = base.MergeBase(slices.Clone(val))
		} else {
			existing = base.MergeBase(slices.Clone(p))
		}
		break
	}
	if err := i.iter.Error(); err != nil {
		i.err, i.valid = err, false
		return false
	}
	if !i.iter.Valid() {
		i.pastKey = true
	}
	slices.Reverse(ops)
	i.mergeOps = ops
	return i.setMerged(m, existing, expiresAt, ops)
}

// setMerged makes the iterator's current value the merge of existing,
// which expires at expiresAt (0: never), and ops (oldest first).
func (i *Iterator) setMerged(m Merger, existing []byte, expiresAt int64, ops [][]byte) bool {
	val, err := m.Merge(i.key, existing, ops)
	if err != nil {
		i.err, i.valid = fmt.Errorf("strata: merge of key %q: %w", i.key, err), false
		return false
	}
	i.valBuf = append(i.valBuf[:0], val...)
	i.value, i.isPtr, i.valid = i.valBuf, false, true
	i.expiresAt, i.merged, i.below, i.operands = expiresAt, true, existing, ops
	i.countRow()
	return true
}

// layers describes the current key as it must be written elsewhere to
// read the same there, at every time of the clock (exportRange): its value
// expires at expiresAt (0: never), unless operands is set. Then the value
// is Merger's combination of below, which expires at expiresAt, and the
// operands (oldest first); once below has expired it is the operands'
// alone, so the merged value cannot stand for it. The slices are valid
// until the next positioning call.
func (i *Iterator) layers() (expiresAt int64, below []byte, operands [][]byte) {
	if !i.merged {
		return i.expiresAt, nil, nil
	}
	if i.expiresAt == 0 {
		// Merged onto a value that never expires, or onto none: the
		// merged value holds for good.
		return 0, nil, nil
	}
	return i.expiresAt, i.below, i.operands
}

// revMerge is the backward fold of one key's entries, oldest first: the
// value below the operands seen since (ptr: an unresolved pointer) and the
// operands, oldest first.
type revMerge struct {
	key       []byte
	base      []byte
	ptr       bool
	has       bool  // base holds a value (not a deletion or nothing)
	expiresAt int64 // base's expiry (0: never)
	ops       [][]byte
}

func (r *revMerge) reset(key []byte) {
	r.key = append(r.key[:0], key...)
	r.base, r.ptr, r.has, r.expiresAt = r.base[:0], false, false, 0
	r.ops = r.ops[:0]
}

// resolve returns the merged value of the key revMerge folded.
func (i *Iterator) resolveRevMerge(r *revMerge) bool {
	m := i.db.opts.Merger
	if m == nil {
		i.err, i.valid = errNoMergerFor(r.key), false
		return false
	}
	var (
		existing  []byte
		expiresAt int64
	)
	if r.has {
		existing, expiresAt = r.base, r.expiresAt
		if r.ptr {
			v, err := i.fetch(r.base)
			if err != nil {
				i.err, i.valid = err, false
				return false
			}
			existing = slices.Clone(v)
		}
		existing = base.MergeBase(existing)
	}
	return i.setMerged(m, existing, expiresAt, r.ops)
}
