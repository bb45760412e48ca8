package strata

import (
	"fmt"
	"maps"
	"sync"
	"sync/atomic"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/lsm/memtable"
	"github.com/strata-db/strata/vfs"
	"github.com/strata-db/strata/vlog"
)

// Separation at commit: with the WAL on, a value the separation policy
// moves out of the tree is written once, to the active value log, by the
// commit leader; the WAL record and the memtable carry its pointer. Flush
// then writes only keys and pointers.
//
// The steps for a group, and why each order holds:
//
//  1. The group's large values are appended to the active value log (its
//     buffer; reads of memtable entries find them there until they reach
//     the file). The memtable that will hold their pointers pins the value
//     log first, so that no GC pass can delete it once it is in a version.
//  2. The WAL records, with pointers, are written; for a Sync write the
//     value log is synced before the WAL, so a synced WAL record never
//     points past what is durable. Without Sync either may reach the disk
//     first: recovery checks every pointer into a value log the manifest
//     does not hold, and a pointer to bytes that did not survive is a torn
//     tail (nothing after it was acknowledged as synced).
//  3. The memtable is updated.
//
// The active value log is finished (footer, sync) and recorded in the
// manifest when it reaches ValueLogFileSize, when the memtable is frozen
// (so a flush always finds the value logs its table points into in the
// version), and at Close. A new one is created lazily, with its directory
// entry synced before any pointer into it can be acknowledged.

// SeparationTime says when values leave the tree for value logs.
type SeparationTime int

const (
	// SeparateDefault is at commit with the WAL on, at flush without it.
	SeparateDefault SeparationTime = iota
	// SeparateAtCommit writes a separated value once, to the active value
	// log, when it is committed; the WAL and the memtable hold its pointer.
	SeparateAtCommit
	// SeparateAtFlush keeps values in the WAL and the memtable and
	// separates them when the memtable is flushed: a value overwritten
	// while in the memtable never reaches a value log (the right trade
	// without a WAL), but with the WAL on each value is written twice.
	SeparateAtFlush
)

// liveVlogs are the value logs written at commit that a read may find
// pointers into before (or without) the version holding them: the active
// one, read through its LiveWriter, and finished ones, read through the
// reader cache with the metadata the LiveWriter kept. An entry goes when
// its file is deleted.
//
// Reads look a file up without a lock: the map is replaced, never changed
// (a value log comes and goes every ValueLogFileSize of writes), so that
// readers do not share a lock's cache line (measured with two readers of
// values still in live logs: the lock and the line it shared with the
// read state's pointer took 5% of their time).
type liveVlogs struct {
	mu sync.Mutex // serializes replacements of m
	m  atomic.Pointer[map[base.FileNum]*vlog.LiveWriter]
}

// all returns the live value logs by file number; the caller must not
// change the map.
func (l *liveVlogs) all() map[base.FileNum]*vlog.LiveWriter {
	if m := l.m.Load(); m != nil {
		return *m
	}
	return nil
}

func (l *liveVlogs) get(num base.FileNum) *vlog.LiveWriter { return l.all()[num] }

// replace publishes a copy of the map changed by change.
func (l *liveVlogs) replace(change func(map[base.FileNum]*vlog.LiveWriter)) {
	l.mu.Lock()
	m := maps.Clone(l.all())
	if m == nil {
		m = make(map[base.FileNum]*vlog.LiveWriter)
	}
	change(m)
	l.m.Store(&m)
	l.mu.Unlock()
}

func (l *liveVlogs) add(w *vlog.LiveWriter) {
	l.replace(func(m map[base.FileNum]*vlog.LiveWriter) { m[w.FileNum()] = w })
}

// presync syncs what the value logs still being written hold so far (see
// vlog.LiveWriter.Presync).
func (l *liveVlogs) presync() {
	for _, w := range l.all() {
		if w.Finished() == nil {
			w.Presync()
		}
	}
}

func (l *liveVlogs) remove(num base.FileNum) {
	l.replace(func(m map[base.FileNum]*vlog.LiveWriter) { delete(m, num) })
}

// separatedMemSize returns the memtable bytes b needs once its large
// values are pointers, and the bytes of those values.
func (d *DB) separatedMemSize(b *Batch) (n, values int) {
	r, err := b.reader()
	if err != nil {
		return b.memSize, 0
	}
	for {
		kind, key, value, ok, err := r.next()
		if err != nil {
			return b.memSize, 0
		}
		if !ok {
			return n, values
		}
		if kind.IsSet() {
			_, v, err := base.SplitEntry(kind, value)
			if err == nil && d.opts.SeparationPolicy.Separate(key, len(v)) {
				n += memtable.EntrySize(len(key), len(value)-len(v)+vlog.MaxPointerLen)
				values += len(v)
				continue
			}
		}
		n += memtable.EntrySize(len(key), len(value))
	}
}

// separateAtCommit replaces, in batches, each batch holding values the
// policy separates by a copy in which those values are pointers into the
// active value log, where they were appended. Leader only.
func (d *DB) separateAtCommit(batches []*Batch) error {
	c := &d.commit
	policy := d.opts.SeparationPolicy
	for i, b := range batches {
		r, err := b.reader()
		if err != nil {
			return err
		}
		var conv *Batch
		for {
			kind, key, value, ok, err := r.next()
			if err != nil {
				return err
			}
			if !ok {
				break
			}
			var meta base.EntryMeta
			v := value
			if kind.IsSet() {
				if meta, v, err = base.SplitEntry(kind, value); err != nil {
					return err
				}
			}
			if !kind.IsSet() || !policy.Separate(key, len(v)) {
				if conv != nil {
					if err := conv.add(kind, key, value, kind != base.KindDelete); err != nil {
						return err
					}
				}
				continue
			}
			if conv == nil {
				// The first separated value: copy what came before it.
				if len(c.conv) <= i {
					c.conv = append(c.conv, make([]Batch, i+1-len(c.conv))...)
				}
				conv = &c.conv[i]
				conv.Reset()
				pr, _ := b.reader()
				for j := uint32(0); j < r.read-1; j++ {
					k2, key2, value2, _, _ := pr.next()
					if err := conv.add(k2, key2, value2, k2 != base.KindDelete); err != nil {
						return err
					}
				}
			}
			p, err := d.appendCommitValue(key, v)
			if err != nil {
				return err
			}
			if kind.HasMeta() {
				err = conv.addPointerMeta(key, p, meta)
			} else {
				err = conv.addPointer(key, p)
			}
			if err != nil {
				return err
			}
			if d.observer != nil {
				d.observer.ObserveWrite(len(key), len(v))
			}
		}
		if conv != nil {
			conv.userBytes = 0 // counted from the caller's batch
			batches[i] = conv
		}
	}
	return nil
}

// appendCommitValue appends key and value to the active value log,
// starting or rolling it as needed, pinned by the current memtable. Leader
// only.
func (d *DB) appendCommitValue(key, value []byte) (vlog.Pointer, error) {
	c := &d.commit
	if c.active != nil && int64(c.active.Size()) >= d.opts.ValueLogFileSize {
		// Finished and recorded by the sealer, off the commit path; the
		// memtable that pins it waits for that before its flush.
		d.submitSeal(sealJob{vlog: c.active, vlogDirSynced: c.activeDirSynced})
		c.active, c.pinned = nil, nil
	}
	if c.active == nil {
		num := d.vs.NewFileNum()
		f, err := d.fs.Create(d.path(base.FileTypeVlog, num))
		if err != nil {
			return vlog.Pointer{}, fmt.Errorf("strata: create value log: %w", err)
		}
		// The file's entry must be durable before a synced WAL record can
		// point into it, or the manifest can list it: the first sync of
		// the group commit, or the sealer, syncs the directory (a sync of
		// the directory costs up to tens of milliseconds while the disk is
		// busy). Until then a crash can lose the file: recovery finds the
		// pointers into it torn, which they may be, being unsynced.
		c.activeDirSynced = false
		c.active = vlog.NewLiveWriter(f, num)
		// The file rolls once it reaches ValueLogFileSize; the last group
		// may take it past, and what lies beyond the window is read with
		// pread.
		c.active.Map(d.opts.ValueLogFileSize + vfs.MapAlign)
		d.live.add(c.active)
	}
	if c.pinned != d.mem {
		// The memtable that receives this group pins the value log before
		// any version can hold it (when it is finished).
		d.pinForMemtable(d.mem, []base.FileNum{c.active.FileNum()})
		c.pinned = d.mem
	}
	p, err := c.active.Add(key, value)
	if err == nil {
		d.stats.vlogBytes.Add(uint64(p.Length))
	}
	return p, err
}

// sealActiveLog finishes the active value log, if any, and records it in
// the manifest. Leader only (or Close, once the pipeline is closed).
func (d *DB) sealActiveLog() error {
	c := &d.commit
	if c.active == nil {
		return nil
	}
	a := c.active
	c.active, c.pinned = nil, nil
	return d.finishValueLog(a, c.activeDirSynced)
}

// valueSource finds, for a read through version v, where the value that
// ptr (found in the table f, or in source when f is nil) locates lies: a
// finished value log m, from v, from the value logs written at commit
// once finished, or from the current version for one a rewrite recorded
// after v (see newerVlog); or, when ptr is into a value log still being
// written at commit, the value itself, appended to dst (found). A pointer
// that does not decode, or into no value log, is a corruption error
// naming where it was found, built only then. Get and iterators share
// it, so both look in the same order, and both cope with a value log
// finished between two checks. A scan passes the next row's record as
// next, for a read of a value still being written to prefetch it.
func (d *DB) valueSource(v *manifest.Version, ptr, key, dst []byte, f *manifest.FileMetadata, source string, next vlog.Ahead) (p vlog.Pointer, m *manifest.VlogMetadata, value []byte, found bool, err error) {
	p, err = vlog.DecodePointer(ptr)
	if err == nil {
		if m = v.Vlogs[p.FileNum]; m != nil {
			return p, m, nil, false, nil
		}
		if lw := d.live.get(p.FileNum); lw == nil {
			m = d.newerVlog(p.FileNum)
		} else if m = lw.Finished(); m == nil {
			if value, err = lw.GetAhead(p, key, dst, next); err == nil {
				return p, nil, value, true, nil
			}
			if m = lw.Finished(); m == nil { // or finished between the two checks
				return p, nil, nil, false, err
			}
		}
		if m != nil {
			return p, m, nil, false, nil
		}
	}
	_, _, err = vlog.Resolve(v.Vlogs, ptr, sourceName(f, source))
	return p, nil, nil, false, err
}
