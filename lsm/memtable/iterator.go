package memtable

import (
	"math"

	"github.com/strata-db/strata/internal/base"
)

// seekTrailer is the trailer of a search key that sorts before every
// version of its user key (no valid kind reaches 0xff).
const seekTrailer = math.MaxUint64

// NewIter returns an iterator over the point entries, in internal-key
// order. It needs no lock and may live while Add runs: entries added after
// it was created may or may not be seen, but every position it reports is
// a complete entry and the order is always correct.
//
// A new iterator is positioned before the first entry: Next moves to the
// first entry. After Next runs off the end, Prev moves to the last entry;
// after Prev runs off the start, Next moves to the first.
func (m *MemTable) NewIter() base.InternalIterator {
	return &iterator{list: &m.points, nd: m.points.head}
}

// iterator walks a skiplist at level 0. nd is head (before the first
// entry), 0 (after the last) or a node.
type iterator struct {
	list *skiplist
	nd   uint32
}

var _ base.InternalIterator = (*iterator)(nil)

// SeekGE moves to the first entry whose user key is >= key (its newest
// version).
func (it *iterator) SeekGE(key []byte) bool {
	_, it.nd = it.list.seekGE(key, KeyPrefix(key), seekTrailer)
	return it.nd != 0
}

// SeekLT moves to the last entry whose user key is < key (its oldest
// version).
func (it *iterator) SeekLT(key []byte) bool {
	it.nd, _ = it.list.seekGE(key, KeyPrefix(key), seekTrailer)
	return it.Valid()
}

// First moves to the first entry.
func (it *iterator) First() bool {
	it.nd = it.list.a.next(it.list.head, 0)
	return it.nd != 0
}

// Last moves to the last entry.
func (it *iterator) Last() bool {
	it.nd = it.list.last()
	return it.Valid()
}

// Next moves to the following entry.
func (it *iterator) Next() bool {
	if it.nd == 0 {
		return false
	}
	it.nd = it.list.a.next(it.nd, 0)
	return it.nd != 0
}

// Prev moves to the preceding entry.
func (it *iterator) Prev() bool {
	switch it.nd {
	case it.list.head:
		return false
	case 0:
		return it.Last()
	}
	it.nd = it.prevOf(it.nd)
	return it.Valid()
}

// prevOf returns the true predecessor of nd at level 0. The back link may
// lag behind concurrent inserts; follow next from it until just before nd,
// so that Prev returns the same entries Next would, in reverse.
func (it *iterator) prevOf(nd uint32) uint32 {
	a := it.list.a
	p := a.prev(nd)
	for {
		n := a.next(p, 0)
		if n == nd || n == 0 {
			return p
		}
		p = n
	}
}

// Valid reports whether the iterator is at an entry.
func (it *iterator) Valid() bool { return it.nd != 0 && it.nd != it.list.head }

// Key returns the current entry's key. UserKey aliases the arena; its
// capacity equals its length. The zero key when not Valid.
func (it *iterator) Key() base.InternalKey {
	if !it.Valid() {
		return base.InternalKey{}
	}
	a := it.list.a
	return base.InternalKey{UserKey: a.userKey(it.nd), Trailer: base.Trailer(a.trailer(it.nd))}
}

// Value returns the current entry's value, aliasing the arena; nil when not
// Valid.
func (it *iterator) Value() []byte {
	if !it.Valid() {
		return nil
	}
	return it.list.a.value(it.nd)
}

// Error returns nil: a memtable iterator cannot fail.
func (it *iterator) Error() error { return nil }

// Close releases nothing; the iterator stays usable until dropped.
func (it *iterator) Close() error { return nil }
