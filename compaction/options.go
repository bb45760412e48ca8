package compaction

// Defaults of the PickerOptions fields. They are the only defaults of these
// settings: the root package's Default constants refer to them, so the
// engine and a picker built with zero options shape the tree alike.
const (
	// DefaultL0CompactionThreshold is the number of L0 files that makes L0's
	// score 1.
	DefaultL0CompactionThreshold = 4
	// DefaultLBaseMaxBytes (256 MiB) is about what L0 holds when it reaches
	// DefaultL0CompactionThreshold memtables of 64 MiB, so an L0 compaction
	// does not overfill the base level at once.
	DefaultLBaseMaxBytes = 256 << 20
	// DefaultLevelMultiplier is the size ratio between adjacent levels.
	DefaultLevelMultiplier = 10
	// DefaultTargetFileSize (32 MiB) is the size at which compaction outputs
	// are cut.
	DefaultTargetFileSize = 32 << 20
	// DefaultMaxGrandparentOverlapFactor is how many target file sizes of
	// the grandparent level one output may overlap.
	DefaultMaxGrandparentOverlapFactor = 10
)

// PickerOptions shape the tree. The zero value gives the defaults.
type PickerOptions struct {
	// L0CompactionThreshold is the number of L0 files that makes L0's score
	// 1. Default DefaultL0CompactionThreshold (4).
	L0CompactionThreshold int
	// LBaseMaxBytes is the target size in bytes of the base level (the
	// level L0 compacts into). Default DefaultLBaseMaxBytes (256 MiB).
	LBaseMaxBytes int64
	// LevelMultiplier is the size ratio between adjacent levels. Default
	// DefaultLevelMultiplier (10).
	LevelMultiplier int
	// TargetFileSize is the size in bytes at which compaction outputs are
	// cut. Default DefaultTargetFileSize (32 MiB).
	TargetFileSize int64
	// MaxGrandparentOverlapFactor cuts an output file once it overlaps this
	// many target file sizes of the level below the output level, so that a
	// later compaction of the file stays bounded; a file that overlaps more
	// than that is not moved down without rewriting either. A factor, not
	// bytes. Default DefaultMaxGrandparentOverlapFactor (10).
	MaxGrandparentOverlapFactor int
}

// EnsureDefaults fills zero fields.
func (o PickerOptions) EnsureDefaults() PickerOptions {
	if o.L0CompactionThreshold <= 0 {
		o.L0CompactionThreshold = DefaultL0CompactionThreshold
	}
	if o.LBaseMaxBytes <= 0 {
		o.LBaseMaxBytes = DefaultLBaseMaxBytes
	}
	if o.LevelMultiplier <= 1 {
		o.LevelMultiplier = DefaultLevelMultiplier
	}
	if o.TargetFileSize <= 0 {
		o.TargetFileSize = DefaultTargetFileSize
	}
	if o.MaxGrandparentOverlapFactor <= 0 {
		o.MaxGrandparentOverlapFactor = DefaultMaxGrandparentOverlapFactor
	}
	return o
}

// MaxGrandparentOverlap is the bytes of the grandparent level one output
// may overlap: MaxGrandparentOverlapFactor target file sizes.
func (o PickerOptions) MaxGrandparentOverlap() uint64 {
	o = o.EnsureDefaults()
	return uint64(o.MaxGrandparentOverlapFactor) * uint64(o.TargetFileSize)
}
