package strata

import (
	"fmt"

	"github.com/strata-db/strata/gc"
	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/vlog"
)

// Collection by rewrite (WiscKey's and Badger's mechanism): the records of
// a value log that are still the newest version of their key are copied to
// a new value log, and the keys are repointed to the copies through the
// write path. Step by step:
//
//  1. Scan the old file; keep the records whose key's newest entry is a
//     pointer to exactly that record (the others are garbage, or needed
//     only by snapshots, which keep the old file alive by themselves).
//  2. Write them to new value logs, pinned so that no GC pass deletes them
//     while nothing points into them yet; sync them and add them to the
//     version.
//  3. Commit the new pointers in batches through the commit pipeline. The
//     leader checks, for each key, that its newest entry is still the old
//     pointer, so a write that came in since is never overwritten; the
//     copies of keys written since are garbage from the start. The
//     memtable that receives the pointers pins the new value logs until it
//     is flushed; the WAL carries the pointers, so a crash replays them.
//  4. Unpin. The old file is now draining: the old entries are shadowed and
//     leave the tree with the compactions that reach them, and once none
//     remain it is deleted like any dead value log.
//
// A crash at any step leaves the old pointers valid (the old file is still
// referenced, so still in the version); new value logs that nothing points
// into are deleted by the next pass.

// repointBatchItems bounds the keys checked and repointed per commit, so a
// rewrite holds other writers back for a short while only.
const repointBatchItems = 256

// startRewriteLocked queues a value log for the rewrite job, starting the
// job if it is not running. d.mu held.
func (d *DB) startRewriteLocked(c gc.Collection) {
	d.gc.rewriteQueue = append(d.gc.rewriteQueue, c.FileNum)
	if d.gc.rewriting {
		return
	}
	d.gc.rewriting = true
	d.bgWG.Add(1)
	go d.rewriteLoop()
}

// rewriteLoop rewrites the queued value logs one at a time until the queue
// is empty or the DB closes.
func (d *DB) rewriteLoop() {
	defer d.bgWG.Done()
	for {
		d.mu.Lock()
		if len(d.gc.rewriteQueue) == 0 || d.closed.Load() || d.bgErr != nil {
			for _, num := range d.gc.rewriteQueue {
				delete(d.gc.collecting, num) // not started: may be chosen again
			}
			d.gc.rewriteQueue = nil
			d.gc.rewriting = false
			d.cond.Broadcast()
			d.mu.Unlock()
			return
		}
		num := d.gc.rewriteQueue[0]
		d.gc.rewriteQueue = d.gc.rewriteQueue[1:]
		v := d.vs.Current()
		v.Ref()
		m := v.Vlogs[num]
		d.mu.Unlock()

		var err error
		if m != nil {
			err = d.rewriteVlog(v, m)
		}
		v.Unref()

		d.mu.Lock()
		if err == nil && m != nil {
			d.gc.draining[num] = true
			d.gc.stats.rewrites++
		} else {
			delete(d.gc.collecting, num)
		}
		d.scheduleGCLocked()
		d.mu.Unlock()
		if err != nil && err != ErrClosed {
			d.reportBackgroundError(fmt.Errorf("strata: rewrite value log %s: %w", num, err))
		}
	}
}

// rewriteVlog carries out steps 1-4 for value log m of version v (pinned by
// the caller).
func (d *DB) rewriteVlog(v *manifest.Version, m *manifest.VlogMetadata) error {
	h, err := d.vlogs.Acquire(m)
	if err != nil {
		return err
	}
	defer d.vlogs.Release(h)

	// The new value logs' numbers are pinned as they are allocated.
	var pins []base.FileNum
	defer func() {
		d.gc.pins.mu.Lock()
		for _, num := range pins {
			d.gc.pins.addLocked(num, -1)
		}
		d.gc.pins.mu.Unlock()
		d.mu.Lock()
		d.scheduleGCLocked()
		d.mu.Unlock()
	}()
	sep := vlog.NewSeparator(vlog.SeparatorOptions{
		FS:  d.fs,
		Dir: d.dirname,
		NewFileNum: func() base.FileNum {
			num := d.vs.NewFileNum()
			d.gc.pins.mu.Lock()
			d.gc.pins.addLocked(num, 1)
			d.gc.pins.mu.Unlock()
			pins = append(pins, num)
			return num
		},
		FileSize: d.opts.ValueLogFileSize,
	})

	// Step 1 and 2: copy the records still live.
	rs := d.loadReadState()
	if rs.readState == nil {
		return ErrClosed
	}
	var items []repointItem
	var ptrBuf []byte
	sc := h.Reader.NewScanner()
	for sc.Next() {
		if d.closed.Load() {
			rs.unref()
			sep.Abort()
			return ErrClosed
		}
		old := sc.Pointer()
		ptrBuf = old.Encode(ptrBuf[:0])
		_, err := d.lookup(rs.readState, sc.Key(), base.SeqNum(d.visibleSeq.Load()), ptrBuf)
		if err == errPointerMoved {
			continue
		}
		if err != nil {
			rs.unref()
			sep.Abort()
			return err
		}
		np, err := sep.Add(sc.Key(), sc.Value())
		if err != nil {
			rs.unref()
			sep.Abort()
			return err
		}
		items = append(items, repointItem{key: append([]byte(nil), sc.Key()...), old: append([]byte(nil), ptrBuf...), newPtr: np, recBytes: uint64(old.Length)})
	}
	rs.unref()
	if err := sc.Err(); err != nil {
		sep.Abort()
		return err
	}
	vlogs, err := sep.Finish()
	if err == nil && len(vlogs) > 0 {
		err = syncDirErr(d)
	}
	if err != nil {
		sep.Abort()
		return err
	}
	if len(vlogs) > 0 {
		d.mu.Lock()
		err = d.vs.LogAndApply(&manifest.VersionEdit{NewVlogs: vlogs})
		if err == nil {
			d.updateReadStateLocked()
		}
		d.mu.Unlock()
		if err != nil {
			// The edit may have reached the disk: leave the files (an
			// unreferenced value log is deleted by a later pass or Open).
			return err
		}
	}
	d.stats.vlogBytes.Add(vlogSizes(vlogs))
	nums := make([]base.FileNum, 0, len(vlogs))
	for _, vm := range vlogs {
		nums = append(nums, vm.FileNum)
	}

	// Step 3: repoint, a batch at a time.
	repointed := len(items) > 0
	for len(items) > 0 {
		n := min(len(items), repointBatchItems)
		rw := &repointWork{items: items[:n], vlogs: nums}
		items = items[n:]
		if err := d.commitRepoint(rw); err != nil {
			return err
		}
		d.mu.Lock()
		d.gc.stats.relocated += uint64(rw.applied)
		d.gc.stats.relocatedBytes += rw.appliedBytes
		d.mu.Unlock()
	}
	if repointed {
		// The old file drains once its old entries meet the new ones in a
		// compaction: freeze the memtable holding the new ones so that a
		// flush puts them in L0, which the next pass asks to compact.
		if err := d.writeOp(nil, false, opRotate); err != nil {
			return err
		}
	}
	return nil
}

// commitRepoint runs one repoint batch through the commit pipeline.
func (d *DB) commitRepoint(rw *repointWork) error {
	if d.closed.Load() {
		return ErrClosed
	}
	w := writerPool.Get().(*commitWriter)
	*w = commitWriter{op: opRepoint, repoint: rw}
	w.cond.L = &d.commit.mu
	return d.runWriter(w)
}
