package merging

import "github.com/strata-db/strata/internal/base"

// BoundedIter shows the entries of an iterator whose user keys lie in
// [lower, upper) (nil: no bound) and nothing else: the reading of a
// virtual table, whose file holds keys outside its visible range.
type BoundedIter struct {
	iter         base.InternalIterator
	lower, upper []byte
	valid        bool
}

var _ base.InternalIterator = (*BoundedIter)(nil)

// NewBoundedIter returns iter restricted to [lower, upper). Closing it
// closes iter.
func NewBoundedIter(iter base.InternalIterator, lower, upper []byte) *BoundedIter {
	return &BoundedIter{iter: iter, lower: lower, upper: upper}
}

func (b *BoundedIter) belowUpper(ok bool) bool {
	b.valid = ok && (b.upper == nil || base.Compare(b.iter.Key().UserKey, b.upper) < 0)
	return b.valid
}

func (b *BoundedIter) atOrAboveLower(ok bool) bool {
	b.valid = ok && (b.lower == nil || base.Compare(b.iter.Key().UserKey, b.lower) >= 0)
	return b.valid
}

// SeekGE moves to the first entry at or after key within the bounds.
func (b *BoundedIter) SeekGE(key []byte) bool {
	if b.lower != nil && base.Compare(key, b.lower) < 0 {
		key = b.lower
	}
	return b.belowUpper(b.iter.SeekGE(key))
}

// SeekLT moves to the last entry before key within the bounds.
func (b *BoundedIter) SeekLT(key []byte) bool {
	if b.upper != nil && base.Compare(key, b.upper) > 0 {
		key = b.upper
	}
	return b.atOrAboveLower(b.iter.SeekLT(key))
}

// First moves to the first entry within the bounds.
func (b *BoundedIter) First() bool {
	if b.lower != nil {
		return b.belowUpper(b.iter.SeekGE(b.lower))
	}
	return b.belowUpper(b.iter.First())
}

// Last moves to the last entry within the bounds.
func (b *BoundedIter) Last() bool {
	if b.upper != nil {
		return b.atOrAboveLower(b.iter.SeekLT(b.upper))
	}
	return b.atOrAboveLower(b.iter.Last())
}

// Next moves to the next entry, if within the bounds. From before the
// lower bound (a Prev past the first entry) it moves to the first.
func (b *BoundedIter) Next() bool {
	ok := b.iter.Next()
	if ok && b.lower != nil && base.Compare(b.iter.Key().UserKey, b.lower) < 0 {
		return b.SeekGE(b.lower)
	}
	return b.belowUpper(ok)
}

// Prev moves to the previous entry, if within the bounds. From past the
// upper bound (a Next past the last entry) it moves to the last.
func (b *BoundedIter) Prev() bool {
	ok := b.iter.Prev()
	if ok && b.upper != nil && base.Compare(b.iter.Key().UserKey, b.upper) >= 0 {
		return b.SeekLT(b.upper)
	}
	return b.atOrAboveLower(ok)
}

// Valid reports whether the iterator is at an entry within the bounds.
func (b *BoundedIter) Valid() bool { return b.valid }

// Key returns the entry's key.
func (b *BoundedIter) Key() base.InternalKey { return b.iter.Key() }

// Value returns the entry's value.
func (b *BoundedIter) Value() []byte { return b.iter.Value() }

// Error returns the iterator's error.
func (b *BoundedIter) Error() error { return b.iter.Error() }

// Close closes the iterator.
func (b *BoundedIter) Close() error { return b.iter.Close() }
