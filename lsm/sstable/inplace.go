package sstable

import (
	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/vfs"
)

// A point lookup through the learned index knows the block and the one or
// two restart intervals that hold the key. When the table is mapped, the
// block stored raw and its intervals checksummed (format version 3), the
// lookup reads the block straight from the mapping and verifies just the
// intervals it reads: no block-cache lookup, no copy of the block, no
// checksum of the whole block, no eviction. For a table larger than the
// block cache that is most of a lookup's cost.
//
// What it trusts: the model, block map and index, verified when the table
// was opened; the block's count word, checked against the restart count
// the block map implies; and entry bytes only once their interval has
// verified against its checksum (blockIter.verifyInterval). The restart
// search within the window reads restart keys unverified, which is safe:
// the last restart it moves past is the first key of the interval the scan
// starts in, verified before the scan (and sorted keys make every earlier
// move right true as well), and a restart that sends it left at worst
// starts the scan early. The scan verifies each further interval before
// it enters it. The restart offsets that bound an interval are covered by
// its checksum too: a wrong offset checksums other bytes.
//
// Anything unexpected (another format, a count that does not match, a
// checksum that does not verify, a key past the block's end, a fault from
// a file truncated under the mapping) makes getInPlace decline; the caller
// then reads the block the ordinary way, which verifies the whole block
// and reports what is wrong with it.

// getInPlace looks (ukey, trailer) up in the window w of a mapped table.
// ok is false when it declines (see above); otherwise found reports
// whether the first entry at or after the key is of ukey, and value, kind
// and seq describe it. value aliases the mapping. A fault while reading
// the mapping unwinds to the deferred EndMapped, which leaves every result
// zero: ok false.
func (r *Reader) getInPlace(bi *blockIter, w *window, ukey []byte, trailer uint64) (value []byte, kind base.Kind, seq base.SeqNum, found, ok bool) {
	x := r.lidx
	start, end := uint64(x.blocks[w.i].off), uint64(x.blocks[w.i+1].off)
	if end > uint64(len(r.mapped)) || end-start < blockTrailerLen+4 {
		return nil, 0, 0, false, false
	}
	blk := r.mapped[start:end:end]
	var err error
	old := vfs.BeginMapped()
	defer vfs.EndMapped(old, &err)
	// Start loading the window's lines and the block's tail at once.
	n := len(blk) - blockTrailerLen
	bi.sink += x.touch(blk[:n], w)
	if Compression(blk[n]) != NoCompression {
		return nil, 0, 0, false, false
	}
	// The block must have the restart count the block map implies and
	// interval checksums: initWindow then places the restart array 8
	// bytes a restart from the end (a restart offset and a checksum).
	nr := w.numRestarts
	if bi.initWindow(blk[:n], true, r.file, start, nr) != nil || bi.numRestarts != nr || bi.restartArr != n-4-8*nr {
		return nil, 0, 0, false, false
	}
	bi.sumsAt = bi.restartArr + 4*nr // the sums follow the restart array
	if !bi.seekGEWithin(ukey, trailer, w.jlo, w.jhi, w.skip) {
		// Past the window (the entries of the key newer than the
		// snapshot, or a key absent from the table), or an entry that
		// does not decode: the ordinary path decides.
		return nil, 0, 0, false, false
	}
	k := bi.ikey()
	if string(k.UserKey) != string(ukey) {
		return nil, 0, 0, false, true
	}
	return bi.val, k.Kind(), k.SeqNum(), true, true
}
