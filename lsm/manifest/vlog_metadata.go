package manifest

import (
	"fmt"
	"sync/atomic"

	"github.com/strata-db/strata/internal/base"
)

// VlogMetadata describes one value-log file. The fields are fixed once the
// file is in a version. Its live bytes are not here: they depend on the
// version (Version.VlogLive sums the references of its tables).
type VlogMetadata struct {
	FileNum base.FileNum
	// Size is the file's length in bytes.
	Size uint64
	// Records and ValueBytes count what the file holds.
	Records    uint64
	ValueBytes uint64
	// RecordsEnd is, for a value log without a footer (written at commit,
	// left unfinished by a crash, adopted by recovery), the offset where
	// its valid records end; 0 for a finished value log, whose records end
	// where its footer begins.
	RecordsEnd uint64

	// refs counts the versions that contain the file.
	refs atomic.Int32
}

func (m *VlogMetadata) String() string {
	if m.RecordsEnd != 0 {
		return fmt.Sprintf("%s.vlog(%d records, %d bytes, no footer: records end at %d)", m.FileNum, m.Records, m.Size, m.RecordsEnd)
	}
	return fmt.Sprintf("%s.vlog(%d records, %d bytes)", m.FileNum, m.Records, m.Size)
}

// Refs returns the number of versions holding the file.
func (m *VlogMetadata) Refs() int32 { return m.refs.Load() }

// Obsolete lists files no version holds any longer.
type Obsolete struct {
	Tables []*FileMetadata
	Vlogs  []*VlogMetadata
}

func (o Obsolete) empty() bool { return len(o.Tables) == 0 && len(o.Vlogs) == 0 }
