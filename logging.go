package strata

import (
	"log/slog"
	"sync/atomic"
	"time"
)

// What the DB logs (through Options.Logger), and at which level:
//
//	ERROR  a background error: the failure that stops writes
//	WARN   a write stall begins, and ends (with how long writers waited);
//	       a WAL replay that stops early (a torn tail)
//	INFO   recovery: each WAL replayed, each value log adopted; each GC
//	       decision and value log deleted
//	DEBUG  each flush and compaction
//
// The events come from the same places as the EventListener's callbacks,
// so a logger and a listener always agree.

// discarding reports whether l drops everything, so that the DB can skip
// building log records and wrapping the listener.
func discarding(l *slog.Logger) bool {
	return l == nil || l.Handler() == slog.DiscardHandler
}

// withLogger returns an EventListener that logs each event to log and then
// calls l's callback, or l itself when log discards everything.
func (l *EventListener) withLogger(log *slog.Logger) *EventListener {
	if discarding(log) {
		return l
	}
	var user EventListener
	if l != nil {
		user = *l
	}
	var stallStart atomic.Int64
	return &EventListener{
		FlushBegin: user.FlushBegin,
		FlushEnd: func(i FlushInfo) {
			if i.Err == nil {
				log.Debug("strata: flushed memtable", "bytes", i.Bytes, "duration", i.Duration)
			}
			call(user.FlushEnd, i)
		},
		CompactionBegin: user.CompactionBegin,
		CompactionEnd: func(i CompactionInfo) {
			if i.Err == nil {
				log.Debug("strata: compacted", "reason", i.Reason, "from", i.FromLevel, "to", i.ToLevel,
					"inputs", i.Inputs, "input_bytes", i.InputBytes, "outputs", i.Outputs, "output_bytes", i.OutputBytes,
					"duration", i.Duration)
			}
			call(user.CompactionEnd, i)
		},
		WriteStallBegin: func(i WriteStallInfo) {
			stallStart.Store(time.Now().UnixNano())
			log.Warn("strata: write stall: writers wait for background work", "reason", i.Reason)
			call(user.WriteStallBegin, i)
		},
		WriteStallEnd: func() {
			log.Warn("strata: write stall ended", "waited", time.Duration(time.Now().UnixNano()-stallStart.Load()))
			if user.WriteStallEnd != nil {
				user.WriteStallEnd()
			}
		},
		BackgroundError: func(err error) {
			log.Error("strata: background error; writes stop until the database is reopened", "err", err)
			call(user.BackgroundError, err)
		},
		TableDeleted: user.TableDeleted,
		GCDecision: func(i GCInfo) {
			attrs := []any{"policy", i.Policy, "space_amp", i.SpaceAmp, "deleted", len(i.Deleted), "collections", len(i.Collect)}
			if i.CompactL0 {
				attrs = append(attrs, "compact_l0", true)
			}
			log.Info("strata: gc decision", attrs...)
			for _, c := range i.Collect {
				log.Info("strata: gc collects value log", "file", c.FileNum, "mechanism", c.Mechanism,
					"tables", c.Tables, "frees", c.Frees, "writes", c.Writes)
			}
			call(user.GCDecision, i)
		},
		ValueLogDeleted: func(i ValueLogDeleteInfo) {
			log.Info("strata: value log deleted", "file", i.FileNum, "bytes", i.Size)
			call(user.ValueLogDeleted, i)
		},
	}
}

func call[T any](f func(T), v T) {
	if f != nil {
		f(v)
	}
}

// logReplayed logs a WAL replayed to its end: the batches applied, and
// whether bytes past the last complete record were left (a torn tail: a
// write the crash interrupted). end is the offset the replay reached, size
// the WAL's (-1 unknown).
func (d *DB) logReplayed(name string, batches int, end, size int64) {
	log := d.opts.Logger
	if discarding(log) {
		return
	}
	if size > end {
		log.Warn("strata: WAL replayed up to a torn tail", "wal", name, "batches", batches, "end", end, "size", size)
		return
	}
	log.Info("strata: WAL replayed", "wal", name, "batches", batches, "bytes", end)
}
