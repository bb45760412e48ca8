package strata

import (
	"fmt"
	"time"

	"github.com/strata-db/strata/compaction"
	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/vlog"
)

// flushOne flushes the oldest frozen memtable and reports whether there was
// one (and no background error).
func (d *DB) flushOne() bool {
	d.mu.Lock()
	if len(d.imm) == 0 || d.bgErr != nil {
		d.mu.Unlock()
		return false
	}
	m := d.imm[0]
	snaps := d.snapshots.seqsLocked()
	d.mu.Unlock()
	// Its value logs recorded and its WAL closed (see sealer); a failure
	// is the background error, which the edit below then meets.
	if err := d.waitSealed(m.sealTicket); err != nil {
		return false
	}

	d.opts.EventListener.flushBegin(FlushInfo{})
	start := time.Now()
	meta, vm, err := d.writeL0(m, snaps, nil)

	d.mu.Lock()
	if err == nil {
		ve := &manifest.VersionEdit{}
		ve.SetLastSeq(base.SeqNum(m.maxSeq.Load()))
		next := d.mem
		if len(d.imm) > 1 {
			next = d.imm[1]
		}
		if next.logNum != 0 {
			ve.SetLogNum(next.logNum)
		}
		if meta != nil {
			ve.NewFiles = []manifest.NewFile{{Level: 0, Meta: meta}}
		}
		ve.NewVlogs = vm
		err = d.vs.LogAndApply(ve)
	}
	info := FlushInfo{Duration: time.Since(start), Err: err}
	if meta != nil {
		info.Bytes = meta.Size
	}
	if err != nil {
		// writeL0 cleaned up after itself. A failed manifest write leaves
		// the table in place: the edit may have reached the disk, and the
		// next Open removes the table if it did not.
		err = fmt.Errorf("strata: flush: %w", err)
		first := d.setBackgroundErrorLocked(err)
		d.mu.Unlock()
		d.opts.EventListener.flushEnd(info)
		if first {
			d.deliverBackgroundError(err)
		}
		return false
	}
	n := copy(d.imm, d.imm[1:])
	d.imm[n] = nil
	d.imm = d.imm[:n]
	m.flushed()
	m.unref() // the DB's reference; read states may still hold it
	// WALs below the new log number hold only flushed writes.
	var obsoleteLogs []base.FileNum
	logNum := d.vs.LogNum()
	for len(d.walNums) > 0 && d.walNums[0] < logNum {
		obsoleteLogs = append(obsoleteLogs, d.walNums[0])
		d.walNums = d.walNums[1:]
	}
	d.flushedGen++
	d.stats.levels[0].bytesWritten += info.Bytes
	// Counted before a waiter on flushedGen can wake and read Metrics.
	d.stats.flushes.Add(1)
	d.stats.flushBytes.Add(info.Bytes)
	d.stats.vlogBytes.Add(vlogSizes(vm))
	d.updateReadStateLocked()
	d.updateL0CountLocked()
	d.maybeScheduleCompactionLocked()
	d.scheduleGCLocked()
	d.cond.Broadcast()
	d.mu.Unlock()
	d.opts.EventListener.flushEnd(info)

	for _, num := range obsoleteLogs {
		d.removeFile(base.FileTypeLog, num)
	}
	return true
}

// writeL0 writes memtable m as an L0 table, moving the values the
// separation policy picks into new value logs. It returns nil metadata when
// m holds nothing that survives (no file is left behind then). The value
// logs are synced before the table, and both before the caller's manifest
// edit references them. readValue reads the separated values merge operands
// fold onto; nil reads them through the current version.
func (d *DB) writeL0(m *memTable, snaps []base.SeqNum, readValue func(key, ptr []byte) ([]byte, error)) (*manifest.FileMetadata, []*manifest.VlogMetadata, error) {
	if readValue == nil {
		readValue = d.valueReader(nil)
	}
	it := m.NewIter()
	defer it.Close()
	sep := d.newSeparator(d.opts.SeparationPolicy)
	outputs, stats, err := compaction.Run(compaction.Config{
		Input:     it,
		RangeDels: m.rangeDels(),
		Snapshots: snaps,
		NewFile:   d.newTableFile,
		Writer:    d.opts.writerOptions(),
		Separate:  sep.Separate,
		Now:       d.nowMillis(),
		Merger:    d.mergerOrNil(),
		Filter:    d.compactionFilter(),
		ReadValue: readValue,
	})
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
		return nil, nil, err
	}
	d.stats.expired.Add(stats.Expired)
	if len(outputs) == 0 {
		return nil, nil, nil
	}
	return fileMetadata(outputs[0]), vlogs, nil
}

// newSeparator returns a Separator writing new value logs of this DB,
// separating the values policy picks.
func (d *DB) newSeparator(policy vlog.Policy) *vlog.Separator {
	return vlog.NewSeparator(vlog.SeparatorOptions{
		FS:         d.fs,
		Dir:        d.dirname,
		NewFileNum: d.vs.NewFileNum,
		Policy:     policy,
		FileSize:   d.opts.ValueLogFileSize,
	})
}

// vlogSizes returns the total size of value logs.
func vlogSizes(vlogs []*manifest.VlogMetadata) uint64 {
	var n uint64
	for _, vm := range vlogs {
		n += vm.Size
	}
	return n
}

func fileMetadata(o compaction.Output) *manifest.FileMetadata {
	m := o.Meta
	return &manifest.FileMetadata{
		FileNum:       o.FileNum,
		Size:          m.Size,
		Smallest:      m.Smallest(),
		Largest:       m.Largest(),
		SmallestSeq:   m.SmallestSeq,
		LargestSeq:    m.LargestSeq,
		HasRangeDels:  m.HasRangeDels,
		VlogRefs:      o.VlogRefs,
		VlogRefsKnown: true,
		Expiry:        o.Expiry,
	}
}

// Flush writes the memtable's contents to an SSTable and waits until they
// are there.
func (d *DB) Flush() error {
	if err := d.checkWritable(); err != nil {
		return err
	}
	if testHookEntry != nil {
		testHookEntry("flush")
	}
	return d.flush()
}

func (d *DB) flush() error {
	if err := d.writeOp(nil, false, opRotate); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.waitFlushedLocked()
}

// waitFlushedLocked waits until every memtable frozen now is flushed. A
// failed flush returns once the listener has heard of the failure;
// ErrClosed if Close stopped the background work before the flush ran.
// d.mu is held.
func (d *DB) waitFlushedLocked() error {
	target := d.flushedGen + uint64(len(d.imm))
	d.scheduleBackground()
	for d.flushedGen < target && d.bgErr == nil && !d.bgDone {
		d.cond.Wait()
	}
	for d.bgErr != nil && !d.bgErrDelivered && !d.bgDone {
		d.cond.Wait()
	}
	if err := d.backgroundErrorLocked(); err != nil {
		return err
	}
	if d.flushedGen < target {
		return ErrClosed
	}
	return nil
}

// mergerOrNil returns Options.Merger as compaction's interface (a nil
// interface, not a typed nil, when unset).
func (d *DB) mergerOrNil() compaction.Merger {
	if d.opts.Merger == nil {
		return nil
	}
	return d.opts.Merger
}

// valueReader returns compaction's hook to read the value a pointer
// locates (a merge onto a separated value): in version v, or, for a
// memtable's pointers, in the current version or a value log written at
// commit.
func (d *DB) valueReader(v *manifest.Version) func(key, ptr []byte) ([]byte, error) {
	return func(key, ptr []byte) ([]byte, error) {
		vv := v
		if vv == nil {
			d.mu.Lock()
			vv = d.vs.Current()
			vv.Ref()
			d.mu.Unlock()
			defer vv.Unref()
		}
		return d.readSeparated(vv, key, ptr, "a merge")
	}
}
