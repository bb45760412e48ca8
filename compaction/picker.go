package compaction

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
)

// LevelState is the picker's view of one level.
type LevelState struct {
	Bytes     uint64 // size of the level's files
	Compact   uint64 // bytes of files being compacted
	MaxBytes  int64  // target size (0 for L0; MaxInt64 above the base level)
	Score     float64
	FileCount int
}

// State is the picker's view of a version: per-level sizes, targets and
// scores, and the base level.
type State struct {
	Levels    [manifest.NumLevels]LevelState
	BaseLevel int
}

// Compute sizes the levels the way RocksDB's dynamic level sizing does
// (level_compaction_dynamic_level_bytes): targets are derived from the size
// of the data, growing by LevelMultiplier per level down to the bottom, and
// the base level is the deepest level whose target stays within
// LBaseMaxBytes. Levels above the base level stay empty; L0 compacts
// straight into the base level. Small databases therefore have few levels.
//
// Scores: L0's is its file count over L0CompactionThreshold; a level's is its
// size (without files being compacted) over its target. The bottom level
// has no score.
func Compute(v *manifest.Version, o PickerOptions) State {
	o = o.EnsureDefaults()
	var s State
	for level, files := range v.Levels {
		ls := &s.Levels[level]
		ls.FileCount = len(files)
		for _, f := range files {
			ls.Bytes += f.Size
			if f.Compacting {
				ls.Compact += f.Size
			}
		}
	}
	first := -1
	var total uint64
	for level := 1; level < manifest.NumLevels; level++ {
		if s.Levels[level].Bytes > 0 {
			if first < 0 {
				first = level
			}
			total += s.Levels[level].Bytes
		}
	}
	for level := range s.Levels {
		s.Levels[level].MaxBytes = math.MaxInt64
	}
	s.Levels[0].MaxBytes = 0
	bottom := manifest.NumLevels - 1
	if first < 0 {
		// Nothing below L0 yet: L0 compacts into the bottom level.
		s.BaseLevel = bottom
	} else {
		total += s.Levels[0].Bytes
		mult := float64(o.LevelMultiplier)
		// The bottom level should hold all but a 1/multiplier share.
		bottomSize := float64(total) - float64(total)/mult
		size := bottomSize
		for level := bottom - 1; level >= first; level-- {
			size /= mult
		}
		base := first
		for base > 1 && size > float64(o.LBaseMaxBytes) {
			base--
			size /= mult
		}
		s.BaseLevel = base
		// Smooth the multiplier so targets run from LBaseMaxBytes at the base
		// level to bottomSize at the bottom.
		smooth := 1.0
		if base < bottom && bottomSize > float64(o.LBaseMaxBytes) {
			smooth = math.Pow(bottomSize/float64(o.LBaseMaxBytes), 1/float64(bottom-base))
		}
		target := float64(o.LBaseMaxBytes)
		for level := base; level <= bottom; level++ {
			if level > base {
				target *= smooth
			}
			s.Levels[level].MaxBytes = int64(math.Min(math.Round(target), math.MaxInt64))
		}
	}
	l0 := &s.Levels[0]
	notCompacting := 0
	for _, f := range v.Levels[0] {
		if !f.Compacting {
			notCompacting++
		}
	}
	l0.Score = float64(notCompacting) / float64(o.L0CompactionThreshold)
	for level := 1; level < bottom; level++ {
		ls := &s.Levels[level]
		if ls.MaxBytes > 0 && ls.MaxBytes < math.MaxInt64 {
			ls.Score = float64(ls.Bytes-ls.Compact) / float64(ls.MaxBytes)
		}
	}
	return s
}

// Pick is a chosen compaction.
type Pick struct {
	// Level is the start level; OutputLevel receives the outputs.
	Level, OutputLevel int
	// Inputs are the files of Level, then of OutputLevel, being merged.
	Inputs [2][]*manifest.FileMetadata
	// Grandparents are the files of the level below OutputLevel that
	// overlap the compaction, for cutting outputs.
	Grandparents []*manifest.FileMetadata
	Score        float64
	Reason       string
}

// Bounds returns the user-key range of all inputs.
func (p *Pick) Bounds() (smallest, largest []byte) {
	for _, files := range p.Inputs {
		for _, f := range files {
			if smallest == nil || base.Compare(f.Smallest.UserKey, smallest) < 0 {
				smallest = f.Smallest.UserKey
			}
			if largest == nil || base.Compare(f.Largest.UserKey, largest) > 0 {
				largest = f.Largest.UserKey
			}
		}
	}
	return smallest, largest
}

// InputBytes is the total size of the inputs.
func (p *Pick) InputBytes() uint64 {
	var n uint64
	for _, files := range p.Inputs {
		for _, f := range files {
			n += f.Size
		}
	}
	return n
}

func (p *Pick) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "L%d->L%d score %.2f (%s):", p.Level, p.OutputLevel, p.Score, p.Reason)
	for i, files := range p.Inputs {
		if i == 1 {
			b.WriteString(" +")
		}
		for _, f := range files {
			fmt.Fprintf(&b, " %d", uint64(f.FileNum))
		}
	}
	return b.String()
}

// Busy reports which levels running compactions use, so the picker keeps
// concurrent compactions on disjoint levels.
type Busy [manifest.NumLevels]bool

// PickAuto returns the most urgent compaction of v, or nil. Levels marked
// busy are neither read nor written by the pick. Files marked for compaction
// (by GC, later) are picked when no level needs compacting.
func PickAuto(v *manifest.Version, o PickerOptions, busy Busy) *Pick {
	o = o.EnsureDefaults()
	s := Compute(v, o)
	type cand struct {
		level int
		score float64
	}
	var cands []cand
	for level := 0; level < manifest.NumLevels-1; level++ {
		if s.Levels[level].Score >= 1 {
			cands = append(cands, cand{level, s.Levels[level].Score})
		}
	}
	slices.SortStableFunc(cands, func(a, b cand) int { return cmp.Compare(b.score, a.score) })
	for _, c := range cands {
		var p *Pick
		if c.level == 0 {
			p = pickL0(v, s, busy)
		} else {
			p = pickLevel(v, c.level, busy)
		}
		if p != nil {
			p.Score = c.score
			p.Grandparents = grandparents(v, p)
			return p
		}
	}
	if p := pickMarked(v, s, busy); p != nil {
		p.Grandparents = grandparents(v, p)
		return p
	}
	return nil
}

// pickL0 takes every L0 file and the base-level files they overlap.
func pickL0(v *manifest.Version, s State, busy Busy) *Pick {
	out := s.BaseLevel
	if busy[0] || busy[out] {
		return nil
	}
	p := &Pick{Level: 0, OutputLevel: out, Reason: "L0 files"}
	for _, f := range v.Levels[0] {
		if f.Compacting {
			return nil
		}
		p.Inputs[0] = append(p.Inputs[0], f)
	}
	if len(p.Inputs[0]) == 0 {
		return nil
	}
	if !addOutputLevel(v, p) {
		return nil
	}
	return p
}

// pickLevel picks the file of level whose compaction into the next level
// rewrites the fewest bytes per byte moved down (RocksDB's
// kMinOverlappingRatio), which keeps write amplification low.
func pickLevel(v *manifest.Version, level int, busy Busy) *Pick {
	out := level + 1
	if busy[level] || busy[out] {
		return nil
	}
	var best *Pick
	bestRatio := math.Inf(1)
	for _, f := range v.Levels[level] {
		if f.Compacting {
			continue
		}
		p := &Pick{Level: level, OutputLevel: out, Inputs: [2][]*manifest.FileMetadata{{f}}, Reason: "level size"}
		if !addOutputLevel(v, p) {
			continue
		}
		var overlap uint64
		for _, g := range p.Inputs[1] {
			overlap += g.Size
		}
		ratio := float64(overlap) / float64(max(f.Size, 1))
		if ratio < bestRatio {
			best, bestRatio = p, ratio
		}
	}
	return best
}

// pickMarked compacts one file marked for compaction into the next level
// (or rewrites it in place in the bottom level).
func pickMarked(v *manifest.Version, s State, busy Busy) *Pick {
	for level, files := range v.Levels {
		for _, f := range files {
			if !f.MarkedForCompaction || f.Compacting {
				continue
			}
			out := level + 1
			switch {
			case level == 0:
				out = s.BaseLevel
			case level == manifest.NumLevels-1:
				out = level
			}
			if busy[level] || busy[out] {
				continue
			}
			p := &Pick{Level: level, OutputLevel: out, Inputs: [2][]*manifest.FileMetadata{{f}}, Reason: "marked"}
			if level == 0 {
				// Older L0 files overlapping it must go first or with it.
				p = pickL0(v, s, busy)
				if p == nil {
					continue
				}
				p.Reason = "marked"
				return p
			}
			if out != level && !addOutputLevel(v, p) {
				continue
			}
			return p
		}
	}
	return nil
}

// addOutputLevel adds the output-level files overlapping the start-level
// inputs; false when one of them is being compacted.
func addOutputLevel(v *manifest.Version, p *Pick) bool {
	if p.OutputLevel == p.Level {
		return true
	}
	lo, hi := p.Bounds()
	for _, f := range v.Overlaps(p.OutputLevel, lo, hi) {
		if f.Compacting {
			return false
		}
		p.Inputs[1] = append(p.Inputs[1], f)
	}
	return true
}

func grandparents(v *manifest.Version, p *Pick) []*manifest.FileMetadata {
	if p.OutputLevel+1 >= manifest.NumLevels {
		return nil
	}
	lo, hi := p.Bounds()
	return v.Overlaps(p.OutputLevel+1, lo, hi)
}

// IsBottommost reports whether no level below the output level holds keys
// in the pick's range, so tombstones of stripe 0 can be dropped.
func IsBottommost(v *manifest.Version, p *Pick) bool {
	lo, hi := p.Bounds()
	for level := p.OutputLevel + 1; level < manifest.NumLevels; level++ {
		if len(v.Overlaps(level, lo, hi)) > 0 {
			return false
		}
	}
	return true
}
