package compaction

import (
	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
)

// PickManual returns the compaction of the user-key range [start, end] (nil
// bounds are open) into the bottom level, or nil when no file overlaps the
// range. It takes the files of every level overlapping the range, widening
// the range to the bounds of each file taken until no other file overlaps
// it. The closure matters: leaving out an overlapping file of some level
// would put older data (the output, in the bottom level) below it and newer
// data above it out of order.
//
// The pick is KindManual, starts at L0 and is bottommost. Files being
// compacted are taken like any other; the caller waits for running
// compactions first.
func PickManual(v *manifest.Version, start, end []byte) *Pick {
	taken := make(map[base.FileNum]bool)
	lo, hi := start, end
	for changed := true; changed; {
		changed = false
		for level := 0; level < manifest.NumLevels; level++ {
			for _, f := range v.Overlaps(level, lo, hi) {
				if taken[f.FileNum] {
					continue
				}
				taken[f.FileNum] = true
				changed = true
				if lo != nil && base.Compare(f.Smallest.UserKey, lo) < 0 {
					lo = f.Smallest.UserKey
				}
				if hi != nil && base.Compare(f.Largest.UserKey, hi) > 0 {
					hi = f.Largest.UserKey
				}
			}
		}
	}
	if len(taken) == 0 {
		return nil
	}
	p := &Pick{
		Kind:        KindManual,
		Reason:      ReasonNone,
		Level:       0,
		OutputLevel: manifest.NumLevels - 1,
		// Nothing lies below the bottom level.
		Bottommost: true,
	}
	for level, files := range v.Levels {
		for _, f := range files {
			if taken[f.FileNum] {
				p.add(level, f)
			}
		}
	}
	return p
}
