package strata

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/strata-db/strata/compaction"
	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/vfs"
)

// scheduleBackground wakes the background goroutine (flushes, file
// deletion) without blocking.
func (d *DB) scheduleBackground() {
	d.bgMu.Lock()
	defer d.bgMu.Unlock()
	if d.bgStopped {
		return
	}
	select {
	case d.flushCh <- struct{}{}:
	default:
	}
}

// stopBackground ends the background loop once it has finished its current
// work. Later wake-ups (an iterator closed after the DB) do nothing.
func (d *DB) stopBackground() {
	d.bgMu.Lock()
	if !d.bgStopped {
		d.bgStopped = true
		close(d.flushCh)
	}
	d.bgMu.Unlock()
}

// backgroundLoop flushes frozen memtables and deletes obsolete files until
// the DB closes.
func (d *DB) backgroundLoop() {
	defer d.bgWG.Done()
	for range d.flushCh {
		d.flushAll()
		d.deleteObsoleteFiles()
	}
}

// flushAll flushes the frozen memtables, oldest first.
func (d *DB) flushAll() {
	for {
		d.mu.Lock()
		if len(d.imm) == 0 || d.bgErr != nil {
			d.mu.Unlock()
			return
		}
		m := d.imm[0]
		snaps := d.snapshots.seqsLocked()
		d.flushing = true
		d.mu.Unlock()

		d.opts.EventListener.flushBegin(FlushInfo{})
		start := time.Now()
		meta, err := d.writeL0(m, snaps)

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
			d.setBackgroundErrorLocked(err)
			d.flushing = false
			d.mu.Unlock()
			d.opts.EventListener.flushEnd(info)
			d.opts.EventListener.backgroundError(err)
			return
		}
		n := copy(d.imm, d.imm[1:])
		d.imm[n] = nil
		d.imm = d.imm[:n]
		// WALs below the new log number hold only flushed writes.
		var obsoleteLogs []base.FileNum
		logNum := d.vs.LogNum()
		for len(d.walNums) > 0 && d.walNums[0] < logNum {
			obsoleteLogs = append(obsoleteLogs, d.walNums[0])
			d.walNums = d.walNums[1:]
		}
		d.flushedGen++
		d.flushing = false
		d.stats.levels[0].bytesWritten += info.Bytes
		d.updateReadStateLocked()
		d.updateL0CountLocked()
		d.maybeScheduleCompactionLocked()
		d.cond.Broadcast()
		d.mu.Unlock()
		d.opts.EventListener.flushEnd(info)

		d.stats.flushes.Add(1)
		d.stats.flushBytes.Add(info.Bytes)
		for _, num := range obsoleteLogs {
			d.removeFile(base.FileTypeLog, num)
		}
	}
}

// writeL0 writes memtable m as an L0 table. It returns nil metadata when m
// holds nothing that survives (no file is left behind then).
func (d *DB) writeL0(m *memTable, snaps []base.SeqNum) (*manifest.FileMetadata, error) {
	it := m.NewIter()
	defer it.Close()
	outputs, _, err := compaction.Run(compaction.Config{
		Input:     it,
		RangeDels: m.rangeDels(),
		Snapshots: snaps,
		NewFile:   d.newTableFile,
		Writer:    d.opts.writerOptions(),
	})
	if err != nil {
		for _, o := range outputs {
			d.removeFile(base.FileTypeTable, o.FileNum)
		}
		return nil, err
	}
	if len(outputs) == 0 {
		return nil, nil
	}
	if err := manifest.SyncDir(d.fs, d.dirname); err != nil {
		for _, o := range outputs {
			d.removeFile(base.FileTypeTable, o.FileNum)
		}
		return nil, fmt.Errorf("strata: sync directory: %w", err)
	}
	return fileMetadata(outputs[0]), nil
}

func fileMetadata(o compaction.Output) *manifest.FileMetadata {
	m := o.Meta
	return &manifest.FileMetadata{
		FileNum:      o.FileNum,
		Size:         m.Size,
		Smallest:     m.Smallest(),
		Largest:      m.Largest(),
		SmallestSeq:  m.SmallestSeq,
		LargestSeq:   m.LargestSeq,
		HasRangeDels: m.HasRangeDels,
	}
}

// newTableFile creates the file of a new SSTable.
func (d *DB) newTableFile() (base.FileNum, vfs.File, error) {
	num := d.vs.NewFileNum()
	f, err := d.fs.Create(d.path(base.FileTypeTable, num))
	if err != nil {
		return num, nil, fmt.Errorf("strata: create table: %w", err)
	}
	return num, f, nil
}

func (d *DB) path(t base.FileType, num base.FileNum) string {
	return d.fs.PathJoin(d.dirname, base.MakeFilename(t, num))
}

// removeFile deletes a file the DB no longer needs. Failures are ignored: a
// leftover file is deleted again at the next Open.
func (d *DB) removeFile(t base.FileType, num base.FileNum) {
	if t == base.FileTypeTable {
		d.tableCache.evict(num)
	}
	err := d.fs.Remove(d.path(t, num))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return
	}
	if err == nil && t == base.FileTypeTable {
		d.opts.EventListener.tableDeleted(TableDeleteInfo{FileNum: uint64(num)})
	}
}

// Flush writes the memtable's contents to an SSTable and waits until they
// are there.
func (d *DB) Flush() error {
	if err := d.checkOpen(); err != nil {
		return err
	}
	return d.flush()
}

func (d *DB) flush() error {
	if err := d.writeOp(nil, false, opRotate); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	target := d.flushedGen + uint64(len(d.imm))
	d.scheduleBackground()
	for d.flushedGen < target && d.bgErr == nil {
		d.cond.Wait()
	}
	return d.backgroundErrorLocked()
}

// obsoleteFiles collects SSTables no version holds; the background
// goroutine deletes them. Its lock is taken from Version.Unref, possibly
// with d.mu held, and never the other way round.
type obsoleteFiles struct {
	mu    sync.Mutex
	files []*manifest.FileMetadata
}

func (d *DB) onObsolete(files []*manifest.FileMetadata) {
	d.obsolete.mu.Lock()
	d.obsolete.files = append(d.obsolete.files, files...)
	d.obsolete.mu.Unlock()
	d.scheduleBackground()
}

// deleteObsoleteFiles removes the SSTables no version holds.
func (d *DB) deleteObsoleteFiles() {
	d.obsolete.mu.Lock()
	files := d.obsolete.files
	d.obsolete.files = nil
	d.obsolete.mu.Unlock()
	for _, f := range files {
		d.removeFile(base.FileTypeTable, f.FileNum)
	}
}
