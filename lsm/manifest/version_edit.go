package manifest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/strata-db/strata/internal/base"
)

// Field tags of an encoded version edit (see doc.go). Never renumber.
const (
	tagComparer    = 1
	tagLogNum      = 2
	tagNextFileNum = 3
	tagLastSeq     = 4
	tagDeletedFile = 5
	tagNewFile     = 6
	tagNewVlog     = 7
	tagDeletedVlog = 8
	// tagSharedFile is required: a binary that does not know shared files
	// cannot read the database (its files are not all in the directory).
	tagSharedFile = 9

	// tagFirstOptional: tags at or above it may be skipped by a reader that
	// does not know them.
	tagFirstOptional = 64

	// tagMergerName is optional: a binary that predates it opens the
	// database as it did, without checking the merger.
	tagMergerName = 64
	// tagInstanceID is optional: only a database that shares files needs
	// it, and such a database has tagSharedFile fields too.
	tagInstanceID = 65
	// tagFormatVersion is optional, so that builds before it open a
	// database of format version 1 as they did; it is the first field of
	// an edit, so that a reader meets it before anything a newer format
	// adds (see FormatVersion).
	tagFormatVersion = 66
)

// FormatVersion is the database format version this build writes into
// every manifest's snapshot record, and the newest it reads. It covers
// everything the manifest does not version itself: the version edit
// encoding, the WAL's batch encoding and the record log's chunks.
// (Tables and value logs carry versions of their own, in their footers and
// headers.) A manifest without it was written before versions were
// recorded, and reads as version 1. A build that writes anything older
// builds cannot read raises it, so that they refuse the database with an
// error matching base.ErrNewerFormat instead of misreading it; it must
// keep the manifest's first record readable by them (record chunks of
// types 5..8, this field first).
//
// Versions: 1, everything up to and including shared files; 2, virtual
// tables and ingested tables' sequence-number offsets (new-file flags,
// which version 1 refuses as unknown) and the WAL's ingest marks (an
// entry kind version 1 reads as corruption).
const FormatVersion = 2

// minFormatVersion is what a manifest without a format version is.
const minFormatVersion = 1

// Flags of a shared-file field.
const sharedFileFlagVlog = 1

// Flags of a new-file field.
const (
	newFileFlagRangeDels = 1 << iota
	// newFileFlagVlogRefs: the value-log references follow the flags.
	newFileFlagVlogRefs
	// newFileFlagExpiry: the expiry summary follows the references.
	newFileFlagExpiry
	// newFileFlagVirtual: the table is virtual (FileMetadata.Virtual). A
	// build that predates it refuses the flag, as it must: it would read
	// the keys outside the bounds.
	newFileFlagVirtual
	// newFileFlagSeqOffset: FileMetadata.SeqOffset follows the expiry
	// summary. An older build refuses it rather than read an ingested
	// table's entries as older than they are.
	newFileFlagSeqOffset
	knownNewFileFlags = newFileFlagRangeDels | newFileFlagVlogRefs | newFileFlagExpiry | newFileFlagVirtual | newFileFlagSeqOffset
)

// DeletedFile names a file removed from a level.
type DeletedFile struct {
	Level   int
	FileNum base.FileNum
}

// NewFile is a file added to a level.
type NewFile struct {
	Level int
	Meta  *FileMetadata
}

// VersionEdit is one change to the tree, as recorded in the manifest.
type VersionEdit struct {
	// FormatVersion, when not 0, is the database format version of the
	// build that wrote the edit (see FormatVersion); snapshot records carry
	// it.
	FormatVersion uint64

	ComparerName string
	// MergerName, when not empty, records the name of the Merger the
	// database's merge operands are meant for (see Version.MergerName).
	MergerName string
	// InstanceID, when not empty, records the name of the instance that
	// writes the tree (see Version.InstanceID).
	InstanceID string

	// LogNum, when HasLogNum, is the number of the oldest WAL whose contents
	// are not yet in SSTables: recovery replays WALs numbered >= LogNum.
	LogNum    base.FileNum
	HasLogNum bool

	NextFileNum    base.FileNum
	HasNextFileNum bool

	// LastSeq, when HasLastSeq, is the largest sequence number held in
	// tables. Writes with larger ones are still only in WALs; recovery
	// replays them and skips older batches.
	LastSeq    base.SeqNum
	HasLastSeq bool

	DeletedFiles []DeletedFile
	NewFiles     []NewFile

	// NewVlogs are value-log files the edit adds; DeletedVlogs those it
	// removes.
	NewVlogs     []*VlogMetadata
	DeletedVlogs []base.FileNum

	// SharedFiles marks files of the resulting version (added by this
	// edit or an earlier one) as shared: their primary copy is in the
	// object store. Applied after the edit's additions.
	SharedFiles []SharedFile
}

// SetLogNum records the oldest WAL still needed.
func (ve *VersionEdit) SetLogNum(n base.FileNum) { ve.LogNum, ve.HasLogNum = n, true }

// SetNextFileNum records the next unused file number.
func (ve *VersionEdit) SetNextFileNum(n base.FileNum) { ve.NextFileNum, ve.HasNextFileNum = n, true }

// SetLastSeq records the largest sequence number held in tables.
func (ve *VersionEdit) SetLastSeq(s base.SeqNum) { ve.LastSeq, ve.HasLastSeq = s, true }

// Encode appends the edit's encoding to dst.
func (ve *VersionEdit) Encode(dst []byte) []byte {
	var field []byte
	put := func(tag uint64, payload []byte) {
		dst = binary.AppendUvarint(dst, tag)
		dst = binary.AppendUvarint(dst, uint64(len(payload)))
		dst = append(dst, payload...)
	}
	if ve.FormatVersion != 0 {
		// First, so that a reader knows the format before any other field.
		put(tagFormatVersion, binary.AppendUvarint(field[:0], ve.FormatVersion))
	}
	if ve.ComparerName != "" {
		put(tagComparer, []byte(ve.ComparerName))
	}
	if ve.MergerName != "" {
		put(tagMergerName, []byte(ve.MergerName))
	}
	if ve.InstanceID != "" {
		put(tagInstanceID, []byte(ve.InstanceID))
	}
	if ve.HasLogNum {
		put(tagLogNum, binary.AppendUvarint(field[:0], uint64(ve.LogNum)))
	}
	if ve.HasNextFileNum {
		put(tagNextFileNum, binary.AppendUvarint(field[:0], uint64(ve.NextFileNum)))
	}
	if ve.HasLastSeq {
		put(tagLastSeq, binary.AppendUvarint(field[:0], uint64(ve.LastSeq)))
	}
	for _, d := range ve.DeletedFiles {
		field = binary.AppendUvarint(field[:0], uint64(d.Level))
		field = binary.AppendUvarint(field, uint64(d.FileNum))
		put(tagDeletedFile, field)
	}
	for _, num := range ve.DeletedVlogs {
		put(tagDeletedVlog, binary.AppendUvarint(field[:0], uint64(num)))
	}
	for _, vl := range ve.NewVlogs {
		field = binary.AppendUvarint(field[:0], uint64(vl.FileNum))
		field = binary.AppendUvarint(field, vl.Size)
		field = binary.AppendUvarint(field, vl.Records)
		field = binary.AppendUvarint(field, vl.ValueBytes)
		if vl.RecordsEnd != 0 {
			// Optional: readers before it ignore the rest of the field.
			field = binary.AppendUvarint(field, vl.RecordsEnd)
		}
		put(tagNewVlog, field)
	}
	for _, nf := range ve.NewFiles {
		m := nf.Meta
		field = binary.AppendUvarint(field[:0], uint64(nf.Level))
		field = binary.AppendUvarint(field, uint64(m.FileNum))
		field = binary.AppendUvarint(field, m.Size)
		field = binary.AppendUvarint(field, uint64(m.Smallest.Size()))
		field = m.Smallest.AppendEncoded(field)
		field = binary.AppendUvarint(field, uint64(m.Largest.Size()))
		field = m.Largest.AppendEncoded(field)
		field = binary.AppendUvarint(field, uint64(m.SmallestSeq))
		field = binary.AppendUvarint(field, uint64(m.LargestSeq))
		var flags uint64
		if m.HasRangeDels {
			flags |= newFileFlagRangeDels
		}
		if m.VlogRefsKnown {
			flags |= newFileFlagVlogRefs
		}
		if m.Expiry.Expiring > 0 {
			flags |= newFileFlagExpiry
		}
		if m.Virtual {
			flags |= newFileFlagVirtual
		}
		if m.SeqOffset != 0 {
			flags |= newFileFlagSeqOffset
		}
		field = binary.AppendUvarint(field, flags)
		if m.VlogRefsKnown {
			field = binary.AppendUvarint(field, uint64(len(m.VlogRefs)))
			for _, r := range m.VlogRefs {
				field = binary.AppendUvarint(field, uint64(r.FileNum))
				field = binary.AppendUvarint(field, r.Bytes)
				field = binary.AppendUvarint(field, r.Pointers)
			}
		}
		if m.Expiry.Expiring > 0 {
			e := m.Expiry
			field = binary.AppendUvarint(field, uint64(e.Earliest))
			field = binary.AppendUvarint(field, uint64(e.Latest))
			field = binary.AppendUvarint(field, e.Expiring)
			field = binary.AppendUvarint(field, e.Entries)
		}
		if m.SeqOffset != 0 {
			field = binary.AppendUvarint(field, uint64(m.SeqOffset))
		}
		put(tagNewFile, field)
	}
	for _, sf := range ve.SharedFiles {
		var flags uint64
		if sf.Vlog {
			flags |= sharedFileFlagVlog
		}
		field = binary.AppendUvarint(field[:0], flags)
		field = binary.AppendUvarint(field, uint64(sf.FileNum))
		field = binary.AppendUvarint(field, sf.Ref.Offset)
		field = binary.AppendUvarint(field, uint64(len(sf.Ref.Object)))
		field = append(field, sf.Ref.Object...)
		put(tagSharedFile, field)
	}
	return dst
}

var errShort = errors.New("truncated field")

type decoder struct{ b []byte }

func (d *decoder) uvarint() (uint64, error) {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		return 0, errShort
	}
	d.b = d.b[n:]
	return v, nil
}

func (d *decoder) bytes() ([]byte, error) {
	n, err := d.uvarint()
	if err != nil {
		return nil, err
	}
	if n > uint64(len(d.b)) {
		return nil, errShort
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v, nil
}

func (d *decoder) level() (int, error) {
	v, err := d.uvarint()
	if err != nil {
		return 0, err
	}
	if v >= NumLevels {
		return 0, fmt.Errorf("level %d out of range", v)
	}
	return int(v), nil
}

func (d *decoder) internalKey() (base.InternalKey, error) {
	b, err := d.bytes()
	if err != nil {
		return base.InternalKey{}, err
	}
	k, ok := base.DecodeInternalKey(b)
	if !ok {
		return base.InternalKey{}, errors.New("short internal key")
	}
	return k.Clone(), nil
}

// Decode parses an encoded edit. Errors are plain (no file context): the
// caller wraps them as corruption of the manifest it read them from.
func (ve *VersionEdit) Decode(src []byte) error {
	d := decoder{b: src}
	for len(d.b) > 0 {
		tag, err := d.uvarint()
		if err != nil {
			return fmt.Errorf("version edit: tag: %w", err)
		}
		payload, err := d.bytes()
		if err != nil {
			return fmt.Errorf("version edit: field %d: %w", tag, err)
		}
		f := decoder{b: payload}
		switch tag {
		case tagFormatVersion:
			v, err := f.uvarint()
			if err != nil {
				return fmt.Errorf("version edit: format version: %w", err)
			}
			if v < minFormatVersion {
				return fmt.Errorf("version edit: format version %d (versions start at %d)", v, minFormatVersion)
			}
			ve.FormatVersion = v
			if v > FormatVersion {
				// What follows is a newer format's: the caller refuses
				// the manifest on the version alone.
				return nil
			}
		case tagComparer:
			ve.ComparerName = string(payload)
		case tagMergerName:
			ve.MergerName = string(payload)
		case tagInstanceID:
			ve.InstanceID = string(payload)
		case tagSharedFile:
			var sf SharedFile
			flags, err := f.uvarint()
			if err != nil {
				return fmt.Errorf("version edit: shared file: %w", err)
			}
			if flags&^sharedFileFlagVlog != 0 {
				return fmt.Errorf("version edit: shared file: unknown flags %#x", flags)
			}
			sf.Vlog = flags&sharedFileFlagVlog != 0
			num, err := f.uvarint()
			if err != nil {
				return fmt.Errorf("version edit: shared file: %w", err)
			}
			sf.FileNum = base.FileNum(num)
			if sf.Ref.Offset, err = f.uvarint(); err != nil {
				return fmt.Errorf("version edit: shared file: %w", err)
			}
			obj, err := f.bytes()
			if err != nil {
				return fmt.Errorf("version edit: shared file: %w", err)
			}
			if len(obj) == 0 {
				return fmt.Errorf("version edit: shared file %s without an object", sf.FileNum)
			}
			sf.Ref.Object = string(obj)
			ve.SharedFiles = append(ve.SharedFiles, sf)
		case tagLogNum:
			v, err := f.uvarint()
			if err != nil {
				return fmt.Errorf("version edit: log number: %w", err)
			}
			ve.SetLogNum(base.FileNum(v))
		case tagNextFileNum:
			v, err := f.uvarint()
			if err != nil {
				return fmt.Errorf("version edit: next file number: %w", err)
			}
			ve.SetNextFileNum(base.FileNum(v))
		case tagLastSeq:
			v, err := f.uvarint()
			if err != nil {
				return fmt.Errorf("version edit: last sequence: %w", err)
			}
			ve.SetLastSeq(base.SeqNum(v))
		case tagDeletedFile:
			level, err := f.level()
			if err != nil {
				return fmt.Errorf("version edit: deleted file: %w", err)
			}
			num, err := f.uvarint()
			if err != nil {
				return fmt.Errorf("version edit: deleted file: %w", err)
			}
			ve.DeletedFiles = append(ve.DeletedFiles, DeletedFile{Level: level, FileNum: base.FileNum(num)})
		case tagNewFile:
			nf, err := decodeNewFile(&f)
			if err != nil {
				return fmt.Errorf("version edit: new file: %w", err)
			}
			ve.NewFiles = append(ve.NewFiles, nf)
		case tagDeletedVlog:
			v, err := f.uvarint()
			if err != nil {
				return fmt.Errorf("version edit: deleted value log: %w", err)
			}
			ve.DeletedVlogs = append(ve.DeletedVlogs, base.FileNum(v))
		case tagNewVlog:
			vl := &VlogMetadata{}
			var v [4]uint64
			for i := range v {
				if v[i], err = f.uvarint(); err != nil {
					return fmt.Errorf("version edit: new value log: %w", err)
				}
			}
			vl.FileNum, vl.Size, vl.Records, vl.ValueBytes = base.FileNum(v[0]), v[1], v[2], v[3]
			if len(f.b) > 0 {
				if vl.RecordsEnd, err = f.uvarint(); err != nil {
					return fmt.Errorf("version edit: new value log: records end: %w", err)
				}
			}
			ve.NewVlogs = append(ve.NewVlogs, vl)
		default:
			if tag < tagFirstOptional {
				return fmt.Errorf("version edit: unknown required field %d", tag)
			}
		}
	}
	return nil
}

func decodeNewFile(f *decoder) (NewFile, error) {
	level, err := f.level()
	if err != nil {
		return NewFile{}, err
	}
	m := &FileMetadata{}
	var v uint64
	if v, err = f.uvarint(); err != nil {
		return NewFile{}, err
	}
	m.FileNum = base.FileNum(v)
	if m.Size, err = f.uvarint(); err != nil {
		return NewFile{}, err
	}
	if m.Smallest, err = f.internalKey(); err != nil {
		return NewFile{}, err
	}
	if m.Largest, err = f.internalKey(); err != nil {
		return NewFile{}, err
	}
	if v, err = f.uvarint(); err != nil {
		return NewFile{}, err
	}
	m.SmallestSeq = base.SeqNum(v)
	if v, err = f.uvarint(); err != nil {
		return NewFile{}, err
	}
	m.LargestSeq = base.SeqNum(v)
	if v, err = f.uvarint(); err != nil {
		return NewFile{}, err
	}
	flags := v
	if flags&^knownNewFileFlags != 0 {
		return NewFile{}, fmt.Errorf("file %s: unknown flags %#x", m.FileNum, flags)
	}
	m.HasRangeDels = flags&newFileFlagRangeDels != 0
	m.Virtual = flags&newFileFlagVirtual != 0
	if flags&newFileFlagVlogRefs != 0 {
		m.VlogRefsKnown = true
		n, err := f.uvarint()
		if err != nil {
			return NewFile{}, err
		}
		if n > uint64(len(f.b)) {
			return NewFile{}, fmt.Errorf("file %s: %d value-log references in %d bytes", m.FileNum, n, len(f.b))
		}
		if n > 0 {
			m.VlogRefs = make([]VlogRef, n)
		}
		for i := range m.VlogRefs {
			var r [3]uint64
			for j := range r {
				if r[j], err = f.uvarint(); err != nil {
					return NewFile{}, err
				}
			}
			m.VlogRefs[i] = VlogRef{FileNum: base.FileNum(r[0]), Bytes: r[1], Pointers: r[2]}
			if i > 0 && m.VlogRefs[i-1].FileNum >= m.VlogRefs[i].FileNum {
				return NewFile{}, fmt.Errorf("file %s: value-log references out of order", m.FileNum)
			}
		}
	}
	if flags&newFileFlagExpiry != 0 {
		var e [4]uint64
		for j := range e {
			if e[j], err = f.uvarint(); err != nil {
				return NewFile{}, err
			}
		}
		m.Expiry = TableExpiry{Earliest: int64(e[0]), Latest: int64(e[1]), Expiring: e[2], Entries: e[3]}
	}
	if flags&newFileFlagSeqOffset != 0 {
		if v, err = f.uvarint(); err != nil {
			return NewFile{}, err
		}
		m.SeqOffset = base.SeqNum(v)
		if m.SeqOffset == 0 || m.SeqOffset > m.SmallestSeq {
			return NewFile{}, fmt.Errorf("file %s: sequence-number offset %d above its smallest sequence number %d", m.FileNum, m.SeqOffset, m.SmallestSeq)
		}
	}
	if len(f.b) != 0 {
		return NewFile{}, fmt.Errorf("file %s: %d trailing bytes", m.FileNum, len(f.b))
	}
	if base.InternalCompare(m.Smallest, m.Largest) > 0 {
		return NewFile{}, fmt.Errorf("file %s: smallest %s > largest %s", m.FileNum, m.Smallest, m.Largest)
	}
	if m.SmallestSeq > m.LargestSeq {
		return NewFile{}, fmt.Errorf("file %s: smallest seq %d > largest seq %d", m.FileNum, m.SmallestSeq, m.LargestSeq)
	}
	return NewFile{Level: level, Meta: m}, nil
}

func (ve *VersionEdit) String() string {
	var b strings.Builder
	if ve.FormatVersion != 0 {
		fmt.Fprintf(&b, "format version: %d\n", ve.FormatVersion)
	}
	if ve.ComparerName != "" {
		fmt.Fprintf(&b, "comparer: %s\n", ve.ComparerName)
	}
	if ve.MergerName != "" {
		fmt.Fprintf(&b, "merger: %s\n", ve.MergerName)
	}
	if ve.InstanceID != "" {
		fmt.Fprintf(&b, "instance: %s\n", ve.InstanceID)
	}
	if ve.HasLogNum {
		fmt.Fprintf(&b, "log: %s\n", ve.LogNum)
	}
	if ve.HasNextFileNum {
		fmt.Fprintf(&b, "next-file: %s\n", ve.NextFileNum)
	}
	if ve.HasLastSeq {
		fmt.Fprintf(&b, "last-seq: %d\n", ve.LastSeq)
	}
	dels := append([]DeletedFile(nil), ve.DeletedFiles...)
	sort.Slice(dels, func(i, j int) bool {
		if dels[i].Level != dels[j].Level {
			return dels[i].Level < dels[j].Level
		}
		return dels[i].FileNum < dels[j].FileNum
	})
	for _, d := range dels {
		fmt.Fprintf(&b, "del: L%d %s\n", d.Level, d.FileNum)
	}
	for _, nf := range ve.NewFiles {
		fmt.Fprintf(&b, "add: L%d %s\n", nf.Level, nf.Meta)
	}
	for _, num := range ve.DeletedVlogs {
		fmt.Fprintf(&b, "del: vlog %s\n", num)
	}
	for _, vl := range ve.NewVlogs {
		fmt.Fprintf(&b, "add: vlog %s\n", vl)
	}
	for _, sf := range ve.SharedFiles {
		kind := "table"
		if sf.Vlog {
			kind = "vlog"
		}
		fmt.Fprintf(&b, "shared: %s %s in %s\n", kind, sf.FileNum, sf.Ref)
	}
	return b.String()
}
