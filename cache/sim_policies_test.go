package cache

// Reference policies for the policy simulator (sim_test.go). They work on
// unit-sized entries named by uint64 keys; each access is a Get that, on a
// miss, is followed by a Set. They exist only to be measured against the
// Cache; none of them is used by the package.

// simPolicy is one candidate eviction policy.
type simPolicy interface {
	// access looks key up, inserts it on a miss, and reports whether it hit.
	access(key uint64) bool
}

// ---------------------------------------------------------------------------
// LRU

type lruNode struct {
	key        uint64
	region     uint8 // W-TinyLFU only: 0 window, 1 probation, 2 protected
	prev, next *lruNode
}

// lruList is an intrusive doubly linked list with a sentinel; front is the
// most recently used end.
type lruList struct {
	root lruNode
	len  int
}

func (l *lruList) init() {
	l.root.prev, l.root.next = &l.root, &l.root
}

func (l *lruList) pushFront(n *lruNode) {
	n.prev, n.next = &l.root, l.root.next
	l.root.next.prev = n
	l.root.next = n
	l.len++
}

func (l *lruList) remove(n *lruNode) {
	n.prev.next, n.next.prev = n.next, n.prev
	n.prev, n.next = nil, nil
	l.len--
}

func (l *lruList) back() *lruNode {
	if l.len == 0 {
		return nil
	}
	return l.root.prev
}

type simLRU struct {
	cap   int
	table map[uint64]*lruNode
	list  lruList
}

func newSimLRU(capacity int) *simLRU {
	p := &simLRU{cap: capacity, table: make(map[uint64]*lruNode, capacity)}
	p.list.init()
	return p
}

func (p *simLRU) access(key uint64) bool {
	if p.get(key) {
		return true
	}
	p.set(key)
	return false
}

// get reports whether key is cached and makes it the most recently used.
func (p *simLRU) get(key uint64) bool {
	n, ok := p.table[key]
	if ok {
		p.list.remove(n)
		p.list.pushFront(n)
	}
	return ok
}

// set inserts key (or refreshes it) as the most recently used.
func (p *simLRU) set(key uint64) {
	if p.get(key) {
		return
	}
	if p.list.len >= p.cap {
		v := p.list.back()
		p.list.remove(v)
		delete(p.table, v.key)
	}
	n := &lruNode{key: key}
	p.table[key] = n
	p.list.pushFront(n)
}

// resident returns the cached keys.
func (p *simLRU) resident() []uint64 {
	keys := make([]uint64, 0, len(p.table))
	for k := range p.table {
		keys = append(keys, k)
	}
	return keys
}

// ---------------------------------------------------------------------------
// The Cache itself, as a candidate: one shard, empty blocks, so that its
// capacity in bytes is capacity x EntryOverhead.

type simCache struct{ c *Cache }

func newSimCache(capacity int) simCache {
	return simCache{newCache(int64(capacity)*EntryOverhead, 1)}
}

func (p simCache) access(key uint64) bool {
	if p.c.Get(1, 1, key) != nil {
		return true
	}
	p.c.Set(1, 1, key, emptyBlock)
	return false
}

// ---------------------------------------------------------------------------
// CLOCK (second chance)

type simClock struct {
	keys  []uint64
	ref   []bool
	used  int
	hand  int
	table map[uint64]int
}

func newSimClock(capacity int) *simClock {
	return &simClock{
		keys:  make([]uint64, capacity),
		ref:   make([]bool, capacity),
		table: make(map[uint64]int, capacity),
	}
}

func (p *simClock) access(key uint64) bool {
	if i, ok := p.table[key]; ok {
		p.ref[i] = true
		return true
	}
	if p.used < len(p.keys) {
		p.keys[p.used] = key
		p.table[key] = p.used
		p.used++
		return false
	}
	for p.ref[p.hand] {
		p.ref[p.hand] = false
		p.hand = (p.hand + 1) % len(p.keys)
	}
	delete(p.table, p.keys[p.hand])
	p.keys[p.hand] = key
	p.table[key] = p.hand
	p.hand = (p.hand + 1) % len(p.keys)
	return false
}

// ---------------------------------------------------------------------------
// S3-FIFO (Yang et al., SOSP 2023), unit-sized reference version.

type s3Node struct {
	key   uint64
	freq  int
	main  bool
	index int
}

type simS3FIFO struct {
	smallCap, mainCap int
	threshold         int // moves small -> main when freq >= threshold
	small, main       []*s3Node
	table             map[uint64]*s3Node
	ghost             map[uint64]uint64 // key -> insertion sequence
	ghostQ            []uint64
	ghostSeq          uint64
	ghostHead         int
}

func newSimS3FIFO(capacity, threshold int) *simS3FIFO {
	sc := max(capacity/10, 1)
	return &simS3FIFO{
		smallCap: sc, mainCap: capacity - sc, threshold: threshold,
		table: make(map[uint64]*s3Node, capacity), ghost: make(map[uint64]uint64),
	}
}

func (p *simS3FIFO) access(key uint64) bool {
	if n, ok := p.table[key]; ok {
		n.freq = min(n.freq+1, 3)
		return true
	}
	for len(p.small)+len(p.main) >= p.smallCap+p.mainCap {
		p.evict()
	}
	n := &s3Node{key: key}
	p.table[key] = n
	if _, ok := p.ghost[key]; ok {
		delete(p.ghost, key)
		n.main = true
		p.main = append(p.main, n)
	} else {
		p.small = append(p.small, n)
	}
	return false
}

func (p *simS3FIFO) evict() {
	if len(p.small) > p.smallCap || len(p.main) == 0 {
		n := p.small[0]
		p.small = p.small[1:]
		if n.freq >= p.threshold {
			n.freq = 0
			n.main = true
			p.main = append(p.main, n)
			return
		}
		delete(p.table, n.key)
		p.addGhost(n.key)
		return
	}
	for {
		n := p.main[0]
		p.main = p.main[1:]
		if n.freq > 0 {
			n.freq--
			p.main = append(p.main, n)
			continue
		}
		delete(p.table, n.key)
		return
	}
}

func (p *simS3FIFO) addGhost(key uint64) {
	p.ghostSeq++
	p.ghost[key] = p.ghostSeq
	p.ghostQ = append(p.ghostQ, key)
	for len(p.ghostQ)-p.ghostHead > p.mainCap {
		old := p.ghostQ[p.ghostHead]
		p.ghostHead++
		if s, ok := p.ghost[old]; ok && s <= p.ghostSeq-uint64(p.mainCap) {
			delete(p.ghost, old)
		}
		if p.ghostHead > 1<<16 {
			p.ghostQ = append([]uint64(nil), p.ghostQ[p.ghostHead:]...)
			p.ghostHead = 0
		}
	}
}

// ---------------------------------------------------------------------------
// W-TinyLFU (Einziger et al.; the Caffeine design): a 1% LRU window, an SLRU
// main region (20% probation, 80% protected) and a count-min sketch with
// 4-bit counters, halved every 10*capacity increments, deciding admission
// from the window into the main region.

type cmSketch struct {
	rows    [4][]uint8
	mask    uint64
	adds    int
	resetAt int
}

func newCMSketch(capacity int) *cmSketch {
	w := 1
	for w < capacity*2 {
		w <<= 1
	}
	s := &cmSketch{mask: uint64(w - 1), resetAt: 10 * capacity}
	for i := range s.rows {
		s.rows[i] = make([]uint8, w)
	}
	return s
}

func sketchHash(key uint64, i int) uint64 {
	h := key*0x9E3779B97F4A7C15 + uint64(i)*0xC2B2AE3D27D4EB4F
	h ^= h >> 31
	h *= 0xBF58476D1CE4E5B9
	h ^= h >> 29
	return h
}

func (s *cmSketch) add(key uint64) {
	for i := range s.rows {
		c := &s.rows[i][sketchHash(key, i)&s.mask]
		if *c < 15 {
			*c++
		}
	}
	s.adds++
	if s.adds >= s.resetAt {
		for i := range s.rows {
			for j := range s.rows[i] {
				s.rows[i][j] >>= 1
			}
		}
		s.adds /= 2
	}
}

func (s *cmSketch) estimate(key uint64) uint8 {
	m := uint8(255)
	for i := range s.rows {
		m = min(m, s.rows[i][sketchHash(key, i)&s.mask])
	}
	return m
}

type simWTinyLFU struct {
	windowCap, protCap, mainCap  int
	window, probation, protected lruList
	table                        map[uint64]*lruNode
	sketch                       *cmSketch
}

func newSimWTinyLFU(capacity int) *simWTinyLFU {
	wc := max(capacity/100, 1)
	mc := capacity - wc
	p := &simWTinyLFU{
		windowCap: wc, mainCap: mc, protCap: mc * 8 / 10,
		table:  make(map[uint64]*lruNode, capacity),
		sketch: newCMSketch(capacity),
	}
	p.window.init()
	p.probation.init()
	p.protected.init()
	return p
}

func (p *simWTinyLFU) access(key uint64) bool {
	p.sketch.add(key)
	if n, ok := p.table[key]; ok {
		switch n.region {
		case 0:
			p.window.remove(n)
			p.window.pushFront(n)
		case 1:
			p.probation.remove(n)
			n.region = 2
			p.protected.pushFront(n)
			if p.protected.len > p.protCap {
				d := p.protected.back()
				p.protected.remove(d)
				d.region = 1
				p.probation.pushFront(d)
			}
		case 2:
			p.protected.remove(n)
			p.protected.pushFront(n)
		}
		return true
	}
	n := &lruNode{key: key}
	p.table[key] = n
	p.window.pushFront(n)
	if p.window.len <= p.windowCap {
		return false
	}
	cand := p.window.back()
	p.window.remove(cand)
	if p.probation.len+p.protected.len < p.mainCap {
		cand.region = 1
		p.probation.pushFront(cand)
		return false
	}
	victim := p.probation.back()
	if victim == nil {
		victim = p.protected.back()
	}
	vn := victim
	if p.sketch.estimate(cand.key) > p.sketch.estimate(vn.key) {
		if vn.region == 1 {
			p.probation.remove(victim)
		} else {
			p.protected.remove(victim)
		}
		delete(p.table, vn.key)
		cand.region = 1
		p.probation.pushFront(cand)
	} else {
		delete(p.table, cand.key)
	}
	return false
}
