// Package rangedel turns range tombstones, which may overlap, into a
// fragmented set: sorted, non-overlapping spans of key space, each with the
// sequence numbers of every tombstone that covers it. Reads ask the set
// whether a point entry is deleted; compaction writes fragments back out,
// dropping the sequence numbers no snapshot needs.
//
//	tombstones:  [a-------e)#9
//	                 [c-------g)#5
//	fragments:   [a-c)#9 [c-e)#9,5 [e-g)#5
package rangedel

import (
	"cmp"
	"slices"
	"sort"

	"github.com/strata-db/strata/internal/base"
)

// Fragment is the span [Start, End) with the sequence numbers of the
// tombstones covering it, newest first.
type Fragment struct {
	Start, End []byte
	Seqs       []base.SeqNum
}

// Set is an immutable fragmented set of range tombstones. The zero value
// and nil are empty sets.
type Set struct {
	frags []Fragment
}

// Build fragments ts (any order). Keys are referenced, not copied: the
// caller keeps them alive and unchanged for the life of the Set.
func Build(ts []base.RangeTombstone) *Set {
	if len(ts) == 0 {
		return nil
	}
	bounds := make([][]byte, 0, 2*len(ts))
	for _, t := range ts {
		if base.Compare(t.Start, t.End) >= 0 {
			continue
		}
		bounds = append(bounds, t.Start, t.End)
	}
	if len(bounds) == 0 {
		return nil
	}
	slices.SortFunc(bounds, base.Compare)
	bounds = slices.CompactFunc(bounds, func(a, b []byte) bool { return base.Equal(a, b) })
	frags := make([]Fragment, len(bounds)-1)
	for i := range frags {
		frags[i].Start, frags[i].End = bounds[i], bounds[i+1]
	}
	for _, t := range ts {
		if base.Compare(t.Start, t.End) >= 0 {
			continue
		}
		lo := sort.Search(len(bounds), func(i int) bool { return base.Compare(bounds[i], t.Start) >= 0 })
		hi := sort.Search(len(bounds), func(i int) bool { return base.Compare(bounds[i], t.End) >= 0 })
		for i := lo; i < hi; i++ {
			frags[i].Seqs = append(frags[i].Seqs, t.Seq)
		}
	}
	out := frags[:0]
	for _, f := range frags {
		if len(f.Seqs) == 0 {
			continue
		}
		slices.SortFunc(f.Seqs, func(a, b base.SeqNum) int { return cmp.Compare(b, a) }) // newest first
		f.Seqs = slices.Compact(f.Seqs)
		out = append(out, f)
	}
	if len(out) == 0 {
		return nil
	}
	return &Set{frags: out}
}

// Empty reports whether the set holds no tombstones.
func (s *Set) Empty() bool { return s == nil || len(s.frags) == 0 }

// Len returns the number of fragments.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.frags)
}

// Fragments returns the fragments in key order (read-only).
func (s *Set) Fragments() []Fragment {
	if s == nil {
		return nil
	}
	return s.frags
}

// find returns the index of the fragment containing key, or -1.
func (s *Set) find(key []byte) int {
	if s == nil {
		return -1
	}
	frags := s.frags
	i := sort.Search(len(frags), func(i int) bool { return base.Compare(frags[i].End, key) > 0 })
	if i < len(frags) && base.Compare(frags[i].Start, key) <= 0 {
		return i
	}
	return -1
}

// MaxCovering returns the largest sequence number <= snap of a tombstone
// covering key, or 0 when none does. A point entry of key with seq s is
// deleted for a reader at snap when s < MaxCovering(key, snap).
func (s *Set) MaxCovering(key []byte, snap base.SeqNum) base.SeqNum {
	i := s.find(key)
	if i < 0 {
		return 0
	}
	for _, seq := range s.frags[i].Seqs {
		if seq <= snap {
			return seq
		}
	}
	return 0
}

// Covers reports whether an entry of key written at seq is deleted for a
// reader at snap.
func (s *Set) Covers(key []byte, seq, snap base.SeqNum) bool {
	return seq < s.MaxCovering(key, snap)
}

// Tombstones returns the set as tombstones, one per fragment and sequence
// number, in (start ascending, seq descending) order: the order an SSTable
// writer expects.
func (s *Set) Tombstones() []base.RangeTombstone {
	if s == nil {
		return nil
	}
	var out []base.RangeTombstone
	for _, f := range s.frags {
		for _, seq := range f.Seqs {
			out = append(out, base.RangeTombstone{Start: f.Start, End: f.End, Seq: seq})
		}
	}
	return out
}
