package bench

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/checkpoint"
	"github.com/strata-db/strata/checkpoint/storetest"
	"github.com/strata-db/strata/vfs"
)

// TestStateBackend runs the statebackend workload at a small size on
// Strata and a peer: Strata's result holds a checkpoint round after the
// load and one per CheckpointEvery overwrites, a full restore and the
// rescales of every key by every method; the peer's is skipped with a note
// saying why.
func TestStateBackend(t *testing.T) {
	spec := DefaultSpec()
	spec.Engines = []string{"strata", "pebble"}
	spec.Benchmarks = []string{StateBackend}
	spec.Num = 3000
	spec.CheckpointEvery = 700
	spec.Value = ValueDist{Kind: "fixed", Size: 2000}
	spec.Config.MemTableSize = 1 << 20
	spec.StoreLatency = time.Millisecond
	spec.StoreBandwidth = 1 << 30
	spec.Dir = t.TempDir()
	rep, err := Run(context.Background(), spec, nil)
	require.NoError(t, err)
	require.Len(t, rep.Results, 2)
	st, peer := rep.Results[0], rep.Results[1]
	require.Equal(t, "strata", st.Engine)
	require.False(t, st.Skipped, st.Note)
	require.True(t, peer.Skipped)
	require.Equal(t, StateBackendNote, peer.Note)
	require.Nil(t, peer.StateBackend)

	require.Equal(t, int64(3000), st.Ops)
	require.Positive(t, st.OpsPerSec)
	require.Equal(t, int64(3000*(2+16+2000)), st.UserBytes)
	sb := st.StateBackend
	require.NotNil(t, sb)
	require.Equal(t, int64(700), sb.CheckpointEvery)
	// After the load, after 700, 1400, 2100 and 2800 overwrites, and at the end.
	require.Len(t, sb.Checkpoints, 6)
	var written int64
	for i, c := range sb.Checkpoints {
		require.Equal(t, i, c.Index)
		require.Positive(t, c.UploadedBytes, "checkpoint %d", i)
		require.Positive(t, c.Objects)
		require.Positive(t, c.ReferencedFiles)
		require.GreaterOrEqual(t, c.SpaceAmp, 1.0)
		// The stores saw what the uploads say they sent and composed.
		require.Positive(t, c.Store.Puts, "checkpoint %d", i)
		require.Equal(t, c.UploadedBytes, c.Store.PutBytes, "checkpoint %d", i)
		require.Equal(t, c.ComposedBytes, c.Store.CopiedBytes, "checkpoint %d", i)
		if i > 0 {
			written += c.WrittenBytes
		}
	}
	require.Equal(t, []int64{0, 700, 1400, 2100, 2800, 3000}, []int64{sb.Checkpoints[0].Ops, sb.Checkpoints[1].Ops,
		sb.Checkpoints[2].Ops, sb.Checkpoints[3].Ops, sb.Checkpoints[4].Ops, sb.Checkpoints[5].Ops})
	require.Equal(t, st.UserBytes, written)
	require.Equal(t, int64(3000), sb.Restore.Keys)
	require.Positive(t, sb.Restore.Duration)
	require.Len(t, sb.Rescale, len(RescaleMethods))
	for i, r := range sb.Rescale {
		require.Equal(t, RescaleMethods[i], r.Method)
		if r.Method == RescaleReference {
			require.True(t, r.Skipped, "by reference without shared files")
			require.Contains(t, r.Note, "shared mode only")
			continue
		}
		require.False(t, r.Skipped, "%s: %s", r.Method, r.Note)
		require.Equal(t, int64(3000), r.Keys, r.Method)
		require.Positive(t, r.Duration, r.Method)
		if r.Method == RescaleCopyLocal {
			require.Zero(t, r.Store, "copy-local asks nothing of the stores")
		} else {
			require.Positive(t, r.Store.Gets, r.Method)
			require.Positive(t, r.Store.GetBytes, r.Method)
			require.Zero(t, r.Store.Puts+r.Store.Deletes+r.Store.Composes, r.Method)
		}
	}
	// The restore fetches each file of the last checkpoints once.
	require.Positive(t, sb.Restore.Store.Gets)
	require.Positive(t, sb.Restore.Store.GetBytes)
	require.Zero(t, sb.Restore.Store.Puts+sb.Restore.Store.Deletes+sb.Restore.Store.Composes)
	require.Equal(t, time.Millisecond, sb.StoreLatency)
	require.Equal(t, int64(1<<30), sb.StoreBandwidth)
}

// sharedStateSpec is a statebackend run of num keys of 2000 bytes on
// Strata with its lower levels in the stores (a cache of 1 GiB),
// checkpointed every 1000 overwrites.
func sharedStateSpec(num int64) Spec {
	spec := DefaultSpec()
	spec.Engines = []string{"strata"}
	spec.Benchmarks = []string{StateBackend}
	spec.Num = num
	spec.CheckpointEvery = 1000
	spec.Value = ValueDist{Kind: "fixed", Size: 2000}
	spec.Config.MemTableSize = 256 << 10
	spec.Config.SharedCache = 1 << 30
	return spec
}

// TestStateBackendShared runs the statebackend workload in shared mode at
// a small size: the instances share their lower levels into the stores
// and checkpoint by reference, and the open-from-store step opens every
// instance cold in each round and once with the warm-up, each to its
// first Get with the requests it made, reads after each open, and
// compares reads with the local copies round by round.
func TestStateBackendShared(t *testing.T) {
	spec := sharedStateSpec(3000)
	spec.StoreLatency = time.Millisecond
	spec.OpenReadTime = 300 * time.Millisecond
	spec.OpenRepeats = 2
	defer func(b time.Duration) { stateOpenBucket = b }(stateOpenBucket)
	stateOpenBucket = 100 * time.Millisecond
	spec.Threads = 2
	spec.Dir = t.TempDir()
	rep, err := Run(context.Background(), spec, nil)
	require.NoError(t, err)
	st := rep.Results[0]
	require.False(t, st.Skipped, st.Note)
	sb := st.StateBackend
	require.Equal(t, int64(1<<30), sb.SharedCache)
	require.Len(t, sb.Checkpoints, 4) // after the load, 1000, 2000 and 3000 overwrites
	var shared StoreStats
	for i, c := range sb.Checkpoints {
		require.Positive(t, c.RegistryBytes, "checkpoint %d", i)
		require.LessOrEqual(t, c.RegistryBytes, c.UploadedBytes, "checkpoint %d", i)
		shared = shared.add(c.Shared)
	}
	require.Positive(t, shared.PutBytes, "the instances shared nothing")
	require.Equal(t, int64(3000), sb.Restore.Keys)
	// By reference: 2 -> 3, then 3 -> 2, each instance holding exactly
	// its keys, with nothing copied within the store and a hold put per
	// new instance. (The requests counted until a first Get returns
	// include the new instances' own background work once it has begun,
	// markers, shares and releases when the run is slow, and their
	// directories may hold tables of their first compactions.)
	require.Len(t, sb.Rescale, len(RescaleMethods)+1)
	for i, want := range [][2]int{{0, 0}, {stateNewInstances, stateOldInstances}} {
		r := sb.Rescale[i]
		require.Equal(t, RescaleReference, r.Method)
		require.False(t, r.Skipped, r.Note)
		require.Equal(t, want, [2]int{r.From, r.To})
		require.Equal(t, int64(3000), r.Keys)
		require.Positive(t, r.FirstGet)
		require.LessOrEqual(t, r.FirstGet, r.Duration)
		require.Positive(t, r.Store.Gets)
		n := stateNewInstances
		if i == 1 {
			n = stateOldInstances
		}
		require.GreaterOrEqual(t, r.Store.Puts, int64(n), "a hold per new instance")
		require.Zero(t, r.Store.Composes+r.Store.CopiedBytes)
	}

	so := sb.Open
	require.NotNil(t, so)
	require.Positive(t, so.StateBytes)
	require.Equal(t, 2, so.Readers)
	require.Equal(t, int64(DefaultSharedWarmup), so.Warmup)
	// Two cold rounds and the warm open, every instance in each.
	require.Len(t, so.Opens, 3*stateOldInstances)
	for i, o := range so.Opens {
		require.Equal(t, i/stateOldInstances+1 == 3, o.Warmup, "open %d", i)
		require.Equal(t, i%stateOldInstances, o.Instance, "open %d", i)
		require.Positive(t, o.Open, "open %d", i)
		require.Positive(t, o.FirstGet, "open %d", i)
		require.Positive(t, o.Store.Gets, "open %d", i)
		// Those still in flight when the first Get returned are counted,
		// not listed.
		require.LessOrEqual(t, len(o.Requests), int(o.Store.Gets+o.Store.Puts+o.Store.Lists+o.Store.Deletes), "open %d", i)
		require.Equal(t, "GET", o.Requests[0].Op, "open %d: the registry is read first", i)
	}
	names := map[string]bool{}
	for _, c := range so.Curves {
		names[c.Name] = true
		require.Positive(t, c.Ops, c.Name)
		require.NotEmpty(t, c.Samples, c.Name)
	}
	for _, want := range []string{CurveLocal, CurveCold + " 1", CurveCold + " 2", CurveWarmup, CurveZipfLocal, CurveZipfShared} {
		require.True(t, names[want], "no curve %q", want)
	}
	require.Positive(t, so.WarmedBytes)
	require.Len(t, so.Reads, 2)
	for _, r := range so.Reads {
		require.Len(t, r.Local, 2, r.Name)
		require.Len(t, r.Shared, 2, r.Name)
	}
	require.Equal(t, ReadsWarm, so.Reads[0].Name)
	require.Equal(t, ReadsZipfSmall, so.Reads[1].Name)
	require.Equal(t, stateZipfReaders, so.Reads[1].Readers)
	require.Less(t, so.Reads[1].CacheSize, so.StateBytes)
	require.Equal(t, int64(-1), so.WarmCache, "warm against a local copy is the whole state")

	// Without the local copies: the opens and the store's reads alone.
	spec.OpenSkipLocal = true
	spec.OpenRepeats = 1
	// And only one rescale method.
	spec.RescaleSkip = []string{RescaleCopy, RescaleIngest, RescaleCopyLocal}
	rep, err = Run(context.Background(), spec, nil)
	require.NoError(t, err)
	require.False(t, rep.Results[0].Skipped, rep.Results[0].Note)
	rescales := rep.Results[0].StateBackend.Rescale
	require.Len(t, rescales, len(RescaleMethods)+1)
	for _, rs := range rescales {
		require.Equal(t, rs.Method != RescaleRestore && rs.Method != RescaleReference, rs.Skipped, rs.Method)
		if rs.Skipped {
			require.Zero(t, rs.Keys, rs.Method)
		} else {
			require.Positive(t, rs.Keys, rs.Method)
		}
	}
	so = rep.Results[0].StateBackend.Open
	require.True(t, so.SkipLocal)
	require.Equal(t, spec.Config.SharedCache, so.WarmCache)
	require.Len(t, so.Opens, 2*stateOldInstances)
	var curves []string
	for _, c := range so.Curves {
		curves = append(curves, c.Name)
	}
	require.Equal(t, []string{CurveCold + " 1", CurveWarmup, CurveZipfShared}, curves)
	require.Len(t, so.Reads, 1)
	require.Empty(t, so.Reads[0].Local)
	require.Len(t, so.Reads[0].Shared, 1)
}

// TestStateBackendKeys: every key goes to the old instance that owns its
// key group, and the new instances' ranges split the old ones.
func TestStateBackendKeys(t *testing.T) {
	spec := DefaultSpec()
	spec.Num = 5000
	r := &stateRun{spec: &spec, groups: make([]uint16, spec.Num), user: make([]byte, spec.KeySize)}
	var per [stateOldInstances]int
	for i := range uint64(spec.Num) {
		key, inst := r.key(nil, i, true)
		start, end, _, _, err := instanceRange(stateOldInstances, inst)
		require.NoError(t, err)
		require.True(t, string(key) >= string(start) && (end == nil || string(key) < string(end)), "key %d outside its instance's range", i)
		again, inst2 := r.key(nil, i, false)
		require.Equal(t, key, again)
		require.Equal(t, inst, inst2)
		per[inst]++
	}
	for _, n := range per {
		require.InEpsilon(t, spec.Num/stateOldInstances, n, 0.1)
	}
	// The first and last new instances lie within one old instance, the
	// middle one spans both, the larger part first.
	for op, want := range [][]int{{0}, {0, 1}, {1}} {
		_, _, first, last, err := instanceRange(stateNewInstances, op)
		require.NoError(t, err)
		got, err := overlaps(first, last)
		require.NoError(t, err)
		require.ElementsMatch(t, want, got, "new instance %d", op)
	}
}

func TestStateBackendSpec(t *testing.T) {
	spec := DefaultSpec()
	spec.Engines = []string{"strata"}
	spec.Benchmarks = []string{StateBackend}
	spec.Num = 1234
	require.NoError(t, spec.Normalize())
	require.Equal(t, int64(123), spec.CheckpointEvery)
	spec.CheckpointEvery = -1
	require.ErrorContains(t, spec.Normalize(), "checkpoint_every")
	spec.CheckpointEvery = 0
	spec.StoreLatency, spec.StoreBandwidth = -1, -1
	err := spec.Normalize()
	require.ErrorContains(t, err, "store_latency")
	require.ErrorContains(t, err, "store_bandwidth")
	spec.StoreLatency, spec.StoreBandwidth = 0, 0
	spec.RescaleSkip = []string{RescaleCopy, "copy_local"}
	require.ErrorContains(t, spec.Normalize(), `no rescale method "copy_local"`)
	require.NotContains(t, DefaultSpec().Benchmarks, StateBackend, "the default run stays quick")
}

// TestCopyRangeReportsFailedRead: a rescale's copy whose source read fails
// returns the failure, and copies no empty value for the key it could not
// read.
func TestCopyRangeReportsFailedRead(t *testing.T) {
	mem := vfs.NewMem()
	var failVlogs atomic.Bool
	fs := vfs.NewErrorFS(mem, vfs.InjectorFunc(func(op vfs.Op) error {
		if failVlogs.Load() && op.Kind == vfs.OpOpen && strings.HasSuffix(op.Path, ".vlog") {
			return vfs.ErrInjected
		}
		return nil
	}))
	src, err := strata.Open("src", &strata.Options{FS: fs, ValueThreshold: 64})
	require.NoError(t, err)
	require.NoError(t, src.Set([]byte("a"), []byte("small"), nil))
	require.NoError(t, src.Set([]byte("b"), []byte(strings.Repeat("b", 100)), nil))
	require.NoError(t, src.Flush())
	require.NoError(t, src.Close())
	// No prefault: it would open the value log before the fault is armed.
	src, err = strata.Open("src", &strata.Options{FS: fs, ValueThreshold: 64, DisablePrefault: true})
	require.NoError(t, err)
	dst, err := strata.Open("dst", &strata.Options{FS: mem})
	require.NoError(t, err)

	failVlogs.Store(true)
	require.ErrorIs(t, copyRange(dst, src, nil, nil, strata.NoSync), vfs.ErrInjected)
	_, err = dst.Get([]byte("b"))
	require.ErrorIs(t, err, strata.ErrNotFound, "the value that could not be read was copied")
	require.NoError(t, src.Close())
	require.NoError(t, dst.Close())
}

// TestStateBackendS3: with Spec.StoreS3 the stores are prefixes of an S3
// bucket (a versitygw server), the shared mode runs against it, and the
// run leaves no object behind.
func TestStateBackendS3(t *testing.T) {
	endpoint := storetest.StartS3Server(t)
	t.Setenv("AWS_ACCESS_KEY_ID", storetest.S3AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", storetest.S3SecretKey)
	spec := sharedStateSpec(2000)
	spec.Config.SharedPartSize = 64 << 10
	spec.StoreS3 = endpoint + "/kvbench"
	spec.OpenReadTime = 200 * time.Millisecond
	spec.OpenRepeats = 1
	spec.OpenSkipLocal = true
	defer func(b time.Duration) { stateOpenBucket = b }(stateOpenBucket)
	stateOpenBucket = 100 * time.Millisecond
	spec.Dir = t.TempDir()
	rep, err := Run(context.Background(), spec, nil)
	require.NoError(t, err)
	st := rep.Results[0]
	require.False(t, st.Skipped, st.Note)
	require.True(t, st.StateBackend.StoreS3)
	require.Equal(t, int64(2000), st.StateBackend.Restore.Keys)
	require.NotNil(t, st.StateBackend.Open)

	s, err := checkpoint.NewS3Store(checkpoint.S3Options{Endpoint: endpoint, Bucket: "kvbench",
		AccessKey: storetest.S3AccessKey, SecretKey: storetest.S3SecretKey})
	require.NoError(t, err)
	left, err := s.List(context.Background(), "")
	require.NoError(t, err)
	require.Zero(t, len(left), "objects left in the bucket")
}
