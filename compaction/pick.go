package compaction

import (
	"fmt"
	"strings"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
)

// Kind says what a compaction does with its inputs.
type Kind int

const (
	// KindAuto merges files of one level with the files they overlap in the
	// next level (or L0 with the base level), chosen by PickAuto.
	KindAuto Kind = iota
	// KindManual merges every file overlapping a key range, in every level,
	// into the bottom level, as asked by DB.Compact (see PickManual).
	KindManual
	// KindMove moves one file down to the output level without rewriting
	// it: nothing there overlaps it. Its metadata goes to the output level
	// unchanged.
	KindMove
	// KindRewrite rewrites files in place: the output level is the input
	// level. PickAuto uses it for a file of the bottom level marked for
	// compaction, which has no level to go down to; it is also the kind
	// meant for the rewrites garbage collection asks for, of tables that
	// still point into a value log it wants to free.
	KindRewrite
	numKinds
)

var kindNames = [numKinds]string{
	KindAuto:    "auto",
	KindManual:  "manual",
	KindMove:    "move",
	KindRewrite: "rewrite",
}

// String returns the kind's name, such as "auto" or "move".
func (k Kind) String() string {
	if k >= 0 && k < numKinds {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Reason says why the picker chose a compaction.
type Reason int

const (
	// ReasonNone: no picker decision; a manual compaction. Its String is
	// empty, which is what CompactionInfo.Reason reports for manual
	// compactions.
	ReasonNone Reason = iota
	// ReasonL0Files: L0 holds L0CompactionThreshold files or more.
	ReasonL0Files
	// ReasonLevelSize: a level is past its target size.
	ReasonLevelSize
	// ReasonMarked: a file is marked for compaction and no level needs
	// compacting.
	ReasonMarked
	// ReasonGarbage: garbage collection asked for L0 to be compacted, so
	// that the older versions its keys shadow become garbage it can see.
	ReasonGarbage
	numReasons
)

var reasonNames = [numReasons]string{
	ReasonNone:      "",
	ReasonL0Files:   "L0 files",
	ReasonLevelSize: "level size",
	ReasonMarked:    "marked",
	ReasonGarbage:   "garbage",
}

// String returns the reason as reported in CompactionInfo.Reason, such as
// "L0 files"; empty for ReasonNone.
func (r Reason) String() string {
	if r >= 0 && r < numReasons {
		return reasonNames[r]
	}
	return fmt.Sprintf("reason(%d)", int(r))
}

// LevelFiles are the inputs of a compaction in one level, in the level's
// order.
type LevelFiles struct {
	Level int
	Files []*manifest.FileMetadata
}

// Pick is one compaction, of any kind: what it reads, where it writes and
// why. Picks are decided by pure functions of a version (PickAuto,
// PickManual), so that they can be tested as tables.
//
// INVARIANT: Inputs are ordered by level, shallowest first, and hold no
// level without files. A KindMove pick has exactly one input file; a
// KindRewrite pick has OutputLevel == Level.
type Pick struct {
	Kind   Kind
	Reason Reason
	// Level is the start level; OutputLevel receives the outputs. A manual
	// compaction starts at L0 and writes into the bottom level.
	Level, OutputLevel int
	// Inputs are the files being merged, per level.
	Inputs []LevelFiles
	// Grandparents are the files of the level below OutputLevel that
	// overlap the compaction, for cutting outputs.
	Grandparents []*manifest.FileMetadata
	// Bottommost is true when no level below the output level holds keys in
	// the pick's range, so tombstones of the oldest snapshot stripe can be
	// dropped.
	Bottommost bool
	// Score is the urgency of the level that made PickAuto choose the pick
	// (0 for a marked file or a manual compaction).
	Score float64
}

// Bounds returns the user-key range of all inputs.
func (p *Pick) Bounds() (smallest, largest []byte) {
	for _, in := range p.Inputs {
		for _, f := range in.Files {
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
	for _, in := range p.Inputs {
		for _, f := range in.Files {
			n += f.Size
		}
	}
	return n
}

// NumInputs is the number of input files.
func (p *Pick) NumInputs() int {
	n := 0
	for _, in := range p.Inputs {
		n += len(in.Files)
	}
	return n
}

// Files returns the inputs of level, or nil.
func (p *Pick) Files(level int) []*manifest.FileMetadata {
	for _, in := range p.Inputs {
		if in.Level == level {
			return in.Files
		}
	}
	return nil
}

// add appends f to the inputs of level, which must be at least the deepest
// level added so far.
func (p *Pick) add(level int, f *manifest.FileMetadata) {
	if n := len(p.Inputs); n == 0 || p.Inputs[n-1].Level != level {
		p.Inputs = append(p.Inputs, LevelFiles{Level: level})
	}
	in := &p.Inputs[len(p.Inputs)-1]
	in.Files = append(in.Files, f)
}

// String describes the pick on one line, such as
// "auto L5->L6 (level size) score 1.88: L5 21 + L6 11 12".
func (p *Pick) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s L%d->L%d", p.Kind, p.Level, p.OutputLevel)
	if p.Reason != ReasonNone {
		fmt.Fprintf(&b, " (%s)", p.Reason)
	}
	if p.Kind != KindManual {
		fmt.Fprintf(&b, " score %.2f", p.Score)
	}
	b.WriteString(":")
	for i, in := range p.Inputs {
		if i > 0 {
			b.WriteString(" +")
		}
		fmt.Fprintf(&b, " L%d", in.Level)
		for _, f := range in.Files {
			fmt.Fprintf(&b, " %d", uint64(f.FileNum))
		}
	}
	return b.String()
}
