package strata

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// recordingHandler keeps the records logged through it.
type recordingHandler struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *recordingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r.Clone())
	return nil
}
func (h *recordingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordingHandler) WithGroup(string) slog.Handler      { return h }

// find returns the records at level whose message contains msg.
func (h *recordingHandler) find(level slog.Level, msg string) []slog.Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []slog.Record
	for _, r := range h.records {
		if r.Level == level && bytes.Contains([]byte(r.Message), []byte(msg)) {
			out = append(out, r)
		}
	}
	return out
}

func attr(r slog.Record, key string) slog.Value {
	var v slog.Value
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			v = a.Value
			return false
		}
		return true
	})
	return v
}

// TestLoggerBackgroundError: a failed flush is logged once at Error, with
// its cause, and the EventListener still hears of it.
func TestLoggerBackgroundError(t *testing.T) {
	var failTables atomic.Bool
	fs := vfs.NewErrorFS(vfs.NewMem(), vfs.InjectorFunc(func(op vfs.Op) error {
		if failTables.Load() && op.Kind == vfs.OpCreate && bytes.HasSuffix([]byte(op.Path), []byte(".sst")) {
			return vfs.ErrInjected
		}
		return nil
	}))
	h := &recordingHandler{}
	var heard atomic.Int32
	db, err := Open("db", &Options{FS: fs, Logger: slog.New(h),
		EventListener: &EventListener{BackgroundError: func(error) { heard.Add(1) }}})
	require.NoError(t, err)
	require.NoError(t, db.Set([]byte("a"), []byte("1"), NoSync))
	failTables.Store(true)
	require.Error(t, db.Flush())
	recs := h.find(slog.LevelError, "background error")
	require.Len(t, recs, 1)
	require.ErrorIs(t, attr(recs[0], "err").Any().(error), vfs.ErrInjected)
	require.Equal(t, int32(1), heard.Load())
	require.Error(t, db.Close())
}

// TestLoggerEvents: stalls and GC decisions are logged, and the user's
// callbacks still run.
func TestLoggerEvents(t *testing.T) {
	h := &recordingHandler{}
	var stalls, decisions int
	user := &EventListener{
		WriteStallBegin: func(WriteStallInfo) { stalls++ },
		GCDecision:      func(GCInfo) { decisions++ },
	}
	l := user.withLogger(slog.New(h))
	l.writeStallBegin(WriteStallInfo{Reason: "L0 files"})
	l.writeStallEnd()
	l.gcDecision(GCInfo{Policy: "reverse-lookup", SpaceAmp: 1.7,
		Collect: []GCCollection{{FileNum: 9, Mechanism: "recompact", Tables: 3, Frees: 1 << 20, Writes: 1 << 10}}})
	l.backgroundError(nil) // a nil callback in user is skipped
	require.Equal(t, 1, stalls)
	require.Equal(t, 1, decisions)
	recs := h.find(slog.LevelWarn, "write stall")
	require.Len(t, recs, 2)
	require.Equal(t, "L0 files", attr(recs[0], "reason").String())
	recs = h.find(slog.LevelInfo, "gc collects value log")
	require.Len(t, recs, 1)
	require.Equal(t, uint64(9), attr(recs[0], "file").Uint64())

	// A nil logger, or one that discards, leaves the listener as it was.
	require.Same(t, user, user.withLogger(nil))
	require.Same(t, user, user.withLogger(slog.New(slog.DiscardHandler)))
}
