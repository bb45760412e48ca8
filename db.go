package strata

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-db/strata/cache"
	"github.com/strata-db/strata/compaction"
	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/internal/filecache"
	"github.com/strata-db/strata/internal/stripe"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/lsm/record"
	"github.com/strata-db/strata/vfs"
	"github.com/strata-db/strata/vlog"
)

// Error markers; match with errors.Is.
var (
	// ErrNotFound: Get found no visible value for the key.
	ErrNotFound = base.ErrNotFound
	// ErrCorruption: bytes on disk failed a checksum or could not be decoded.
	// The error names the file and offset.
	ErrCorruption = base.ErrCorruption
	// ErrClosed: the DB, iterator or snapshot was closed.
	ErrClosed = base.ErrClosed
	// ErrWritesStopped: a background error (a failed flush, compaction or
	// WAL write) stopped the DB from accepting writes. The error returned
	// wraps the cause as well; reads go on working, and reopening the
	// database recovers.
	ErrWritesStopped = errors.New("strata: writes stopped after a background error, reopen the database")
	// ErrReadOnly: a write to a DB opened with Options.ReadOnly.
	ErrReadOnly = errors.New("strata: database opened read-only")
	// ErrNewerFormat: a file (the manifest, a table, a value log, a
	// checkpoint store's registry) records a format version newer than
	// this build reads: a newer Strata wrote it. Nothing is damaged, and
	// nothing was changed; open it with a newer build. Such an error does
	// not match ErrCorruption.
	ErrNewerFormat = base.ErrNewerFormat
)

// CorruptionError describes bytes on disk that failed a checksum or could
// not be decoded: the file (its base name), the offset (-1 when unknown)
// and what was expected. Every corruption error matches ErrCorruption with
// errors.Is; errors.As with a *CorruptionError reaches the details.
type CorruptionError = base.CorruptionError

// DB is an open database. All methods are safe for concurrent use.
type DB struct {
	dirname string
	opts    *Options
	fs      vfs.FS
	lock    io.Closer

	cache   *cache.Cache
	cacheID uint64
	// files holds the open readers of tables and value logs, at most
	// MaxOpenFiles of them besides those in use.
	files      *filecache.Cache
	tableCache *tableCache
	vlogs      *vlog.ReaderCache
	// shared is the DB's side of its shared files (shared.go); nil
	// without Options.SharedStore.
	shared *sharedState
	// observer is the separation policy when it wants to see the workload.
	observer vlog.Observer

	// visibleSeq is the sequence number of the last write readers may see.
	// INVARIANT: every batch with seqs <= visibleSeq is fully in a memtable.
	visibleSeq atomic.Uint64

	commit commitPipeline
	sealer sealer

	// mu protects the fields below, and the VersionSet's current version.
	mu sync.Mutex
	// cond is signalled when a flush finishes or a background error is set.
	cond sync.Cond
	vs   *manifest.VersionSet
	mem  *memTable
	imm  []*memTable // frozen memtables, oldest first
	// memPool recycles the arena of flushed memtables.
	memPool memPool
	// walNums are the WAL files that may still hold unflushed writes,
	// ascending. After a flush, those below the new log number go.
	walNums []base.FileNum
	// flushedGen counts completed memtable flushes (for Flush to wait on).
	flushedGen uint64
	// bgErr is the first background error; once set, writes fail with it.
	// hasBgErr mirrors bgErr != nil for the commit path, which checks it
	// without d.mu.
	bgErr    error
	hasBgErr atomic.Bool
	// bgErrDelivered is set once the EventListener has been told of bgErr
	// (see deliverBackgroundError).
	bgErrDelivered bool
	// closed is set when Close begins: entry points refuse new work. After
	// Close has stopped the background goroutines, bgDone is set (under
	// d.mu, with cond broadcast) so that anything still waiting on
	// background work gives up with ErrClosed.
	closed atomic.Bool
	bgDone bool
	// checkpoints counts Checkpoint calls in progress; Close waits for them.
	checkpoints int
	// iters counts open iterators, which Close reports as leaked.
	iters atomic.Int64
	// compactMu serialises manual compactions.
	compactMu   sync.Mutex
	compactions compactionState
	// l0Files and compactionDebt mirror the current version for the write
	// path's stall checks (updated with the version, read without d.mu).
	l0Files        atomic.Int32
	compactionDebt atomic.Int64
	snapshots      snapshotList
	// gc is the value-log garbage collector's state (protected by d.mu).
	gc gcState
	// sepAtCommit: large values go to the active value log at commit (see
	// commit_sep.go); live holds the value logs so written.
	sepAtCommit bool
	live        liveVlogs

	// readState is what reads start from (nil once closed): see
	// loadReadState.
	readState atomic.Pointer[readState]

	obsolete obsoleteFiles

	flushCh chan struct{}
	// walFile is the current WAL's file (nil with the WAL off); walFlushCh
	// wakes the goroutine that writes its queued bytes.
	walFile    atomic.Pointer[walFile]
	walFlushCh chan struct{}
	// expiryStop ends the loop that looks for expired tables.
	expiryStop chan struct{}
	// bgMu guards closing flushCh against late wake-ups.
	bgMu      sync.Mutex
	bgStopped bool
	bgWG      sync.WaitGroup

	// bulkLoad is set between BeginBulkLoad and EndBulkLoad (see bulk.go).
	bulkLoad atomic.Bool

	// budget is the DB's side of Options.MemoryBudget.
	budget dbBudget

	stats dbStats
}

// readState is what a read needs: the memtables (newest first) and the
// version, referenced so files stay while the read runs.
//
// Readers take references in stripes (stripe.Refs), so that readers on
// different processors do not move one count's cache line between them
// twice per read (with two readers that line and the lock that guarded
// the pointer took a fifth of their time). The DB's own reference is the
// Refs' owner's: swapReadState drops it. The state lets go of its version
// and memtables once, when it is dropped and no reader holds it; a reader
// checks after Acquire that the state is still current (loadReadState).
type readState struct {
	refs      stripe.Refs
	version   *manifest.Version
	memtables []*memTable
}

// readRef is a reference to a read state: the state and the stripe its
// reference was added to. The zero readRef (state nil) means the DB is
// closed.
type readRef struct {
	*readState
	stripe int
}

// unref drops the reference.
func (r readRef) unref() {
	if r.refs.Release(r.stripe) {
		r.release()
	}
}

// release lets go of the version and memtables (stripe.Refs says when).
func (rs *readState) release() {
	rs.version.Unref()
	for _, m := range rs.memtables {
		m.unref()
	}
}

// loadReadState returns the current read state with a reference (a zero
// readRef once the DB is closed).
func (d *DB) loadReadState() readRef {
	for {
		rs := d.readState.Load()
		if rs == nil {
			return readRef{}
		}
		r := readRef{rs, rs.refs.Acquire()}
		if d.readState.Load() == rs {
			// Still current, so not retired before the add: whoever
			// retires it will count this reference.
			return r
		}
		r.unref() // replaced meanwhile: try the new one
	}
}

// updateReadStateLocked publishes a read state for the current memtables
// and version. d.mu must be held.
func (d *DB) updateReadStateLocked() {
	d.scheduleShare()
	rs := &readState{version: d.vs.Current()}
	rs.version.Ref()
	rs.memtables = make([]*memTable, 0, 1+len(d.imm))
	rs.memtables = append(rs.memtables, d.mem)
	for i := len(d.imm) - 1; i >= 0; i-- {
		rs.memtables = append(rs.memtables, d.imm[i])
	}
	for _, m := range rs.memtables {
		m.ref()
	}
	d.swapReadState(rs)
}

// swapReadState publishes rs (nil once the DB is closed) and retires the
// previous one, which lets go of its files once its readers are done.
func (d *DB) swapReadState(rs *readState) {
	if old := d.readState.Swap(rs); old != nil && old.refs.Drop() {
		old.release()
	}
}

// dbStats are counters for Metrics.
type dbStats struct {
	flushes        atomic.Uint64
	flushBytes     atomic.Uint64
	ingests        atomic.Uint64
	ingestBytes    atomic.Uint64 // table bytes ingests wrote (value logs are linked)
	compactions    atomic.Uint64
	compactInBytes atomic.Uint64
	// expired counts entries dropped for their TTL; compactVlogReads the
	// value-log records compactions read (relocation only).
	expired          atomic.Uint64
	compactVlogReads atomic.Uint64
	// vlogReads counts the value-log records reads fetched: Get, snapshots'
	// Get, iterators' values and merges (not compactions).
	vlogReads stripe.Counter
	// prefixChecked and prefixSkipped count the tables iterators with a
	// prefix asked the Bloom filter about, and those it ruled out.
	prefixChecked   atomic.Uint64
	prefixSkipped   atomic.Uint64
	compactOutBytes atomic.Uint64
	walBytes        atomic.Uint64
	vlogBytes       atomic.Uint64 // bytes of value logs written (flush, GC)
	userBytes       atomic.Uint64
	writeStalls     atomic.Uint64
	budgetWaits     atomic.Uint64 // writes held back by the write budget
	stallNanos      atomic.Int64
	slowdownNanos   atomic.Int64
	latency         latencyStats

	// Per level, protected by d.mu.
	levels [manifest.NumLevels]levelStats
}

// levelStats count the compaction work that went into a level.
type levelStats struct {
	bytesIn      uint64 // bytes read from the level by compactions
	bytesWritten uint64 // bytes written into the level (flushes, compactions)
	bytesMoved   uint64 // bytes moved into the level without rewriting
	compactions  uint64 // compactions that wrote into the level
	duration     time.Duration
}

// recordCompaction adds a finished compaction to the counters. d.mu held.
func (s *dbStats) recordCompaction(p *compaction.Pick, cs compaction.Stats, d time.Duration) {
	in := p.InputBytes()
	s.compactions.Add(1)
	out := &s.levels[p.OutputLevel]
	out.compactions++
	out.duration += d
	if p.Kind == compaction.KindMove {
		out.bytesMoved += in
		return
	}
	s.compactInBytes.Add(in)
	s.compactOutBytes.Add(cs.BytesOut)
	for _, lf := range p.Inputs {
		for _, f := range lf.Files {
			s.levels[lf.Level].bytesIn += f.Size
		}
	}
	out.bytesWritten += cs.BytesOut
}

// backgroundErrorLocked returns the sticky background error, if any,
// marked ErrWritesStopped. d.mu held.
func (d *DB) backgroundErrorLocked() error {
	if d.bgErr != nil {
		return fmt.Errorf("%w: %w", ErrWritesStopped, d.bgErr)
	}
	return nil
}

// setBackgroundErrorLocked records err as the background error unless one
// is already set, and reports whether it did. d.mu held.
func (d *DB) setBackgroundErrorLocked(err error) bool {
	first := d.bgErr == nil
	if first {
		d.bgErr = err
		d.hasBgErr.Store(true)
	}
	d.cond.Broadcast()
	return first
}

// deliverBackgroundError tells the EventListener (and the logger) of the
// first background error, which the caller set, and then lets Flush return
// it: a caller whose Flush failed finds the listener already told. d.mu
// must not be held.
func (d *DB) deliverBackgroundError(err error) {
	d.opts.EventListener.backgroundError(err)
	d.mu.Lock()
	d.bgErrDelivered = true
	d.cond.Broadcast()
	d.mu.Unlock()
}

// reportBackgroundError records err as the background error and, if it is
// the first, tells the EventListener. d.mu must not be held.
func (d *DB) reportBackgroundError(err error) {
	d.mu.Lock()
	first := d.setBackgroundErrorLocked(err)
	d.mu.Unlock()
	if first {
		d.deliverBackgroundError(err)
	}
}

// createWAL creates a new WAL file and returns its record writer and the
// file under it.
func (d *DB) createWAL(num base.FileNum) (*record.Writer, *walFile, error) {
	name := d.fs.PathJoin(d.dirname, base.MakeFilename(base.FileTypeLog, num))
	f, err := d.fs.Create(name)
	if err != nil {
		return nil, nil, fmt.Errorf("strata: create WAL: %w", err)
	}
	if err := manifest.SyncDir(d.fs, d.dirname); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("strata: sync directory after creating WAL: %w", err)
	}
	wf := newWALFile(f)
	return record.NewWriter(wf), wf, nil
}

// testHookEntry, when set by a test, runs in Flush, Compact, Checkpoint
// and EndBulkLoad right after their entry check, so that a test can run Close
// in the window that follows.
var testHookEntry func(op string)

func (d *DB) checkOpen() error {
	if d.closed.Load() {
		return ErrClosed
	}
	return nil
}

// checkWritable is checkOpen for the entry points that write.
func (d *DB) checkWritable() error {
	if d.opts.ReadOnly {
		return ErrReadOnly
	}
	return d.checkOpen()
}
