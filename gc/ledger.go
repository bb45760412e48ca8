package gc

import (
	"fmt"
	"strings"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/remote"
	"github.com/strata-db/strata/vlog"
)

// File is the ledger's line for one value log.
type File struct {
	FileNum base.FileNum
	// Size is the file's size on disk; RecordBytes the part its records
	// take (Size less header and footer).
	Size        uint64
	RecordBytes uint64
	// Live is the record bytes the version's tables point to.
	Live uint64
	// Pointers is the number of table entries pointing into the file.
	Pointers uint64
	// Pinned: the DB is still filling the file, or memtables point into it:
	// it is never deleted or collected.
	Pinned bool
	// Collecting: a collection of the file is in progress.
	Collecting bool
	// Draining: the file's collection has done its work (its live records
	// were copied and their keys repointed) and it waits for the old
	// entries to leave the tree; it is neither collected again nor counted
	// as a collection in progress.
	Draining bool
	// Foreign: the file is an object of the store that another instance
	// wrote (the database was opened by reference to checkpoints' files).
	// Its garbage, as this ledger counts it, may be what other instances
	// still read; the object stays in the store as long as any instance or
	// retained checkpoint refers to it.
	Foreign bool
}

// Garbage returns the record bytes no table points to.
func (f File) Garbage() uint64 {
	if f.Live >= f.RecordBytes {
		return 0
	}
	return f.RecordBytes - f.Live
}

// GarbageRatio returns Garbage over RecordBytes (1 for a file without
// records).
func (f File) GarbageRatio() float64 {
	if f.RecordBytes == 0 {
		return 1
	}
	return float64(f.Garbage()) / float64(f.RecordBytes)
}

// Dead reports whether the file can be deleted: nothing points into it and
// nothing will.
func (f File) Dead() bool { return f.Live == 0 && !f.Pinned }

// Ledger is the garbage ledger of a version: one line per value log, by
// file number, and the size of the tables.
type Ledger struct {
	Files      []File
	TableBytes uint64
	// PendingBytes are value-log bytes on disk that no version holds yet
	// (the DB's active value log, written at commit): counted on the disk
	// side, since the values they hold shadow older ones still counted as
	// live.
	PendingBytes uint64
	// Complete is false when some table's references are unknown (a
	// database from before they were recorded, until Open reads them):
	// then nothing may be deleted.
	Complete bool
}

// Status is what the DB knows of a value log beyond the version.
type Status struct {
	Pinned, Collecting, Draining bool
}

// FileState tells the Status of a value log.
type FileState func(num base.FileNum) Status

// NewLedger builds the ledger of v. state may be nil (nothing pinned or
// being collected).
func NewLedger(v *manifest.Version, state FileState) Ledger {
	l := Ledger{Complete: v.VlogRefsComplete()}
	pointers := make(map[base.FileNum]uint64)
	v.Files(func(_ int, f *manifest.FileMetadata) {
		l.TableBytes += f.Size
		for _, r := range f.VlogRefs {
			pointers[r.FileNum] += r.Pointers
		}
	})
	for _, m := range v.SortedVlogs() {
		f := File{
			FileNum:     m.FileNum,
			Size:        m.Size,
			RecordBytes: vlog.MetadataRecordBytes(m),
			Live:        v.VlogLive(m.FileNum),
			Pointers:    pointers[m.FileNum],
		}
		if r, ok := v.SharedRef(true, m.FileNum); ok {
			f.Foreign = !remote.WrittenBy(r.Object, v.InstanceID)
		}
		if state != nil {
			st := state(m.FileNum)
			f.Pinned, f.Collecting, f.Draining = st.Pinned, st.Collecting, st.Draining
		}
		l.Files = append(l.Files, f)
	}
	return l
}

// VlogBytes returns the size of every value log.
func (l Ledger) VlogBytes() uint64 {
	var n uint64
	for _, f := range l.Files {
		n += f.Size
	}
	return n
}

// LiveBytes estimates the bytes the data needs: the tables plus the live
// records of the value logs.
func (l Ledger) LiveBytes() uint64 {
	n := l.TableBytes
	for _, f := range l.Files {
		n += f.Live
	}
	return n
}

// DiskBytes returns the bytes of tables and value logs.
func (l Ledger) DiskBytes() uint64 { return l.TableBytes + l.VlogBytes() + l.PendingBytes }

// SpaceAmp returns DiskBytes over LiveBytes (1 when there is nothing).
func (l Ledger) SpaceAmp() float64 {
	live := l.LiveBytes()
	if live == 0 {
		return 1
	}
	return float64(l.DiskBytes()) / float64(live)
}

// File returns the line of value log num.
func (l Ledger) File(num base.FileNum) (File, bool) {
	for _, f := range l.Files {
		if f.FileNum == num {
			return f, true
		}
	}
	return File{}, false
}

// String prints the ledger as a table, one value log per line.
func (l Ledger) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "tables %d B, value logs %d B, live %d B, space amp %.2f\n", l.TableBytes, l.VlogBytes(), l.LiveBytes(), l.SpaceAmp())
	for _, f := range l.Files {
		flags := ""
		if f.Pinned {
			flags += " pinned"
		}
		if f.Collecting {
			flags += " collecting"
		}
		if f.Draining {
			flags += " draining"
		}
		fmt.Fprintf(&b, "%s size %d live %d garbage %.0f%%%s\n", f.FileNum, f.Size, f.Live, 100*f.GarbageRatio(), flags)
	}
	return b.String()
}

// ReverseIndex returns, for each value log in nums, the tables of v that
// point into it, in level order. It is exact: it reads the references the
// tables record.
func ReverseIndex(v *manifest.Version, nums map[base.FileNum]bool) map[base.FileNum][]TableRef {
	out := make(map[base.FileNum][]TableRef, len(nums))
	v.Files(func(level int, f *manifest.FileMetadata) {
		for _, r := range f.VlogRefs {
			if nums[r.FileNum] {
				out[r.FileNum] = append(out[r.FileNum], TableRef{Level: level, File: f, Bytes: r.Bytes, Pointers: r.Pointers})
			}
		}
	})
	return out
}

// TableRef is a table that points into a value log, and how much.
type TableRef struct {
	Level    int
	File     *manifest.FileMetadata
	Bytes    uint64
	Pointers uint64
}
