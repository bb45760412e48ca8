package remote

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"

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
	// Destroying: a Destroy of the database began (MarkDestroying) and
	// has not finished. Its references may be partly dropped already, so
	// it holds nothing an audit may require.
	Destroying bool
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
	in := &Instance{Dir: dir, ID: v.InstanceID, Destroying: Destroying(fs, dir)}
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

// FileNumSlot is how many file numbers an instance's allocation is given
// before it may reach numbers another instance allocates.
const FileNumSlot = 1 << 24

// NewFileNumBase returns where a new instance starts allocating file
// numbers: past every number in use (past), at a random one of 2^24
// slots of FileNumSlot numbers. Instances share value logs by number (a
// table's value pointers name their value log's file number), and a
// database that takes the key ranges of several instances by reference
// (a rescale's union) holds the value logs of each: numbers that two
// instances allocated apart must differ. Instances opened from one
// checkpoint start past the same numbers, so the start is random; two of
// them collide only if they draw the same slot (one in 2^24 for a pair)
// and both reach the other's numbers, which a union detects and refuses.
// The numbers stay below 2^49 for the first generations, a 7-byte
// uvarint in every value pointer.
func NewFileNumBase(past base.FileNum) base.FileNum {
	return past + base.FileNum(1+rand.Uint64N(FileNumSlot-1))*FileNumSlot
}

// dropParallel is how many of an instance's markers DropInstance drops at
// once.
const dropParallel = 16

// DestroyingName is the file that marks a database directory whose
// Destroy began: written, durably, before the instance's references are
// dropped, so that a crash in the middle leaves a directory that says it
// may no longer be used (its objects may be gone) and that Destroy must
// be run again, rather than one that looks like a database.
const DestroyingName = "DESTROYING"

// MarkDestroying writes DestroyingName into dir on fs, durably.
func MarkDestroying(fs vfs.FS, dir string) error {
	f, err := fs.Create(fs.PathJoin(dir, DestroyingName))
	if err != nil {
		return fmt.Errorf("remote: mark %s as being destroyed: %w", dir, err)
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = manifest.SyncDir(fs, dir)
	}
	if err != nil {
		return fmt.Errorf("remote: mark %s as being destroyed: %w", dir, err)
	}
	return nil
}

// Destroying reports whether dir on fs is marked by MarkDestroying.
func Destroying(fs vfs.FS, dir string) bool {
	_, err := fs.Stat(fs.PathJoin(dir, DestroyingName))
	return err == nil
}

// DropInstance drops every reference instance holds in s, its hold and
// its markers, deleting each object no other holder keeps (rule 3): what
// an instance that is gone for good (its database destroyed, after a
// rescale replaced it) must leave behind, since its markers would keep
// its objects forever. It returns how many objects it deleted with its
// markers (those it deleted with the hold are not counted). The
// instance must not run meanwhile; after a failure, running it again
// finishes the work.
func DropInstance(ctx context.Context, s Store, instance string) (deleted int, err error) {
	if err := CheckInstanceID(instance); err != nil {
		return 0, err
	}
	holder := InstanceHolder(instance)
	held, found, err := ReadHold(ctx, s, holder)
	if err != nil {
		return 0, err
	}
	marked, err := Marked(ctx, s)
	if err != nil {
		return 0, err
	}
	var objects []string
	for object, holders := range marked {
		if slices.Contains(holders, holder) {
			objects = append(objects, object)
		}
	}
	slices.Sort(objects)
	// Side by side: each drop is two to four round trips, and an
	// instance holds hundreds of objects.
	var gone atomic.Int64
	if _, err := forEachObject(ctx, objects, dropParallel, func(ctx context.Context, object string) error {
		deleted, err := DropRef(ctx, s, object, holder)
		if deleted {
			gone.Add(1)
		}
		return err
	}); err != nil {
		return int(gone.Load()), err
	}
	deleted = int(gone.Load())
	// The hold last: an object it names that a marker of the instance
	// held as well was looked at once the marker went, and stays for the
	// hold; DropHold looks again.
	if found {
		if err := DropHold(ctx, s, holder, held); err != nil {
			return deleted, err
		}
	}
	// The instance's own objects that no marker holds (an upload or a
	// release its Close or a crash left half done): no one else wrote
	// them, so none may mark them now but a holder that already has.
	own, err := s.List(ctx, instancePrefix(instance))
	if err != nil {
		return deleted, fmt.Errorf("remote: list the objects of instance %s: %w", instance, err)
	}
	for _, o := range own {
		gone, err := DeleteUnheld(ctx, s, o.Name)
		if err != nil {
			return deleted, err
		}
		if gone {
			deleted++
		}
	}
	return deleted, nil
}
