package compaction

import (
	"fmt"
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
}

// next advances to the next surviving entry. It returns false at the end of
// the input or on error (check in.Error()).
func (f *entryFilter) next(first bool) (bool, error) {
	ok := false
	if first {
		ok = f.in.First()
	} else {
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
		} else if stripe == f.lastStripe {
			// A newer version of the same stripe was already considered.
			f.stats.ShadowedDropped++
			f.dropped(k, f.in.Value())
			continue
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
