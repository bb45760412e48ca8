package strata

import "time"

// EventListener receives notifications of background work. Every field is
// optional. Callbacks run on the goroutine doing the work, without the DB's
// locks held; they must not call back into the DB's write path and should
// return quickly.
type EventListener struct {
	FlushBegin      func(FlushInfo)
	FlushEnd        func(FlushInfo)
	CompactionBegin func(CompactionInfo)
	CompactionEnd   func(CompactionInfo)
	// WriteStallBegin and WriteStallEnd bracket a period in which writers
	// wait for flushes or compactions to catch up. When the wait goes on
	// for another reason (frozen memtables flushed, L0 now full), the
	// stall ends and a new one begins with that reason.
	WriteStallBegin func(WriteStallInfo)
	WriteStallEnd   func()
	// BackgroundError reports a flush or compaction failure. Writes fail
	// from then on (reads keep working); reopen the database to recover.
	BackgroundError func(error)
	// TableDeleted reports an obsolete SSTable removed from disk.
	TableDeleted func(TableDeleteInfo)
	// GCDecision reports a garbage-collection pass that decided something:
	// value logs dropped from the tree, collections started.
	GCDecision func(GCInfo)
	// ValueLogDeleted reports a value log dropped from the tree because
	// nothing points into it any longer. Its file is removed once no
	// iterator or checkpoint in progress can read it.
	ValueLogDeleted func(ValueLogDeleteInfo)
}

// FlushInfo describes a memtable flush.
type FlushInfo struct {
	Bytes    uint64 // size of the table written (0 when nothing survived)
	Duration time.Duration
	Err      error
}

// CompactionInfo describes a compaction.
type CompactionInfo struct {
	Reason            string // compaction.Reason: "L0 files", "level size", "marked" or "" for manual
	FromLevel         int
	ToLevel           int
	Inputs            int // input tables
	OutputLevelInputs int // of which in ToLevel
	InputBytes        uint64
	Outputs           int
	OutputBytes       uint64
	Duration          time.Duration
	Err               error
}

// WriteStallInfo says why writers wait.
type WriteStallInfo struct {
	Reason string // "memtables", "L0 files" or "compaction debt"
}

// TableDeleteInfo names a deleted table.
type TableDeleteInfo struct {
	FileNum uint64
}

func (l *EventListener) flushBegin(i FlushInfo) {
	if l != nil && l.FlushBegin != nil {
		l.FlushBegin(i)
	}
}

func (l *EventListener) flushEnd(i FlushInfo) {
	if l != nil && l.FlushEnd != nil {
		l.FlushEnd(i)
	}
}

func (l *EventListener) compactionBegin(i CompactionInfo) {
	if l != nil && l.CompactionBegin != nil {
		l.CompactionBegin(i)
	}
}

func (l *EventListener) compactionEnd(i CompactionInfo) {
	if l != nil && l.CompactionEnd != nil {
		l.CompactionEnd(i)
	}
}

func (l *EventListener) writeStallBegin(i WriteStallInfo) {
	if l != nil && l.WriteStallBegin != nil {
		l.WriteStallBegin(i)
	}
}

func (l *EventListener) writeStallEnd() {
	if l != nil && l.WriteStallEnd != nil {
		l.WriteStallEnd()
	}
}

func (l *EventListener) backgroundError(err error) {
	if l != nil && l.BackgroundError != nil {
		l.BackgroundError(err)
	}
}

func (l *EventListener) tableDeleted(i TableDeleteInfo) {
	if l != nil && l.TableDeleted != nil {
		l.TableDeleted(i)
	}
}

// GCInfo describes a garbage-collection decision.
type GCInfo struct {
	Policy   string  // the policy's name
	SpaceAmp float64 // space amplification before the decision
	Deleted  []uint64
	Collect  []GCCollection
	// CompactL0: the policy asked for L0 to be compacted, to reveal the
	// garbage its keys shadow.
	CompactL0 bool
	Duration  time.Duration
}

// GCCollection is one value log whose collection starts.
type GCCollection struct {
	FileNum   uint64
	Mechanism string // "recompact" or "rewrite"
	Tables    int    // tables that point into it
	Frees     uint64 // bytes the collection will free
	Writes    uint64 // bytes it is estimated to write
}

// ValueLogDeleteInfo names a value log dropped from the tree.
type ValueLogDeleteInfo struct {
	FileNum uint64
	Size    uint64
}

func (l *EventListener) gcDecision(i GCInfo) {
	if l != nil && l.GCDecision != nil {
		l.GCDecision(i)
	}
}

func (l *EventListener) valueLogDeleted(i ValueLogDeleteInfo) {
	if l != nil && l.ValueLogDeleted != nil {
		l.ValueLogDeleted(i)
	}
}
