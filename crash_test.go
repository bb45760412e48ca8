package strata

import (
	"fmt"
	"math/rand/v2"
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
	}{
		{"wal", Options{MemTableSize: 64 << 10, TargetFileSize: 32 << 10}},
		{"wal-torn", Options{MemTableSize: 64 << 10, BlockSize: 1024, ValueThreshold: 64}},
		{"no-wal", Options{MemTableSize: 64 << 10, DisableWAL: true, ValueThreshold: 100}},
		// Bulk loads begin and end among the writes: a crash inside one
		// keeps a prefix, one after it keeps the whole load.
		{"wal-bulk", Options{MemTableSize: 64 << 10, ValueThreshold: 64}},
		// Garbage collection at thresholds that keep it busy: a crash can
		// fall in the middle of a relocation, a rewrite or a deletion.
		{"gc-recompact", Options{MemTableSize: 32 << 10, TargetFileSize: 8 << 10, LBaseMaxBytes: 32 << 10, ValueThreshold: 32,
			GCPolicy: &gc.ReverseLookupPolicy{Ratio: 0.3, MaxSpaceAmp: 1.1, MaxInFlight: 8}}},
		{"gc-rewrite", Options{MemTableSize: 32 << 10, TargetFileSize: 8 << 10, LBaseMaxBytes: 32 << 10, ValueThreshold: 32,
			GCPolicy: &gc.RewritePolicy{Ratio: 0.2, MaxSpaceAmp: 1.1, MaxInFlight: 8}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, seed := range modelSeeds(t, seeds) {
				runCrashTest(t, seed, tc.opts, tc.name == "wal-torn", tc.name == "wal-bulk", steps, crashes)
			}
		})
	}
}

func runCrashTest(t *testing.T, seed uint64, opts Options, torn, bulk bool, steps, crashes int) {
	rng := rand.New(rand.NewPCG(seed, 0xc4a54))
	fs := vfs.NewMem()
	opts.FS = fs
	db, err := Open("db", &opts)
	require.NoError(t, err)
	h := &history{}
	w := &writer{rng: rng, db: db, h: h, wal: !opts.DisableWAL, bulk: bulk}
	crashEvery := steps / crashes
	for i := 0; i < steps; i++ {
		_, err := w.step()
		require.NoError(t, err, "seed %d step %d", seed, i)
		if rng.IntN(crashEvery) != 0 {
			continue
		}
		clone := fs.CrashClone(vfs.CrashOptions{TornWrites: torn, Rand: rand.New(rand.NewPCG(seed, uint64(i)))})
		checkRecovered(t, clone, opts, h, len(h.ops), fmt.Sprintf("seed %d step %d", seed, i))
	}
	require.NoError(t, db.Close())
	// A clean close keeps everything.
	h.markDurable()
	checkRecovered(t, fs, opts, h, len(h.ops), fmt.Sprintf("seed %d after close", seed))
}

// checkRecovered opens the database in fs and checks it holds the state of
// a prefix of h of length in [h.durable, maxLen]; then it writes more, and
// checks a clean reopen keeps that too.
func checkRecovered(t *testing.T, fs vfs.FS, opts Options, h *history, maxLen int, where string) {
	t.Helper()
	opts.FS = fs
	db, err := Open("db", &opts)
	require.NoError(t, err, "%s: open after crash", where)
	got, err := readAll(t, db)
	require.NoError(t, err, "%s: scan after crash", where)
	p := h.matchPrefix(got, maxLen)
	if p < 0 {
		t.Fatalf("%s: recovered state is not a prefix of the history (%s)", where, h.describeMismatch(got))
	}
	// The recovered database keeps working: write on it and reopen.
	require.NoError(t, db.Set([]byte("after-crash"), []byte(where), Sync), where)
	require.NoError(t, db.Close(), where)
	db, err = Open("db", &opts)
	require.NoError(t, err, "%s: reopen after recovery", where)
	v, err := db.Get([]byte("after-crash"))
	require.NoError(t, err, where)
	require.Equal(t, where, string(v))
	require.NoError(t, db.Close())
}
