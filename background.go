package strata

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/vfs"
)

// The background goroutine and the files it deletes. Flushes are in
// flush.go, garbage-collection passes in vlog_gc.go.

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

// backgroundLoop flushes frozen memtables, runs garbage-collection passes
// and deletes obsolete files until the DB closes. Under a steady stream of
// writes there is always a memtable to flush: a pass and the deletions run
// after each flush, so they are never starved.
func (d *DB) backgroundLoop() {
	defer d.bgWG.Done()
	for range d.flushCh {
		for {
			flushed := d.flushOne()
			d.collectGarbage()
			d.deleteObsoleteFiles()
			if !flushed {
				break
			}
		}
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
	if d.opts.ReadOnly {
		return // INVARIANT: a read-only DB deletes nothing
	}
	switch t {
	case base.FileTypeTable:
		d.tableCache.evict(num)
	case base.FileTypeVlog:
		d.vlogs.Evict(num)
		d.live.remove(num)
	}
	if d.releaseShared(t, num) {
		return // the share loop deletes its local bytes and releases its object
	}
	err := d.fs.Remove(d.path(t, num))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return
	}
	if err == nil && t == base.FileTypeTable {
		d.opts.EventListener.tableDeleted(TableDeleteInfo{FileNum: uint64(num)})
	}
}

// obsoleteFiles collects tables and value logs no version holds; the
// background goroutine deletes them. Its lock is taken from Version.Unref,
// possibly with d.mu held, and never the other way round.
type obsoleteFiles struct {
	mu    sync.Mutex
	files manifest.Obsolete
}

func (d *DB) onObsolete(o manifest.Obsolete) {
	d.obsolete.mu.Lock()
	d.obsolete.files.Tables = append(d.obsolete.files.Tables, o.Tables...)
	d.obsolete.files.Vlogs = append(d.obsolete.files.Vlogs, o.Vlogs...)
	d.obsolete.mu.Unlock()
	d.scheduleBackground()
}

// deleteObsoleteFiles removes the tables and value logs no version holds.
func (d *DB) deleteObsoleteFiles() {
	d.obsolete.mu.Lock()
	o := d.obsolete.files
	d.obsolete.files = manifest.Obsolete{}
	d.obsolete.mu.Unlock()
	for _, f := range o.Tables {
		d.removeFile(base.FileTypeTable, f.FileNum)
	}
	for _, vl := range o.Vlogs {
		d.removeFile(base.FileTypeVlog, vl.FileNum)
	}
}

// expiryCheckInterval is how often, with nothing else happening, the
// background work looks for tables whose entries' TTLs have passed (time
// passes without any version change to trigger a pass).
const expiryCheckInterval = time.Second

// expiryLoop asks for a pass every expiryCheckInterval until the DB closes.
func (d *DB) expiryLoop(stop <-chan struct{}) {
	defer d.bgWG.Done()
	t := time.NewTicker(expiryCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			d.mu.Lock()
			d.scheduleGCLocked()
			d.mu.Unlock()
		}
	}
}

// openMappings opens, right after Open and in the background, the readers
// of the current version's value logs and then its tables, up to half the
// file cache's bound (Options.MaxOpenFiles): each maps its file and maps
// the pages the page cache holds (vfs.Populate), so that the first reads
// after a restart neither open files nor fault on pages; a read that
// faults costs far more. A shared file without a local copy is left
// alone (opening it would read from the store). It stops at Close.
func (d *DB) openMappings(stop <-chan struct{}) {
	defer d.bgWG.Done()
	rs := d.loadReadState()
	if rs.readState == nil {
		return
	}
	defer rs.unref()
	budget := d.opts.MaxOpenFiles / 2
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return budget <= 0
		}
	}
	for _, m := range rs.version.SortedVlogs() {
		if stopped() {
			return
		}
		if d.isRemoteOnly(base.FileTypeVlog, m.FileNum) {
			continue
		}
		budget--
		if h, err := d.vlogs.Acquire(m); err == nil {
			d.vlogs.Release(h)
		}
	}
	rs.version.Files(func(_ int, f *manifest.FileMetadata) {
		if stopped() || d.isRemoteOnly(base.FileTypeTable, f.FileNum) {
			return
		}
		budget--
		if h, err := d.tableCache.get(f); err == nil {
			d.tableCache.release(h)
		}
	})
}
