package strata

import (
	"fmt"
	"time"

	"github.com/strata-db/strata/compaction"
	"github.com/strata-db/strata/internal/base"
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
	if err := d.checkOpen(); err != nil {
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
	v := d.vs.Current()
	job := &compactionJob{
		kind:        "manual",
		inputs:      pickManualInputs(v, start, end),
		outputLevel: manifest.NumLevels - 1,
		bottommost:  true,
	}
	if len(job.inputs) == 0 {
		return nil
	}
	return d.runJobLocked(job)
}

// compactionJob is one compaction, manual or automatic.
type compactionJob struct {
	kind         string // "manual", "auto" or "move"
	reason       string
	inputs       []compactionInput
	outputLevel  int
	bottommost   bool
	grandparents []*manifest.FileMetadata
	startLevel   int
}

type compactionInput struct {
	level int
	f     *manifest.FileMetadata
}

func (j *compactionJob) inputBytes() uint64 {
	var n uint64
	for _, in := range j.inputs {
		n += in.f.Size
	}
	return n
}

// runJobLocked runs job: it marks the inputs, releases d.mu while the new
// tables are written, and installs the result. d.mu is held on entry and on
// return.
func (d *DB) runJobLocked(job *compactionJob) error {
	for _, in := range job.inputs {
		in.f.Compacting = true
	}
	v := d.vs.Current()
	v.Ref()
	snaps := d.snapshots.seqsLocked()
	info := CompactionInfo{Reason: job.reason, FromLevel: job.startLevel, ToLevel: job.outputLevel, InputBytes: job.inputBytes()}
	for _, in := range job.inputs {
		info.Inputs++
		if in.level != job.startLevel {
			info.OutputLevelInputs++
		}
	}
	d.mu.Unlock()

	d.opts.EventListener.compactionBegin(info)
	start := time.Now()
	var (
		outputs []compaction.Output
		stats   compaction.Stats
		err     error
	)
	if job.kind != "move" {
		outputs, stats, err = d.runCompaction(job, snaps)
	}
	v.Unref()

	d.mu.Lock()
	for _, in := range job.inputs {
		in.f.Compacting = false
	}
	if err == nil {
		ve := &manifest.VersionEdit{}
		for _, in := range job.inputs {
			ve.DeletedFiles = append(ve.DeletedFiles, manifest.DeletedFile{Level: in.level, FileNum: in.f.FileNum})
		}
		if job.kind == "move" {
			ve.NewFiles = append(ve.NewFiles, manifest.NewFile{Level: job.outputLevel, Meta: job.inputs[0].f})
		}
		for _, o := range outputs {
			ve.NewFiles = append(ve.NewFiles, manifest.NewFile{Level: job.outputLevel, Meta: fileMetadata(o)})
		}
		if err = d.vs.LogAndApply(ve); err != nil {
			// The edit may or may not have reached the disk: keep the outputs
			// (the next Open removes them if unreferenced) and stop writing.
			d.setBackgroundErrorLocked(err)
		} else {
			d.updateReadStateLocked()
		}
	} else {
		// The inputs are intact; but a compaction that fails (a read error,
		// a corrupt table) would fail again, so stop writing rather than
		// loop. Reads keep working; reopening retries.
		d.setBackgroundErrorLocked(err)
	}
	d.cond.Broadcast()
	info.Duration = time.Since(start)
	info.OutputBytes = stats.BytesOut
	info.Outputs = len(outputs)
	info.Err = err
	if err == nil {
		d.stats.recordCompaction(job, stats, info.Duration)
	}
	d.mu.Unlock()
	d.opts.EventListener.compactionEnd(info)
	if err != nil {
		d.opts.EventListener.backgroundError(err)
	}
	d.deleteObsoleteFiles()
	d.mu.Lock()
	if err != nil {
		return fmt.Errorf("strata: compact: %w", err)
	}
	return nil
}

// pickManualInputs returns the files of every level overlapping [start,
// end], widening the range to the bounds of each file taken until no other
// file overlaps it. The closure matters: leaving out an overlapping file of
// some level would put older data (the output, in the bottom level) below
// it and newer data above it out of order.
func pickManualInputs(v *manifest.Version, start, end []byte) []compactionInput {
	var out []compactionInput
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
				out = append(out, compactionInput{level: level, f: f})
				if lo != nil && base.Compare(f.Smallest.UserKey, lo) < 0 {
					lo = f.Smallest.UserKey
				}
				if hi != nil && base.Compare(f.Largest.UserKey, hi) > 0 {
					hi = f.Largest.UserKey
				}
			}
		}
	}
	return out
}

// runCompaction merges the job's inputs into new tables for its output
// level.
func (d *DB) runCompaction(job *compactionJob, snaps []base.SeqNum) ([]compaction.Output, compaction.Stats, error) {
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
	for _, in := range job.inputs {
		h, err := d.tableCache.get(in.f)
		if err != nil {
			return nil, compaction.Stats{}, err
		}
		tombs = append(tombs, h.reader.RangeTombstones()...)
		d.tableCache.release(h)
		if in.level == 0 {
			it, err := d.newFileIter(in.f)
			if err != nil {
				return nil, compaction.Stats{}, err
			}
			iters = append(iters, it)
		} else {
			levels[in.level] = append(levels[in.level], in.f)
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
	target := uint64(d.opts.TargetFileSize)
	outputs, stats, err := compaction.Run(compaction.Config{
		Input:                 merged,
		RangeDels:             rangedel.Build(tombs),
		Snapshots:             snaps,
		Bottommost:            job.bottommost,
		NewFile:               d.newTableFile,
		Writer:                d.opts.writerOptions(),
		TargetFileSize:        target,
		Grandparents:          job.grandparents,
		MaxGrandparentOverlap: d.opts.pickerOptions().MaxGrandparentOverlap(),
	})
	if err == nil && len(outputs) > 0 {
		err = syncDirErr(d)
	}
	if err != nil {
		for _, o := range outputs {
			d.removeFile(base.FileTypeTable, o.FileNum)
		}
		return nil, stats, err
	}
	return outputs, stats, nil
}

func syncDirErr(d *DB) error {
	if err := manifest.SyncDir(d.fs, d.dirname); err != nil {
		return fmt.Errorf("strata: sync directory: %w", err)
	}
	return nil
}
