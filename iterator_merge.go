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
	var existing []byte
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
		if k.Kind().IsPointer() {
			val, err := i.fetch(p)
			if err != nil {
				i.err, i.valid = err, false
				return false
			}
			existing = slices.Clone(val)
		} else {
			existing = slices.Clone(p)
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
	return i.setMerged(m, existing, ops)
}

// setMerged makes the iterator's current value the merge of existing and
// ops (oldest first).
func (i *Iterator) setMerged(m Merger, existing []byte, ops [][]byte) bool {
	val, err := m.Merge(i.key, existing, ops)
	if err != nil {
		i.err, i.valid = fmt.Errorf("strata: merge of key %q: %w", i.key, err), false
		return false
	}
	i.valBuf = append(i.valBuf[:0], val...)
	i.value, i.isPtr, i.valid = i.valBuf, false, true
	i.countRow()
	return true
}

// revMerge is the backward fold of one key's entries, oldest first: the
// value below the operands seen since (ptr: an unresolved pointer) and the
// operands, oldest first.
type revMerge struct {
	key  []byte
	base []byte
	ptr  bool
	has  bool // base holds a value (not a deletion or nothing)
	ops  [][]byte
}

func (r *revMerge) reset(key []byte) {
	r.key = append(r.key[:0], key...)
	r.base, r.ptr, r.has = r.base[:0], false, false
	r.ops = r.ops[:0]
}

// resolve returns the merged value of the key revMerge folded.
func (i *Iterator) resolveRevMerge(r *revMerge) bool {
	m := i.db.opts.Merger
	if m == nil {
		i.err, i.valid = errNoMergerFor(r.key), false
		return false
	}
	var existing []byte
	if r.has {
		existing = r.base
		if r.ptr {
			v, err := i.fetch(r.base)
			if err != nil {
				i.err, i.valid = err, false
				return false
			}
			existing = slices.Clone(v)
		}
	}
	return i.setMerged(m, existing, r.ops)
}
