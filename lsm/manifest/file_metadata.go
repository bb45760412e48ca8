package manifest

import (
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/strata-db/strata/internal/base"
)

// NumLevels is the number of levels of the tree, L0..L6.
const NumLevels = 7

// FileMetadata describes one SSTable. Fields other than refs and the
// compaction state are immutable once the file is part of a version.
type FileMetadata struct {
	FileNum base.FileNum
	Size    uint64
	// Smallest and Largest bound every key of the table, point keys and range
	// tombstones. Largest may be a range-deletion sentinel (exclusive end).
	Smallest, Largest       base.InternalKey
	SmallestSeq, LargestSeq base.SeqNum
	HasRangeDels            bool
	// VlogRefs is what the table's value pointers reference, per value log,
	// sorted by file number: the exact reverse index (value log -> tables
	// that still point into it) and the garbage ledger are built from it.
	// VlogRefsKnown is false only for tables recorded by a manifest older
	// than this field; the DB reads their references from the tables
	// themselves at Open.
	VlogRefs      []VlogRef
	VlogRefsKnown bool
	// Expiry summarizes the TTLs of the table's entries (zero when none
	// has one), so that tables whose entries have mostly expired can be
	// compacted without reading them.
	Expiry TableExpiry
	// Virtual says that the table's file may hold keys outside
	// [Smallest, Largest]: a table of another instance referenced with a
	// visible range (a key range opened from checkpoints by reference),
	// of which reads and compactions see only the keys and the parts of
	// range deletions within the bounds. Its Size, sequence numbers and
	// VlogRefs are the whole file's: the references of keys outside the
	// bounds count as live until a compaction rewrites the table.
	Virtual bool
	// SeqOffset is added to the sequence number of every entry the file
	// holds: an ingested table keeps the numbers it was written with (0,
	// and its merge operands' layers above it) and gets the ingest's
	// sequence number here, in the manifest edit that adds it, so that
	// Ingest does not rewrite the table while writers wait (Pebble's
	// global sequence number). Smallest, Largest, SmallestSeq and
	// LargestSeq are the numbers with the offset added, as reads see
	// them. Zero for every table a flush or compaction writes.
	SeqOffset base.SeqNum

	// refs counts the versions that contain this file. When it drops to zero
	// the file is obsolete and may be deleted.
	refs atomic.Int32

	// Compacting is set while a compaction has the file as input. It is
	// protected by the DB's mutex.
	Compacting bool
	// MarkedForCompaction asks the picker to compact the file when no level
	// needs compacting (garbage collection marks the tables that still
	// point into a value log it wants to free). Protected by the DB's mutex.
	MarkedForCompaction bool
}

// TableExpiry summarizes the expiry times (ms since the Unix epoch) of a
// table's entries: the earliest and latest, how many entries have one, and
// how many point entries the table holds.
type TableExpiry struct {
	Earliest, Latest int64
	Expiring         uint64
	Entries          uint64
}

// ExpiredFraction estimates the share of the table's entries that have
// expired at now, assuming their expiry times spread evenly between the
// earliest and the latest.
func (e TableExpiry) ExpiredFraction(now int64) float64 {
	if e.Expiring == 0 || e.Entries == 0 || now < e.Earliest {
		return 0
	}
	share := float64(e.Expiring) / float64(e.Entries)
	if now >= e.Latest || e.Latest == e.Earliest {
		return share
	}
	return share * float64(now-e.Earliest) / float64(e.Latest-e.Earliest)
}

// VlogRef is what one table references in one value log: the bytes of the
// records its pointers reach (whole records: header, key and value, the
// unit of a value log's size) and the number of pointers.
type VlogRef struct {
	FileNum  base.FileNum
	Bytes    uint64
	Pointers uint64
}

// VlogRef returns the table's reference to value log num (zero if none).
func (m *FileMetadata) VlogRef(num base.FileNum) VlogRef {
	for _, r := range m.VlogRefs {
		if r.FileNum == num {
			return r
		}
	}
	return VlogRef{}
}

func (m *FileMetadata) String() string {
	var kind string
	if m.Virtual {
		kind = "virtual"
	}
	if m.SeqOffset != 0 {
		kind += fmt.Sprintf("+%d", m.SeqOffset)
	}
	return fmt.Sprintf("%s:%s[%s-%s]", m.FileNum, kind, m.Smallest, m.Largest)
}

// ContainsUserKey reports whether key may lie in the file's bounds. A file
// whose largest key is a range-deletion sentinel does not contain the
// sentinel's user key.
func (m *FileMetadata) ContainsUserKey(key []byte) bool {
	if base.Compare(key, m.Smallest.UserKey) < 0 {
		return false
	}
	c := base.Compare(key, m.Largest.UserKey)
	return c < 0 || (c == 0 && !m.Largest.IsRangeDelSentinel())
}

// OverlapsRange reports whether the file's bounds intersect the user key
// range [start, end] (inclusive; nil means unbounded).
func (m *FileMetadata) OverlapsRange(start, end []byte) bool {
	if end != nil && base.Compare(m.Smallest.UserKey, end) > 0 {
		return false
	}
	if start != nil {
		c := base.Compare(m.Largest.UserKey, start)
		if c < 0 || (c == 0 && m.Largest.IsRangeDelSentinel()) {
			return false
		}
	}
	return true
}

// Refs returns the number of versions holding the file (for tests and
// metrics).
func (m *FileMetadata) Refs() int32 { return m.refs.Load() }

// Clip returns a copy of m's metadata restricted to the user keys in
// [start, end) (nil: no bound), or false if none of m's bounds lie in the
// range: narrower bounds, and virtual if they are narrower than the
// file's keys. The caller gives the copy its own file number when it
// joins a version of another database.
func (m *FileMetadata) Clip(start, end []byte) (*FileMetadata, bool) {
	if end != nil && base.Compare(m.Smallest.UserKey, end) >= 0 {
		return nil, false
	}
	if start != nil && !m.OverlapsRange(start, nil) {
		return nil, false
	}
	lowCut := start != nil && base.Compare(m.Smallest.UserKey, start) < 0
	highCut := end != nil && (base.Compare(m.Largest.UserKey, end) > 0 ||
		(base.Compare(m.Largest.UserKey, end) == 0 && !m.Largest.IsRangeDelSentinel()))
	c := &FileMetadata{
		FileNum: m.FileNum, Size: m.Size, Smallest: m.Smallest, Largest: m.Largest,
		SmallestSeq: m.SmallestSeq, LargestSeq: m.LargestSeq, HasRangeDels: m.HasRangeDels,
		VlogRefs: m.VlogRefs, VlogRefsKnown: m.VlogRefsKnown, Expiry: m.Expiry,
		Virtual: m.Virtual || lowCut || highCut, SeqOffset: m.SeqOffset,
	}
	if lowCut {
		// The first internal key of start: the largest trailer.
		c.Smallest = base.InternalKey{UserKey: slices.Clone(start), Trailer: base.RangeDelSentinel}
	}
	if highCut {
		c.Largest = base.InternalKey{UserKey: slices.Clone(end), Trailer: base.RangeDelSentinel}
	}
	return c, true
}

// VisibleRange returns the user keys a virtual table's reads may see:
// [lower, upper), upper past the largest key (nil for a table that is
// not virtual: everything in the file).
func (m *FileMetadata) VisibleRange() (lower, upper []byte) {
	if !m.Virtual {
		return nil, nil
	}
	upper = m.Largest.UserKey
	if !m.Largest.IsRangeDelSentinel() {
		upper = append(slices.Clone(upper), 0) // the key's immediate successor
	}
	return m.Smallest.UserKey, upper
}
