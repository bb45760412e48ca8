package manifest

import (
	"errors"
	"fmt"

	"github.com/strata-db/strata/internal/base"
)

// SharedRef locates a shared file's bytes in the object store: the object
// that holds them and the file's offset in it (0 for an object holding the
// file alone; a file packed into a checkpoint's segment starts further
// in). The file's length is its size in the version (FileMetadata.Size,
// VlogMetadata.Size).
type SharedRef struct {
	Object string
	Offset uint64
}

func (r SharedRef) String() string {
	if r.Offset == 0 {
		return r.Object
	}
	return fmt.Sprintf("%s@%d", r.Object, r.Offset)
}

// ErrSharedFileGone is matched by the error of an edit that shares a file
// the version no longer holds (compacted or collected away while it was
// being uploaded): nothing was written, and the edit is moot.
var ErrSharedFileGone = errors.New("the file is no longer in the tree")

// SharedFile records that a table (Vlog false) or value log of the version
// is shared: its primary copy is the object range Ref, and a local copy is
// only a cache.
type SharedFile struct {
	Vlog    bool
	FileNum base.FileNum
	Ref     SharedRef
}

// SharedRef returns where the table (vlog false) or value log num of v is
// stored, and whether it is shared at all.
func (v *Version) SharedRef(vlog bool, num base.FileNum) (SharedRef, bool) {
	m := v.sharedTables
	if vlog {
		m = v.sharedVlogs
	}
	r, ok := m[num]
	return r, ok
}

// SharedFiles calls fn for every shared file of v.
func (v *Version) SharedFiles(fn func(SharedFile)) {
	for num, r := range v.sharedTables {
		fn(SharedFile{FileNum: num, Ref: r})
	}
	for num, r := range v.sharedVlogs {
		fn(SharedFile{Vlog: true, FileNum: num, Ref: r})
	}
}

// Detached returns a version with v's tree and nothing of its sharing:
// no shared files, no instance id. A checkpoint describes its files so
// (its copies are its own, or a database that opens it adopts their
// objects under an instance id of its own). The result holds no
// references and is only for describing v (SnapshotEdit, WriteSnapshot).
func (v *Version) Detached() *Version {
	return &Version{Levels: v.Levels, Vlogs: v.Vlogs, MergerName: v.MergerName, live: v.live, liveUnknown: v.liveUnknown}
}

// NumShared returns the numbers of shared tables and value logs of v.
func (v *Version) NumShared() (tables, vlogs int) {
	return len(v.sharedTables), len(v.sharedVlogs)
}
