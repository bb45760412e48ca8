package merging

import (
	"sort"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
)

// NewFileIter opens an iterator over one file's point entries.
type NewFileIter func(f *manifest.FileMetadata) (base.InternalIterator, error)

// LevelIter concatenates the files of a level L1+ (sorted, non-overlapping),
// opening each file only when iteration reaches it. Lower and Upper are
// optional user-key hints: files entirely outside [Lower, Upper) are never
// opened (the caller still enforces the bounds on keys).
type LevelIter struct {
	files   []*manifest.FileMetadata
	newIter NewFileIter
	lower   []byte
	upper   []byte

	idx  int // index of the file iter is open on; -1 or len(files) when none
	iter base.InternalIterator
	err  error
}

var _ base.InternalIterator = (*LevelIter)(nil)

// NewLevelIter returns an iterator over files.
func NewLevelIter(files []*manifest.FileMetadata, newIter NewFileIter, lower, upper []byte) *LevelIter {
	return &LevelIter{files: files, newIter: newIter, lower: lower, upper: upper, idx: -1}
}

// open switches to file i (closing the previous one). It returns false when i
// is out of range, beyond the bounds, or the file failed to open.
func (l *LevelIter) open(i int) bool {
	if i == l.idx && l.iter != nil {
		return true
	}
	if l.iter != nil {
		if err := l.iter.Close(); err != nil && l.err == nil {
			l.err = err
		}
		l.iter = nil
	}
	l.idx = i
	if i < 0 || i >= len(l.files) || l.err != nil {
		return false
	}
	f := l.files[i]
	if l.upper != nil && base.Compare(f.Smallest.UserKey, l.upper) >= 0 {
		return false
	}
	if l.lower != nil {
		c := base.Compare(f.Largest.UserKey, l.lower)
		if c < 0 || (c == 0 && f.Largest.IsRangeDelSentinel()) {
			return false
		}
	}
	it, err := l.newIter(f)
	if err != nil {
		l.err = err
		return false
	}
	l.iter = it
	return true
}

// forward skips to the first entry of the following files while the current
// file is exhausted.
func (l *LevelIter) forward(ok bool) bool {
	for !ok {
		if l.iter != nil {
			if err := l.iter.Error(); err != nil {
				l.err = err
				return false
			}
		}
		if !l.open(l.idx + 1) {
			return false
		}
		ok = l.iter.First()
	}
	return true
}

func (l *LevelIter) backward(ok bool) bool {
	for !ok {
		if l.iter != nil {
			if err := l.iter.Error(); err != nil {
				l.err = err
				return false
			}
		}
		if !l.open(l.idx - 1) {
			return false
		}
		ok = l.iter.Last()
	}
	return true
}

// SeekGE implements base.InternalIterator.
func (l *LevelIter) SeekGE(key []byte) bool {
	l.err = nil
	i := sort.Search(len(l.files), func(i int) bool {
		c := base.Compare(l.files[i].Largest.UserKey, key)
		return c > 0 || (c == 0 && !l.files[i].Largest.IsRangeDelSentinel())
	})
	if !l.open(i) {
		return false
	}
	return l.forward(l.iter.SeekGE(key))
}

// SeekLT implements base.InternalIterator.
func (l *LevelIter) SeekLT(key []byte) bool {
	l.err = nil
	i := sort.Search(len(l.files), func(i int) bool {
		return base.Compare(l.files[i].Smallest.UserKey, key) >= 0
	}) - 1
	if !l.open(i) {
		return false
	}
	return l.backward(l.iter.SeekLT(key))
}

// First implements base.InternalIterator.
func (l *LevelIter) First() bool {
	l.err = nil
	if !l.open(0) {
		return false
	}
	return l.forward(l.iter.First())
}

// Last implements base.InternalIterator.
func (l *LevelIter) Last() bool {
	l.err = nil
	if !l.open(len(l.files) - 1) {
		return false
	}
	return l.backward(l.iter.Last())
}

// Next implements base.InternalIterator.
func (l *LevelIter) Next() bool {
	if l.iter == nil {
		return false
	}
	return l.forward(l.iter.Next())
}

// Prev implements base.InternalIterator.
func (l *LevelIter) Prev() bool {
	if l.iter == nil {
		return false
	}
	return l.backward(l.iter.Prev())
}

// Valid implements base.InternalIterator.
func (l *LevelIter) Valid() bool { return l.err == nil && l.iter != nil && l.iter.Valid() }

// Key implements base.InternalIterator.
func (l *LevelIter) Key() base.InternalKey { return l.iter.Key() }

// Value implements base.InternalIterator.
func (l *LevelIter) Value() []byte { return l.iter.Value() }

// Error implements base.InternalIterator.
func (l *LevelIter) Error() error {
	if l.err != nil {
		return l.err
	}
	if l.iter != nil {
		return l.iter.Error()
	}
	return nil
}

// Close implements base.InternalIterator.
func (l *LevelIter) Close() error {
	err := l.err
	if l.iter != nil {
		if cerr := l.iter.Close(); err == nil {
			err = cerr
		}
		l.iter = nil
	}
	return err
}
