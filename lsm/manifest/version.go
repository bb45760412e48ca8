package manifest

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/internal/invariants"
)

// Version is an immutable snapshot of the tree's files.
//
// INVARIANT: L0 is sorted by LargestSeq ascending (oldest first); L1..L6 are
// sorted by Smallest and their files do not overlap.
type Version struct {
	Levels [NumLevels][]*FileMetadata
	// Vlogs are the value-log files, by number. Tables' value pointers only
	// point into files listed here.
	Vlogs map[base.FileNum]*VlogMetadata
	// MergerName is the name of the Merger recorded for the database ("":
	// none recorded), carried from version to version until an edit sets
	// another, and written in every manifest snapshot, checkpoints'
	// included. The tree's merge operands are meant for that Merger.
	MergerName string
	// InstanceID names the database instance that writes this tree, in the
	// objects it shares (see package remote); "" before it first shares,
	// or for a database that never does. Carried as MergerName is.
	InstanceID string
	// sharedTables and sharedVlogs map the version's shared files to
	// their objects (see SharedRef). Copied on write: a version that
	// changes neither shares its parent's maps.
	sharedTables map[base.FileNum]SharedRef
	sharedVlogs  map[base.FileNum]SharedRef
	// live is, per value log, the record bytes the version's tables point
	// to (the sum of their VlogRefs): the live side of the garbage ledger.
	// A value log absent from it has no live bytes. Tables whose
	// references are unknown (see FileMetadata.VlogRefsKnown) count
	// nothing; liveUnknown says whether there are any.
	live        map[base.FileNum]uint64
	liveUnknown bool

	refs atomic.Int32
	// onZero is called once when the last reference is dropped, with the
	// files whose own reference count dropped to zero.
	onZero func(Obsolete)
}

// Ref adds a reference; every Ref must be paired with an Unref.
func (v *Version) Ref() { v.refs.Add(1) }

// Unref drops a reference. The last Unref releases the version's hold on its
// files and reports those no other version holds.
func (v *Version) Unref() {
	n := v.refs.Add(-1)
	if n > 0 {
		return
	}
	if n < 0 {
		// A double Unref is a bug in the engine, not something a caller or
		// the disk can cause; keep the count from going further negative.
		v.refs.Store(0)
		return
	}
	var obsolete Obsolete
	for _, files := range v.Levels {
		for _, f := range files {
			if f.refs.Add(-1) == 0 {
				obsolete.Tables = append(obsolete.Tables, f)
			}
		}
	}
	for _, vl := range v.Vlogs {
		if vl.refs.Add(-1) == 0 {
			obsolete.Vlogs = append(obsolete.Vlogs, vl)
		}
	}
	if v.onZero != nil && !obsolete.empty() {
		v.onZero(obsolete)
	}
}

// VlogLive returns the record bytes of value log num that the version's
// tables point to.
func (v *Version) VlogLive(num base.FileNum) uint64 { return v.live[num] }

// VlogRefsComplete reports whether every table's value-log references are
// known, so that VlogLive is exact. It is false only for a database
// written before references were recorded, until Open has read them.
func (v *Version) VlogRefsComplete() bool { return !v.liveUnknown }

// computeLive sums the tables' value-log references.
func computeLive(v *Version) (map[base.FileNum]uint64, bool) {
	live := make(map[base.FileNum]uint64)
	unknown := false
	v.Files(func(_ int, f *FileMetadata) {
		if !f.VlogRefsKnown {
			unknown = true
		}
		for _, r := range f.VlogRefs {
			live[r.FileNum] += r.Bytes
		}
	})
	return live, unknown
}

// CheckLedger recomputes the live bytes from the tables and compares them
// with what Apply maintained incrementally, and checks that every
// referenced value log is in the version. It is an expensive self-check.
func (v *Version) CheckLedger() error {
	live, unknown := computeLive(v)
	if unknown != v.liveUnknown {
		return fmt.Errorf("ledger: unknown references %t, maintained %t", unknown, v.liveUnknown)
	}
	for num, n := range live {
		if v.live[num] != n {
			return fmt.Errorf("ledger: value log %s has %d live bytes, maintained %d", num, n, v.live[num])
		}
		if n > 0 && v.Vlogs[num] == nil {
			return fmt.Errorf("ledger: tables point into value log %s, which the version does not hold", num)
		}
	}
	for num, n := range v.live {
		if live[num] != n {
			return fmt.Errorf("ledger: value log %s has %d live bytes, maintained %d", num, live[num], n)
		}
	}
	return nil
}

// Refs returns the reference count (for tests).
func (v *Version) Refs() int32 { return v.refs.Load() }

// NumFiles returns the number of files in level.
func (v *Version) NumFiles(level int) int { return len(v.Levels[level]) }

// LevelSize returns the total size of the files of level.
func (v *Version) LevelSize(level int) uint64 {
	var n uint64
	for _, f := range v.Levels[level] {
		n += f.Size
	}
	return n
}

// Files calls fn for every file of every level.
func (v *Version) Files(fn func(level int, f *FileMetadata)) {
	for level, files := range v.Levels {
		for _, f := range files {
			fn(level, f)
		}
	}
}

// KeyRange returns the smallest and the largest user key bounding the
// version's tables (the metadata's own slices); ok is false when it has
// none.
func (v *Version) KeyRange() (smallest, largest []byte, ok bool) {
	v.Files(func(_ int, f *FileMetadata) {
		if !ok || base.Compare(f.Smallest.UserKey, smallest) < 0 {
			smallest = f.Smallest.UserKey
		}
		if !ok || base.Compare(f.Largest.UserKey, largest) > 0 {
			largest = f.Largest.UserKey
		}
		ok = true
	})
	return smallest, largest, ok
}

// Overlaps returns the files of level whose bounds intersect the user key
// range [start, end] (inclusive; nil means unbounded).
func (v *Version) Overlaps(level int, start, end []byte) []*FileMetadata {
	var out []*FileMetadata
	files := v.Levels[level]
	if level == 0 {
		for _, f := range files {
			if f.OverlapsRange(start, end) {
				out = append(out, f)
			}
		}
		return out
	}
	i := 0
	if start != nil {
		i = sort.Search(len(files), func(i int) bool {
			c := base.Compare(files[i].Largest.UserKey, start)
			return c > 0 || (c == 0 && !files[i].Largest.IsRangeDelSentinel())
		})
	}
	for ; i < len(files); i++ {
		if end != nil && base.Compare(files[i].Smallest.UserKey, end) > 0 {
			break
		}
		out = append(out, files[i])
	}
	return out
}

// FindFile returns the index of the file of level (L1+) that may contain
// user key, or -1.
func (v *Version) FindFile(level int, key []byte) int {
	files := v.Levels[level]
	i := sort.Search(len(files), func(i int) bool {
		c := base.Compare(files[i].Largest.UserKey, key)
		return c > 0 || (c == 0 && !files[i].Largest.IsRangeDelSentinel())
	})
	if i < len(files) && base.Compare(files[i].Smallest.UserKey, key) <= 0 {
		return i
	}
	return -1
}

// LargestSeq returns the largest sequence number of the version's tables
// (0 without any). An ingested table's numbers reach the manifest's last
// sequence number only when a later flush records it: what allocates
// sequence numbers takes both.
func (v *Version) LargestSeq() base.SeqNum {
	var seq base.SeqNum
	v.Files(func(_ int, f *FileMetadata) { seq = max(seq, f.LargestSeq) })
	return seq
}

// CheckOrdering verifies the level invariants.
func (v *Version) CheckOrdering() error {
	for level, files := range v.Levels {
		for i, f := range files {
			if base.InternalCompare(f.Smallest, f.Largest) > 0 {
				return fmt.Errorf("L%d file %s: smallest %s > largest %s", level, f.FileNum, f.Smallest, f.Largest)
			}
			if i == 0 {
				continue
			}
			prev := files[i-1]
			if level == 0 {
				if prev.LargestSeq > f.LargestSeq || (prev.LargestSeq == f.LargestSeq && prev.FileNum > f.FileNum) {
					return fmt.Errorf("L0 files out of sequence order: %s (seq %d) before %s (seq %d)",
						prev.FileNum, prev.LargestSeq, f.FileNum, f.LargestSeq)
				}
				continue
			}
			// The previous file must end before this one starts. An exclusive
			// sentinel bound may equal the next file's smallest user key.
			c := base.Compare(prev.Largest.UserKey, f.Smallest.UserKey)
			if c > 0 || (c == 0 && !prev.Largest.IsRangeDelSentinel()) {
				return fmt.Errorf("L%d files overlap: %s and %s", level, prev, f)
			}
		}
	}
	return nil
}

func (v *Version) String() string {
	var b strings.Builder
	for _, vl := range v.SortedVlogs() {
		fmt.Fprintf(&b, "vlog %s\n", vl)
	}
	for level, files := range v.Levels {
		if len(files) == 0 {
			continue
		}
		fmt.Fprintf(&b, "L%d:\n", level)
		for _, f := range files {
			fmt.Fprintf(&b, "  %s\n", f)
		}
	}
	return b.String()
}

// Apply returns a new version: base with edits applied in order (each
// edit's deletions, then its additions). The new version holds references to
// its files but none to itself (the caller adds those). base may be nil (an
// empty tree).
func Apply(baseV *Version, edits ...*VersionEdit) (*Version, error) {
	var levels [NumLevels]map[base.FileNum]*FileMetadata
	where := make(map[base.FileNum]int)
	for level := range levels {
		levels[level] = make(map[base.FileNum]*FileMetadata)
		if baseV != nil {
			for _, f := range baseV.Levels[level] {
				levels[level][f.FileNum] = f
				where[f.FileNum] = level
			}
		}
	}
	vlogs := make(map[base.FileNum]*VlogMetadata)
	live := make(map[base.FileNum]uint64)
	if baseV != nil {
		for num, vl := range baseV.Vlogs {
			vlogs[num] = vl
		}
		for num, n := range baseV.live {
			live[num] = n
		}
	}
	addLive := func(f *FileMetadata, sign int) {
		for _, r := range f.VlogRefs {
			if sign > 0 {
				live[r.FileNum] += r.Bytes
			} else if live[r.FileNum] -= r.Bytes; live[r.FileNum] == 0 {
				delete(live, r.FileNum)
			}
		}
	}
	var mergerName, instanceID string
	var sharedTables, sharedVlogs map[base.FileNum]SharedRef
	if baseV != nil {
		mergerName, instanceID = baseV.MergerName, baseV.InstanceID
		sharedTables, sharedVlogs = baseV.sharedTables, baseV.sharedVlogs
	}
	copiedTables, copiedVlogs := false, false
	setShared := func(sf SharedFile) {
		if sf.Vlog {
			if !copiedVlogs {
				sharedVlogs, copiedVlogs = maps.Clone(sharedVlogs), true
				if sharedVlogs == nil {
					sharedVlogs = make(map[base.FileNum]SharedRef)
				}
			}
			sharedVlogs[sf.FileNum] = sf.Ref
			return
		}
		if !copiedTables {
			sharedTables, copiedTables = maps.Clone(sharedTables), true
			if sharedTables == nil {
				sharedTables = make(map[base.FileNum]SharedRef)
			}
		}
		sharedTables[sf.FileNum] = sf.Ref
	}
	for _, ve := range edits {
		if ve.MergerName != "" {
			mergerName = ve.MergerName
		}
		if ve.InstanceID != "" {
			instanceID = ve.InstanceID
		}
		for _, num := range ve.DeletedVlogs {
			if _, ok := vlogs[num]; !ok {
				return nil, fmt.Errorf("version edit deletes value log %s, which the version does not hold", num)
			}
			delete(vlogs, num)
		}
		for _, vl := range ve.NewVlogs {
			if _, dup := vlogs[vl.FileNum]; dup {
				return nil, fmt.Errorf("version edit adds value log %s twice", vl.FileNum)
			}
			vlogs[vl.FileNum] = vl
		}
		for _, d := range ve.DeletedFiles {
			f, ok := levels[d.Level][d.FileNum]
			if !ok {
				return nil, fmt.Errorf("version edit deletes file %s from L%d, which does not hold it", d.FileNum, d.Level)
			}
			addLive(f, -1)
			delete(levels[d.Level], d.FileNum)
			delete(where, d.FileNum)
		}
		for _, nf := range ve.NewFiles {
			if l, dup := where[nf.Meta.FileNum]; dup {
				return nil, fmt.Errorf("version edit adds file %s to L%d, but L%d already holds it", nf.Meta.FileNum, nf.Level, l)
			}
			levels[nf.Level][nf.Meta.FileNum] = nf.Meta
			where[nf.Meta.FileNum] = nf.Level
			addLive(nf.Meta, +1)
		}
		for _, sf := range ve.SharedFiles {
			if sf.Vlog {
				if vlogs[sf.FileNum] == nil {
					return nil, fmt.Errorf("version edit shares value log %s, which the version does not hold: %w", sf.FileNum, ErrSharedFileGone)
				}
			} else if _, ok := where[sf.FileNum]; !ok {
				return nil, fmt.Errorf("version edit shares table %s, which the version does not hold: %w", sf.FileNum, ErrSharedFileGone)
			}
			if sf.Ref.Object == "" {
				return nil, fmt.Errorf("version edit shares file %s without an object", sf.FileNum)
			}
			setShared(sf)
		}
	}
	// A shared file that left the version is no longer shared by it.
	for num := range sharedTables {
		if _, ok := where[num]; !ok {
			if !copiedTables {
				sharedTables, copiedTables = maps.Clone(sharedTables), true
			}
			delete(sharedTables, num)
		}
	}
	for num := range sharedVlogs {
		if vlogs[num] == nil {
			if !copiedVlogs {
				sharedVlogs, copiedVlogs = maps.Clone(sharedVlogs), true
			}
			delete(sharedVlogs, num)
		}
	}
	v := &Version{Vlogs: vlogs, live: live, MergerName: mergerName, InstanceID: instanceID,
		sharedTables: sharedTables, sharedVlogs: sharedVlogs}
	if baseV != nil {
		v.onZero = baseV.onZero
	}
	for level, files := range levels {
		for _, f := range files {
			v.Levels[level] = append(v.Levels[level], f)
		}
	}
	SortLevels(v)
	if err := v.CheckOrdering(); err != nil {
		return nil, err
	}
	v.Files(func(_ int, f *FileMetadata) {
		if !f.VlogRefsKnown {
			v.liveUnknown = true
		}
	})
	if invariants.Enabled {
		if err := v.CheckLedger(); err != nil {
			return nil, err
		}
	}
	for _, files := range v.Levels {
		for _, f := range files {
			f.refs.Add(1)
		}
	}
	for _, vl := range v.Vlogs {
		vl.refs.Add(1)
	}
	return v, nil
}

// SortLevels puts each level in its canonical order.
func SortLevels(v *Version) {
	slices.SortStableFunc(v.Levels[0], func(a, b *FileMetadata) int {
		if c := cmp.Compare(a.LargestSeq, b.LargestSeq); c != 0 {
			return c
		}
		return cmp.Compare(a.FileNum, b.FileNum)
	})
	for level := 1; level < NumLevels; level++ {
		slices.SortFunc(v.Levels[level], func(a, b *FileMetadata) int {
			return base.InternalCompare(a.Smallest, b.Smallest)
		})
	}
}

// SortedVlogs returns the value logs ordered by file number.
func (v *Version) SortedVlogs() []*VlogMetadata {
	out := make([]*VlogMetadata, 0, len(v.Vlogs))
	for _, vl := range v.Vlogs {
		out = append(out, vl)
	}
	slices.SortFunc(out, func(a, b *VlogMetadata) int { return cmp.Compare(a.FileNum, b.FileNum) })
	return out
}

// SnapshotEdit returns an edit that recreates v from an empty tree (the first
// record of a new manifest).
func (v *Version) SnapshotEdit() *VersionEdit {
	ve := &VersionEdit{FormatVersion: FormatVersion, MergerName: v.MergerName, InstanceID: v.InstanceID}
	for _, vl := range v.SortedVlogs() {
		ve.NewVlogs = append(ve.NewVlogs, vl)
		if r, ok := v.sharedVlogs[vl.FileNum]; ok {
			ve.SharedFiles = append(ve.SharedFiles, SharedFile{Vlog: true, FileNum: vl.FileNum, Ref: r})
		}
	}
	for level, files := range v.Levels {
		for _, f := range files {
			ve.NewFiles = append(ve.NewFiles, NewFile{Level: level, Meta: f})
			if r, ok := v.sharedTables[f.FileNum]; ok {
				ve.SharedFiles = append(ve.SharedFiles, SharedFile{FileNum: f.FileNum, Ref: r})
			}
		}
	}
	return ve
}
