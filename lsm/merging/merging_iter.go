package merging

import (
	"github.com/strata-db/strata/internal/base"
)

// MergingIter merges sorted internal iterators with a binary heap. It
// supports changing direction at any position.
type MergingIter struct {
	iters []base.InternalIterator
	// keys[i] is the current key of iters[i] while it is in the heap,
	// read once each time the child moves: the heap's comparisons and Key
	// then call no child (a call goes through a level's iterator to a
	// table's to a block's), which a scan would otherwise do three to five
	// times a row.
	keys []base.InternalKey
	heap []int // indices into iters, heap-ordered by the current direction
	dir  int   // +1 forward (min-heap), -1 reverse (max-heap)
	err  error
}

var _ base.InternalIterator = (*MergingIter)(nil)

// New returns an iterator over the union of iters. It takes ownership of
// them: Close closes them all.
func New(iters ...base.InternalIterator) *MergingIter {
	return &MergingIter{iters: iters, keys: make([]base.InternalKey, len(iters)), heap: make([]int, 0, len(iters)), dir: 1}
}

func (m *MergingIter) less(a, b int) bool {
	c := base.InternalCompare(m.keys[m.heap[a]], m.keys[m.heap[b]])
	if m.dir > 0 {
		return c < 0
	}
	return c > 0
}

func (m *MergingIter) down(i int) {
	n := len(m.heap)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		j := l
		if r := l + 1; r < n && m.less(r, l) {
			j = r
		}
		if !m.less(j, i) {
			return
		}
		m.heap[i], m.heap[j] = m.heap[j], m.heap[i]
		i = j
	}
}

// rebuild collects the valid children into the heap for direction dir.
func (m *MergingIter) rebuild(dir int) bool {
	m.dir = dir
	m.heap = m.heap[:0]
	for i, it := range m.iters {
		if it.Valid() {
			m.keys[i] = it.Key()
			m.heap = append(m.heap, i)
		} else if err := it.Error(); err != nil {
			m.err = err
			m.heap = m.heap[:0]
			return false
		}
	}
	for i := len(m.heap)/2 - 1; i >= 0; i-- {
		m.down(i)
	}
	return len(m.heap) > 0
}

// SeekGE implements base.InternalIterator.
func (m *MergingIter) SeekGE(key []byte) bool {
	m.err = nil
	for _, it := range m.iters {
		it.SeekGE(key)
	}
	return m.rebuild(1)
}

// SeekLT implements base.InternalIterator.
func (m *MergingIter) SeekLT(key []byte) bool {
	m.err = nil
	for _, it := range m.iters {
		it.SeekLT(key)
	}
	return m.rebuild(-1)
}

// First implements base.InternalIterator.
func (m *MergingIter) First() bool {
	m.err = nil
	for _, it := range m.iters {
		it.First()
	}
	return m.rebuild(1)
}

// Last implements base.InternalIterator.
func (m *MergingIter) Last() bool {
	m.err = nil
	for _, it := range m.iters {
		it.Last()
	}
	return m.rebuild(-1)
}

// advanceTop moves the heap's top child one step in the current direction.
func (m *MergingIter) advanceTop() bool {
	top := m.heap[0]
	it := m.iters[top]
	var ok bool
	if m.dir > 0 {
		ok = it.Next()
	} else {
		ok = it.Prev()
	}
	if ok {
		m.keys[top] = it.Key()
		m.down(0)
		return true
	}
	if err := it.Error(); err != nil {
		m.err = err
		m.heap = m.heap[:0]
		return false
	}
	last := len(m.heap) - 1
	m.heap[0] = m.heap[last]
	m.heap = m.heap[:last]
	if last > 0 {
		m.down(0)
	}
	return len(m.heap) > 0
}

// Next implements base.InternalIterator.
func (m *MergingIter) Next() bool {
	if len(m.heap) == 0 {
		return false
	}
	if m.dir < 0 {
		return m.switchDirection(1)
	}
	return m.advanceTop()
}

// Prev implements base.InternalIterator.
func (m *MergingIter) Prev() bool {
	if len(m.heap) == 0 {
		return false
	}
	if m.dir > 0 {
		return m.switchDirection(-1)
	}
	return m.advanceTop()
}

// switchDirection repositions every child other than the current one just
// past the current key in the new direction, then steps the current one.
func (m *MergingIter) switchDirection(dir int) bool {
	cur := m.heap[0]
	key := m.iters[cur].Key()
	// The current child does not move until the others are placed, so key
	// stays valid.
	for i, it := range m.iters {
		if i == cur {
			continue
		}
		ok := it.SeekGE(key.UserKey)
		if dir > 0 {
			// First entry > key.
			for ok && base.InternalCompare(it.Key(), key) <= 0 {
				ok = it.Next()
			}
			continue
		}
		// Last entry < key: the first entry >= key, then one step back.
		for ok && base.InternalCompare(it.Key(), key) < 0 {
			ok = it.Next()
		}
		if ok {
			it.Prev()
		} else if it.Error() == nil {
			it.Last()
		}
	}
	if dir > 0 {
		m.iters[cur].Next()
	} else {
		m.iters[cur].Prev()
	}
	return m.rebuild(dir)
}

// Valid implements base.InternalIterator.
func (m *MergingIter) Valid() bool { return len(m.heap) > 0 && m.err == nil }

// Key implements base.InternalIterator.
func (m *MergingIter) Key() base.InternalKey { return m.keys[m.heap[0]] }

// Value implements base.InternalIterator.
func (m *MergingIter) Value() []byte { return m.iters[m.heap[0]].Value() }

// Error implements base.InternalIterator.
func (m *MergingIter) Error() error { return m.err }

// Close closes every child and returns the first error.
func (m *MergingIter) Close() error {
	err := m.err
	for _, it := range m.iters {
		if cerr := it.Close(); err == nil {
			err = cerr
		}
	}
	m.iters, m.keys, m.heap = nil, nil, nil
	return err
}
