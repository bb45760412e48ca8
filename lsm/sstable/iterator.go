package sstable

import (
	"sync"

	"github.com/strata-db/strata/internal/base"
)

// seekTrailer is the trailer of the smallest internal key of a user key:
// SeekGE(k) looks for the first entry >= k#SeqNumMax,KindMax.
var seekTrailer = uint64(base.MakeTrailer(base.SeqNumMax, base.KindMax))

// tableIter iterates over a table's point entries: the in-memory index
// selects a data block, and a blockIter walks it.
//
// Positioning beyond either end leaves the iterator exhausted on that side:
// Prev after running off the end moves to the last entry, and Next after
// running off the start moves to the first. Errors are sticky: once a block
// fails to read or decode, every positioning call returns false and Error
// reports the failure.
type tableIter struct {
	r      *Reader
	blk    blockIter
	idx    int // index entry of the current block; -1 before the start, len(entries) past the end
	loaded int // index entry whose block blk holds, or -1
	valid  bool
	err    error
	bufs   readBufs
}

var tableIterPool = sync.Pool{New: func() any { return new(tableIter) }}

// NewIter returns an iterator over the table's point entries with
// base.InternalIterator semantics: SeekGE and SeekLT take user keys; Key and
// Value stay valid until the next positioning call. Iterators are pooled:
// call Close exactly once.
func (r *Reader) NewIter() base.InternalIterator {
	it := tableIterPool.Get().(*tableIter)
	it.r = r
	it.idx, it.loaded = -1, -1
	it.valid = false
	it.err = nil
	return it
}

func (it *tableIter) fail(err error) bool {
	it.err = err
	it.valid = false
	it.loaded = -1
	return false
}

// load makes the data block of index entry idx current.
func (it *tableIter) load(idx int) bool {
	it.idx = idx
	if it.loaded == idx {
		return true
	}
	h := it.r.index.entries[idx].handle
	b, err := it.r.dataBlock(h, &it.bufs)
	if err != nil {
		return it.fail(err)
	}
	if err := it.blk.init(b, true, it.r.file, h.Offset); err != nil {
		return it.fail(err)
	}
	it.loaded = idx
	return true
}

// forwardFrom moves to the first entry of the first non-empty block at or
// after idx.
func (it *tableIter) forwardFrom(idx int) bool {
	for n := len(it.r.index.entries); idx < n; idx++ {
		if !it.load(idx) {
			return false
		}
		if it.blk.First() {
			it.valid = true
			return true
		}
		if it.blk.err != nil {
			return it.fail(it.blk.err)
		}
	}
	it.idx = len(it.r.index.entries)
	it.valid = false
	return false
}

// backwardFrom moves to the last entry of the last non-empty block at or
// before idx.
func (it *tableIter) backwardFrom(idx int) bool {
	for ; idx >= 0; idx-- {
		if !it.load(idx) {
			return false
		}
		if it.blk.Last() {
			it.valid = true
			return true
		}
		if it.blk.err != nil {
			return it.fail(it.blk.err)
		}
	}
	it.idx = -1
	it.valid = false
	return false
}

// First moves to the first entry.
func (it *tableIter) First() bool {
	if it.err != nil {
		return false
	}
	return it.forwardFrom(0)
}

// Last moves to the last entry.
func (it *tableIter) Last() bool {
	if it.err != nil {
		return false
	}
	return it.backwardFrom(len(it.r.index.entries) - 1)
}

// SeekGE moves to the first entry whose user key is >= key.
func (it *tableIter) SeekGE(key []byte) bool {
	if it.err != nil {
		return false
	}
	idx := it.r.index.seek(key, seekTrailer)
	if idx == len(it.r.index.entries) {
		it.idx, it.valid = idx, false
		return false
	}
	if !it.load(idx) {
		return false
	}
	if it.blk.SeekGE(key, seekTrailer) {
		it.valid = true
		return true
	}
	if it.blk.err != nil {
		return it.fail(it.blk.err)
	}
	return it.forwardFrom(idx + 1)
}

// SeekLT moves to the last entry whose user key is < key.
func (it *tableIter) SeekLT(key []byte) bool {
	if it.err != nil {
		return false
	}
	idx := it.r.index.seek(key, seekTrailer)
	if idx == len(it.r.index.entries) {
		// Every separator, hence every entry, is below key.
		return it.backwardFrom(idx - 1)
	}
	if !it.load(idx) {
		return false
	}
	if it.blk.SeekLT(key, seekTrailer) {
		it.valid = true
		return true
	}
	if it.blk.err != nil {
		return it.fail(it.blk.err)
	}
	return it.backwardFrom(idx - 1)
}

// Next moves to the following entry.
func (it *tableIter) Next() bool {
	if it.err != nil {
		return false
	}
	if !it.valid {
		if it.idx < 0 {
			return it.forwardFrom(0)
		}
		return false
	}
	if it.blk.Next() {
		return true
	}
	if it.blk.err != nil {
		return it.fail(it.blk.err)
	}
	return it.forwardFrom(it.idx + 1)
}

// Prev moves to the preceding entry.
func (it *tableIter) Prev() bool {
	if it.err != nil {
		return false
	}
	if !it.valid {
		if it.idx >= len(it.r.index.entries) {
			return it.backwardFrom(len(it.r.index.entries) - 1)
		}
		return false
	}
	if it.blk.Prev() {
		return true
	}
	if it.blk.err != nil {
		return it.fail(it.blk.err)
	}
	return it.backwardFrom(it.idx - 1)
}

// Valid reports whether the iterator is at an entry.
func (it *tableIter) Valid() bool { return it.valid }

// Key returns the current key (zero when not valid).
func (it *tableIter) Key() base.InternalKey {
	if !it.valid {
		return base.InternalKey{}
	}
	return it.blk.ikey()
}

// Value returns the current value (nil when not valid).
func (it *tableIter) Value() []byte {
	if !it.valid {
		return nil
	}
	return it.blk.val
}

// Error returns the error that stopped the iterator, if any.
func (it *tableIter) Error() error { return it.err }

// Close releases the iterator to the pool and returns its error.
func (it *tableIter) Close() error {
	if it.r == nil {
		return nil
	}
	err := it.err
	it.r = nil
	it.valid = false
	it.blk.data, it.blk.key, it.blk.val = nil, nil, nil
	it.blk.err = nil
	const keep = 1 << 20 // do not pin huge buffers in the pool
	if cap(it.bufs.raw) > keep {
		it.bufs.raw = nil
	}
	if cap(it.bufs.dec) > keep {
		it.bufs.dec = nil
	}
	if cap(it.blk.cacheBuf) > keep {
		it.blk.cacheBuf = nil
	}
	tableIterPool.Put(it)
	return err
}
