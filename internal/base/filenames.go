package base

import (
	"fmt"
	"strconv"
	"strings"
)

// FileNum names a file of the database. File numbers are allocated from one
// counter recorded in the manifest and are never reused.
type FileNum uint64

func (n FileNum) String() string { return fmt.Sprintf("%06d", uint64(n)) }

// FileType is the role of a file in the database directory.
type FileType int

const (
	FileTypeUnknown  FileType = iota
	FileTypeLog               // NNNNNN.log: write-ahead log
	FileTypeTable             // NNNNNN.sst: SSTable
	FileTypeVlog              // NNNNNN.vlog: value log
	FileTypeManifest          // MANIFEST-NNNNNN
	FileTypeCurrent           // CURRENT: names the live manifest
	FileTypeTemp              // NNNNNN.tmp: being written, never read
	FileTypeLock              // LOCK
	FileTypeOptions           // OPTIONS-NNNNNN (reserved)
)

// MakeFilename returns the base name of a file of the given type and number.
func MakeFilename(t FileType, n FileNum) string {
	switch t {
	case FileTypeLog:
		return n.String() + ".log"
	case FileTypeTable:
		return n.String() + ".sst"
	case FileTypeVlog:
		return n.String() + ".vlog"
	case FileTypeManifest:
		return "MANIFEST-" + n.String()
	case FileTypeCurrent:
		return "CURRENT"
	case FileTypeTemp:
		return n.String() + ".tmp"
	case FileTypeLock:
		return "LOCK"
	case FileTypeOptions:
		return "OPTIONS-" + n.String()
	}
	return "unknown-" + n.String()
}

// ParseFilename is the inverse of MakeFilename; ok is false for names that
// the database did not create.
func ParseFilename(name string) (t FileType, n FileNum, ok bool) {
	switch name {
	case "CURRENT":
		return FileTypeCurrent, 0, true
	case "LOCK":
		return FileTypeLock, 0, true
	}
	if rest, found := strings.CutPrefix(name, "MANIFEST-"); found {
		v, err := strconv.ParseUint(rest, 10, 64)
		return FileTypeManifest, FileNum(v), err == nil
	}
	if rest, found := strings.CutPrefix(name, "OPTIONS-"); found {
		v, err := strconv.ParseUint(rest, 10, 64)
		return FileTypeOptions, FileNum(v), err == nil
	}
	dot := strings.IndexByte(name, '.')
	if dot <= 0 {
		return FileTypeUnknown, 0, false
	}
	v, err := strconv.ParseUint(name[:dot], 10, 64)
	if err != nil {
		return FileTypeUnknown, 0, false
	}
	switch name[dot:] {
	case ".log":
		t = FileTypeLog
	case ".sst":
		t = FileTypeTable
	case ".vlog":
		t = FileTypeVlog
	case ".tmp":
		t = FileTypeTemp
	default:
		return FileTypeUnknown, 0, false
	}
	return t, FileNum(v), true
}
