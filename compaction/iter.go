package compaction

import (
	"fmt"
	"slices"
	"sort"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/rangedel"
	"github.com/strata-db/strata/vlog"
)

// stripes maps sequence numbers to snapshot stripes.
type stripes []base.SeqNum // open snapshot seqs, ascending

func (s stripes) of(seq base.SeqNum) int {
	return sort.Search(len(s), func(i int) bool { return s[i] >= seq })
}

// Stats counts what a compaction did.
type Stats struct {
	EntriesIn        uint64
	EntriesOut       uint64
	ShadowedDropped  uint64 // versions hidden by a newer version in their stripe
	DeletesDropped   uint64 // point tombstones elided at the bottom
	CoveredDropped   uint64 // point entries deleted by a range tombstone
	RangeDelsDropped uint64 // tombstone sequence numbers not written out
	Filtered         uint64 // entries the Filter removed
	BytesIn          uint64 // key and value bytes read from the input
	BytesOut         uint64 // bytes of the output files
	// VlogGarbage meters, per value log, the record bytes of the pointers
	// the compaction dropped (shadowed, deleted, range-deleted, filtered):
	// the garbage it created. VlogRelocated counts, per value log, the
	// record bytes of the pointers it moved to another value log (see
	// Config.Relocate). For every value log, the input tables' references
	// less the outputs' equal the sum of the two.
	VlogGarbage   map[base.FileNum]uint64
	VlogRelocated map[base.FileNum]uint64
	Relocated     uint64 // pointers relocated
	// Expired counts the entries dropped or turned into tombstones because
	// their TTL had passed (Config.Now).
	Expired uint64
	// Merged counts the merge operands folded into a value or combined.
	Merged uint64
	// SeparatedBytes counts the record bytes of values Config.Separate
	// moved to value logs.
	SeparatedBytes uint64
}

// addVlog adds the record bytes of p to the per-value-log map *m.
func (s *Stats) addVlog(m *map[base.FileNum]uint64, p vlog.Pointer) {
	if *m == nil {
		*m = make(map[base.FileNum]uint64)
	}
	(*m)[p.FileNum] += uint64(p.Length)
}

// dropped meters an input entry the compaction does not write.
func (f *entryFilter) dropped(k base.InternalKey, value []byte) {
	if !k.Kind().IsPointer() {
		return
	}
	_, enc, err := base.SplitEntry(k.Kind(), value)
	if err != nil {
		return
	}
	if p, err := vlog.DecodePointer(enc); err == nil {
		f.stats.addVlog(&f.stats.VlogGarbage, p)
	}
}

// Decision is a Filter's verdict on an entry.
type Decision int

const (
	// Keep leaves the entry as it is.
	Keep Decision = iota
	// Remove deletes the key: the entry is dropped at the bottom of the
	// tree and becomes a point tombstone elsewhere, so that older versions
	// below stay hidden.
	Remove
	// ChangeValue keeps the entry with the value the filter returned.
	ChangeValue
)

// Filter is the hook through which later features act during compaction:
// TTL expiry decided from the key side, relocation of values out of value
// logs being collected. It sees the newest version of each key that no open
// snapshot can see (RocksDB's rule: a snapshot's view never changes), of
// kinds SET and value pointer. It must be safe for concurrent use (several
// compactions may run at once) and must not retain value.
type Filter interface {
	Filter(key base.InternalKey, value []byte) (Decision, []byte)
}

// entryFilter walks the merged input and reports which entries survive.
type entryFilter struct {
	in         base.InternalIterator
	snaps      stripes
	rangeDels  *rangedel.Set
	bottommost bool
	stats      *Stats
	filter     Filter
	now        int64 // Config.Now

	// key and value of the entry last returned by next (the value may have
	// been changed by the filter; the kind turned into a deletion).
	key   base.InternalKey
	value []byte

	curKey     []byte // user key of the entries being walked
	lastStripe int    // stripe of the last entry seen for curKey
	haveKey    bool

	// Merge operands (see foldMerge): merger and readValue come from the
	// Config; pending says the input is already on an entry not yet
	// considered; keepStripe keeps every entry of the current key's stripe
	// (operands that cannot be folded without a merger); queue holds
	// entries still to return.
	merger     Merger
	readValue  func(key, ptr []byte) ([]byte, error)
	pending    bool
	keepStripe bool
	queue      []queued
	mergeBuf   []byte
}

type queued struct {
	key   base.InternalKey
	value []byte
}

// Merger folds merge operands (the DB's Options.Merger).
type Merger interface {
	Merge(key, existing []byte, operands [][]byte) ([]byte, error)
	PartialMerge(key []byte, operands [][]byte) ([]byte, bool)
}

// next advances to the next surviving entry. It returns false at the end of
// the input or on error (check in.Error()).
func (f *entryFilter) next(first bool) (bool, error) {
	if len(f.queue) > 0 {
		q := f.queue[0]
		f.queue = f.queue[1:]
		f.key, f.value = q.key, q.value
		return true, nil
	}
	ok := false
	switch {
	case first:
		ok = f.in.First()
	case f.pending:
		ok, f.pending = f.in.Valid(), false
	default:
		ok = f.in.Next()
	}
	for ; ok; ok = f.in.Next() {
		k := f.in.Key()
		f.stats.EntriesIn++
		f.stats.BytesIn += uint64(k.Size() + len(f.in.Value()))
		kind := k.Kind()
		if !kind.Valid() || kind == base.KindRangeDelete {
			return false, fmt.Errorf("compaction input holds an entry of kind %s: %s", kind, k)
		}
		seq := k.SeqNum()
		stripe := f.snaps.of(seq)
		if !f.haveKey || !base.Equal(k.UserKey, f.curKey) {
			f.curKey = append(f.curKey[:0], k.UserKey...)
			f.haveKey = true
			f.keepStripe = false
		} else if stripe == f.lastStripe && !f.keepStripe {
			// A newer version of the same stripe was already considered.
			f.stats.ShadowedDropped++
			f.dropped(k, f.in.Value())
			continue
		} else if stripe != f.lastStripe {
			f.keepStripe = false
		}
		f.lastStripe = stripe

		// Deleted by a range tombstone that every reader of this entry sees?
		if t := f.rangeDels.MaxCovering(k.UserKey, base.SeqNumMax); t > seq {
			if covered := f.coveredInStripe(k.UserKey, seq, stripe); covered {
				f.stats.CoveredDropped++
				f.dropped(k, f.in.Value())
				continue
			}
		}
		if kind == base.KindDelete && f.bottommost && stripe == 0 {
			f.stats.DeletesDropped++
			continue
		}
		f.key, f.value = k, f.in.Value()
		if kind == base.KindMerge && !f.keepStripe {
			if f.merger == nil {
				// Without a merger nothing may be folded: keep every
				// entry of this key's stripe.
				f.keepStripe = true
				return true, nil
			}
			return f.foldMerge(k, stripe)
		}
		if kind.HasMeta() {
			meta, _, err := base.DecodeEntryMeta(f.value)
			if err != nil {
				return false, fmt.Errorf("compaction: entry %s: %w", k, err)
			}
			if meta.Expired(f.now) {
				// Expired: deleted for every reader, snapshots included
				// (expiry is by time, not sequence). A tombstone keeps
				// older versions below hidden; at the bottom nothing is
				// below. Decided from the tree entry alone.
				f.stats.Expired++
				f.dropped(k, f.value)
				if f.bottommost && stripe == 0 {
					continue
				}
				f.key.Trailer = base.MakeTrailer(seq, base.KindDelete)
				f.value = nil
				return true, nil
			}
		}
		if f.filter != nil && stripe == len(f.snaps) && (kind.IsSet() || kind.IsPointer()) {
			switch d, v := f.filter.Filter(k, f.value); d {
			case Remove:
				f.stats.Filtered++
				f.dropped(k, f.value)
				if f.bottommost && stripe == 0 {
					continue
				}
				f.key.Trailer = base.MakeTrailer(seq, base.KindDelete)
				f.value = nil
			case ChangeValue:
				f.value = v
			}
		}
		return true, nil
	}
	return false, f.in.Error()
}

// coveredInStripe reports whether a tombstone with seq in (seq, top of the
// entry's stripe] covers key: every snapshot that sees the entry sees it too.
func (f *entryFilter) coveredInStripe(key []byte, seq base.SeqNum, stripe int) bool {
	top := base.SeqNumMax
	if stripe < len(f.snaps) {
		top = f.snaps[stripe]
	}
	return f.rangeDels.MaxCovering(key, top) > seq
}

// keepRangeDels returns, per fragment, the tombstone seqs that must be
// written: the newest of each stripe, minus stripe 0 at the bottom.
func keepRangeDels(set *rangedel.Set, snaps stripes, bottommost bool, stats *Stats) []rangedel.Fragment {
	var out []rangedel.Fragment
	for _, frag := range set.Fragments() {
		var seqs []base.SeqNum
		last := -1
		for _, seq := range frag.Seqs { // newest first
			s := snaps.of(seq)
			if s == last || (bottommost && s == 0) {
				stats.RangeDelsDropped++
				continue
			}
			last = s
			seqs = append(seqs, seq)
		}
		if len(seqs) > 0 {
			out = append(out, rangedel.Fragment{Start: frag.Start, End: frag.End, Seqs: seqs})
		}
	}
	return out
}

// foldMerge folds the merge operand k, the newest entry of its key in its
// snapshot stripe, with the entries below it in the same stripe. If the
// stripe holds the value below the operands (a set or pointer, a deletion,
// an expired entry or a range deletion that every reader of the stripe
// sees), the result is a set carrying the merged value at k's sequence
// number, and the older entries of the stripe are dropped as shadowed. A
// value below that has an expiry is not folded (operands apply to it only
// while it lives): the operands are combined above it and it is kept.
// Otherwise the operands are combined into one (PartialMerge), or kept as
// they are; at the bottom of the tree, in the oldest stripe, with nothing
// below, they are merged onto no value.
//
// A Merge that fails (an operand written without validation) fails
// neither the flush nor the compaction: the entries are kept as they were
// (see keepUnfolded), and a read of the key reports the merger's error.
func (f *entryFilter) foldMerge(k base.InternalKey, stripe int) (bool, error) {
	top := k.Clone()
	ops := [][]byte{append([]byte(nil), f.in.Value()...)} // newest first
	seqs := []base.SeqNum{top.SeqNum()}
	var (
		existing  []byte
		found     bool    // the value below the operands (or its absence) is known
		more      bool    // entries of the key in older stripes follow
		baseEntry *queued // a value with an expiry below the operands, kept
		below     *queued // the entry found below the operands, kept if the merge fails
		// belowInput: below is an entry of the input (not a tombstone
		// standing for an expired value, which is counted already).
		belowInput bool
	)
	for ok := f.in.Next(); ok; ok = f.in.Next() {
		e := f.in.Key()
		if !base.Equal(e.UserKey, top.UserKey) {
			break
		}
		if f.snaps.of(e.SeqNum()) != stripe {
			more = true
			break
		}
		f.stats.EntriesIn++
		f.stats.BytesIn += uint64(e.Size() + len(f.in.Value()))
		v := f.in.Value()
		if t := f.rangeDels.MaxCovering(e.UserKey, base.SeqNumMax); t > e.SeqNum() && f.coveredInStripe(e.UserKey, e.SeqNum(), stripe) {
			f.stats.CoveredDropped++
			f.dropped(e, v)
			found = true
			break
		}
		kind := e.Kind()
		if kind == base.KindMerge {
			ops = append(ops, append([]byte(nil), v...))
			seqs = append(seqs, e.SeqNum())
			continue
		}
		found = true
		if kind == base.KindDelete {
			below, belowInput = &queued{key: e.Clone()}, true
			break
		}
		meta, p, err := base.SplitEntry(kind, v)
		if err != nil {
			return false, fmt.Errorf("compaction: entry %s: %w", e, err)
		}
		if meta.Expired(f.now) {
			// Expired: gone for every reader whatever happens to the
			// operands; kept as a tombstone if the merge fails.
			f.stats.Expired++
			f.dropped(e, v)
			if !f.bottommost || stripe != 0 {
				below = &queued{key: base.MakeInternalKey(e.UserKey, e.SeqNum(), base.KindDelete)}
			}
			break
		}
		if meta.ExpiresAt != 0 {
			// A value that will expire: operands apply to it only while it
			// lives, so they cannot be folded into it. Combine them above
			// it and keep it as it is.
			baseEntry = &queued{key: e.Clone(), value: append([]byte(nil), v...)}
			found = false
			break
		}
		below, belowInput = &queued{key: e.Clone(), value: append([]byte(nil), v...)}, true
		if kind.IsPointer() {
			if f.readValue == nil {
				return false, fmt.Errorf("compaction: entry %s: merge onto a separated value needs a value reader", e)
			}
			val, err := f.readValue(e.UserKey, p)
			if err != nil {
				return false, err
			}
			existing = base.MergeBase(val)
		} else {
			existing = base.MergeBase(below.value[len(v)-len(p):])
		}
		break
	}
	if err := f.in.Error(); err != nil {
		return false, err
	}
	// The input is on an entry not considered yet (or at the end); an entry
	// that was consumed (the value below) is passed, and the rest of the
	// stripe is dropped as shadowed by the normal walk.
	f.pending = !found && baseEntry == nil
	f.curKey = append(f.curKey[:0], top.UserKey...)
	f.lastStripe = stripe
	slices.Reverse(ops)
	if found || (baseEntry == nil && !more && f.bottommost && stripe == 0) {
		val, err := f.merger.Merge(top.UserKey, existing, ops)
		if err != nil {
			f.keepUnfolded(top.UserKey, ops, seqs, below, stripe)
			return f.next(false)
		}
		f.stats.Merged++
		f.stats.ShadowedDropped += uint64(len(seqs) - 1)
		if belowInput {
			// A value or tombstone folded in: shadowed, and a pointer's
			// record is garbage.
			f.dropped(below.key, below.value)
			f.stats.ShadowedDropped++
		}
		f.mergeBuf = append(f.mergeBuf[:0], val...)
		f.key = base.MakeInternalKey(top.UserKey, top.SeqNum(), base.KindSet)
		f.value = f.mergeBuf
		return true, nil
	}
	if op, ok := f.merger.PartialMerge(top.UserKey, ops); ok {
		f.stats.Merged++
		f.stats.ShadowedDropped += uint64(len(seqs) - 1)
		f.mergeBuf = append(f.mergeBuf[:0], op...)
		f.key, f.value = top, f.mergeBuf
		if baseEntry != nil {
			f.queue = append(f.queue, *baseEntry)
		}
		return true, nil
	}
	f.keepUnfolded(top.UserKey, ops, seqs, baseEntry, stripe)
	return f.next(false)
}

// keepUnfolded queues the operands of key (ops oldest first, seqs newest
// first) at their own sequence numbers, then below, the entry under them
// (nil: none, or it was dropped as covered by a range deletion), as they
// were. A tombstone below is dropped where the walk would drop it (the
// bottom of the tree, oldest stripe): with or without it, the operands
// apply to no value.
func (f *entryFilter) keepUnfolded(key []byte, ops [][]byte, seqs []base.SeqNum, below *queued, stripe int) {
	for j := range seqs {
		f.queue = append(f.queue, queued{key: base.MakeInternalKey(key, seqs[j], base.KindMerge), value: ops[len(ops)-1-j]})
	}
	if below == nil {
		return
	}
	if below.key.Kind() == base.KindDelete && f.bottommost && stripe == 0 {
		f.stats.DeletesDropped++ // (an expired value below is not queued there)
		return
	}
	f.queue = append(f.queue, *below)
}
