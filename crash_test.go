package strata

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/strata-db/strata/gc"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// TestCrashRecovery runs random writes (with flushes and compactions in the
// background) on the crash-simulating filesystem, and at many points takes
// the state a power loss would leave. Each crashed copy must open, hold
// every write acknowledged as durable, and be exactly the state after some
// prefix of the write history.
//
// Every crash keeps torn writes (a random part of each file's unsynced
// data); crashes take turns at the filesystem's harsher behaviours too:
// pages of those parts that hold zeros (a size that reached the disk
// without its data), and directory changes that reached the disk without a
// sync, in order.
func TestCrashRecovery(t *testing.T) {
	steps, crashes, seeds := 3000, 40, 3
	switch {
	case soak:
		steps, crashes, seeds = 10000, 100, 8
	case testing.Short():
		steps, crashes = 1000, 15
	}
	for _, tc := range []struct {
		name string
		opts Options
		cfg  crashConfig
	}{
		{"wal", Options{MemTableSize: 64 << 10, TargetFileSize: 32 << 10}, crashConfig{}},
		{"wal-small-blocks", Options{MemTableSize: 64 << 10, BlockSize: 1024, ValueThreshold: 64}, crashConfig{}},
		{"no-wal", Options{MemTableSize: 64 << 10, DisableWAL: true, ValueThreshold: 100}, crashConfig{}},
		// Bulk loads begin and end among the writes: a crash inside one
		// keeps a prefix, one after it keeps the whole load.
		{"wal-bulk", Options{MemTableSize: 64 << 10, ValueThreshold: 64}, crashConfig{bulk: true}},
		// Ingests among the writes (and bulk loads): the ingested
		// tables' sequence numbers are marked in the WAL, not flushed
		// into the manifest, while the memtables stay unflushed.
		{"wal-ingest", Options{MemTableSize: 64 << 10, ValueThreshold: 64}, crashConfig{bulk: true, ingest: true}},
		// Values in the tree, writes piling up between ingests, and
		// recoveries with a smaller memtable: the replay flushes before
		// it reaches an ingest's mark, below the ingested table's
		// sequence number.
		{"wal-ingest-replay", Options{MemTableSize: 1 << 20, ValueThreshold: 8 << 10},
			crashConfig{ingest: true, quiet: true, smallReopen: true}},
		// The same with merge operands onto values separated at commit:
		// a replay's flush folds them onto values in a value log that
		// recovery adopts.
		{"wal-merge-replay", Options{MemTableSize: 1 << 20, ValueThreshold: 64, Merger: ListAppend},
			crashConfig{merge: true, quiet: true, smallReopen: true}},
		// All of it at once, with WAL syncs held back and a second crash
		// during the recovery (writes pile up in frozen memtables while
		// syncs are held, hence the room for them).
		{"wal-replay-mix", Options{MemTableSize: 1 << 20, MaxImmutableMemTables: 64, ValueThreshold: 64, Merger: ListAppend},
			crashConfig{merge: true, ingest: true, bulk: true, quiet: true, smallReopen: true, recrash: true, holdLogSyncs: true}},
		{"no-wal-ingest", Options{MemTableSize: 64 << 10, DisableWAL: true, ValueThreshold: 100}, crashConfig{ingest: true}},
		// Garbage collection at thresholds that keep it busy: a crash can
		// fall in the middle of a relocation, a rewrite or a deletion.
		{"gc-recompact", Options{MemTableSize: 32 << 10, TargetFileSize: 8 << 10, LBaseMaxBytes: 32 << 10, ValueThreshold: 32,
			GCPolicy: &gc.ReverseLookupPolicy{Ratio: 0.3, MaxSpaceAmp: 1.1, MaxInFlight: 8}}, crashConfig{}},
		{"gc-rewrite", Options{MemTableSize: 32 << 10, TargetFileSize: 8 << 10, LBaseMaxBytes: 32 << 10, ValueThreshold: 32,
			GCPolicy: &gc.RewritePolicy{Ratio: 0.2, MaxSpaceAmp: 1.1, MaxInFlight: 8}}, crashConfig{}},
		// Rotations whose old WAL is not synced yet when the power goes
		// (the sealer's sync held back), small memtables so that replay
		// spans several WALs and fills memtables inside batches, merge
		// operands (which must be applied exactly once), and a second
		// crash during or right after the recovery from the first.
		{"wal-held-merge", Options{MemTableSize: 16 << 10, MaxImmutableMemTables: 64, ValueThreshold: 512, Merger: ListAppend},
			crashConfig{merge: true, holdLogSyncs: true, recrash: true, seeds: 20}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := seeds
			if tc.cfg.seeds > 0 {
				n = tc.cfg.seeds
			}
			for _, seed := range modelSeeds(t, n) {
				runCrashTest(t, seed, tc.opts, tc.cfg, steps, crashes)
			}
		})
	}
}

// crashConfig is what a crash test does beyond random writes and crashes.
type crashConfig struct {
	bulk   bool // begin and end bulk loads
	merge  bool // write merge operands (the options' Merger is ListAppend)
	ingest bool // ingest external tables among the writes
	// quiet leaves out flushes, compactions and range deletions (see
	// writer.quiet); smallReopen recovers half the crashed states with a
	// 16 KiB memtable.
	quiet, smallReopen bool
	// holdLogSyncs holds back the sealer's sync of each WAL a rotation
	// retires, until an operation needs it (a Sync write, a flush): the
	// crashes in between find the old WAL unsynced and the new one
	// written to.
	holdLogSyncs bool
	// recrash crashes again during the recovery from each crash (or
	// right after it), and checks that state too.
	recrash bool
	// seeds, if set, is the number of seeds to run (a cheap configuration
	// whose states of interest are rare runs more).
	seeds int
}

// crashModes are the crash behaviours crashes take turns at.
var crashModes = []vfs.CrashOptions{
	{TornWrites: true},
	{TornWrites: true, ZeroedPages: true},
	{TornWrites: true, LeakMetadata: true},
	{TornWrites: true, ZeroedPages: true, LeakMetadata: true},
}

// crashAt returns the crash options of the i-th crash of a run.
func crashAt(seed uint64, i int) vfs.CrashOptions {
	o := crashModes[i%len(crashModes)]
	o.Rand = rand.New(rand.NewPCG(seed, uint64(i)))
	return o
}

func runCrashTest(t *testing.T, seed uint64, opts Options, cfg crashConfig, steps, crashes int) {
	rng := rand.New(rand.NewPCG(seed, 0xc4a54))
	mem := vfs.NewMem()
	opts.FS = mem
	var held *logSyncHolder
	if cfg.holdLogSyncs {
		held = newLogSyncHolder(mem)
		opts.FS = held.fs
	}
	db, err := Open("db", &opts)
	require.NoError(t, err)
	h := &history{}
	w := &writer{rng: rng, db: db, h: h, wal: !opts.DisableWAL, bulk: cfg.bulk, merge: cfg.merge, rotate: cfg.holdLogSyncs, ingest: cfg.ingest, quiet: cfg.quiet}
	if held != nil {
		w.beforeWait = held.release
		defer held.release()
	}
	crashEvery := steps / crashes
	for i := 0; i < steps; i++ {
		if held != nil {
			if rng.IntN(20) == 0 {
				held.release()
			} else {
				held.hold()
			}
		}
		_, err := w.step()
		require.NoError(t, err, "seed %d step %d", seed, i)
		if rng.IntN(crashEvery) != 0 {
			continue
		}
		where := fmt.Sprintf("seed %d step %d", seed, i)
		clone := mem.CrashClone(crashAt(seed, i))
		ro := opts
		if cfg.smallReopen && rng.IntN(2) == 0 {
			// A process restarted with a smaller memtable: the replay
			// fills memtables, and flushes, where the crashed run did not.
			ro.MemTableSize = 16 << 10
			where += " (reopened with a 16 KiB memtable)"
		}
		if cfg.recrash {
			checkRecoveredTwice(t, clone, ro, h, len(h.ops), rng, crashAt(seed, i+1), where)
		} else {
			checkRecovered(t, clone, ro, h, len(h.ops), where)
		}
	}
	if held != nil {
		held.release()
		n := held.heldCount()
		require.Positive(t, n, "no WAL sync was held back")
		t.Logf("seed %d: %d WAL syncs held back", seed, n)
	}
	require.NoError(t, db.Close())
	// A clean close keeps everything.
	h.markDurable()
	checkRecovered(t, mem, opts, h, len(h.ops), fmt.Sprintf("seed %d after close", seed))
}

// logSyncHolder wraps a MemFS so that the sync of a WAL a rotation
// retires while holding waits until release: the window in which the old
// WAL is handed to the sealer and new writes go to the next one.
type logSyncHolder struct {
	fs *vfs.ErrorFS

	mu      sync.Mutex
	newest  string          // the newest WAL created
	retired map[string]bool // WALs retired while holding: their syncs wait
	gate    chan struct{}   // closed by release; the held syncs wait on it
	holding bool
	held    int // syncs held back so far
}

func newLogSyncHolder(mem *vfs.MemFS) *logSyncHolder {
	h := &logSyncHolder{gate: make(chan struct{}), holding: true, retired: map[string]bool{}}
	h.fs = vfs.NewErrorFS(mem, vfs.InjectorFunc(func(op vfs.Op) error {
		if !strings.HasSuffix(op.Path, ".log") {
			return nil
		}
		h.mu.Lock()
		switch {
		case op.Kind == vfs.OpCreate:
			if h.holding && h.newest != "" {
				h.retired[h.newest] = true
			}
			h.newest = op.Path
		case op.Kind == vfs.OpSync && h.retired[op.Path]:
			h.held++
			gate := h.gate
			h.mu.Unlock()
			<-gate
			return nil
		}
		h.mu.Unlock()
		return nil
	}))
	return h
}

// release lets the held syncs go, and holds none until hold.
func (h *logSyncHolder) release() {
	h.mu.Lock()
	if h.holding {
		close(h.gate)
		h.holding = false
		clear(h.retired)
	}
	h.mu.Unlock()
}

// hold holds the syncs of the WALs retired from now on, until release.
func (h *logSyncHolder) hold() {
	h.mu.Lock()
	if !h.holding {
		h.gate = make(chan struct{})
		h.holding = true
	}
	h.mu.Unlock()
}

// heldCount returns the number of syncs held back so far.
func (h *logSyncHolder) heldCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.held
}

// checkRecovered opens the database in fs and checks it holds the state of
// a prefix of h of length in [h.durable, maxLen]; then it writes more, and
// checks a clean reopen keeps that too.
func checkRecovered(t *testing.T, fs vfs.FS, opts Options, h *history, maxLen int, where string) {
	t.Helper()
	opts.FS = fs
	db, err := Open("db", &opts)
	require.NoError(t, err, "%s: open after crash", where)
	checkRecoveredDB(t, db, fs, opts, h, maxLen, where)
}

// checkRecoveredDB is checkRecovered on the database db opened in fs.
func checkRecoveredDB(t *testing.T, db *DB, fs vfs.FS, opts Options, h *history, maxLen int, where string) {
	t.Helper()
	got, err := readAll(t, db)
	require.NoError(t, err, "%s: scan after crash", where)
	p := h.matchPrefix(got, maxLen)
	if p < 0 {
		t.Fatalf("%s: recovered state is not a prefix of the history (%s)", where, h.describeMismatch(got))
	}
	// The recovered database keeps working: write on it and reopen.
	require.NoError(t, db.Set([]byte("after-crash"), []byte(where), Sync), where)
	require.NoError(t, db.Close(), where)
	opts.FS = fs
	db, err = Open("db", &opts)
	require.NoError(t, err, "%s: reopen after recovery", where)
	v, err := db.Get([]byte("after-crash"))
	require.NoError(t, err, where)
	require.Equal(t, where, string(v))
	require.NoError(t, db.Close())
}

// checkRecoveredTwice is checkRecovered, but the power goes again during
// the recovery, at a random filesystem operation of Open (or right after
// it returns, before the recovered writes are flushed): both crashed
// states must be prefixes of the history that keep every durable write.
func checkRecoveredTwice(t *testing.T, clone *vfs.MemFS, opts Options, h *history, maxLen int, rng *rand.Rand, again vfs.CrashOptions, where string) {
	t.Helper()
	at := rng.IntN(120)
	var (
		mu     sync.Mutex
		n      int
		second *vfs.MemFS
		armed  = true
	)
	efs := vfs.NewErrorFS(clone, vfs.InjectorFunc(func(op vfs.Op) error {
		mu.Lock()
		defer mu.Unlock()
		if armed && second == nil && op.Kind.IsWrite() {
			if n == at {
				second = clone.CrashClone(again)
			}
			n++
		}
		return nil
	}))
	opts.FS = efs
	db, err := Open("db", &opts)
	require.NoError(t, err, "%s: open after crash", where)
	mu.Lock()
	armed = false
	if second == nil {
		second = clone.CrashClone(again)
	}
	mu.Unlock()
	checkRecoveredDB(t, db, efs, opts, h, maxLen, where)
	checkRecovered(t, second, opts, h, maxLen, where+" (crashed again during recovery)")
}
