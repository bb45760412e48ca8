package memtable

import (
	"math/bits"
	"sync/atomic"
)

// maxHeight is the tallest tower. With p = 1/2, 20 levels index about a
// million entries (a 64 MiB memtable of 100-byte values holds ~450k);
// larger tables stay correct, with somewhat longer searches at the top.
const maxHeight = 20

// heightShift sets the branching probability p = 2^-heightShift.
//
// p = 1/2 because a search only pays a cache miss when it moves onto a
// node (the link says whether the next node is past the key, see link).
// Moves per search are about (1-p)/(p ln(1/p)) * ln n: 1.44 ln n at 1/2,
// 1.72 ln n at 1/e, 2.16 ln n at 1/4. The price is 1/(1-p) = 2 links per
// node on average (16 bytes).
const heightShift = 1

// headSize is the arena space of a head node (no key, no value): a header
// and a full tower, already a multiple of arenaAlign.
const headSize = nodeHeaderSize + maxHeight*linkSize

// skiplist is a sorted list of internal keys in an arena. One goroutine
// inserts; any number read concurrently without locks.
//
// INVARIANT: at every level, following next from head visits nodes in
// strictly increasing internal-key order. A node is linked at level l only
// after its bytes and its own links are written, so a reader that reaches
// it through an atomic load sees it complete.
//
// INVARIANT: prev(n) is 0 only for head; otherwise it is head or a node
// that sorts before n. It may lag behind inserts (point to a node further
// back than the true predecessor); it never points forward.
type skiplist struct {
	a      *arena
	head   uint32
	height atomic.Uint32 // levels in use, 1..maxHeight
	count  atomic.Int64  // entries
	// sum summarizes keys in links; fixed while the list is not empty.
	sum linkSummary
	// lo and hi are the smallest and largest key prefixes inserted, when
	// count > 0. Writer only.
	lo, hi uint64
}

// init allocates the head node. The caller sized the arena for it (New
// reserves fixedOverhead).
func (s *skiplist) init(a *arena) {
	head, _ := a.alloc(headSize)
	// A recycled arena holds old bytes: the head's links must start nil.
	clear(a.bytes(head, uint64(head), headSize))
	*a.u32(head + offHeight) = maxHeight
	s.a = a
	s.head = head
	s.height.Store(1)
	s.count.Store(0)
	s.sum = defaultSummary
	s.lo, s.hi = 0, 0
}

// splice holds, for each level, the last node before an insertion point
// and the link to the first node after it.
type splice struct {
	prev [maxHeight]uint32
	next [maxHeight]link
}

// findSplice fills sp for the search key (key, trailer), whose prefix is
// KeyPrefix(key), at every level. It reports whether the key is already
// present (as sp.next[0]). Writer only.
func (s *skiplist) findSplice(sp *splice, key []byte, prefix, trailer uint64) (exists bool) {
	a := s.a
	kp := s.sum.of(prefix)
	l := int(s.height.Load()) - 1
	for i := maxHeight - 1; i > l; i-- {
		sp.prev[i], sp.next[i] = s.head, 0
	}
	x, bound := s.head, uint32(0)
	for {
		ln := a.link(x, l)
		n := ln.node()
		if n != 0 && n != bound {
			if np := ln.prefix32(); np < kp || (np == kp && a.compare(n, key, prefix, trailer) < 0) {
				x = n
				continue
			}
		}
		sp.prev[l], sp.next[l] = x, ln
		bound = n
		if l == 0 {
			break
		}
		l--
	}
	// Only a node whose link prefix matches can be equal; the search has
	// compared (and so touched) such a node already.
	return bound != 0 && sp.next[0].prefix32() == kp && a.compare(bound, key, prefix, trailer) == 0
}

// seekGE returns the first node at or after the search key (0 if none) and
// the node before it (head if none). It is findSplice without the splice.
//
// At each level the search moves right while the next node sorts before
// the key; the link's prefix decides that without touching the next node
// unless the prefixes tie. bound is the node the level above stopped at:
// it is known to sort at or after the key, so it is not compared again.
func (s *skiplist) seekGE(key []byte, prefix, trailer uint64) (prev, next uint32) {
	a := s.a
	kp := s.sum.of(prefix)
	l := int(s.height.Load()) - 1
	x, bound := s.head, uint32(0)
	for {
		ln := a.link(x, l)
		n := ln.node()
		if n != 0 && n != bound {
			if np := ln.prefix32(); np < kp || (np == kp && a.compare(n, key, prefix, trailer) < 0) {
				x = n
				continue
			}
		}
		if l == 0 {
			return x, n
		}
		bound = n
		l--
	}
}

// last returns the last node, or head if the list is empty.
func (s *skiplist) last() uint32 {
	a := s.a
	x := s.head
	for l := int(s.height.Load()) - 1; l >= 0; l-- {
		for n := a.next(x, l); n != 0; n = a.next(x, l) {
			x = n
		}
	}
	return x
}

// insert adds the entry as a node of the given height. It returns
// ErrArenaFull or errDuplicate without changing the list. Writer only.
func (s *skiplist) insert(sp *splice, height uint32, key []byte, trailer uint64, value []byte) error {
	a := s.a
	size := nodeSize(height, uint64(len(key)), uint64(len(value)))
	if uint64(len(key)) > maxArenaSize || uint64(len(value)) > maxArenaSize ||
		alignUp(size) > a.capacity()-a.size() {
		return ErrArenaFull
	}
	prefix := KeyPrefix(key)
	if s.findSplice(sp, key, prefix, trailer) {
		return errDuplicate
	}
	nd, ok := a.alloc(size)
	if !ok {
		return ErrArenaFull
	}
	a.initNode(nd, height, key, prefix, trailer, value)
	h := int(height)
	for l := 0; l < h; l++ {
		a.setLink(nd, l, sp.next[l])
	}
	a.setPrev(nd, sp.prev[0])
	// Publish bottom-up: once linked at level 0 the node is reachable; the
	// upper levels only speed up searches.
	self := makeLink(nd, s.sum.of(prefix))
	for l := 0; l < h; l++ {
		a.setLink(sp.prev[l], l, self)
	}
	if n := sp.next[0].node(); n != 0 {
		a.setPrev(n, nd)
	}
	if height > s.height.Load() {
		s.height.Store(height)
	}
	if s.count.Load() == 0 {
		s.lo, s.hi = prefix, prefix
	} else {
		s.lo, s.hi = min(s.lo, prefix), max(s.hi, prefix)
	}
	s.count.Add(1)
	return nil
}

// rng is a xorshift64* generator for tower heights. Writer only.
type rng struct{ state uint64 }

func (r *rng) next() uint64 {
	x := r.state
	x ^= x >> 12
	x ^= x << 25
	x ^= x >> 27
	r.state = x
	return x * 0x2545F4914F6CDD1D
}

// randomHeight returns a height in 1..maxHeight with P(height > h) = p^h.
func (r *rng) randomHeight() uint32 {
	h := 1 + uint32(bits.TrailingZeros64(r.next()))/heightShift
	if h > maxHeight {
		h = maxHeight
	}
	return h
}
