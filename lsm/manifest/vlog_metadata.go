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

	// refs counts the versions that contain the file.
	refs atomic.Int32
}

func (m *VlogMetadata) String() string {
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
