package compaction

import (
	"cmp"
	"math"
	"slices"

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

// Busy reports which levels running compactions use, so the picker keeps
// concurrent compactions on disjoint levels.
type Busy [manifest.NumLevels]bool

// PickAuto returns the most urgent compaction of v, or nil. Levels marked
// busy are neither read nor written by the pick. Files marked for compaction
// (garbage collection marks the tables that point into a value log it
// collects) are rewritten in place when no level needs compacting.
//
// The pick is KindAuto, or KindMove when its one input file can go down
// without being rewritten (see isTrivialMove), or KindRewrite when it
// rewrites a marked file in place.
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
	var p *Pick
	for _, c := range cands {
		if c.level == 0 {
			p = pickL0(v, s, busy)
		} else {
			p = pickLevel(v, c.level, busy)
		}
		if p != nil {
			p.Score = c.score
			break
		}
	}
	if p == nil {
		p = pickMarked(v, busy)
	}
	if p == nil {
		return nil
	}
	finishPick(v, p, o)
	return p
}

// isTrivialMove reports whether p can move its one input file down a level
// without rewriting it: nothing to merge with in the output level, and not
// so wide that compacting it further down would be too large (it overlaps
// at most MaxGrandparentOverlap bytes of the level below the output level,
// as an output of a compaction would).
func isTrivialMove(p *Pick, o PickerOptions) bool {
	if p.Level == p.OutputLevel || len(p.Inputs) != 1 || len(p.Inputs[0].Files) != 1 {
		return false
	}
	var overlap uint64
	for _, g := range p.Grandparents {
		overlap += g.Size
	}
	return overlap <= o.MaxGrandparentOverlap()
}

// pickL0 takes every L0 file and the base-level files they overlap.
func pickL0(v *manifest.Version, s State, busy Busy) *Pick {
	out := s.BaseLevel
	if busy[0] || busy[out] {
		return nil
	}
	p := &Pick{Level: 0, OutputLevel: out, Reason: ReasonL0Files}
	for _, f := range v.Levels[0] {
		if f.Compacting {
			return nil
		}
		p.add(0, f)
	}
	if len(p.Inputs) == 0 {
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
		p := &Pick{Level: level, OutputLevel: out, Reason: ReasonLevelSize}
		p.add(level, f)
		if !addOutputLevel(v, p) {
			continue
		}
		var overlap uint64
		for _, g := range p.Files(out) {
			overlap += g.Size
		}
		ratio := float64(overlap) / float64(max(f.Size, 1))
		if ratio < bestRatio {
			best, bestRatio = p, ratio
		}
	}
	return best
}

// pickMarked rewrites in place one file marked for compaction (garbage
// collection marks the tables that point into a value log it collects; the
// rewrite moves their values out), or one that is virtual (its file holds
// keys outside its range, whose value-log references count as live until
// it is rewritten): the output goes back to the file's own level, so
// nothing else is merged and the rewrite costs the file alone.
func pickMarked(v *manifest.Version, busy Busy) *Pick {
	for level, files := range v.Levels {
		if busy[level] {
			continue
		}
		for _, f := range files {
			if !(f.MarkedForCompaction || f.Virtual) || f.Compacting {
				continue
			}
			p := &Pick{Level: level, OutputLevel: level, Reason: ReasonMarked}
			p.add(level, f)
			return p
		}
	}
	return nil
}

// PickL0 returns the compaction of every L0 file into the base level,
// whatever L0's score (garbage collection asks for it), or nil when L0 is
// empty or busy.
func PickL0(v *manifest.Version, o PickerOptions, busy Busy) *Pick {
	o = o.EnsureDefaults()
	p := pickL0(v, Compute(v, o), busy)
	if p == nil {
		return nil
	}
	p.Reason = ReasonGarbage
	finishPick(v, p, o)
	return p
}

// PickMarked returns the in-place rewrite of a file marked for compaction,
// or nil: what PickAuto picks when no level needs compacting, for a caller
// that must not let marked files wait any longer.
func PickMarked(v *manifest.Version, o PickerOptions, busy Busy) *Pick {
	p := pickMarked(v, busy)
	if p != nil {
		finishPick(v, p, o.EnsureDefaults())
	}
	return p
}

// finishPick fills in what every automatic pick carries: grandparents,
// bottommost and kind.
func finishPick(v *manifest.Version, p *Pick, o PickerOptions) {
	p.Grandparents = grandparents(v, p)
	p.Bottommost = IsBottommost(v, p)
	switch {
	case p.OutputLevel == p.Level:
		p.Kind = KindRewrite
		if p.Level == 0 {
			// Older L0 files may hold older versions of its keys: its
			// tombstones must stay.
			p.Bottommost = false
		}
	case isTrivialMove(p, o):
		p.Kind = KindMove
	default:
		p.Kind = KindAuto
	}
}

// addOutputLevel adds the output-level files overlapping the start-level
// inputs; false when one of them is being compacted.
func addOutputLevel(v *manifest.Version, p *Pick) bool {
	if p.OutputLevel == p.Level {
		return true
	}
	lo, hi := p.Bounds()
	overlaps := v.Overlaps(p.OutputLevel, lo, hi)
	for _, f := range overlaps {
		if f.Compacting {
			return false
		}
	}
	for _, f := range overlaps {
		p.add(p.OutputLevel, f)
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

// Debt estimates the bytes compaction must rewrite to bring every level of
// v within its target: each level's excess, plus all of L0 once it reaches
// the compaction threshold. The write path slows and stops writers on it.
func Debt(v *manifest.Version, o PickerOptions) uint64 {
	s := Compute(v, o)
	var debt uint64
	if s.Levels[0].Score >= 1 {
		debt += s.Levels[0].Bytes
	}
	for level := 1; level < manifest.NumLevels-1; level++ {
		l := s.Levels[level]
		if l.MaxBytes > 0 && l.Bytes > uint64(l.MaxBytes) {
			debt += l.Bytes - uint64(l.MaxBytes)
		}
	}
	return debt
}

// ExpiredFractionToCompact is the estimated share of a table's entries
// past their TTL at which ExpiredTables picks it.
const ExpiredFractionToCompact = 0.5

// ExpiredTables returns the tables of v, not being compacted, of which an
// estimated ExpiredFractionToCompact or more of the entries have expired
// at now (ms since the epoch), by the expiry summary the manifest keeps:
// rewriting them drops the expired entries without reading them, or any
// value log.
func ExpiredTables(v *manifest.Version, now int64) []*manifest.FileMetadata {
	var out []*manifest.FileMetadata
	v.Files(func(_ int, f *manifest.FileMetadata) {
		if !f.Compacting && f.Expiry.ExpiredFraction(now) >= ExpiredFractionToCompact {
			out = append(out, f)
		}
	})
	return out
}
