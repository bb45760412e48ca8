package strata

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/strata-db/strata/gc"
	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// gcValue is the value of key i in round r: large enough to be separated,
// and different in every round.
func gcValue(i, r int) []byte {
	v := bytes.Repeat([]byte{byte('a' + r%26)}, 300+i%200)
	copy(v, fmt.Sprintf("%d/%d/", i, r))
	return v
}

func gcKey(i int) []byte { return []byte(fmt.Sprintf("key%05d", i)) }

// waitGCIdle runs full compactions until garbage collection has nothing
// left to do: no collection waiting for its tables, no rewrite job. It
// waits on the DB's condition, which every flush, compaction, GC pass and
// rewrite broadcasts.
func waitGCIdle(t *testing.T, db *DB) {
	t.Helper()
	for round := 0; round < 20; round++ {
		require.NoError(t, db.Compact(nil, nil))
		db.mu.Lock()
		for !db.gcIdleLocked() && db.bgErr == nil {
			db.cond.Wait()
		}
		err := db.bgErr
		draining := len(db.gc.draining)
		db.mu.Unlock()
		require.NoError(t, err)
		if draining == 0 {
			return
		}
	}
}

// gcPolicies are the policies at thresholds that make them act on the
// small databases of these tests.
func gcPolicies() map[string]gc.Policy {
	return map[string]gc.Policy{
		"passive":        gc.Passive(),
		"reverse-lookup": &gc.ReverseLookupPolicy{Ratio: 0.5, MaxSpaceAmp: 1.3, MaxInFlight: 4},
		"rewrite":        &gc.RewritePolicy{Ratio: 0.3, MaxSpaceAmp: 1.3, MaxInFlight: 4},
		"cost":           gc.Cost(1.2),
	}
}

// TestGCReclaimsSpace overwrites every key several times and a random part
// of them once more: each policy must delete value logs, keep every value
// readable and exact (by Get and by scan, with a snapshot taken before the
// overwrites still seeing the old values), and the collecting ones must
// bring space amplification down where passive deletion alone cannot.
func TestGCReclaimsSpace(t *testing.T) {
	const n = 2000
	for name, policy := range gcPolicies() {
		t.Run(name, func(t *testing.T) {
			fs := vfs.NewMem()
			opts := &Options{FS: fs, MemTableSize: 128 << 10, ValueThreshold: 256, TargetFileSize: 64 << 10,
				LBaseMaxBytes: 256 << 10, ValueLogFileSize: 64 << 10, GCPolicy: policy}
			db, err := Open("db", opts)
			require.NoError(t, err)
			want := map[string][]byte{}
			for i := 0; i < n; i++ {
				require.NoError(t, db.Set(gcKey(i), gcValue(i, 0), nil))
				want[string(gcKey(i))] = gcValue(i, 0)
			}
			snap := db.NewSnapshot()
			rng := rand.New(rand.NewPCG(1, 2))
			for r := 1; r <= 3; r++ {
				for _, i := range rng.Perm(n) {
					require.NoError(t, db.Set(gcKey(i), gcValue(i, r), nil))
					want[string(gcKey(i))] = gcValue(i, r)
				}
			}
			for i := 0; i < n; i++ {
				if rng.IntN(3) == 0 {
					require.NoError(t, db.Set(gcKey(i), gcValue(i, 9), nil))
					want[string(gcKey(i))] = gcValue(i, 9)
				}
			}
			// The snapshot still reads the first round, across GC.
			waitGCIdle(t, db)
			for i := 0; i < n; i += 97 {
				got, err := snap.Get(gcKey(i))
				require.NoError(t, err)
				require.Equal(t, gcValue(i, 0), got)
			}
			require.NoError(t, snap.Close())
			waitGCIdle(t, db)

			for k, v := range want {
				got, err := db.Get([]byte(k))
				require.NoError(t, err, k)
				require.Equal(t, v, got, k)
			}
			got, err := readAll(t, db)
			require.NoError(t, err)
			require.Len(t, got, n)
			m := db.Metrics()
			t.Logf("%s\n%s", name, m.String())
			require.Positive(t, m.GC.DeletedFiles)
			if name != "passive" {
				require.Positive(t, m.GC.Relocated+uint64(m.GC.Rewrites), "the policy collected nothing")
				require.Less(t, m.SpaceAmp, 1.6, "space amplification after collection")
			}
			// Every value log on disk is in the version, and the reverse.
			require.NoError(t, db.Close())
			db, err = Open("db", opts)
			require.NoError(t, err)
			v := currentVersion(db)
			require.NoError(t, v.CheckLedger())
			onDisk := filesOfType(t, fs, base.FileTypeVlog)
			require.Len(t, onDisk, len(v.Vlogs))
			for k, val := range want {
				got, err := db.Get([]byte(k))
				require.NoError(t, err, k)
				require.Equal(t, val, got, k)
			}
			require.NoError(t, db.Close())
		})
	}
}

// TestGCKeepsFilesForReaders: a value log dropped from the tree stays on
// disk while an iterator that may read it is open.
func TestGCKeepsFilesForReaders(t *testing.T) {
	fs := vfs.NewMem()
	db, err := Open("db", &Options{FS: fs, ValueThreshold: 64, GCPolicy: gc.Passive()})
	require.NoError(t, err)
	for i := 0; i < 100; i++ {
		require.NoError(t, db.Set(gcKey(i), gcValue(i, 0), nil))
	}
	require.NoError(t, db.Flush())
	it, err := db.NewIter(nil)
	require.NoError(t, err)
	before := filesOfType(t, fs, base.FileTypeVlog)
	require.Len(t, before, 1)
	for i := 0; i < 100; i++ {
		require.NoError(t, db.Set(gcKey(i), gcValue(i, 1), nil))
	}
	waitGCIdle(t, db)
	require.Positive(t, db.Metrics().GC.DeletedFiles, "the first value log is all garbage")
	require.Contains(t, filesOfType(t, fs, base.FileTypeVlog), before[0], "deleted under an open iterator")
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		i := n
		require.Equal(t, gcValue(i, 0), it.Value())
		n++
	}
	require.Equal(t, 100, n)
	require.NoError(t, it.Close())
	db.mu.Lock()
	db.scheduleGCLocked()
	db.mu.Unlock()
	waitGCIdle(t, db)
	require.NotContains(t, filesOfType(t, fs, base.FileTypeVlog), before[0], "kept after the iterator closed")
	require.NoError(t, db.Close())
}

// TestGCCrashAtEveryStep: a database whose value logs are all garbage or
// mostly garbage is opened with a collecting policy, and the state a power
// loss would leave is taken before every filesystem operation while the
// collection runs (relocation, rewrite, new value logs, manifest edits,
// deletions). Every crashed state must open and hold exactly the data.
func TestGCCrashAtEveryStep(t *testing.T) {
	for _, name := range []string{"reverse-lookup", "rewrite", "passive"} {
		t.Run(name, func(t *testing.T) {
			policy := gcPolicies()[name]
			mem := vfs.NewMem()
			opts := Options{FS: mem, MemTableSize: 64 << 10, ValueThreshold: 64, ValueLogFileSize: 64 << 10,
				DisableGC: true}
			db, err := Open("db", &opts)
			require.NoError(t, err)
			const n = 400
			want := map[string][]byte{}
			for r := 0; r < 3; r++ {
				for i := 0; i < n; i++ {
					if r == 2 && i%3 != 0 {
						continue
					}
					require.NoError(t, db.Set(gcKey(i), gcValue(i, r), nil))
					want[string(gcKey(i))] = gcValue(i, r)
				}
				require.NoError(t, db.Flush())
			}
			require.NoError(t, db.Compact(nil, nil))
			require.NoError(t, db.Close())

			// Collect, cloning the state before every operation.
			var clones []*vfs.MemFS
			var clonesMu sync.Mutex
			var cloning atomic.Bool
			cloning.Store(true)
			efs := vfs.NewErrorFS(mem, vfs.InjectorFunc(func(op vfs.Op) error {
				if cloning.Load() && op.Kind.IsWrite() {
					c := mem.CrashClone(vfs.CrashOptions{})
					clonesMu.Lock()
					clones = append(clones, c)
					clonesMu.Unlock()
				}
				return nil
			}))
			opts.FS, opts.DisableGC, opts.GCPolicy = efs, false, policy
			opts.MaxConcurrentCompactions = 1
			db, err = Open("db", &opts)
			require.NoError(t, err)
			waitGCIdle(t, db)
			m := db.Metrics()
			require.Positive(t, m.GC.DeletedFiles)
			require.NoError(t, db.Close())
			cloning.Store(false)
			t.Logf("%d crash points; gc deleted %d value logs, moved %d values", len(clones), m.GC.DeletedFiles, m.GC.Relocated)

			check := func(fs vfs.FS, where string) {
				o := Options{FS: fs, MemTableSize: 64 << 10, ValueThreshold: 64, GCPolicy: policy}
				db, err := Open("db", &o)
				require.NoError(t, err, where)
				got, err := readAll(t, db)
				require.NoError(t, err, where)
				require.Len(t, got, len(want), where)
				for k, v := range want {
					require.Equal(t, string(v), got[k], "%s: key %s", where, k)
				}
				require.NoError(t, currentVersion(db).CheckLedger(), where)
				require.NoError(t, db.Close(), where)
			}
			for i, c := range clones {
				check(c, fmt.Sprintf("crash before write op %d", i))
			}
			check(mem, "after a clean close")
		})
	}
}

// TestReadAcrossCompaction: a Get or an iterator of the current state
// that starts while a key is overwritten, flushed and compacted must find
// the key. (Found as a rare flake of TestGCCrashAtEveryStep/rewrite, where
// the keys a rewrite had repointed went missing from a full scan: the read
// loaded its sequence number before its read state, and a compaction in
// between had dropped every entry of those keys older than the sequence
// number; only snapshots hold back what compactions drop.) The hook runs
// where a read loading the sequence number first would be between the two
// loads.
func TestReadAcrossCompaction(t *testing.T) {
	for _, read := range []string{"get", "iter"} {
		t.Run(read, func(t *testing.T) {
			db, err := Open("db", &Options{FS: vfs.NewMem(), DisableAutomaticCompactions: true})
			require.NoError(t, err)
			require.NoError(t, db.Set([]byte("k"), []byte("v1"), Sync))
			require.NoError(t, db.Flush())
			var once sync.Once
			testHookBeforeReadState = func() {
				once.Do(func() {
					require.NoError(t, db.Set([]byte("k"), []byte("v2"), Sync))
					require.NoError(t, db.Compact(nil, nil)) // flushes, then drops k's first version
				})
			}
			defer func() { testHookBeforeReadState = nil }()
			var got []byte
			if read == "get" {
				got, err = db.Get([]byte("k"))
				require.NoError(t, err, "the key went missing")
			} else {
				it, err := db.NewIter(nil)
				require.NoError(t, err)
				require.True(t, it.First(), "the key went missing")
				got = append([]byte(nil), it.Value()...)
				require.NoError(t, it.Close())
			}
			require.Equal(t, "v2", string(got))
			require.NoError(t, db.Close())
		})
	}
}

// TestReadAcrossRewrite: a GC rewrite records its new value log in a
// version, then commits pointers into it; a read that loaded its read
// state before the version and its sequence number after the commit sees
// those pointers into a value log its version lacks, and must still read
// them. (Found as a flake of TestModel/gc-rewrite: "value pointer into
// value log ..., which the database does not hold".) The hook runs between
// the read's two loads.
func TestReadAcrossRewrite(t *testing.T) {
	for _, read := range []string{"get", "iter"} {
		t.Run(read, func(t *testing.T) {
			db, err := Open("db", &Options{FS: vfs.NewMem(), ValueThreshold: 16, DisableGC: true,
				DisableAutomaticCompactions: true})
			require.NoError(t, err)
			big := strings.Repeat("v", 100)
			require.NoError(t, db.Set([]byte("k"), []byte(big), Sync))
			require.NoError(t, db.Flush())
			db.mu.Lock()
			v := db.vs.Current()
			v.Ref()
			require.Len(t, v.Vlogs, 1)
			var old *manifest.VlogMetadata
			for _, m := range v.Vlogs {
				old = m
			}
			db.mu.Unlock()
			defer v.Unref()
			var once sync.Once
			testHookAfterReadState = func() {
				once.Do(func() { require.NoError(t, db.rewriteVlog(v, old)) })
			}
			defer func() { testHookAfterReadState = nil }()
			var got []byte
			if read == "get" {
				got, err = db.Get([]byte("k"))
				require.NoError(t, err)
			} else {
				it, err := db.NewIter(nil)
				require.NoError(t, err)
				require.True(t, it.First(), "iterator: %v", it.Error())
				got = append([]byte(nil), it.Value()...)
				require.NoError(t, it.Close())
			}
			require.Equal(t, big, string(got))
			db.mu.Lock()
			require.Equal(t, int64(1), int64(db.gc.stats.relocated), "the rewrite repointed the key")
			db.mu.Unlock()
			require.NoError(t, db.Close())
		})
	}
}

// flakyPolicy panics on its first calls, then decides as its inner policy.
type flakyPolicy struct {
	inner  gc.Policy
	panics atomic.Int32 // calls left that panic
}

func (p *flakyPolicy) Name() string { return "flaky" }

func (p *flakyPolicy) Decide(v *manifest.Version, l gc.Ledger) gc.Decision {
	if p.panics.Add(-1) >= 0 {
		panic("policy bug")
	}
	return p.inner.Decide(v, l)
}

// TestGCPolicyPanics: a policy that panics (GC policies are pluggable,
// and a policy under research may have bugs) decides nothing in that
// pass; writes, reads and later passes go on, and once it decides again
// it collects. A panic used to kill the process from the background.
func TestGCPolicyPanics(t *testing.T) {
	p := &flakyPolicy{inner: gc.ReverseLookup(0.5)}
	p.panics.Store(3)
	db, err := Open("db", &Options{FS: vfs.NewMem(), MemTableSize: 64 << 10, ValueThreshold: 256,
		ValueLogFileSize: 64 << 10, GCPolicy: p})
	require.NoError(t, err)
	defer db.Close()
	for r := 0; r < 4; r++ {
		for i := 0; i < 500; i++ {
			require.NoError(t, db.Set(gcKey(i), gcValue(i, r), NoSync))
		}
		require.NoError(t, db.Flush())
	}
	waitGCIdle(t, db)
	require.Negative(t, p.panics.Load(), "the policy panicked and was asked again")
	require.NoError(t, db.Compact(nil, nil))
	waitGCIdle(t, db)
	require.Positive(t, db.Metrics().GC.DeletedFiles)
	for i := 0; i < 500; i++ {
		got, err := db.Get(gcKey(i))
		require.NoError(t, err)
		require.Equal(t, gcValue(i, 3), got)
	}
}
