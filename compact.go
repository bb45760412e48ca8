package strata

import (
	"fmt"
	"time"

	"github.com/strata-db/strata/compaction"
	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/internal/invariants"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/lsm/merging"
	"github.com/strata-db/strata/lsm/rangedel"
)

// Compact flushes the memtable, then rewrites every table holding keys in
// [start, end] into the bottom level, dropping overwritten versions and
// tombstones that no open snapshot needs. nil bounds are open: Compact(nil,
// nil) compacts everything. The range grows to whole tables, and to every
// table that overlaps those, so the levels stay ordered. Automatic
// compactions pause while it runs.
func (d *DB) Compact(start, end []byte) error {
	if err := d.checkWritable(); err != nil {
		return err
	}
	if start != nil && end != nil && base.Compare(start, end) > 0 {
		return fmt.Errorf("strata: Compact: start %q is after end %q", start, end)
	}
	if testHookEntry != nil {
		testHookEntry("compact")
	}
	d.compactMu.Lock()
	defer d.compactMu.Unlock()
	// Close may have run while this call waited for compactMu.
	if err := d.checkOpen(); err != nil {
		return err
	}
	if err := d.flush(); err != nil {
		return err
	}

	d.mu.Lock()
	d.compactions.manual++
	defer func() {
		d.compactions.manual--
		d.maybeScheduleCompactionLocked()
		d.mu.Unlock()
	}()
	// Let running automatic compactions finish, so every file is free.
	for d.compactions.running > 0 {
		d.cond.Wait()
	}
	if err := d.backgroundErrorLocked(); err != nil {
		return err
	}
	p := compaction.PickManual(d.vs.Current(), start, end)
	if p == nil {
		return nil
	}
	return d.runJobLocked(p)
}

// runJobLocked runs the compaction p: it marks the inputs, releases d.mu
// while the new tables are written, and installs the result. d.mu is held
// on entry and on return.
func (d *DB) runJobLocked(p *compaction.Pick) error {
	setCompacting(p, true)
	v := d.vs.Current()
	v.Ref()
	snaps := d.snapshots.seqsLocked()
	var targets map[base.FileNum]bool
	if p.Kind != compaction.KindMove {
		targets = d.relocationTargetsLocked()
	}
	info := CompactionInfo{
		Reason:     p.Reason.String(),
		FromLevel:  p.Level,
		ToLevel:    p.OutputLevel,
		Inputs:     p.NumInputs(),
		InputBytes: p.InputBytes(),
	}
	for _, in := range p.Inputs {
		if in.Level != p.Level {
			info.OutputLevelInputs += len(in.Files)
		}
	}
	d.mu.Unlock()

	d.opts.EventListener.compactionBegin(info)
	start := time.Now()
	var (
		outputs []compaction.Output
		vlogs   []*manifest.VlogMetadata
		stats   compaction.Stats
		err     error
	)
	if p.Kind != compaction.KindMove {
		outputs, vlogs, stats, err = d.runCompaction(p, v, snaps, targets)
	}
	v.Unref()

	d.mu.Lock()
	setCompacting(p, false)
	report := false // the first background error is reported once
	if err == nil {
		ve := &manifest.VersionEdit{}
		for _, in := range p.Inputs {
			for _, f := range in.Files {
				ve.DeletedFiles = append(ve.DeletedFiles, manifest.DeletedFile{Level: in.Level, FileNum: f.FileNum})
			}
		}
		if p.Kind == compaction.KindMove {
			ve.NewFiles = append(ve.NewFiles, manifest.NewFile{Level: p.OutputLevel, Meta: p.Inputs[0].Files[0]})
		}
		for _, o := range outputs {
			ve.NewFiles = append(ve.NewFiles, manifest.NewFile{Level: p.OutputLevel, Meta: fileMetadata(o)})
		}
		ve.NewVlogs = vlogs
		if err = d.vs.LogAndApply(ve); err != nil {
			// The edit may or may not have reached the disk: keep the outputs
			// (the next Open removes them if unreferenced) and stop writing.
			report = d.setBackgroundErrorLocked(err)
		} else {
			d.updateReadStateLocked()
			d.recordRelocationLocked(stats)
			d.stats.expired.Add(stats.Expired)
			d.stats.compactVlogReads.Add(stats.Relocated)
			d.stats.vlogBytes.Add(vlogSizes(vlogs))
			if invariants.Enabled && p.Kind != compaction.KindMove {
				err = checkCompactionLedger(p, outputs, vlogs, stats)
				if err != nil {
					report = d.setBackgroundErrorLocked(err)
				}
			}
			d.scheduleGCLocked()
		}
	} else {
		// The inputs are intact; but a compaction that fails (a read error,
		// a corrupt table) would fail again, so stop writing rather than
		// loop. Reads keep working; reopening retries.
		report = d.setBackgroundErrorLocked(err)
	}
	d.cond.Broadcast()
	info.Duration = time.Since(start)
	info.OutputBytes = stats.BytesOut
	info.Outputs = len(outputs)
	info.Err = err
	if err == nil {
		d.stats.recordCompaction(p, stats, info.Duration)
	}
	d.mu.Unlock()
	d.opts.EventListener.compactionEnd(info)
	if report {
		d.deliverBackgroundError(err)
	}
	d.deleteObsoleteFiles()
	d.mu.Lock()
	if err != nil {
		return fmt.Errorf("strata: compact: %w", err)
	}
	return nil
}

// setCompacting marks or unmarks the inputs of p as being compacted. d.mu
// held.
func setCompacting(p *compaction.Pick, on bool) {
	for _, in := range p.Inputs {
		for _, f := range in.Files {
			f.Compacting = on
		}
	}
}

// runCompaction merges the inputs of p (from version v, pinned) into new
// tables for its output level, moving the values that pointers into the
// target value logs locate into new value logs, which it returns.
func (d *DB) runCompaction(p *compaction.Pick, v *manifest.Version, snaps []base.SeqNum, targets map[base.FileNum]bool) ([]compaction.Output, []*manifest.VlogMetadata, compaction.Stats, error) {
	var (
		iters  []base.InternalIterator
		tombs  []base.RangeTombstone
		levels [manifest.NumLevels][]*manifest.FileMetadata
	)
	defer func() {
		for _, it := range iters {
			it.Close()
		}
	}()
	for _, in := range p.Inputs {
		for _, f := range in.Files {
			h, err := d.tableCache.get(f)
			if err != nil {
				return nil, nil, compaction.Stats{}, err
			}
			tombs = append(tombs, h.tombstones()...)
			d.tableCache.release(h)
			if in.Level == 0 {
				it, err := d.newFileIter(f)
				if err != nil {
					return nil, nil, compaction.Stats{}, err
				}
				iters = append(iters, it)
			} else {
				levels[in.Level] = append(levels[in.Level], f)
			}
		}
	}
	for level, files := range levels {
		if len(files) > 0 {
			sorted := &manifest.Version{}
			sorted.Levels[level] = files
			manifest.SortLevels(sorted)
			iters = append(iters, merging.NewLevelIter(sorted.Levels[level], d.newFileIter, nil, nil))
		}
	}
	merged := merging.New(iters...)
	iters = []base.InternalIterator{merged} // Close closes the children
	cfg := compaction.Config{
		Input:                 merged,
		RangeDels:             rangedel.Build(tombs),
		Snapshots:             snaps,
		Bottommost:            p.Bottommost,
		NewFile:               d.newTableFile,
		Writer:                d.opts.writerOptions(),
		TargetFileSize:        uint64(d.opts.TargetFileSize),
		Grandparents:          p.Grandparents,
		MaxGrandparentOverlap: d.opts.pickerOptions().MaxGrandparentOverlap(),
		Now:                   d.nowMillis(),
		Filter:                d.compactionFilter(),
	}
	// New value logs, written only if needed: values moved out of value
	// logs being collected, and large values that merges produce.
	sep := d.newSeparator(d.opts.SeparationPolicy)
	if len(targets) > 0 {
		rel := d.newRelocator(v, targets, sep)
		defer rel.close()
		cfg.Relocate = rel.relocate
	}
	if d.opts.Merger != nil {
		cfg.Merger = d.opts.Merger
		cfg.ReadValue = d.valueReader(v)
		cfg.Separate = sep.Separate
	}
	outputs, stats, err := compaction.Run(cfg)
	var vlogs []*manifest.VlogMetadata
	if err == nil {
		vlogs, err = sep.Finish()
	}
	if err == nil && len(outputs) > 0 {
		err = syncDirErr(d)
	}
	if err != nil {
		sep.Abort()
		for _, o := range outputs {
			d.removeFile(base.FileTypeTable, o.FileNum)
		}
		return nil, nil, stats, err
	}
	return outputs, vlogs, stats, nil
}

// recordRelocationLocked adds what a compaction relocated to the GC
// counters. d.mu held.
func (d *DB) recordRelocationLocked(stats compaction.Stats) {
	for _, n := range stats.VlogRelocated {
		d.gc.stats.relocatedBytes += n
	}
	d.gc.stats.relocated += stats.Relocated
}

// checkCompactionLedger verifies, for a compaction p with outputs and new
// value logs, that for every value log the inputs' references less the
// outputs' equal the garbage the compaction metered plus what it
// relocated, and that the new value logs are referenced by exactly the
// bytes relocated (an invariants-build self-check).
func checkCompactionLedger(p *compaction.Pick, outputs []compaction.Output, vlogs []*manifest.VlogMetadata, stats compaction.Stats) error {
	delta := make(map[base.FileNum]int64)
	// A virtual input's references include its keys outside its visible
	// range, which the compaction neither reads nor meters: they become
	// garbage unmetered, so its value logs may be referenced less after.
	virtual := false
	for _, in := range p.Inputs {
		for _, f := range in.Files {
			virtual = virtual || f.Virtual
			for _, r := range f.VlogRefs {
				delta[r.FileNum] += int64(r.Bytes)
			}
		}
	}
	for _, o := range outputs {
		for _, r := range o.VlogRefs {
			delta[r.FileNum] -= int64(r.Bytes)
		}
	}
	// The new value logs hold the relocated records and the values the
	// compaction separated (merged values grown past the threshold), which
	// moved nothing: start from the latter, so that what remains must be
	// exactly the relocated bytes.
	relocated := int64(stats.SeparatedBytes)
	for num, n := range stats.VlogRelocated {
		relocated += int64(n)
		delta[num] -= int64(n)
	}
	for num, n := range stats.VlogGarbage {
		delta[num] -= int64(n)
	}
	for _, vm := range vlogs {
		relocated += delta[vm.FileNum]
		delete(delta, vm.FileNum)
	}
	for num, n := range delta {
		if n != 0 && !(virtual && n > 0) {
			return fmt.Errorf("strata: invariant: compaction %s: value log %s references off by %d bytes from the metered garbage", p, num, n)
		}
	}
	if relocated != 0 {
		return fmt.Errorf("strata: invariant: compaction %s: new value logs referenced %d bytes off from what was relocated", p, relocated)
	}
	return nil
}

func syncDirErr(d *DB) error {
	if err := manifest.SyncDir(d.fs, d.dirname); err != nil {
		return fmt.Errorf("strata: sync directory: %w", err)
	}
	return nil
}
