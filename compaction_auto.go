package strata

import (
	"github.com/strata-db/strata/compaction"
	"github.com/strata-db/strata/lsm/manifest"
)

// compactionState is the scheduler's bookkeeping, protected by d.mu.
type compactionState struct {
	running int
	busy    compaction.Busy
	// manual counts manual compactions waiting or running; while it is
	// positive no automatic compaction starts.
	manual int
}

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
		v := d.vs.Current()
		p := compaction.PickAuto(v, d.opts.pickerOptions(), d.compactions.busy)
		if p == nil {
			return
		}
		job := &compactionJob{
			kind:         "auto",
			reason:       p.Reason,
			startLevel:   p.Level,
			outputLevel:  p.OutputLevel,
			bottommost:   compaction.IsBottommost(v, p),
			grandparents: p.Grandparents,
		}
		for i, files := range p.Inputs {
			level := p.Level
			if i == 1 {
				level = p.OutputLevel
			}
			for _, f := range files {
				job.inputs = append(job.inputs, compactionInput{level: level, f: f})
			}
		}
		if d.isTrivialMove(p) {
			job.kind = "move"
		}
		d.compactions.running++
		d.compactions.busy[p.Level] = true
		d.compactions.busy[p.OutputLevel] = true
		for _, in := range job.inputs {
			in.f.Compacting = true // before the next pick looks at the version
		}
		d.bgWG.Add(1)
		go d.runAutoCompaction(job, p)
	}
}

// isTrivialMove reports whether p can move its one input file down a level
// without rewriting it: nothing to merge with in the output level, and not
// so wide that compacting it further down would be too large.
func (d *DB) isTrivialMove(p *compaction.Pick) bool {
	if len(p.Inputs[0]) != 1 || len(p.Inputs[1]) != 0 || p.Level == p.OutputLevel {
		return false
	}
	var overlap uint64
	for _, g := range p.Grandparents {
		overlap += g.Size
	}
	return overlap <= d.opts.pickerOptions().MaxGrandparentOverlap()
}

func (d *DB) runAutoCompaction(job *compactionJob, p *compaction.Pick) {
	defer d.bgWG.Done()
	d.mu.Lock()
	_ = d.runJobLocked(job) // failures become the background error
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
	d.compactionDebt.Store(int64(compactionDebt(v, d.opts.pickerOptions())))
}

// compactionDebt estimates the bytes compaction must rewrite to bring every
// level within its target: each level's excess, plus L0 once it reaches the
// compaction threshold.
func compactionDebt(v *manifest.Version, o compaction.PickerOptions) uint64 {
	s := compaction.Compute(v, o)
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
