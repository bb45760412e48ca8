package strata

import (
	"fmt"
	"io"
	"strings"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
)

// A read-only DB (Options.ReadOnly) is recovered like any other, but
// nothing of the recovery reaches the disk:
//
//   - no directory is created and no LOCK taken: a read-only DB may share
//     the directory with one writer and other readers, in any processes,
//     and works where the process cannot write;
//   - the WALs are replayed into memtables that stay in memory (a writer
//     would flush the full ones and record the rest); a torn tail ends the
//     replay as usual, and nothing is done about it on disk;
//   - value logs written at commit that WAL records point into and the
//     manifest does not list are adopted into the in-memory version only
//     (manifest.VersionSet.ApplyUnlogged);
//   - nothing is deleted (removeFile refuses), flushed, compacted or
//     collected, and no background goroutine starts;
//   - every write fails with ErrReadOnly.

// readOnlyRetries bounds the attempts of a read-only Open of a database a
// writer changes under it (see openReadOnly). An attempt fails only when
// the writer installed a version edit during it, and a failed attempt is
// cheap; a busy writer with small memtables edits every few milliseconds.
const readOnlyRetries = 100

// openReadOnly opens dirname read-only. A writer in another process may
// delete, between the moment the manifest is read and the moment a file it
// lists is opened, a table, value log, WAL or manifest its later edits made
// obsolete (a file is deleted only after the manifest edit that drops it):
// when an attempt fails and the manifest changed meanwhile, Open starts
// again from CURRENT, a few times.
func openReadOnly(dirname string, o *Options) (*DB, error) {
	fs := o.FS
	st, err := fs.Stat(dirname)
	if err != nil {
		return nil, fmt.Errorf("strata: open %q read-only: %w", dirname, err)
	}
	if !st.IsDir() {
		return nil, errNotDir(dirname)
	}
	for attempt := 1; ; attempt++ {
		gen := manifestGeneration(o, dirname)
		d, err := open(dirname, o, noLock{})
		if err == nil || attempt == readOnlyRetries || manifestGeneration(o, dirname) == gen {
			return d, err
		}
	}
}

// manifestGeneration names the state of the manifest: CURRENT's contents
// and the size of the manifest it names ("" if they cannot be read). A
// writer changes it with every version edit.
func manifestGeneration(o *Options, dirname string) string {
	fs := o.FS
	f, err := fs.Open(fs.PathJoin(dirname, base.MakeFilename(base.FileTypeCurrent, 0)))
	if err != nil {
		return ""
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, 4096))
	name := strings.TrimSuffix(string(b), "\n")
	st, err := fs.Stat(fs.PathJoin(dirname, name))
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%s:%d", name, st.Size())
}

// noLock is the lock of a read-only DB: none.
type noLock struct{}

func (noLock) Close() error { return nil }

// installReadOnly makes the replayed memtables the DB's (the last one
// mutable, though nothing will write it) and adopts in memory the value
// logs the replay found.
func (d *DB) installReadOnly(rp *walReplay) error {
	mems := rp.frozen
	if rp.mem != nil && !rp.mem.Empty() {
		mems = append(mems, rp.mem)
	}
	if len(mems) > 0 {
		d.mem = mems[len(mems)-1]
		d.imm = mems[:len(mems)-1]
	} else {
		d.mem = newMemTable(0, 0) // the smallest arena: never written
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(rp.ve.NewVlogs) > 0 {
		if err := d.vs.ApplyUnlogged(&manifest.VersionEdit{NewVlogs: rp.ve.NewVlogs}); err != nil {
			return err
		}
	}
	d.updateReadStateLocked()
	d.updateL0CountLocked()
	d.commit.lastSeq = rp.maxSeq
	d.visibleSeq.Store(uint64(rp.maxSeq))
	return nil
}
