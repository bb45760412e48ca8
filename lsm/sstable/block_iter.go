package sstable

import (
	"bytes"
	"encoding/binary"
	"math"

	"github.com/strata-db/strata/internal/base"
)

// blockIter walks the entries of one decoded block (see block_writer.go for
// the format). Every read is bounds-checked: bad bytes set err to a
// CorruptionError naming the file and the block's offset, and the
// positioning method returns false.
//
// Backward steps decode forward from the preceding restart point and keep
// the decoded entries of that restart interval in a cache, so a run of Prev
// calls costs about one entry decode each.
type blockIter struct {
	data []byte
	// restarts is where the entries end: they live in data[:restarts].
	// It is the offset of the restart array, restartArr, except for a
	// window read in place (see Reader.getInPlace), where it is the end
	// of the window's verified intervals.
	restarts    int
	restartArr  int
	numRestarts int
	// For a block read in place: sumsAt is the offset of its interval
	// checksums (0 otherwise), and verified the last restart interval
	// verified so far; restarts is where that interval ends. See
	// verifyInterval.
	sumsAt, verified int
	// checkKeys is set for data blocks: every key must be an encoded
	// internal key of a point kind.
	checkKeys bool

	offset     int // offset of the current entry
	nextOffset int // offset just past the current entry
	key        []byte
	keyBuf     []byte
	keyInBuf   bool // key aliases keyBuf (else it aliases data or cacheBuf)
	val        []byte

	// INVARIANT: cacheIdx >= 0 exactly when the current entry is
	// cache[cacheIdx]; cache holds consecutive entries of one restart
	// interval, and the entry after the last one is at its nextOffset.
	cache    []cachedEntry
	cacheBuf []byte
	cacheIdx int

	// sink takes the sum touchWindow returns, so that its loads are not
	// optimized away.
	sink uint64

	err      error
	file     string
	blockOff uint64
}

type cachedEntry struct {
	offset, nextOffset int
	keyEnd             int // key is cacheBuf[previous keyEnd:keyEnd]
	valLen             int // value is data[nextOffset-valLen:nextOffset]
}

// init points the iterator at a block. data must stay unchanged while the
// iterator uses it. file and blockOff are used in error messages.
func (i *blockIter) init(data []byte, checkKeys bool, file string, blockOff uint64) error {
	i.reset(data, checkKeys, file, blockOff)
	i.restarts, i.restartArr, i.numRestarts = 0, 0, 0
	if len(data) < 4 {
		return i.corrupt(0, "block of %d bytes is shorter than its restart count", len(data))
	}
	word := binary.LittleEndian.Uint32(data[len(data)-4:])
	n, per := uint64(word&^sumsFlag), uint64(4)
	if word&sumsFlag != 0 {
		per = 8 // a restart offset and an interval checksum each
	}
	if n == 0 || n*per+4 > uint64(len(data)) {
		return i.corrupt(len(data)-4, "bad restart count %d for a %d-byte block", n, len(data))
	}
	i.numRestarts = int(n)
	i.restarts = len(data) - 4 - int(per*n)
	i.restartArr = i.restarts
	if r0 := binary.LittleEndian.Uint32(data[i.restarts:]); r0 != 0 {
		return i.corrupt(i.restarts, "first restart point is %d, not 0", r0)
	}
	return nil
}

// initWindow is init for a block whose restart count the caller knows:
// it places the restart array from numRestarts rather than from the
// block's last bytes, so that the loads of the restart points need not
// wait for those bytes (which it still checks). A block whose count
// differs is read as init reads it.
func (i *blockIter) initWindow(data []byte, checkKeys bool, file string, blockOff uint64, numRestarts int) error {
	n := len(data)
	if numRestarts < 1 || n < 4+8*numRestarts {
		return i.init(data, checkKeys, file, blockOff)
	}
	restarts := n - 4 - 4*numRestarts
	word := binary.LittleEndian.Uint32(data[n-4:])
	if word == uint32(numRestarts)|sumsFlag {
		restarts -= 4 * numRestarts
	} else if word != uint32(numRestarts) {
		return i.init(data, checkKeys, file, blockOff)
	}
	if binary.LittleEndian.Uint32(data[restarts:]) != 0 {
		return i.init(data, checkKeys, file, blockOff)
	}
	i.reset(data, checkKeys, file, blockOff)
	i.restarts, i.restartArr, i.numRestarts = restarts, restarts, numRestarts
	return nil
}

// reset points the iterator at data, before any entry, for init and
// initWindow to place the restart array.
func (i *blockIter) reset(data []byte, checkKeys bool, file string, blockOff uint64) {
	i.data = data
	i.checkKeys = checkKeys
	i.file = file
	i.blockOff = blockOff
	i.err = nil
	i.key, i.val = nil, nil
	i.keyInBuf = false
	i.offset, i.nextOffset = 0, 0
	i.sumsAt, i.verified = 0, -1
	i.clearCache()
}

// checkIntervalSums verifies every restart interval of a block that
// carries interval checksums (init placed the arrays); a block without
// them passes.
func (i *blockIter) checkIntervalSums() error {
	n := len(i.data)
	if n < 4 || binary.LittleEndian.Uint32(i.data[n-4:])&sumsFlag == 0 {
		return nil
	}
	sums := i.restartArr + 4*i.numRestarts
	for j := range i.numRestarts {
		if p, q, ok := i.interval(j, sums); !ok {
			return i.corrupt(p, "restart interval %d [%d, %d): bounds out of order or checksum mismatch", j, p, q)
		}
	}
	return nil
}

// interval returns the bounds [p, q) of restart interval j of a block
// whose interval checksums start at sums, and whether the bounds are in
// order and the interval's bytes match its checksum.
func (i *blockIter) interval(j, sums int) (p, q int, ok bool) {
	arr := i.restartArr
	p = int(binary.LittleEndian.Uint32(i.data[arr+4*j:]))
	q = arr
	if j+1 < i.numRestarts {
		q = int(binary.LittleEndian.Uint32(i.data[arr+4*(j+1):]))
	}
	if (j == 0 && p != 0) || q <= p || q > arr {
		return p, q, false
	}
	return p, q, intervalSum(i.data[p:q]) == binary.LittleEndian.Uint32(i.data[sums+4*j:])
}

// verifyInterval checks restart interval j of a block read in place
// against its checksum and makes it the end of what the iterator reads:
// restarts becomes its end. j is the interval a search starts in, or the
// one after the last verified. False, with err unset, when the interval
// is out of order or does not verify: the caller reads the block the
// ordinary way, which reports what is wrong.
func (i *blockIter) verifyInterval(j int) bool {
	if j < 0 || j >= i.numRestarts || (i.verified >= 0 && j != i.verified+1) {
		return false
	}
	p, q, ok := i.interval(j, i.sumsAt)
	if !ok || (i.verified >= 0 && p != i.restarts) {
		return false
	}
	i.restarts, i.verified = q, j
	return true
}

// touchWindow loads one byte of the block's last cache line and of each
// line of [from, to) (byte offsets, clamped to the block and to
// maxWindowLines lines) and returns their sum. Nothing waits for these
// loads, so the CPU fetches the lines at once: a lookup that knows where
// in a block it will read calls it first, and its misses then overlap
// instead of following one another.
func touchWindow(data []byte, from, to int) uint64 {
	n := len(data)
	if n == 0 {
		return 0
	}
	s := uint64(data[n-1])
	from = min(max(from, 0), n-1)
	to = min(max(to, from), n, from+maxWindowLines*64)
	for p := from &^ 63; p < to; p += 64 {
		s += uint64(data[p])
	}
	return s
}

// maxWindowLines bounds the cache lines touchWindow loads: the scan from a
// restart point to a key reads about 8 entries, and loading more lines
// than that measured slower (they compete for the CPU's outstanding-miss
// slots and evict other data).
const maxWindowLines = 8

func (i *blockIter) corrupt(off int, format string, args ...any) error {
	args = append([]any{off}, args...)
	i.err = base.CorruptionErrorf(i.file, int64(i.blockOff), "block byte %d: "+format, args...)
	return i.err
}

func (i *blockIter) clearCache() {
	i.cache = i.cache[:0]
	i.cacheBuf = i.cacheBuf[:0]
	i.cacheIdx = -1
}

// restartOffset returns the offset of restart point j (0 <= j < numRestarts).
func (i *blockIter) restartOffset(j int) (int, bool) {
	off := int(binary.LittleEndian.Uint32(i.data[i.restartArr+4*j:]))
	if off >= i.restarts {
		i.corrupt(i.restartArr+4*j, "restart point %d at %d is past the entries (%d)", j, off, i.restarts)
		return 0, false
	}
	return off, true
}

// readVarints reads the three lengths of the entry at p.
func (i *blockIter) readVarints(p int) (shared, unshared, vlen uint64, np int, ok bool) {
	d := i.data[:i.restarts]
	if p+3 <= len(d) && (d[p]|d[p+1]|d[p+2]) < 0x80 {
		return uint64(d[p]), uint64(d[p+1]), uint64(d[p+2]), p + 3, true
	}
	var n int
	if p >= len(d) {
		return 0, 0, 0, 0, false
	}
	if shared, n = binary.Uvarint(d[p:]); n <= 0 {
		return 0, 0, 0, 0, false
	}
	p += n
	if unshared, n = binary.Uvarint(d[p:]); n <= 0 {
		return 0, 0, 0, 0, false
	}
	p += n
	if vlen, n = binary.Uvarint(d[p:]); n <= 0 {
		return 0, 0, 0, 0, false
	}
	return shared, unshared, vlen, p + n, true
}

// decodeAt decodes the entry at off, taking the shared key prefix from the
// current key, and makes it current.
func (i *blockIter) decodeAt(off int) bool {
	shared, unshared, vlen, p, ok := i.readVarints(off)
	if !ok {
		i.corrupt(off, "bad entry header")
		return false
	}
	avail := uint64(i.restarts - p)
	if shared > uint64(len(i.key)) || unshared > avail || vlen > avail-unshared {
		i.corrupt(off, "entry lengths (shared %d, unshared %d, value %d) out of bounds", shared, unshared, vlen)
		return false
	}
	keyEnd := p + int(unshared)
	valEnd := keyEnd + int(vlen)
	if shared == 0 {
		i.key = i.data[p:keyEnd:keyEnd]
		i.keyInBuf = false
	} else {
		if !i.keyInBuf {
			i.keyBuf = append(i.keyBuf[:0], i.key[:shared]...)
		}
		kb := i.keyBuf[:shared]
		if unshared <= 16 && cap(kb)-int(shared) >= 16 && len(i.data)-p >= 16 {
			// Most suffixes are short: move 16 bytes at once rather than
			// call memmove. The bytes past the suffix are cut off.
			*(*[16]byte)(kb[shared : shared+16]) = *(*[16]byte)(i.data[p:])
			kb = kb[:int(shared)+int(unshared)]
		} else {
			kb = append(kb, i.data[p:keyEnd]...)
			if cap(kb) < len(kb)+keySlack {
				kb = append(make([]byte, 0, 2*len(kb)+keySlack), kb...)
			}
		}
		i.keyBuf = kb
		i.key = kb
		i.keyInBuf = true
	}
	if i.checkKeys && !i.checkKey(off, i.key) {
		return false
	}
	i.val = i.data[keyEnd:valEnd:valEnd]
	i.offset = off
	i.nextOffset = valEnd
	return true
}

// checkKey reports whether k is an encoded internal key of a point kind.
func (i *blockIter) checkKey(off int, k []byte) bool {
	if len(k) < base.TrailerLen {
		i.corrupt(off, "key of %d bytes is shorter than a trailer", len(k))
		return false
	}
	if kind := base.Kind(k[len(k)-base.TrailerLen]); !kind.IsPoint() {
		i.corrupt(off, "entry has kind %s, not a point kind", kind)
		return false
	}
	return true
}

// restartKey returns the key of restart point j without changing the
// current entry.
func (i *blockIter) restartKey(j int) ([]byte, bool) {
	off, ok := i.restartOffset(j)
	if !ok {
		return nil, false
	}
	shared, unshared, _, p, ok := i.readVarints(off)
	if !ok || shared != 0 || unshared > uint64(i.restarts-p) {
		i.corrupt(off, "bad restart entry")
		return nil, false
	}
	k := i.data[p : p+int(unshared)]
	if i.checkKeys && !i.checkKey(off, k) {
		return nil, false
	}
	return k, true
}

// compareKey compares an encoded internal key (at least TrailerLen bytes)
// with the internal key (ukey, trailer).
func compareKey(enc, ukey []byte, trailer uint64) int {
	n := len(enc) - base.TrailerLen
	// Keys of at least 8 bytes usually differ in their first 8: compare
	// them as integers before calling into bytes.Compare.
	if n >= 8 && len(ukey) >= 8 {
		a, b := binary.BigEndian.Uint64(enc), binary.BigEndian.Uint64(ukey)
		if a < b {
			return -1
		} else if a > b {
			return 1
		}
	}
	if c := bytes.Compare(enc[:n], ukey); c != 0 {
		return c
	}
	t := binary.LittleEndian.Uint64(enc[n:])
	switch {
	case t > trailer:
		return -1
	case t < trailer:
		return 1
	}
	return 0
}

// searchRestarts returns the first restart point whose key is >= (ukey,
// trailer), or numRestarts if there is none.
func (i *blockIter) searchRestarts(ukey []byte, trailer uint64) (int, bool) {
	return i.searchRestartsIn(ukey, trailer, 0, i.numRestarts)
}

// searchRestartsIn returns the first restart point in [lo, hi) whose key
// is >= (ukey, trailer), or hi if there is none.
func (i *blockIter) searchRestartsIn(ukey []byte, trailer uint64, lo, hi int) (int, bool) {
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		k, ok := i.restartKey(mid)
		if !ok {
			return 0, false
		}
		if compareKey(k, ukey, trailer) < 0 {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo, true
}

// First moves to the first entry.
func (i *blockIter) First() bool {
	i.clearCache()
	if i.err != nil || i.restarts == 0 {
		return false
	}
	i.key, i.keyInBuf = nil, false
	return i.decodeAt(0)
}

// Last moves to the last entry.
func (i *blockIter) Last() bool {
	i.clearCache()
	if i.err != nil || i.restarts == 0 {
		return false
	}
	start, ok := i.restartOffset(i.numRestarts - 1)
	if !ok {
		return false
	}
	return i.fillCache(start, i.restarts, nil, 0)
}

// Next moves to the following entry; false at the end of the block.
func (i *blockIter) Next() bool {
	if i.err != nil {
		return false
	}
	if i.cacheIdx >= 0 {
		if i.cacheIdx+1 < len(i.cache) {
			i.cacheIdx++
			i.setFromCache()
			return true
		}
		// The current key aliases cacheBuf; decodeAt copies the shared
		// prefix out of it before the cache is reused.
		i.cacheIdx = -1
	}
	if i.nextOffset >= i.restarts {
		return false
	}
	return i.decodeAt(i.nextOffset)
}

// Prev moves to the preceding entry; false at the start of the block.
func (i *blockIter) Prev() bool {
	if i.err != nil {
		return false
	}
	if i.cacheIdx > 0 {
		i.cacheIdx--
		i.setFromCache()
		return true
	}
	target := i.offset
	if target == 0 {
		return false
	}
	// Find the last restart point before target.
	lo, hi := 0, i.numRestarts
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if int(binary.LittleEndian.Uint32(i.data[i.restartArr+4*mid:])) < target {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	// lo >= 1 because restart 0 is at offset 0 < target.
	start, ok := i.restartOffset(lo - 1)
	if !ok {
		return false
	}
	return i.fillCache(start, target, nil, 0)
}

// SeekGE moves to the first entry >= (ukey, trailer) in internal-key order.
func (i *blockIter) SeekGE(ukey []byte, trailer uint64) bool {
	return i.seekGEWithin(ukey, trailer, 0, -1, 0)
}

// seekGEWithin is SeekGE when the caller knows that no entry before
// restart point jlo is >= (ukey, trailer), nor any of the first skip
// entries from it, and that if one is >= it, the first such entry lies in
// the restart intervals jlo..jhi or is the first entry of the interval
// after them: only restart points jlo+1..jhi are searched, and the skipped
// entries are decoded without a comparison. With jhi < 0 every restart
// point is searched (and skip is ignored). Out-of-range bounds are
// clamped. A wrong claim gives a wrong position, never a fault.
func (i *blockIter) seekGEWithin(ukey []byte, trailer uint64, jlo, jhi, skip int) bool {
	i.clearCache()
	if i.err != nil || i.restarts == 0 {
		return false
	}
	var j int
	var ok bool
	if jhi < 0 {
		j, ok = i.searchRestarts(ukey, trailer)
		skip = 0
	} else {
		jlo = min(max(jlo, 0), i.numRestarts-1)
		jhi = min(max(jhi, jlo), i.numRestarts-1)
		// Load the entries at the window's first two restart points at
		// once: the search reads the second, the scan may start at
		// either.
		if a, ok := i.restartOffset(jlo); ok {
			i.sink += uint64(i.data[a])
		}
		if jhi > jlo {
			if a, ok := i.restartOffset(jlo + 1); ok {
				i.sink += uint64(i.data[a])
			}
		}
		j, ok = i.searchRestartsIn(ukey, trailer, jlo+1, jhi+1)
		if j-1 != jlo {
			skip = 0 // the skipped entries lie before restart j-1
		}
	}
	if !ok {
		return false
	}
	start := 0
	if j > 0 {
		if start, ok = i.restartOffset(j - 1); !ok {
			return false
		}
	}
	if i.sumsAt != 0 && !i.verifyInterval(max(j-1, 0)) {
		// Read in place: the scan reads only verified intervals. The
		// restart keys the search compared are safe to have read
		// unverified: the last one it went past is the first key of
		// this interval (verified now, and the keys before it are
		// smaller), and one that sent it left at worst starts the scan
		// early.
		return false
	}
	i.key, i.keyInBuf = nil, false
	if !i.decodeAt(start) {
		return false
	}
	return i.scanGE(ukey, trailer, skip)
}

// scanGE moves forward from the current entry to the first entry >=
// (ukey, trailer), taking the first skip entries as below it without a
// comparison; false when the block has none.
//
// It is the loop of every point lookup, so it compares the first 8 bytes
// of the keys as one integer (the search key's loaded once), and decodes
// the usual entry (one-byte lengths, a shared prefix already in keyBuf, a
// suffix of at most keySlack bytes) inline; any other entry goes through
// decodeAt, which checks and reports what is wrong. It keeps the current
// key's first 8 bytes as an integer, built from the shared prefix and the
// entry's bytes in the block: loading them back from keyBuf right after
// writing it would wait for the write (the load overlaps the copy only
// in part, so the CPU cannot forward it).
func (i *blockIter) scanGE(ukey []byte, trailer uint64, skip int) bool {
	var q uint64
	long := len(ukey) >= 8
	if long {
		q = binary.BigEndian.Uint64(ukey)
	}
	a := keyPrefix(i.key) // the current encoded key's first 8 bytes
	for {
		if skip > 0 {
			skip--
		} else if k := i.key; long && len(k) >= base.TrailerLen+8 {
			// The user key has at least 8 bytes: a holds its first 8.
			if a > q {
				return true
			}
			if a == q {
				if len(k) == base.TrailerLen+8 && len(ukey) == 8 {
					// Equal user keys: the trailers decide.
					if binary.LittleEndian.Uint64(k[8:]) <= trailer {
						return true
					}
				} else if compareKey(k, ukey, trailer) >= 0 {
					return true
				}
			}
		} else if compareKey(k, ukey, trailer) >= 0 {
			return true
		}
		off := i.nextOffset
		if off >= i.restarts && (i.sumsAt == 0 || !i.verifyInterval(i.verified+1)) {
			return false
		}
		if na, ok := i.decodeNextFast(off, a); ok {
			a = na
			continue
		}
		if !i.decodeAt(off) {
			return false
		}
		a = keyPrefix(i.key)
	}
}

// keySlack is the size of the copy decodeNextFast moves a key suffix
// with, and the spare capacity decodeAt keeps in keyBuf for it: 32 bytes
// cover the suffix of a 16-byte user key that shares little with the
// previous one (as db_bench's keys do) and its 8-byte trailer.
const keySlack = 32

// decodeNextFast decodes the entry at off, which follows the current one
// (whose encoded key starts with the 8 bytes a), if it is of the usual
// shape (see scanGE), and returns the new key's first 8 bytes. When it
// does not (ok false), the current key's bytes past the entry's shared
// prefix may have changed; decodeAt, which uses only that prefix, then
// decodes the entry.
func (i *blockIter) decodeNextFast(off int, a uint64) (uint64, bool) {
	d := i.data
	p := off + 3
	if !i.keyInBuf || p+keySlack > len(d) {
		return 0, false
	}
	shared, unshared, vlen := int(d[off]), int(d[off+1]), int(d[off+2])
	if (shared|unshared|vlen) >= 0x80 || shared == 0 || shared > len(i.key) || unshared > keySlack ||
		shared+unshared < base.TrailerLen || unshared+vlen > i.restarts-p || cap(i.keyBuf)-shared < keySlack {
		return 0, false
	}
	kb := i.keyBuf[:shared+keySlack]
	*(*[keySlack]byte)(kb[shared:]) = *(*[keySlack]byte)(d[p:])
	kb = kb[:shared+unshared]
	if i.checkKeys && !base.Kind(kb[len(kb)-base.TrailerLen]).IsPoint() {
		return 0, false
	}
	if shared < 8 {
		// The first shared bytes of the old key, then the suffix (the
		// key has at least 8 bytes, so the suffix fills the rest).
		a = a&^(math.MaxUint64>>(8*shared)) | binary.BigEndian.Uint64(d[p:])>>(8*shared)
	}
	keyEnd := p + unshared
	valEnd := keyEnd + vlen
	i.keyBuf, i.key = kb, kb
	i.val = d[keyEnd:valEnd:valEnd]
	i.offset, i.nextOffset = off, valEnd
	return a, true
}

// SeekLT moves to the last entry < (ukey, trailer) in internal-key order.
func (i *blockIter) SeekLT(ukey []byte, trailer uint64) bool {
	i.clearCache()
	if i.err != nil || i.restarts == 0 {
		return false
	}
	j, ok := i.searchRestarts(ukey, trailer)
	if !ok || j == 0 {
		return false
	}
	limit := i.restarts
	if j < i.numRestarts {
		if limit, ok = i.restartOffset(j); !ok {
			return false
		}
	}
	start, ok := i.restartOffset(j - 1)
	if !ok {
		return false
	}
	return i.fillCache(start, limit, ukey, trailer)
}

// fillCache decodes the entries from start (a restart point) up to limit
// into the cache and makes the last of them current. With a non-nil stopKey
// it stops before the first entry >= (stopKey, stopTrailer); otherwise the
// entries must end exactly at limit.
func (i *blockIter) fillCache(start, limit int, stopKey []byte, stopTrailer uint64) bool {
	i.clearCache()
	if start >= limit {
		i.corrupt(start, "restart point at %d is not before %d", start, limit)
		return false
	}
	i.key, i.keyInBuf = nil, false
	off := start
	for off < limit {
		if !i.decodeAt(off) {
			return false
		}
		if stopKey != nil && compareKey(i.key, stopKey, stopTrailer) >= 0 {
			break
		}
		i.cacheBuf = append(i.cacheBuf, i.key...)
		i.cache = append(i.cache, cachedEntry{
			offset:     i.offset,
			nextOffset: i.nextOffset,
			keyEnd:     len(i.cacheBuf),
			valLen:     len(i.val),
		})
		off = i.nextOffset
	}
	if stopKey == nil && off != limit {
		i.corrupt(start, "entries from restart point %d overrun offset %d", start, limit)
		return false
	}
	if len(i.cache) == 0 {
		return false
	}
	i.cacheIdx = len(i.cache) - 1
	i.setFromCache()
	return true
}

func (i *blockIter) setFromCache() {
	e := &i.cache[i.cacheIdx]
	ks := 0
	if i.cacheIdx > 0 {
		ks = i.cache[i.cacheIdx-1].keyEnd
	}
	i.key = i.cacheBuf[ks:e.keyEnd:e.keyEnd]
	i.keyInBuf = false
	i.val = i.data[e.nextOffset-e.valLen : e.nextOffset : e.nextOffset]
	i.offset = e.offset
	i.nextOffset = e.nextOffset
}

// ikey returns the current key as an internal key (checkKeys blocks only).
func (i *blockIter) ikey() base.InternalKey {
	n := len(i.key) - base.TrailerLen
	return base.InternalKey{
		UserKey: i.key[:n:n],
		Trailer: base.Trailer(binary.LittleEndian.Uint64(i.key[n:])),
	}
}

// forEachEntry calls fn for each entry of a block in order and checks that
// the keys strictly increase under cmp (bytes.Compare when nil). k and v are
// valid only during the call. fn sees each key before it is compared, so it
// can validate the key's shape for cmp.
func forEachEntry(b []byte, file string, off uint64, cmp func(a, b []byte) int, fn func(k, v []byte) error) error {
	if cmp == nil {
		cmp = bytes.Compare
	}
	var it blockIter
	if err := it.init(b, false, file, off); err != nil {
		return err
	}
	if err := it.checkIntervalSums(); err != nil {
		return err
	}
	var prev []byte
	for ok, first := it.First(), true; ok; ok, first = it.Next(), false {
		if err := fn(it.key, it.val); err != nil {
			return err
		}
		if !first && cmp(prev, it.key) >= 0 {
			return base.CorruptionErrorf(file, int64(off), "block keys out of order at byte %d", it.offset)
		}
		prev = append(prev[:0], it.key...)
	}
	return it.err
}
