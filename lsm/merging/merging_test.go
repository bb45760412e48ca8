package merging

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/stretchr/testify/require"
)

// sliceIter is a base.InternalIterator over a sorted slice.
type sliceIter struct {
	keys []base.InternalKey
	pos  int // -1 or len: invalid
}

func newSliceIter(keys []base.InternalKey) *sliceIter { return &sliceIter{keys: keys, pos: -1} }

func (s *sliceIter) valid() bool { return s.pos >= 0 && s.pos < len(s.keys) }
func (s *sliceIter) SeekGE(k []byte) bool {
	s.pos = sort.Search(len(s.keys), func(i int) bool { return base.Compare(s.keys[i].UserKey, k) >= 0 })
	return s.valid()
}
func (s *sliceIter) SeekLT(k []byte) bool {
	s.pos = sort.Search(len(s.keys), func(i int) bool { return base.Compare(s.keys[i].UserKey, k) >= 0 }) - 1
	return s.valid()
}
func (s *sliceIter) First() bool { s.pos = 0; return s.valid() }
func (s *sliceIter) Last() bool  { s.pos = len(s.keys) - 1; return s.valid() }
func (s *sliceIter) Next() bool {
	if s.pos < len(s.keys) {
		s.pos++
	}
	return s.valid()
}
func (s *sliceIter) Prev() bool {
	if s.pos >= 0 {
		s.pos--
	}
	return s.valid()
}
func (s *sliceIter) Valid() bool           { return s.valid() }
func (s *sliceIter) Key() base.InternalKey { return s.keys[s.pos] }
func (s *sliceIter) Value() []byte         { return []byte(s.keys[s.pos].String()) }
func (s *sliceIter) Error() error          { return nil }
func (s *sliceIter) Close() error          { return nil }

func randomKeys(rng *rand.Rand, n int, seqBase *base.SeqNum) []base.InternalKey {
	var keys []base.InternalKey
	for i := 0; i < n; i++ {
		*seqBase++
		k := []byte(fmt.Sprintf("k%03d", rng.IntN(60)))
		keys = append(keys, base.MakeInternalKey(k, *seqBase, base.KindSet))
	}
	slices.SortFunc(keys, base.InternalCompare)
	return keys
}

// checkAgainstModel drives it with random operations and compares every
// position with a sorted slice.
func checkAgainstModel(t *testing.T, rng *rand.Rand, it base.InternalIterator, model []base.InternalKey) {
	pos := -1
	for op := 0; op < 400; op++ {
		var ok bool
		switch r := rng.IntN(10); {
		case r < 1:
			ok, pos = it.First(), 0
		case r < 2:
			ok, pos = it.Last(), len(model)-1
		case r < 3:
			k := []byte(fmt.Sprintf("k%03d", rng.IntN(62)))
			ok = it.SeekGE(k)
			pos = sort.Search(len(model), func(i int) bool { return base.Compare(model[i].UserKey, k) >= 0 })
		case r < 4:
			k := []byte(fmt.Sprintf("k%03d", rng.IntN(62)))
			ok = it.SeekLT(k)
			pos = sort.Search(len(model), func(i int) bool { return base.Compare(model[i].UserKey, k) >= 0 }) - 1
		case r < 7:
			if pos < 0 || pos >= len(model) {
				continue
			}
			ok, pos = it.Next(), pos+1
		default:
			if pos < 0 || pos >= len(model) {
				continue
			}
			ok, pos = it.Prev(), pos-1
		}
		want := pos >= 0 && pos < len(model)
		require.Equal(t, want, ok, "op %d", op)
		require.NoError(t, it.Error())
		if want {
			require.Equal(t, model[pos].String(), it.Key().String(), "op %d", op)
		}
	}
}

func TestMergingIterModel(t *testing.T) {
	for seed := uint64(0); seed < 30; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		var seq base.SeqNum
		var iters []base.InternalIterator
		var model []base.InternalKey
		for i := 0; i < 1+rng.IntN(5); i++ {
			keys := randomKeys(rng, rng.IntN(40), &seq)
			model = append(model, keys...)
			iters = append(iters, newSliceIter(keys))
		}
		slices.SortFunc(model, base.InternalCompare)
		checkAgainstModel(t, rng, New(iters...), model)
	}
}

func TestLevelIterModel(t *testing.T) {
	for seed := uint64(0); seed < 30; seed++ {
		rng := rand.New(rand.NewPCG(seed, 9))
		var seq base.SeqNum
		all := randomKeys(rng, 100, &seq)
		// Cut into files at user-key boundaries (a level's files never split a
		// user key... they may, but ours keep it simple).
		var files []*manifest.FileMetadata
		contents := map[base.FileNum][]base.InternalKey{}
		for i := 0; i < len(all); {
			j := min(len(all), i+1+rng.IntN(15))
			for j < len(all) && base.Equal(all[j].UserKey, all[j-1].UserKey) {
				j++
			}
			num := base.FileNum(len(files) + 1)
			files = append(files, &manifest.FileMetadata{FileNum: num, Smallest: all[i], Largest: all[j-1]})
			contents[num] = all[i:j]
			i = j
		}
		opened := 0
		li := NewLevelIter(files, func(f *manifest.FileMetadata) (base.InternalIterator, error) {
			opened++
			return newSliceIter(contents[f.FileNum]), nil
		}, nil, nil)
		checkAgainstModel(t, rng, li, all)
		require.NoError(t, li.Close())
		require.Positive(t, opened)
	}
}

func TestLevelIterBoundsSkipFiles(t *testing.T) {
	mk := func(num base.FileNum, a, b string) *manifest.FileMetadata {
		return &manifest.FileMetadata{FileNum: num,
			Smallest: base.MakeInternalKey([]byte(a), 1, base.KindSet),
			Largest:  base.MakeInternalKey([]byte(b), 1, base.KindSet)}
	}
	files := []*manifest.FileMetadata{mk(1, "a", "b"), mk(2, "c", "d"), mk(3, "e", "f")}
	var opened []base.FileNum
	li := NewLevelIter(files, func(f *manifest.FileMetadata) (base.InternalIterator, error) {
		opened = append(opened, f.FileNum)
		return newSliceIter([]base.InternalKey{f.Smallest, f.Largest}), nil
	}, []byte("c"), []byte("e"))
	require.True(t, li.SeekGE([]byte("c")))
	require.True(t, li.Next())
	require.False(t, li.Next(), "file 3 starts at the upper bound and must not be opened")
	require.Equal(t, []base.FileNum{2}, opened)
}
