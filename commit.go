package strata

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/record"
	"github.com/strata-db/strata/vlog"
)

// The commit pipeline is a queue of writers. A writer that finds the queue
// empty is the leader: it takes the head of the queue as a group (up to
// maxGroupBytes), gives the group's batches their sequence numbers, writes
// them to the WAL with one write and at most one sync, applies them to the
// memtable, publishes the new visible sequence number, and wakes the group.
// Writers that arrive while a leader works wait, so concurrent writers
// share WAL writes and syncs. When its group is done, the leader commits
// the writes that queued meanwhile too (up to maxLeaderRounds more groups,
// stopping at a write that syncs or another operation), and only then hands
// the lead to the head of the queue: that writer is parked, and once woken
// it waits for a P, which with every P busy (more writing goroutines than
// cores) took a median of 25 us and a p99 of milliseconds, holding up every
// writer behind it. For the same reason the writer next after a leader
// whose group does not sync spins (up to commitSpinNanos) instead of
// parking: the leader commits it in its next round, within microseconds,
// and the spinner sees it done without having to be scheduled again. Only
// that one writer spins, and only with more than one P.
//
// INVARIANT: only the leader touches wal, lastSeq and d.mem's contents, and
// only the leader replaces d.mem (under d.mu).
type commitPipeline struct {
	mu    sync.Mutex
	queue []*commitWriter

	// Leader-only state.
	wal     *record.Writer // nil with the WAL disabled
	lastSeq base.SeqNum
	group   []*commitWriter
	batches []*Batch
	// With separation at commit: active is the value log the group's large
	// values go to (nil until the first one), conv the batches that carry
	// their pointers, and pinned the memtable that pins active.
	active *vlog.LiveWriter
	// activeDirSynced: the directory entry of active is durable.
	activeDirSynced bool
	conv            []Batch
	pinned          *memTable
	// closed is set by Close's opClose: every operation queued after it
	// fails with ErrClosed, so nothing touches the WAL or the memtables
	// once Close goes on to stop the background work.
	closed bool
	// leaderFast: the leader's group is of writes that do not sync, so
	// the writer next after it spins rather than parks (mu held).
	leaderFast bool
	// bulk: a bulk load is under way, and writes skip the WAL (leader
	// only; DB.bulkLoad mirrors it).
	bulk bool
}

const maxGroupBytes = 1 << 20

type commitOp uint8

const (
	opWrite     commitOp = iota // commit the batch
	opRotate                    // freeze the memtable (Flush)
	opBarrier                   // nothing: returns once earlier writes are done
	opClose                     // like opBarrier, then refuse every later operation
	opRepoint                   // garbage collection: repoint keys still pointing where they did
	opBulkBegin                 // start a bulk load: writes skip the WAL (bulk.go)
	opBulkEnd                   // end it: freeze, flush and wait, then log writes again
	opIngest                    // add external tables (ingest.go)
	opSync                      // make every earlier write durable (sync.go)
)

type commitWriter struct {
	batch *Batch
	sync  bool
	op    commitOp
	// syncAsked: the caller asked for Sync (sync is false with the WAL
	// off); such a write is refused during a bulk load, which the leader
	// decides in commit order (refused then holds ErrBulkLoadSync).
	syncAsked bool
	refused   error
	// repoint is opRepoint's work; its batch is built by the leader.
	repoint *repointWork
	// ingest is opIngest's tables.
	ingest *ingestPrep
	done   bool
	// lead: the writer is the queue's head and leads (set under mu).
	lead bool
	err  error
	cond sync.Cond
	// wake is set with done or lead, for a writer that spins rather than
	// waits on cond.
	wake atomic.Bool
}

// commitSpinNanos bounds how long the writer next after the leader spins
// before it parks: most groups that do not sync take under 20 us (p99 of
// ycsb-d's, 1 KiB values, 4 threads on 2 cores).
const commitSpinNanos = 20_000

// spinUntil busy-waits until flag is set or about ns nanoseconds pass.
func spinUntil(flag *atomic.Bool, ns int64) {
	deadline := latencyNow() + ns
	for i := 1; !flag.Load(); i++ {
		if i%32 == 0 && latencyNow() > deadline {
			return
		}
	}
}

var writerPool = sync.Pool{New: func() any { return &commitWriter{} }}

// repointWork asks the leader to repoint keys whose newest entry is still
// the old pointer; the others were written since and keep their value.
type repointWork struct {
	items []repointItem
	vlogs []base.FileNum // the value logs the new pointers point into
	batch Batch
	// applied counts the items committed, appliedBytes their records'
	// bytes.
	applied      int
	appliedBytes uint64
}

type repointItem struct {
	key      []byte
	old      []byte // the encoded pointer the key must still hold
	newPtr   vlog.Pointer
	recBytes uint64 // the record's length
}

// write commits b through the pipeline.
// Its latency, from the call to the return, is the commit histogram's.
func (d *DB) write(b *Batch, sync bool) error {
	defer d.stats.latency.commit.since(latencyNow())
	if mb := d.writeBudget(); mb != nil {
		mb.wait(d)
	}
	return d.writeOp(b, sync, opWrite)
}

// writeOp runs one operation through the pipeline, in order with writes.
func (d *DB) writeOp(b *Batch, sync bool, op commitOp) error {
	w := writerPool.Get().(*commitWriter)
	*w = commitWriter{batch: b, sync: sync && !d.opts.DisableWAL, syncAsked: sync, op: op}
	w.cond.L = &d.commit.mu
	return d.runWriter(w)
}

// runWriter queues w and runs it, as the leader of a group or as a member
// of another leader's group; w goes back to the pool.
func (d *DB) runWriter(w *commitWriter) error {
	c := &d.commit
	c.mu.Lock()
	c.queue = append(c.queue, w)
	w.lead = len(c.queue) == 1
	if !w.lead {
		start := latencyNow()
		if len(c.queue) == 2 && c.leaderFast && !w.sync && w.op == opWrite && runtime.GOMAXPROCS(0) > 1 {
			// Next after a leader whose group does not sync: it commits
			// this write in its next round within microseconds, so wait
			// for that on this P rather than park (see commitPipeline).
			c.mu.Unlock()
			spinUntil(&w.wake, commitSpinNanos)
			c.mu.Lock()
		}
		for !w.done && !w.lead {
			w.cond.Wait()
		}
		d.stats.latency.commitWait.since(start)
	}
	if w.done {
		err := w.err
		c.mu.Unlock()
		writerPool.Put(w)
		return err
	}
	// Leader: take a group from the head of the queue; then, while writers
	// queued meanwhile, commit them too (see commitPipeline).
	for round := 0; ; round++ {
		group := c.group[:0]
		size := 0
		for _, x := range c.queue {
			if round > 0 && (x.op != opWrite || x.sync) {
				break // theirs to lead: a sync or an operation
			}
			if len(group) > 0 && (x.op != opWrite || group[0].op != opWrite || size+x.batch.Size() > maxGroupBytes) {
				break
			}
			group = append(group, x)
			if x.batch != nil {
				size += x.batch.Size()
			}
		}
		if len(group) > 0 {
			c.group = group
			c.leaderFast = group[0].op == opWrite
			for _, x := range group {
				c.leaderFast = c.leaderFast && !x.sync
			}
			c.mu.Unlock()
			err := d.commitGroup(group)
			c.mu.Lock()
			for _, x := range group {
				x.err, x.done = err, true
				if x.refused != nil {
					x.err = x.refused
				}
				if x != w {
					x.wake.Store(true)
					x.cond.Signal()
				}
			}
			n := copy(c.queue, c.queue[len(group):])
			clear(c.queue[n:])
			c.queue = c.queue[:n]
			clear(c.group)
			c.leaderFast = false
		}
		if len(c.queue) == 0 {
			break
		}
		if len(group) == 0 || round == maxLeaderRounds {
			c.queue[0].lead = true
			c.queue[0].wake.Store(true)
			c.queue[0].cond.Signal()
			break
		}
	}
	err := w.err
	c.mu.Unlock()
	writerPool.Put(w)
	return err
}

// maxLeaderRounds bounds the groups one leader commits in a row.
const maxLeaderRounds = 4

// commitGroup runs on the leader.
func (d *DB) commitGroup(group []*commitWriter) error {
	c := &d.commit
	if c.closed {
		return ErrClosed
	}
	switch group[0].op {
	case opBarrier:
		return nil
	case opClose:
		c.closed = true
		// The active value log is finished and recorded, so the WAL's
		// pointers into it need no adoption at the next Open; the sealer's
		// jobs first, in order.
		if err := d.waitAllSealed(); err != nil {
			return err
		}
		return d.sealActiveLog()
	case opRotate:
		if d.mem.Empty() {
			return nil
		}
		return d.rotateMemTable(0)
	case opBulkBegin:
		c.bulk = true
		d.bulkLoad.Store(true)
		return nil
	case opBulkEnd:
		return d.endBulkLoadLeader()
	case opSync:
		return d.syncOpLeader()
	case opIngest:
		return d.ingestLeader(group[0].ingest)
	case opRepoint:
		// Alone in its group: the check and the write are atomic with
		// respect to every other write.
		if err := d.buildRepointBatch(group[0]); err != nil || group[0].batch.Empty() {
			return err
		}
	}
	if err := d.writableNow(); err != nil {
		return err
	}
	// A write that asked for Sync during a bulk load is refused: the load
	// skips the WAL, so it could not be durable when acknowledged. It is
	// decided here, in commit order (the operations queued ahead of the
	// group are done, so c.bulk is what they left): a Sync write queued
	// behind BeginBulkLoad is refused, one queued behind EndBulkLoad is
	// logged, whenever the callers made them.
	if c.bulk && group[0].op == opWrite {
		accepted := 0
		for _, w := range group {
			if w.syncAsked {
				w.refused = ErrBulkLoadSync
			} else {
				accepted++
			}
		}
		if accepted == 0 {
			return nil
		}
	}
	// batches are what the WAL and the memtable receive: the group's
	// batches, or, with separation at commit, copies whose large values
	// went to the active value log and left pointers.
	batches := c.batches[:0]
	need, values, syncWAL := 0, 0, false
	var userBytes uint64
	sepAtCommit := d.sepAtCommit && group[0].op == opWrite
	for _, w := range group {
		if w.refused != nil {
			continue
		}
		userBytes += w.batch.userBytes
		batches = append(batches, w.batch)
		if sepAtCommit {
			n, v := d.separatedMemSize(w.batch)
			need += n
			values += v
		} else {
			need += w.batch.memSize
		}
		syncWAL = syncWAL || w.sync
	}
	c.batches = batches
	if need > maxMemtableNeed {
		// Refused before anything is written: a memtable of the largest
		// size could not take the entries, and a WAL record the memtable
		// then failed to take would stop every write. Only a batch above
		// maxGroupBytes, alone in its group, can need this much.
		return fmt.Errorf("%w: its entries need %d bytes of memtable, the largest memtable holds %d",
			ErrBatchTooLarge, need, maxMemtableNeed)
	}
	if err := d.makeRoomForWrite(need, values); err != nil {
		return err
	}
	d.maybeSlowDown(group)
	if sepAtCommit {
		if err := d.separateAtCommit(batches); err != nil {
			// Values may sit in the active value log without a WAL record:
			// harmless garbage; but the log may be broken, so stop.
			err = fmt.Errorf("strata: write value log: %w", err)
			d.reportBackgroundError(err)
			return err
		}
	}

	seq := c.lastSeq + 1
	for _, b := range batches {
		b.setSeq(seq)
		seq += base.SeqNum(b.count)
	}
	last := seq - 1

	// A bulk load's writes skip the WAL; the flush that ends it makes them
	// durable (bulk.go).
	if c.wal != nil && !(c.bulk && group[0].op == opWrite) {
		var err error
		for _, b := range batches {
			if _, err = c.wal.WriteRecord(b.repr); err != nil {
				break
			}
			d.stats.walBytes.Add(uint64(len(b.repr)))
		}
		if err == nil {
			if syncWAL {
				err = d.syncLeader()
			} else if err = c.wal.Flush(); err == nil {
				// Flush only queued the bytes; the WAL flusher writes them.
				d.scheduleWALFlush()
			}
		}
		if err != nil {
			// The WAL may now end in a partial record; nothing more can be
			// appended to it safely.
			err = fmt.Errorf("strata: write WAL: %w", err)
			d.reportBackgroundError(err)
			return err
		}
	}

	mem := d.mem
	if group[0].op == opRepoint {
		// The memtable now points into the new value logs: it pins them
		// until it is flushed (their pointers are then in a table).
		d.pinForMemtable(mem, group[0].repoint.vlogs)
	}
	for _, b := range batches {
		if err := applyBatch(mem, b, d.observer); err != nil {
			err = fmt.Errorf("strata: apply batch to memtable: %w", err)
			d.reportBackgroundError(err)
			return err
		}
	}
	d.stats.userBytes.Add(userBytes)
	clear(c.batches)
	c.lastSeq = last
	mem.maxSeq.Store(uint64(last))
	d.visibleSeq.Store(uint64(last))
	if b := d.writeBudget(); b != nil {
		d.chargeMem(mem)
		b.maybeFlush()
	}
	return nil
}

// writableNow returns ErrClosed after Close, the background error after
// one (nothing more is acknowledged then: with the WAL off the write could
// never become durable, and with it on the WAL may end in a partial
// record), and nil otherwise. Leader only.
func (d *DB) writableNow() error {
	if d.closed.Load() {
		return ErrClosed
	}
	if d.hasBgErr.Load() {
		d.mu.Lock()
		err := d.backgroundErrorLocked()
		d.mu.Unlock()
		return err
	}
	return nil
}

// buildRepointBatch fills w's batch with the repoint items whose key's
// newest entry is still the old pointer. Leader only: no write can come in
// between the check and the commit.
func (d *DB) buildRepointBatch(w *commitWriter) error {
	rw := w.repoint
	rw.batch.Reset()
	w.batch = &rw.batch
	rs := d.loadReadState()
	if rs.readState == nil {
		return ErrClosed
	}
	defer rs.unref()
	snap := base.SeqNum(d.visibleSeq.Load())
	for _, it := range rw.items {
		metaBytes, err := d.lookup(rs.readState, it.key, snap, it.old)
		if err == errPointerMoved {
			continue
		}
		if err != nil {
			return err
		}
		if len(metaBytes) > 0 {
			// The key keeps its expiry.
			meta, _, merr := base.DecodeEntryMeta(metaBytes)
			if merr != nil {
				return merr
			}
			err = rw.batch.addPointerMeta(it.key, it.newPtr, meta)
		} else {
			err = rw.batch.addPointer(it.key, it.newPtr)
		}
		if err != nil {
			return err
		}
		rw.applied++
		rw.appliedBytes += it.recBytes
	}
	return nil
}

// pinForMemtable records that memtable m holds pointers into vlogs,
// pinning each once, until m is released.
func (d *DB) pinForMemtable(m *memTable, vlogs []base.FileNum) {
	d.gc.pins.mu.Lock()
	defer d.gc.pins.mu.Unlock()
	for _, num := range vlogs {
		if m.vlogs[num] {
			continue
		}
		if m.vlogs == nil {
			m.vlogs = make(map[base.FileNum]bool)
		}
		m.vlogs[num] = true
		d.gc.pins.addLocked(num, 1)
	}
}

// releaseMemtable drops the pins of a memtable nothing can read any longer
// (flushed, and no read state holds it): until then an iterator may still
// read its pointers, so their value logs must stay.
func (d *DB) releaseMemtable(m *memTable) {
	d.gc.pins.mu.Lock()
	for num := range m.vlogs {
		d.gc.pins.addLocked(num, -1)
	}
	m.vlogs = nil
	d.gc.pins.mu.Unlock()
}

// applyBatch inserts a sequenced batch into m, telling observer (if any)
// about each value written.
func applyBatch(m *memTable, b *Batch, observer vlog.Observer) error {
	r, err := newBatchReader(b.repr)
	if err != nil {
		return err
	}
	seq := r.seq
	for {
		kind, key, value, ok, err := r.next()
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		if err := m.Add(base.MakeInternalKey(key, seq, kind), value); err != nil {
			return err
		}
		if observer != nil && kind.IsSet() {
			observer.ObserveWrite(len(key), len(value))
		}
		if kind == base.KindRangeDelete {
			m.rangeDelCount.Add(1)
		}
		seq++
	}
}

// makeRoomForWrite makes sure d.mem can take need more bytes, freezing it
// (and waiting for flushes when too many memtables are frozen). Leader only.
//
// values is the bytes of the values the group writes to the active value
// log. A memtable counts them toward MemTableSize although they are not in
// its arena: it is frozen after as much user data as if they were, so the
// pointers it holds reach tables, where garbage collection sees what they
// shadow, no later than values kept inline would.
func (d *DB) makeRoomForWrite(need, values int) error {
	m := d.mem
	if m.Available() >= need && (values == 0 || m.Size()+int(m.valueBytes.Load())+values <= int(d.opts.MemTableSize)) {
		m.valueBytes.Add(int64(values))
		return nil
	}
	if err := d.rotateMemTable(need); err != nil {
		return err
	}
	d.mem.valueBytes.Add(int64(values))
	return nil
}

// rotateMemTable freezes d.mem and installs a new memtable able to hold need
// bytes, with a new WAL. Leader only.
func (d *DB) rotateMemTable(need int) error {
	d.mu.Lock()
	if reason := d.stallReasonLocked(); reason != "" {
		d.stats.writeStalls.Add(1)
		d.mu.Unlock()
		d.opts.EventListener.writeStallBegin(WriteStallInfo{Reason: reason})
		start := time.Now()
		d.mu.Lock()
		for d.bgErr == nil {
			now := d.stallReasonLocked()
			if now == "" {
				break
			}
			if now != reason {
				// The wait goes on for another reason (the frozen
				// memtables were flushed, and L0 is now full): a stall of
				// its own, so that listeners see why writers wait.
				reason = now
				d.stats.writeStalls.Add(1)
				d.mu.Unlock()
				d.opts.EventListener.writeStallEnd()
				d.opts.EventListener.writeStallBegin(WriteStallInfo{Reason: reason})
				d.mu.Lock()
				continue
			}
			d.cond.Wait()
		}
		d.stats.stallNanos.Add(int64(time.Since(start)))
		d.mu.Unlock()
		d.opts.EventListener.writeStallEnd()
		d.mu.Lock()
	}
	if err := d.backgroundErrorLocked(); err != nil {
		d.mu.Unlock()
		return err
	}
	d.mu.Unlock()

	c := &d.commit
	var (
		logNum base.FileNum
		wal    *record.Writer
		wf     *walFile
	)
	if c.wal != nil {
		// The old WAL's bytes reach the file now, before the new WAL holds
		// any: a write that failed later, in the sealer, would leave a gap
		// that recovery could not see. Only its sync and close wait.
		err := c.wal.Flush()
		if err == nil {
			err = d.walFile.Load().flushPending()
		}
		if err != nil {
			err = fmt.Errorf("strata: write WAL: %w", err)
			d.reportBackgroundError(err)
			return err
		}
	}
	if !d.opts.DisableWAL {
		logNum = d.vs.NewFileNum()
		var err error
		if wal, wf, err = d.createWAL(logNum); err != nil {
			d.removeFile(base.FileTypeLog, logNum)
			return err
		}
	}
	// The active value log is finished and recorded, and the old WAL synced
	// and closed, by the sealer, off the commit path. The old WAL is durable
	// before the new one holds a synced write (a WAL sync waits for the
	// sealer), so recovery never finds a synced write after a lost one; the
	// frozen memtable's flush waits for both, so its pointers are into value
	// logs the version holds.
	job := sealJob{vlog: c.active, vlogDirSynced: c.activeDirSynced, wal: c.wal}
	c.active, c.pinned = nil, nil
	var ticket uint64
	if job.vlog != nil || job.wal != nil {
		ticket = d.submitSeal(job)
	}
	size := int(d.opts.MemTableSize)
	if need+need/8+4096 > size {
		size = need + need/8 + 4096
	}
	nm := d.memPool.get(size, logNum)
	// The next memtable's links are fitted to the keys this one saw (the
	// leader is the memtable's only writer, so its range is settled).
	if lo, hi, ok := d.mem.KeyRange(); ok {
		nm.TuneLinks(lo, hi)
	}

	d.mu.Lock()
	old := d.mem
	old.sealTicket = ticket
	keep := old.holdsRecords()
	if keep {
		d.imm = append(d.imm, old)
		d.chargeFrozen(old)
	}
	d.mem = nm
	d.chargeMem(nm)
	c.wal = wal
	d.walFile.Store(wf)
	if logNum != 0 {
		d.walNums = append(d.walNums, logNum)
	}
	d.updateReadStateLocked()
	d.mu.Unlock()
	if !keep {
		old.unref() // dropped, not frozen: the DB's reference goes
		if old.logNum != 0 {
			// Nothing in it was ever needed; its WAL holds no records.
			d.mu.Lock()
			d.walNums = slices.DeleteFunc(d.walNums, func(n base.FileNum) bool { return n == old.logNum })
			d.mu.Unlock()
			d.removeFile(base.FileTypeLog, old.logNum)
		}
	}
	d.scheduleBackground()
	return nil
}

// stallReasonLocked says why a full memtable must wait before it can be
// frozen: too many frozen memtables, too many L0 tables, or too much
// compaction debt. Compaction-driven stalls apply only while automatic
// compactions can relieve them (not once Close has begun, when none start).
// d.mu held.
func (d *DB) stallReasonLocked() string {
	if len(d.imm) >= d.opts.MaxImmutableMemTables {
		return "memtables"
	}
	if d.opts.DisableAutomaticCompactions || d.compactions.manual > 0 || d.closed.Load() {
		return ""
	}
	if int(d.l0Files.Load()) >= d.opts.L0StopWritesThreshold {
		return "L0 files"
	}
	if d.compactionDebt.Load() >= d.opts.HardPendingCompactionBytes {
		return "compaction debt"
	}
	return ""
}

// maybeSlowDown holds the leader back while L0 or the compaction debt is
// past its slowdown threshold, so writes proceed at SlowdownWriteRate and
// compaction can catch up before writers have to stop.
func (d *DB) maybeSlowDown(group []*commitWriter) {
	if d.opts.DisableAutomaticCompactions {
		return
	}
	if int(d.l0Files.Load()) < d.opts.L0SlowdownWritesThreshold && d.compactionDebt.Load() < d.opts.SoftPendingCompactionBytes {
		return
	}
	var bytes int
	for _, w := range group {
		bytes += w.batch.Size()
	}
	delay := time.Duration(float64(bytes) / float64(d.opts.SlowdownWriteRate) * float64(time.Second))
	time.Sleep(delay)
	d.stats.slowdownNanos.Add(int64(delay))
}

// Apply commits b atomically. On success b is reset (Reset), so the same
// batch can collect the next group of writes without applying these
// again; on failure it keeps its operations and may be applied again.
// An empty batch commits nothing; with Sync it still makes every write
// acknowledged before it durable, as DB.Sync does. A batch holding merge
// operands is refused whole without Options.Merger (ErrNoMerger), or when
// the Merger's validation refuses one of them (ErrInvalidOperand; see
// OperandValidator).
func (d *DB) Apply(b *Batch, o *WriteOptions) error {
	if err := d.checkWritable(); err != nil {
		return err
	}
	if b == nil || b.Empty() {
		if o.sync() {
			return d.Sync()
		}
		return nil
	}
	if err := d.checkMerges(b); err != nil {
		return err
	}
	wb := b
	if d.opts.DefaultTTL > 0 {
		tb := batchPool.Get().(*Batch)
		defer batchPool.Put(tb)
		var err error
		if wb, err = d.withDefaultTTL(b, tb); err != nil {
			return err
		}
	}
	if err := d.write(wb, o.sync()); err != nil {
		return err
	}
	b.Reset()
	return nil
}

var batchPool = sync.Pool{New: func() any { return &Batch{} }}

func (d *DB) writeOne(kind base.Kind, key, value []byte, hasValue bool, o *WriteOptions) error {
	if err := d.checkWritable(); err != nil {
		return err
	}
	b := batchPool.Get().(*Batch)
	b.Reset()
	var err error
	if kind == base.KindSet && d.opts.DefaultTTL > 0 {
		var exp int64
		if exp, err = expiryFrom(d.opts.Clock(), d.opts.DefaultTTL); err == nil {
			err = b.addSetMeta(key, value, base.EntryMeta{ExpiresAt: exp})
		}
	} else {
		err = b.add(kind, key, value, hasValue)
	}
	if err == nil {
		err = d.write(b, o.sync())
	}
	if cap(b.repr) <= 1<<20 {
		batchPool.Put(b)
	}
	return err
}

// Set writes key=value.
func (d *DB) Set(key, value []byte, o *WriteOptions) error {
	return d.writeOne(base.KindSet, key, value, true, o)
}

// Delete deletes key.
func (d *DB) Delete(key []byte, o *WriteOptions) error {
	return d.writeOne(base.KindDelete, key, nil, false, o)
}

// DeleteRange deletes every key in [start, end). An empty range (start ==
// end) deletes nothing; start after end is refused (see
// Batch.DeleteRange).
func (d *DB) DeleteRange(start, end []byte, o *WriteOptions) error {
	if err := checkDeleteRange(start, end); err != nil {
		return err
	}
	return d.writeOne(base.KindRangeDelete, start, end, true, o)
}
