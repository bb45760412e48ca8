package strata

import (
	"fmt"
	"sync"
	"time"

	"github.com/strata-db/strata/compaction"
	"github.com/strata-db/strata/gc"
	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/vlog"
)

// Value-log garbage collection, as the root carries it out. The decisions
// are gc's (a Policy reads the version's ledger); this file applies them:
//
//   - Deleting a value log is a version edit that drops it from the
//     version. The file itself goes when the last version holding it is
//     released, so no iterator, snapshot read or checkpoint in progress
//     loses it (invariant 2).
//   - Collecting by recompaction marks the tables that point into the value
//     log; the compaction picker rewrites marked tables in place, and every
//     compaction relocates the values that pointers into a value log being
//     collected locate into a new value log (relocator). Once no table
//     points into the old file it is deleted like any dead value log.
//   - Collecting by rewrite runs a rewrite job (vlog_rewrite.go).
//
// A pass runs on the background goroutine after every version change.

// gcState is the collector's bookkeeping, protected by d.mu.
type gcState struct {
	// collecting maps the value logs being collected to their decision.
	collecting map[base.FileNum]gc.Collection
	// pins count, per value log, the holders that may read it or add
	// references to it outside the tables (memtables with pointer entries,
	// until released; rewrite jobs writing it): a pinned value log is never
	// deleted.
	pins vlogPins
	// draining are the value logs whose rewrite is done, waiting for their
	// old entries to leave the tree.
	draining map[base.FileNum]bool
	// rewriteQueue lists the value logs waiting for the rewrite job, which
	// runs while rewriting is set.
	rewriteQueue []base.FileNum
	rewriting    bool
	// due is set when a version change calls for a pass.
	due bool
	// passing is set while a pass runs: it releases d.mu while it writes
	// the manifest, and is not idle meanwhile.
	passing bool

	stats gcStats
}

// gcStats count what garbage collection did since Open.
type gcStats struct {
	deletedFiles   uint64
	deletedBytes   uint64
	relocatedBytes uint64 // record bytes moved by recompaction or rewrite
	relocated      uint64 // records moved
	collections    uint64 // value logs whose collection started
	rewrites       uint64 // rewrite jobs run
	passes         uint64
}

func (s *gcState) init() {
	s.collecting = make(map[base.FileNum]gc.Collection)
	s.pins.n = make(map[base.FileNum]int)
	s.draining = make(map[base.FileNum]bool)
}

// gcFileStateLocked tells the gc package what the DB knows of a value
// log. d.mu held.
func (d *DB) gcFileStateLocked(num base.FileNum) gc.Status {
	_, collecting := d.gc.collecting[num]
	d.gc.pins.mu.Lock()
	pinned := d.gc.pins.n[num] > 0
	d.gc.pins.mu.Unlock()
	return gc.Status{Pinned: pinned, Collecting: collecting, Draining: d.gc.draining[num]}
}

// scheduleGCLocked asks for a garbage-collection pass. d.mu held.
func (d *DB) scheduleGCLocked() {
	d.gc.due = true
	d.scheduleBackground()
}

// gcEvent is a notification gathered under d.mu and delivered after.
type gcEvent struct {
	decision *GCInfo
	deleted  *ValueLogDeleteInfo
}

// collectGarbage runs a pass if one is due: it asks the policy for a
// decision, deletes the value logs it names, and starts the collections it
// asks for. It runs on the background goroutine.
func (d *DB) collectGarbage() {
	d.mu.Lock()
	if !d.gc.due {
		d.mu.Unlock()
		return
	}
	d.gc.due = false
	d.markExpiredLocked()
	var events []gcEvent
	var err error
	if !d.opts.DisableGC {
		d.gc.passing = true
		err = d.collectGarbageLocked(&events)
		d.gc.passing = false
	}
	if err != nil {
		err = fmt.Errorf("strata: value-log garbage collection: %w", err)
		if !d.setBackgroundErrorLocked(err) {
			err = nil // another error came first and was reported
		}
	}
	d.cond.Broadcast() // for waiters on GC progress (tests, Close)
	d.mu.Unlock()
	for _, e := range events {
		if e.decision != nil {
			d.opts.EventListener.gcDecision(*e.decision)
		}
		if e.deleted != nil {
			d.opts.EventListener.valueLogDeleted(*e.deleted)
		}
	}
	if err != nil {
		d.deliverBackgroundError(err)
	}
}

// decideGC asks the policy what to delete and collect. A policy that
// panics (a bug in a policy under research) decides nothing this pass,
// and the panic is logged: collection waits, the database goes on.
func (d *DB) decideGC(v *manifest.Version, l gc.Ledger) (dec gc.Decision) {
	defer func() {
		if r := recover(); r != nil {
			d.opts.Logger.Error("gc policy panicked; nothing deleted or collected in this pass",
				"policy", d.opts.GCPolicy.Name(), "panic", fmt.Sprint(r))
			dec = gc.Decision{}
		}
	}()
	return d.opts.GCPolicy.Decide(v, l)
}

// collectGarbageLocked is one pass. d.mu held (released while the manifest
// is written).
func (d *DB) collectGarbageLocked(events *[]gcEvent) error {
	// Deleting files can make more decisions possible (a lower space
	// amplification, free collection slots): a few rounds at most.
	for round := 0; round < 4; round++ {
		if d.bgErr != nil || d.closed.Load() {
			return nil
		}
		d.gc.stats.passes++
		start := time.Now()
		v := d.vs.Current()
		l := d.ledgerLocked(v)
		dec := d.decideGC(v, l)
		info := &GCInfo{Policy: d.opts.GCPolicy.Name(), SpaceAmp: l.SpaceAmp()}

		// The policy is trusted to decide, not to be right: a deletion is
		// carried out only if the ledger agrees the file is dead.
		ve := &manifest.VersionEdit{}
		var deleted []gc.File
		for _, num := range dec.Delete {
			if f, ok := l.File(num); ok && f.Dead() && l.Complete {
				ve.DeletedVlogs = append(ve.DeletedVlogs, num)
				deleted = append(deleted, f)
			}
		}
		if len(ve.DeletedVlogs) > 0 {
			if err := d.vs.LogAndApply(ve); err != nil {
				return err
			}
			d.updateReadStateLocked()
			for _, f := range deleted {
				delete(d.gc.collecting, f.FileNum)
				delete(d.gc.draining, f.FileNum)
				d.gc.stats.deletedFiles++
				d.gc.stats.deletedBytes += f.Size
				info.Deleted = append(info.Deleted, uint64(f.FileNum))
				*events = append(*events, gcEvent{deleted: &ValueLogDeleteInfo{FileNum: uint64(f.FileNum), Size: f.Size}})
			}
			v = d.vs.Current()
		}
		for _, c := range dec.Collect {
			if _, busy := d.gc.collecting[c.FileNum]; busy || v.Vlogs[c.FileNum] == nil {
				continue
			}
			d.gc.collecting[c.FileNum] = c
			d.gc.stats.collections++
			info.Collect = append(info.Collect, GCCollection{FileNum: uint64(c.FileNum), Mechanism: c.Mechanism.String(),
				Tables: len(c.Tables), Frees: c.Frees, Writes: c.Writes})
			if c.Mechanism == gc.ByRewrite {
				d.startRewriteLocked(c)
			}
		}
		d.markCollectingLocked(v)
		if dec.CompactL0 {
			d.compactions.compactL0 = true
			info.CompactL0 = true
		}
		info.Duration = time.Since(start)
		if len(info.Deleted) > 0 || len(info.Collect) > 0 || info.CompactL0 {
			*events = append(*events, gcEvent{decision: info})
		}
		if len(deleted) == 0 {
			break
		}
	}
	d.maybeScheduleCompactionLocked()
	return nil
}

// markCollectingLocked marks for compaction every table of v that points
// into a value log being collected by recompaction: the ones the decision
// named, and any a compaction that began before the decision has written
// since. d.mu held.
func (d *DB) markCollectingLocked(v *manifest.Version) {
	nums := make(map[base.FileNum]bool)
	for num, c := range d.gc.collecting {
		if c.Mechanism == gc.ByRecompaction && v.VlogLive(num) > 0 {
			nums[num] = true
		}
	}
	if len(nums) == 0 {
		return
	}
	for _, refs := range gc.ReverseIndex(v, nums) {
		for _, r := range refs {
			r.File.MarkedForCompaction = true
		}
	}
}

// ledgerLocked returns the ledger of v with what the DB knows besides: the
// state of each value log, and the value log being written at commit.
// d.mu held.
func (d *DB) ledgerLocked(v *manifest.Version) gc.Ledger {
	l := gc.NewLedger(v, d.gcFileStateLocked)
	for num, lw := range d.live.all() {
		if v.Vlogs[num] == nil && lw.Finished() == nil {
			l.PendingBytes += lw.Size()
		}
	}
	return l
}

// vlogPins counts pins per value log. Its lock may be taken with d.mu held
// or alone (a memtable is released from wherever its last reference goes),
// never the other way round.
type vlogPins struct {
	mu sync.Mutex
	n  map[base.FileNum]int
}

func (p *vlogPins) addLocked(num base.FileNum, delta int) {
	if p.n[num] += delta; p.n[num] <= 0 {
		delete(p.n, num)
	}
}

// markExpiredLocked marks for compaction the tables mostly past their TTL:
// rewritten in place, they drop the expired entries (whose values become
// garbage) without reading them. d.mu held.
func (d *DB) markExpiredLocked() {
	marked := false
	for _, f := range compaction.ExpiredTables(d.vs.Current(), d.nowMillis()) {
		if !f.MarkedForCompaction {
			f.MarkedForCompaction, marked = true, true
		}
	}
	if marked {
		d.maybeScheduleCompactionLocked()
	}
}

// gcIdleLocked reports whether garbage collection has nothing running and
// nothing due: no pass pending or running, no rewrite job, no compaction running, and
// no collection by recompaction waiting for its tables. Value logs
// draining after a rewrite may remain. d.mu held.
func (d *DB) gcIdleLocked() bool {
	if d.gc.due || d.gc.passing || d.gc.rewriting || d.compactions.running > 0 || len(d.imm) > 0 {
		return false
	}
	for num, c := range d.gc.collecting {
		if c.Mechanism == gc.ByRecompaction && !d.gc.draining[num] {
			return false
		}
	}
	return true
}

// relocationTargetsLocked returns the value logs whose values compactions
// move out, or nil. d.mu held.
func (d *DB) relocationTargetsLocked() map[base.FileNum]bool {
	var out map[base.FileNum]bool
	for num, c := range d.gc.collecting {
		if c.Mechanism != gc.ByRecompaction {
			continue
		}
		if out == nil {
			out = make(map[base.FileNum]bool)
		}
		out[num] = true
	}
	return out
}

// relocator moves, during a compaction, the values that pointers into
// value logs being collected locate into new value logs.
type relocator struct {
	d       *DB
	v       *manifest.Version // the version the compaction read, pinned
	targets map[base.FileNum]bool
	sep     *vlog.Separator
	sources map[base.FileNum]*relocSource
	bytes   uint64
	records uint64
}

type relocSource struct {
	h   vlog.Handle
	own *vlog.Reader // a private copy's reader (openRelocSource), or nil
	ra  *vlog.ReadAhead
}

// testRelocNoCopy, set by TestRelocationCopiesSharedValueLog, makes
// relocations read shared value logs through the cache.
var testRelocNoCopy bool

// openRelocSource opens value log m for a relocation. A compaction reads
// the values it moves in the order of their keys, nowhere near the
// order of the file: a shared value log that the cache holds little of
// is read through a private local copy (remote.Files.OpenCopy: the
// store's parts fetched side by side, once each), not a round trip per
// value whose part is not cached, each part then evicting others that
// reads use. Other value logs, and a shared one whose copy failed (the
// reads through the cache will say whether the store answers), are read
// through the reader cache.
func (d *DB) openRelocSource(m *manifest.VlogMetadata) (*relocSource, error) {
	if s := d.shared; s != nil && !testRelocNoCopy {
		f, ok, err := s.files.OpenCopy(s.ctx, base.FileTypeVlog, m.FileNum)
		switch {
		case err != nil:
			d.opts.Logger.Warn("strata: copying a shared value log to move its values failed; reading it through the cache",
				"file", base.MakeFilename(base.FileTypeVlog, m.FileNum), "err", err)
		case ok:
			r, err := vlog.NewReader(f, m.FileNum, int64(m.Size), vlog.ReaderOptions{})
			if err != nil {
				f.Close()
				return nil, err
			}
			return &relocSource{own: r, ra: r.NewReadAhead(d.opts.ValueLogReadAhead)}, nil
		}
	}
	h, err := d.vlogs.Acquire(m)
	if err != nil {
		return nil, err
	}
	return &relocSource{h: h, ra: h.Reader.NewReadAhead(d.opts.ValueLogReadAhead)}, nil
}

func (d *DB) newRelocator(v *manifest.Version, targets map[base.FileNum]bool, sep *vlog.Separator) *relocator {
	return &relocator{d: d, v: v, targets: targets, sep: sep, sources: make(map[base.FileNum]*relocSource)}
}

// relocate is compaction.Config.Relocate.
func (r *relocator) relocate(key []byte, p vlog.Pointer) (vlog.Pointer, bool, error) {
	if !r.targets[p.FileNum] {
		return p, false, nil
	}
	src := r.sources[p.FileNum]
	if src == nil {
		m := r.v.Vlogs[p.FileNum]
		if m == nil {
			return p, false, base.CorruptionErrorf(base.MakeFilename(base.FileTypeVlog, p.FileNum), -1,
				"a table points into this value log, which the version does not hold")
		}
		var err error
		if src, err = r.d.openRelocSource(m); err != nil {
			return p, false, err
		}
		r.sources[p.FileNum] = src
	}
	value, err := src.ra.Get(p, key)
	if err != nil {
		return p, false, err
	}
	np, err := r.sep.Add(key, value)
	if err != nil {
		return p, false, err
	}
	r.bytes += uint64(p.Length)
	r.records++
	return np, true, nil
}

// close releases the source value logs.
func (r *relocator) close() {
	for _, src := range r.sources {
		if src.own != nil {
			_ = src.own.Close() // a private copy, deleted with it
		} else {
			r.d.vlogs.Release(src.h)
		}
	}
	r.sources = nil
}
