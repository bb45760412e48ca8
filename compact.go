package strata

import (
	"fmt"

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
// table that overlaps those, so the levels stay ordered.
func (d *DB) Compact(start, end []byte) error {
	if err := d.checkOpen(); err != nil {
		return err
	}
	if start != nil && end != nil && base.Compare(start, end) > 0 {
		return fmt.Errorf("strata: Compact: start %q is after end %q", start, end)
	}
	d.compactMu.Lock()
	defer d.compactMu.Unlock()
	if err := d.flush(); err != nil {
		return err
	}

	d.mu.Lock()
	v := d.vs.Current()
	inputs := pickManualInputs(v, start, end)
	if len(inputs.files) == 0 {
		d.mu.Unlock()
		return nil
	}
	for _, in := range inputs.files {
		in.f.Compacting = true
	}
	v.Ref()
	snaps := d.snapshots.seqsLocked()
	d.mu.Unlock()

	outputs, stats, err := d.runCompaction(inputs, snaps)
	v.Unref()

	d.mu.Lock()
	for _, in := range inputs.files {
		in.f.Compacting = false
	}
	if err == nil {
		ve := &manifest.VersionEdit{}
		for _, in := range inputs.files {
			ve.DeletedFiles = append(ve.DeletedFiles, manifest.DeletedFile{Level: in.level, FileNum: in.f.FileNum})
		}
		for _, o := range outputs {
			ve.NewFiles = append(ve.NewFiles, manifest.NewFile{Level: manifest.NumLevels - 1, Meta: fileMetadata(o)})
		}
		if err = d.vs.LogAndApply(ve); err != nil {
			// The edit may or may not have reached the disk: keep the outputs
			// (the next Open removes them if unreferenced) and stop writing.
			d.setBackgroundErrorLocked(err)
		} else {
			d.updateReadStateLocked()
		}
	}
	d.mu.Unlock()
	if err != nil {
		return fmt.Errorf("strata: compact: %w", err)
	}
	d.stats.compactions.Add(1)
	d.stats.compactInBytes.Add(inputs.size)
	d.stats.compactOutBytes.Add(stats.BytesOut)
	d.deleteObsoleteFiles()
	return nil
}

type compactionInput struct {
	level int
	f     *manifest.FileMetadata
}

type compactionInputs struct {
	files []compactionInput
	size  uint64
}

// pickManualInputs returns the files of every level overlapping [start,
// end], widening the range to the bounds of each file taken until no other
// file overlaps it. The closure matters: leaving out an overlapping file of
// some level would put older data (the output, in the bottom level) below
// it and newer data above it out of order.
func pickManualInputs(v *manifest.Version, start, end []byte) compactionInputs {
	var out compactionInputs
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
				out.files = append(out.files, compactionInput{level: level, f: f})
				out.size += f.Size
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

// runCompaction merges the inputs into new bottom-level tables.
func (d *DB) runCompaction(inputs compactionInputs, snaps []base.SeqNum) ([]compaction.Output, compaction.Stats, error) {
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
	for _, in := range inputs.files {
		h, err := d.tableCache.get(in.f)
		if err != nil {
			return nil, compaction.Stats{}, err
		}
		tombs = append(tombs, h.reader.RangeTombstones()...)
		if in.level == 0 {
			iters = append(iters, h.reader.NewIter())
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
	outputs, stats, err := compaction.Run(compaction.Config{
		Input:          merged,
		RangeDels:      rangedel.Build(tombs),
		Snapshots:      snaps,
		Bottommost:     true,
		NewFile:        d.newTableFile,
		Writer:         d.opts.writerOptions(),
		TargetFileSize: uint64(d.opts.TargetFileSize),
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
