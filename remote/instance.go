package remote

import (
	"cmp"
	"fmt"
	"slices"
	"sync"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/vfs"
)

// Instance is what a database instance holds in a store, as its manifest
// records it: the objects its shared files are in. An audit of the store
// (checkpoint.Audit) checks each file against the store, and that the
// instance's markers are exactly on the objects its files are in.
type Instance struct {
	// Dir is the database's directory, to name it in a report.
	Dir string
	// ID is the instance id; "" for a database that never shared a file.
	ID string
	// Files are the shared files, by name.
	Files []InstanceFile
}

// InstanceFile is one shared file of an instance: Size bytes at Ref.
type InstanceFile struct {
	// Name is the file's name in the database: 000012.sst, 000013.vlog.
	Name string
	Ref  manifest.SharedRef
	Size int64
}

// Holder returns the instance's holder name in reference markers.
func (in *Instance) Holder() string { return InstanceHolder(in.ID) }

// ReadInstance reads the manifest of the database in dir on fs, writing
// nothing (it may run beside the process that has the database open), and
// returns its instance id and shared files.
func ReadInstance(fs vfs.FS, dir string) (*Instance, error) {
	var mu sync.Mutex
	vs, err := manifest.Load(manifest.Options{FS: fs, Dirname: dir, Mu: &mu})
	if err != nil {
		return nil, fmt.Errorf("remote: read the manifest of %s: %w", dir, err)
	}
	defer vs.Close()
	mu.Lock()
	defer mu.Unlock()
	v := vs.Current()
	in := &Instance{Dir: dir, ID: v.InstanceID}
	sizes := map[base.FileNum]uint64{}
	v.Files(func(_ int, f *manifest.FileMetadata) { sizes[f.FileNum] = f.Size })
	v.SharedFiles(func(sf manifest.SharedFile) {
		t, size := base.FileTypeTable, sizes[sf.FileNum]
		if sf.Vlog {
			t = base.FileTypeVlog
			if m := v.Vlogs[sf.FileNum]; m != nil {
				size = m.Size
			}
		}
		in.Files = append(in.Files, InstanceFile{Name: base.MakeFilename(t, sf.FileNum), Ref: sf.Ref, Size: int64(size)})
	})
	slices.SortFunc(in.Files, func(a, b InstanceFile) int { return cmp.Compare(a.Name, b.Name) })
	return in, nil
}
