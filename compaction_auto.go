package strata

import (
	"github.com/strata-db/strata/compaction"
)

// compactionState is the scheduler's bookkeeping, protected by d.mu.
type compactionState struct {
	running int
	busy    compaction.Busy
	// manual counts manual compactions waiting or running; while it is
	// positive no automatic compaction starts.
	manual int
	// passedOverMarked counts the automatic compactions picked in a row
	// while files marked by garbage collection waited.
	passedOverMarked int
	// compactL0 is garbage collection's request for an L0 compaction below
	// L0's threshold (see gc.Decision.CompactL0).
	compactL0 bool
}

// maxPassedOverMarked is how many compactions in a row may go ahead of a
// marked file before the marked file goes first, so that a steady stream
// of level compactions never starves garbage collection (unless L0 is
// close to stopping writes: foreground writes come first).
const maxPassedOverMarked = 3

// pickerOptions are the options of o that shape the tree.
func (o *Options) pickerOptions() compaction.PickerOptions {
	return compaction.PickerOptions{
		L0CompactionThreshold: o.L0CompactionThreshold,
		LBaseMaxBytes:         o.LBaseMaxBytes,
		LevelMultiplier:       o.LevelMultiplier,
		TargetFileSize:        o.TargetFileSize,
	}
}

// maybeScheduleCompactionLocked starts automatic compactions while there is
// work and room under MaxConcurrentCompactions. Concurrent compactions
// touch disjoint levels. d.mu held.
func (d *DB) maybeScheduleCompactionLocked() {
	if d.opts.DisableAutomaticCompactions || d.closed.Load() || d.bgErr != nil || d.compactions.manual > 0 {
		return
	}
	for d.compactions.running < d.opts.MaxConcurrentCompactions {
		v, o := d.vs.Current(), d.opts.pickerOptions()
		p := compaction.PickAuto(v, o, d.compactions.busy)
		if p == nil && d.compactions.compactL0 {
			p = compaction.PickL0(v, o, d.compactions.busy)
			if p != nil || len(v.Levels[0]) == 0 {
				d.compactions.compactL0 = false
			}
		}
		if p == nil {
			return
		}
		if p.Level == 0 {
			d.compactions.compactL0 = false
		}
		if p.Reason != compaction.ReasonMarked {
			if m := compaction.PickMarked(v, o, d.compactions.busy); m != nil {
				d.compactions.passedOverMarked++
				if d.compactions.passedOverMarked > maxPassedOverMarked && int(d.l0Files.Load()) < d.opts.L0SlowdownWritesThreshold {
					p = m
				}
			}
		}
		if p.Reason == compaction.ReasonMarked {
			d.compactions.passedOverMarked = 0
		}
		d.compactions.running++
		d.compactions.busy[p.Level] = true
		d.compactions.busy[p.OutputLevel] = true
		setCompacting(p, true) // before the next pick looks at the version
		d.bgWG.Add(1)
		go d.runAutoCompaction(p)
	}
}

func (d *DB) runAutoCompaction(p *compaction.Pick) {
	defer d.bgWG.Done()
	d.mu.Lock()
	_ = d.runJobLocked(p) // failures become the background error
	d.compactions.running--
	d.compactions.busy[p.Level] = false
	d.compactions.busy[p.OutputLevel] = false
	d.updateL0CountLocked()
	d.cond.Broadcast()
	d.maybeScheduleCompactionLocked()
	d.mu.Unlock()
}

// updateL0CountLocked publishes the current version's L0 file count and
// compaction debt for the write path's stall checks. d.mu held.
func (d *DB) updateL0CountLocked() {
	v := d.vs.Current()
	d.l0Files.Store(int32(len(v.Levels[0])))
	d.compactionDebt.Store(int64(compaction.Debt(v, d.opts.pickerOptions())))
}
