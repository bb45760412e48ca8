package strata

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strata-db/strata/checkpoint"
	"github.com/strata-db/strata/gc"
	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/remote"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// rescaleKey is key i of the rescale tests' key space (0..1999).
func rescaleKey(i int) string { return fmt.Sprintf("k%05d", i) }

// rescaleInstance is a database of the rescale tests, its registry in the
// store, and the model of what it holds.
type rescaleInstance struct {
	// first is its first checkpoint, taken as it was opened.
	first part
	name  string
	db    *DB
	reg   checkpoint.Store
	up    *checkpoint.Uploader
	want  model
}

// part is a checkpoint and what it holds.
type part struct {
	c    checkpoint.StoreCheckpoint
	want model
}

func rescaleOptions(fs vfs.FS, store checkpoint.Store, policy gc.Policy) *Options {
	return &Options{FS: fs, SharedStore: store, GCPolicy: policy, SharedFromLevel: 1, SharedCacheSize: 256 << 10,
		MemTableSize: 16 << 10, ValueThreshold: 256, ValueLogFileSize: 64 << 10, TargetFileSize: 4 << 10,
		LBaseMaxBytes: 16 << 10}
}

func newRescaleInstance(t *testing.T, store checkpoint.Store, name string, db *DB, want model) *rescaleInstance {
	t.Helper()
	reg, err := checkpoint.Named(store, name)
	require.NoError(t, err)
	up, err := checkpoint.NewUploader(reg, &checkpoint.UploadOptions{KeepLast: 2})
	require.NoError(t, err)
	return &rescaleInstance{name: name, db: db, reg: reg, up: up, want: want}
}

// write applies n random writes to keys [lo, hi): sets of values inline
// and separated, deletions, a range deletion now and then.
func (in *rescaleInstance) write(t *testing.T, rng *rand.Rand, lo, hi, n, round int) {
	t.Helper()
	for range n {
		i := lo + rng.IntN(hi-lo)
		k := rescaleKey(i)
		switch r := rng.IntN(100); {
		case r < 8:
			require.NoError(t, in.db.Delete([]byte(k), NoSync))
			delete(in.want, k)
		case r < 9:
			j := min(hi, i+1+rng.IntN(20))
			require.NoError(t, in.db.DeleteRange([]byte(k), []byte(rescaleKey(j)), NoSync))
			in.want.deleteRange(k, rescaleKey(j))
		default:
			v := fmt.Sprintf("%s-%d-%s", k, round, string(make([]byte, rng.IntN(900))))
			require.NoError(t, in.db.Set([]byte(k), []byte(v), NoSync))
			in.want[k] = v
		}
	}
}

func (in *rescaleInstance) checkpoint(t *testing.T) checkpoint.StoreCheckpoint {
	t.Helper()
	st, err := in.db.CheckpointToStore(t.Context(), in.up)
	require.NoError(t, err)
	return checkpoint.StoreCheckpoint{Store: in.reg, ID: st.ID}
}

// check requires that the instance holds exactly its model: a forward
// and a backward scan, and point reads of every key of the key space
// (those outside its range are not found).
func (in *rescaleInstance) check(t *testing.T, what string) {
	t.Helper()
	got, err := readAll(t, in.db)
	require.NoError(t, err, what)
	require.Equal(t, in.want, got, "%s: %s", in.name, what)
	it, err := in.db.NewIter(nil)
	require.NoError(t, err)
	var back []string
	for ok := it.Last(); ok; ok = it.Prev() {
		back = append(back, string(it.Key()))
	}
	require.NoError(t, it.Close())
	slices.Reverse(back)
	require.Equal(t, in.want.sortedKeys(nil, nil), back, "%s: %s: backward", in.name, what)
	// Seeks both ways from every tenth key of the key space, and a step
	// on: they cross the bounds of virtual tables.
	keys := in.want.sortedKeys(nil, nil)
	it, err = in.db.NewIter(nil)
	require.NoError(t, err)
	for i := 0; i < 2000; i += 10 {
		k := rescaleKey(i)
		j, _ := slices.BinarySearch(keys, k)
		if it.SeekGE([]byte(k)) {
			require.Less(t, j, len(keys), "%s: %s: SeekGE(%s)", in.name, what, k)
			require.Equal(t, keys[j], string(it.Key()), "%s: %s: SeekGE(%s)", in.name, what, k)
			if it.Next() {
				require.Equal(t, keys[j+1], string(it.Key()), "%s: %s: SeekGE(%s), Next", in.name, what, k)
			}
		} else {
			require.Equal(t, len(keys), j, "%s: %s: SeekGE(%s)", in.name, what, k)
		}
		if it.SeekLT([]byte(k)) {
			require.Positive(t, j, "%s: %s: SeekLT(%s)", in.name, what, k)
			require.Equal(t, keys[j-1], string(it.Key()), "%s: %s: SeekLT(%s)", in.name, what, k)
			if it.Prev() {
				require.Equal(t, keys[j-2], string(it.Key()), "%s: %s: SeekLT(%s), Prev", in.name, what, k)
			}
		} else {
			require.Zero(t, j, "%s: %s: SeekLT(%s)", in.name, what, k)
		}
	}
	require.NoError(t, it.Close())
	for i := range 2000 {
		k := rescaleKey(i)
		v, err := in.db.Get([]byte(k))
		if want, ok := in.want[k]; ok {
			require.NoError(t, err, "%s: %s: key %s", in.name, what, k)
			require.Equal(t, want, string(v), "%s: %s: key %s", in.name, what, k)
		} else {
			require.ErrorIs(t, err, ErrNotFound, "%s: %s: key %s", in.name, what, k)
		}
	}
}

// restrict returns the part of m in [lo, hi) ("" : no bound).
func restrict(m model, lo, hi string) model {
	out := model{}
	for k, v := range m {
		if k >= lo && (hi == "" || k < hi) {
			out[k] = v
		}
	}
	return out
}

// virtualTables counts the virtual tables of db's current version.
func virtualTables(db *DB) int {
	db.mu.Lock()
	defer db.mu.Unlock()
	return virtualTables0(db)
}

func virtualTables0(db *DB) int {
	n := 0
	db.vs.Current().Files(func(_ int, f *manifest.FileMetadata) {
		if f.Virtual {
			n++
		}
	})
	return n
}

// requireNoDownloads requires that dir holds no table or value log: the
// instance opened from the store references them.
func requireNoDownloads(t *testing.T, fs vfs.FS, dir string) {
	t.Helper()
	names, err := fs.List(dir)
	require.NoError(t, err)
	for _, name := range names {
		typ, _, _ := base.ParseFilename(name)
		require.NotEqual(t, base.FileTypeTable, typ, "%s: a table was copied: %v", dir, names)
		require.NotEqual(t, base.FileTypeVlog, typ, "%s: a value log was copied: %v", dir, names)
	}
}

// TestOpenRangeFromStoreRescale rescales two instances to three, back to
// two and to three again by reference: each new instance is the union of its old
// instances' checkpoints restricted to its key range, opened without a
// table or value log copied; it holds exactly its part of the old state
// (scans both ways, point reads of every key of the key space), takes
// writes, compacts its virtual tables away, checkpoints, reopens; and
// the store's audit finds every object the instances and the retained
// checkpoints use.
//
// It runs under every garbage-collection policy (under the race detector,
// whose run is some ten times slower, the default one only, unless soak).
func TestOpenRangeFromStoreRescale(t *testing.T) {
	policies := []string{"reverse-lookup", "passive", "rewrite", "cost"}
	if raceEnabled && !soak {
		policies = []string{"reverse-lookup"}
	}
	for _, name := range policies {
		t.Run(name, func(t *testing.T) {
			policy, err := gc.ByName(name)
			require.NoError(t, err)
			testOpenRangeFromStoreRescale(t, policy)
		})
	}
}

func testOpenRangeFromStoreRescale(t *testing.T, policy gc.Policy) {
	ctx := t.Context()
	fs := vfs.NewMem()
	store, err := checkpoint.NewLocalStoreFS(fs, "store")
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(7, 8))
	open := func(dir string) *DB {
		db, err := Open(dir, rescaleOptions(fs, store, policy))
		require.NoError(t, err)
		return db
	}
	var all []*rescaleInstance
	// audit checks the store against the instances so far, all closed
	// (a database at work may delete an object after its manifest was
	// read).
	audit := func(what string) {
		t.Helper()
		var dirs []string
		for _, in := range all {
			require.Nil(t, in.db, "%s is open", in.name)
			dirs = append(dirs, in.name)
		}
		requireNoProblems(t, fs, store, what, dirs...)
	}
	closeAll := func(ins ...*rescaleInstance) {
		t.Helper()
		for _, in := range ins {
			require.NoError(t, in.db.Close())
			in.db = nil
		}
	}
	reopen := func(what string, ins ...*rescaleInstance) {
		t.Helper()
		for _, in := range ins {
			in.db = open(in.name)
			in.check(t, what)
		}
	}

	// Two instances, each with half of the key space.
	a := newRescaleInstance(t, store, "a", open("a"), model{})
	b := newRescaleInstance(t, store, "b", open("b"), model{})
	all = append(all, a, b)
	for round := range 3 {
		a.write(t, rng, 0, 1000, 1500, round)
		b.write(t, rng, 1000, 2000, 1500, round)
	}
	ca, cb := a.checkpoint(t), b.checkpoint(t)

	// 2 -> 3.
	split := func(name string, lo, hi string, parts ...part) *rescaleInstance {
		t.Helper()
		var start, end []byte
		if lo != "" {
			start = []byte(lo)
		}
		if hi != "" {
			end = []byte(hi)
		}
		var srcs []checkpoint.StoreCheckpoint
		want := model{}
		for _, p := range parts {
			srcs = append(srcs, p.c)
			for k, v := range restrict(p.want, lo, hi) {
				want[k] = v
			}
		}
		// Without compactions until it is reopened: the first reads
		// see the tables as referenced, virtual ones among them.
		o := rescaleOptions(fs, store, policy)
		o.DisableAutomaticCompactions, o.DisableGC = true, true
		db, err := OpenRangeFromCheckpoints(ctx, srcs, start, end, name, o)
		require.NoError(t, err, name)
		requireNoDownloads(t, fs, name)
		in := newRescaleInstance(t, store, name, db, want)
		all = append(all, in)
		in.check(t, "opened from the store")
		// Its checkpoint, virtual tables and all, restores to the same.
		c := in.checkpoint(t)
		in.first = part{c, want.clone()}
		dir := fmt.Sprintf("restored-%s-%d", name, c.ID)
		require.NoError(t, checkpoint.Restore(ctx, c.Store, c.ID, fs, dir, nil))
		r, err := Open(dir, &Options{FS: fs, ReadOnly: true})
		require.NoError(t, err)
		got, err := readAll(t, r)
		require.NoError(t, err)
		require.Equal(t, want, got, "%s: restored from its checkpoint", name)
		require.NoError(t, r.Close())
		return in
	}
	pa, pb := part{ca, a.want.clone()}, part{cb, b.want.clone()}
	// The old instances go on after their checkpoints: what they write
	// is not in the new ones.
	a.write(t, rng, 0, 1000, 200, 9)
	x := split("x", "", rescaleKey(667), pa)
	y := split("y", rescaleKey(667), rescaleKey(1333), pa, pb)
	z := split("z", rescaleKey(1333), "", pb)
	for _, in := range []*rescaleInstance{x, y, z} {
		in.db.mu.Lock()
		t.Logf("%s: %d keys; %d virtual tables; tree:\n%s", in.name, len(in.want), virtualTables0(in.db), in.db.vs.Current().String())
		in.db.mu.Unlock()
	}
	require.Positive(t, virtualTables(x.db)+virtualTables(y.db)+virtualTables(z.db), "no table straddles a bound")
	closeAll(a, b, x, y, z)
	audit("three instances and the old two")
	reopen("reopened", x, y, z)

	// 3 -> 2 from the checkpoints the three took as they were opened:
	// two virtual tables of one table of a's meet again in one instance
	// (and in its checkpoint).
	p0 := split("p0", "", rescaleKey(1000), x.first, y.first)
	closeAll(p0)

	// A range where two checkpoints overlap is refused.
	_, err = OpenRangeFromCheckpoints(ctx, []checkpoint.StoreCheckpoint{ca, x.checkpoint(t)}, nil, nil, "bad", rescaleOptions(fs, store, policy))
	require.ErrorContains(t, err, "overlap")

	for round := 10; round < 12; round++ {
		x.write(t, rng, 0, 667, 400, round)
		y.write(t, rng, 667, 1333, 400, round)
		z.write(t, rng, 1333, 2000, 400, round)
	}
	for _, in := range []*rescaleInstance{x, y, z} {
		in.check(t, "after writes")
		require.NoError(t, in.db.Compact(nil, nil))
		require.Zero(t, virtualTables(in.db), "%s: a virtual table survived a full compaction", in.name)
		in.check(t, "compacted")
		// What it holds of value logs converges on what its own tables
		// reference: a value log none of them does is its no longer, once
		// garbage collection (in the background) has dropped it.
		require.Eventually(t, func() bool { _, _, dead := vlogSpace(in.db); return dead == 0 },
			20*time.Second, 10*time.Millisecond, "%s holds value logs none of its tables references", in.name)
		held, live, _ := vlogSpace(in.db)
		t.Logf("%s after a full compaction: value logs %d bytes, %d referenced by its tables", in.name, held, live)
	}
	px, py, pz := part{x.checkpoint(t), x.want.clone()}, part{y.checkpoint(t), y.want.clone()}, part{z.checkpoint(t), z.want.clone()}
	closeAll(x, y, z)
	audit("three instances, checkpointed")

	// 3 -> 2.
	p := split("p", "", rescaleKey(1000), px, py)
	q := split("q", rescaleKey(1000), "", py, pz)
	closeAll(p, q)
	audit("two instances again")
	reopen("reopened", p, q)
	p.write(t, rng, 0, 1000, 300, 20)
	q.write(t, rng, 1000, 2000, 300, 20)
	closeAll(p, q)
	reopen("written and reopened", p, q)
	pp, pq := part{p.checkpoint(t), p.want.clone()}, part{q.checkpoint(t), q.want.clone()}
	closeAll(p, q)
	audit("two instances, checkpointed")

	// 2 -> 3 again, at other bounds.
	r0 := split("r0", "", rescaleKey(500), pp)
	r1 := split("r1", rescaleKey(500), rescaleKey(1500), pp, pq)
	r2 := split("r2", rescaleKey(1500), "", pq)
	closeAll(r0, r1, r2)
	reopen("reopened", r0, r1, r2)
	r0.write(t, rng, 0, 500, 300, 30)
	r1.write(t, rng, 500, 1500, 300, 30)
	r2.write(t, rng, 1500, 2000, 300, 30)
	for _, in := range []*rescaleInstance{r0, r1, r2} {
		in.check(t, "written")
		require.NoError(t, in.db.Compact(nil, nil))
		in.check(t, "compacted")
	}
	closeAll(r0, r1, r2)
	audit("at the end")
}

// vlogSpace returns the bytes of the value logs of db's version, the
// record bytes its tables reference in them, and the bytes of those its
// tables do not reference at all.
func vlogSpace(db *DB) (held, live, dead uint64) {
	db.mu.Lock()
	defer db.mu.Unlock()
	v := db.vs.Current()
	for num, m := range v.Vlogs {
		held += m.Size
		l := v.VlogLive(num)
		live += l
		if l == 0 {
			dead += m.Size
		}
	}
	return held, live, dead
}

// TestSharedValueLogGarbagePerInstance: two instances opened from key
// ranges of one checkpoint share its value logs. One of them overwrites
// most of its keys: its garbage collection counts only its own records,
// so it relocates what it still uses out of the shared value logs and
// drops them, while the other instance reads its values from the same
// objects unchanged; the objects stay while it (and the registry) hold
// them, and the audit finds the store consistent throughout.
func TestSharedValueLogGarbagePerInstance(t *testing.T) {
	ctx := t.Context()
	fs := vfs.NewMem()
	store, err := checkpoint.NewLocalStoreFS(fs, "store")
	require.NoError(t, err)
	opts := func() *Options {
		o := rescaleOptions(fs, store, gc.ReverseLookup(0.5))
		o.SharedCacheSize = 16 << 10 // reads go to the store
		return o
	}
	a, err := Open("a", opts())
	require.NoError(t, err)
	want := model{}
	for i := range 1000 {
		k, v := rescaleKey(i), fmt.Sprintf("%s-0-%s", rescaleKey(i), string(make([]byte, 300+i%500)))
		require.NoError(t, a.Set([]byte(k), []byte(v), NoSync))
		want[k] = v
	}
	require.NoError(t, a.Compact(nil, nil))
	reg, err := checkpoint.Named(store, "a")
	require.NoError(t, err)
	u, err := checkpoint.NewUploader(reg, nil)
	require.NoError(t, err)
	st, err := a.CheckpointToStore(ctx, u)
	require.NoError(t, err)
	require.NoError(t, a.Close())

	mid := rescaleKey(500)
	x, err := OpenRangeFromStore(ctx, reg, []uint64{st.ID}, nil, []byte(mid), "x", opts())
	require.NoError(t, err)
	// y does nothing on its own meanwhile (no compaction, no garbage
	// collection): what changes its view could only come from x.
	yo := opts()
	yo.DisableAutomaticCompactions, yo.DisableGC = true, true
	y, err := OpenRangeFromStore(ctx, reg, []uint64{st.ID}, []byte(mid), nil, "y", yo)
	require.NoError(t, err)
	vlogsOf := func(db *DB) map[base.FileNum]string {
		db.mu.Lock()
		defer db.mu.Unlock()
		out := map[base.FileNum]string{}
		v := db.vs.Current()
		for num := range v.Vlogs {
			if r, ok := v.SharedRef(true, num); ok {
				out[num] = r.Object
			}
		}
		return out
	}
	xv, yv := vlogsOf(x), vlogsOf(y)
	var both []base.FileNum
	for num, obj := range xv {
		if yv[num] == obj {
			both = append(both, num)
		}
	}
	require.NotEmpty(t, both, "the instances share no value log")

	// x overwrites nine keys in ten of its range.
	xWant, yWant := restrict(want, "", mid), restrict(want, mid, "")
	for i := range 500 {
		if i%10 == 0 {
			continue
		}
		k, v := rescaleKey(i), fmt.Sprintf("%s-1-%s", rescaleKey(i), string(make([]byte, 400)))
		require.NoError(t, x.Set([]byte(k), []byte(v), NoSync))
		xWant[k] = v
	}
	require.NoError(t, x.Compact(nil, nil))
	require.Eventually(t, func() bool {
		now := vlogsOf(x)
		for _, num := range both {
			if _, ok := now[num]; ok {
				return false
			}
		}
		return true
	}, 30*time.Second, 10*time.Millisecond, "x kept a shared value log it holds a tenth of")
	got, err := readAll(t, x)
	require.NoError(t, err)
	require.Equal(t, xWant, got)
	// y is as it was: the same value logs, its values read from them.
	require.Equal(t, yv, vlogsOf(y))
	got, err = readAll(t, y)
	require.NoError(t, err)
	require.Equal(t, yWant, got)
	x.waitSharedIdle()
	y.waitSharedIdle()
	for _, num := range both {
		objs, err := store.List(ctx, yv[num])
		require.NoError(t, err)
		require.NotEmpty(t, objs, "the object of value log %s, which y uses, is gone", num)
	}
	require.NoError(t, x.Close())
	require.NoError(t, y.Close())
	// y then compacts and collects on its own: its values stay.
	y, err = Open("y", opts())
	require.NoError(t, err)
	require.NoError(t, y.Compact(nil, nil))
	got, err = readAll(t, y)
	require.NoError(t, err)
	require.Equal(t, yWant, got)
	y.waitSharedIdle()
	require.NoError(t, y.Close())
	// (Markers a Close left on released files are strays the instance
	// drops at its next Open, which the rules allow.)
	requireNoProblems(t, fs, store, "at the end", "a", "x", "y")
}

// TestRescaleStoreSpace measures what a store holds after a job's life:
// two instances checkpoint 20 times (KeepLast 3 each) with overwrites in
// between, rescale 2 -> 3 after the 7th and 3 -> 2 after the 14th by
// reference, and retire the registries of the instances they replace.
// The store's bytes (every object: shared files, checkpoints' data,
// registries, markers) are logged against the live state of the
// instances at the end (keys and values), and must stay under 3x (2.72x
// measured: the files here are tiny, so registries, which list every
// file of their checkpoints, and partly used value logs weigh more than
// they would at scale; see TestRescaleStoreSpaceScale); the audit stays
// clean. Then each instance settles (full compactions until garbage
// collection is idle): its value logs and tables, referenced or its own,
// come within 1.5x its live state (1.32x measured; 1.50x under the
// default policy, whose ceiling is 1.5, and 1.16-1.22x under
// gc.Rewrite).
func TestRescaleStoreSpace(t *testing.T) {
	fs := vfs.NewMem()
	store, err := checkpoint.NewLocalStoreFS(fs, "store")
	require.NoError(t, err)
	r := rescaleStoreSpace(t, spaceRun{fs: fs, store: store, keys: 2000, check: true,
		opts: func() *Options { return rescaleOptions(fs, store, gc.Cost(gc.DefaultBudget)) }})
	require.Less(t, r.store, 3.0)
	for name, amp := range r.settled {
		require.LessOrEqual(t, amp, 1.5, "%s settled", name)
	}
}

// TestRescaleStoreSpaceScale is TestRescaleStoreSpace on the disk, with
// STRATA_SPACE_KEYS keys (default 60,000, values of 1-2 KiB: some 90 MB
// of live state) and files in the proportions of a state of gigabytes
// with the default sizes (4 MiB value logs and memtables, 1 MiB tables:
// some 20 value logs' worth per instance), under each policy named in
// STRATA_SPACE_POLICIES (default, cost, rewrite, or foreign: default with
// ForeignRatio 0.5; comma-separated). STRATA_SPACE_FILE_SIZE sets the
// memtables' and value logs' size in bytes (tables a quarter of it):
// 512 KiB gives the proportions of a state of some 11 GiB. It
// only measures (the figures are logged) and runs only when
// STRATA_SPACE_POLICIES is set. STRATA_SPACE_CHURN lists the shares of
// keys overwritten between two checkpoints to run, in percent (default
// 10). Measured, three to six runs a cell, the store over the live
// state after the 20th checkpoint (and the instances over their own live
// state, settled):
//
//	churn   default             cost                rewrite
//	2%      1.44-1.45x (1.48)   1.54-1.60x (1.30)   1.53-1.54x (1.37-1.42)
//	5%      1.85-2.01x (1.49)   1.76-1.82x (1.30)   1.60-1.79x (1.38-1.43)
//	10%     2.08-2.11x (1.50)   1.95-2.21x (1.31)   1.78-1.83x (1.41-1.45)
//
// and "foreign" (gc.ReverseLookupPolicy.ForeignRatio) 1.52-1.53x,
// 1.82-1.86x and 1.90-1.92x. (Before checkpoints shared the value log
// their flush finished, instead of copying it into their data, each
// figure was 0.05-0.2x higher: the default 1.50x, 2.09-2.13x and
// 2.05-2.25x.) With files 8x smaller (STRATA_SPACE_FILE_SIZE=524288,
// the proportions of some 11 GiB of state), two runs a cell:
//
//	churn   default             cost                rewrite
//	2%      1.46x (1.47)        1.56-1.57x (1.30)   1.49x (1.40)
//	5%      1.86x (1.51-1.52)   1.74-1.79x (1.30-1.32)  1.51x (1.37-1.38)
//	10%     2.06-2.07x (1.49-1.52)  2.05-2.09x (1.31-1.32)  1.88-1.91x (1.42-1.43)
//
// What the store holds beyond the instances' value logs is the retained
// checkpoints' (KeepLast 3): value logs that garbage collection emptied
// since the oldest retained checkpoint, which still names them, and the
// value logs of the instances a rescale replaced while the new ones
// still point into them. The first part sets a floor for any collection
// that frees whole files. With churn c a checkpoint interval overwrites
// cL of a live state L; to keep up, collection frees files of garbage
// ratio g at cL/g a interval, and the two intervals since the oldest
// retained checkpoint keep 2cL/g of them; the files still in use carry
// garbage from 0 to g, some L/(1-g/2) in all. The sum is least near
// g = 0.5 for c = 10% (1.73L), g = 0.37 for 5% (1.50L) and g = 0.25
// for 2% (1.30L), before tables and checkpoints' upper levels
// (0.05-0.15L here) and the rescales' leftovers: 1.5x is within reach
// at a churn of 2% a checkpoint and beyond any whole-file collection at
// 10%. (With a file's garbage growing as 1-e^(-ct), as uniform overwrites
// make it, the in-use part is -ln(1-g)/g instead of 1/(1-g/2), and the
// floor 1.31L at 2%, 1.39L at 3%, 1.46L at 4%, 1.52L at 5%, 1.77L at 10%.)
//
// The figure after the 20th checkpoint is one point of a curve that
// jumps: the test logs the store after every round, and there the
// relocations come in bursts, when a generation of value logs written
// together (the initial load, or the values the instances move out of
// their predecessors' value logs after a rescale) crosses the policy's
// threshold at once, and the store holds both copies until the two
// older retained checkpoints age out. So one policy's figure swings with
// the churn by where its bursts fall: the policy "lookup=0.3"
// (ReverseLookup with a garbage ratio of 0.3) gave 1.85-1.98x at 2% and
// 1.29-1.38x at 3% (three runs each), "amp=1.2" (collection driven by a
// space amplification of 1.2 alone) 1.53-1.62x and 1.55-1.64x. No policy
// stayed under 1.5x at every round. Other knobs: STRATA_SPACE_POLICIES
// also takes lookup=R, rewrite=R (garbage ratio R), amp=A and
// ampforeign=A (amp=A with a ForeignRatio of 0.3); STRATA_SPACE_ZIPF=s
// draws the overwrites from a Zipf distribution of exponent s (1.1: the
// store 1.77x at 5%, 1.92x at 10% under the default policy). Run it so:
//
//	STRATA_SPACE_POLICIES=default,cost go test -run TestRescaleStoreSpaceScale -v -timeout 1h
func TestRescaleStoreSpaceScale(t *testing.T) {
	policies := os.Getenv("STRATA_SPACE_POLICIES")
	if policies == "" {
		t.Skip("a measurement: set STRATA_SPACE_POLICIES")
	}
	keys := 60_000
	if s := os.Getenv("STRATA_SPACE_KEYS"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err)
		require.Less(t, n, 100_000, "keys are five digits")
		keys = n
	}
	fileSize := int64(4 << 20)
	if s := os.Getenv("STRATA_SPACE_FILE_SIZE"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		require.NoError(t, err)
		require.GreaterOrEqual(t, n, int64(64<<10))
		fileSize = n
	}
	var zipf float64
	if s := os.Getenv("STRATA_SPACE_ZIPF"); s != "" {
		var err error
		zipf, err = strconv.ParseFloat(s, 64)
		require.NoError(t, err)
		require.Greater(t, zipf, 1.0, "STRATA_SPACE_ZIPF: an exponent above 1")
	}
	churns := []float64{10}
	if s := os.Getenv("STRATA_SPACE_CHURN"); s != "" {
		churns = nil
		for _, f := range strings.Split(s, ",") {
			c, err := strconv.ParseFloat(f, 64)
			require.NoError(t, err)
			require.True(t, c > 0 && c <= 100, "STRATA_SPACE_CHURN: percentages")
			churns = append(churns, c)
		}
	}
	for _, name := range strings.Split(policies, ",") {
		for _, churn := range churns {
			t.Run(fmt.Sprintf("%s/churn=%g%%", name, churn), func(t *testing.T) {
				var policy gc.Policy
				switch name {
				case "default":
				case "cost":
					policy = gc.Cost(gc.DefaultBudget)
				case "rewrite":
					policy = gc.Rewrite()
				case "foreign":
					p := gc.ReverseLookup(0)
					p.ForeignRatio = 0.5
					policy = p
				default:
					// lookup=R and rewrite=R: the policy with garbage ratio R.
					kind, r, ok := strings.Cut(name, "=")
					ratio, err := strconv.ParseFloat(r, 64)
					switch {
					case ok && err == nil && kind == "lookup":
						policy = gc.ReverseLookup(ratio)
					case ok && err == nil && kind == "amp":
						policy = &gc.ReverseLookupPolicy{Ratio: gc.DefaultRatio, MaxSpaceAmp: ratio, MaxInFlight: gc.DefaultMaxInFlight}
					case ok && err == nil && kind == "ampforeign":
						policy = &gc.ReverseLookupPolicy{Ratio: gc.DefaultRatio, ForeignRatio: 0.3, MaxSpaceAmp: ratio, MaxInFlight: gc.DefaultMaxInFlight}
					case ok && err == nil && kind == "rewrite":
						p := gc.Rewrite()
						p.Ratio = ratio
						policy = p
					default:
						t.Fatalf("policy %q: default, cost, rewrite, foreign, lookup=R or rewrite=R", name)
					}
				}
				dir := t.TempDir()
				store, err := checkpoint.NewLocalStore(filepath.Join(dir, "store"))
				require.NoError(t, err)
				r := rescaleStoreSpace(t, spaceRun{fs: vfs.Default, dir: dir, store: store, keys: keys, churn: churn / 100, zipf: zipf, trace: true, opts: func() *Options {
					return &Options{FS: vfs.Default, SharedStore: store, GCPolicy: policy, SharedCacheSize: 1 << 30,
						MemTableSize: fileSize, ValueLogFileSize: fileSize, TargetFileSize: fileSize / 4}
				}})
				t.Logf("%s, churn %g%%: store %.2fx the live state; settled instances %v", name, churn, r.store, r.settled)
			})
		}
	}
}

// spaceRun configures rescaleStoreSpace.
type spaceRun struct {
	fs    vfs.FS
	dir   string // of the databases (in fs)
	store checkpoint.Store
	keys  int // the key space, [0, keys)
	// churn is the share of an instance's keys overwritten between two
	// of its checkpoints (drawn with replacement; 0: a tenth).
	churn float64
	// zipf, when above 1, draws the overwritten keys from a Zipf
	// distribution of that exponent over the whole key space (the ranks
	// scattered over it, one hot set across rescales) instead of
	// uniformly; churn then counts writes, not distinct keys.
	zipf  float64
	opts  func() *Options
	check bool // check each instance's keys against its model
	trace bool // log the store's size after each round
}

// spaceResult is what rescaleStoreSpace measured: the store's bytes over
// the live state at the end, and each instance's value logs and tables
// over its live state once settled.
type spaceResult struct {
	store   float64
	settled map[string]float64
}

// rescaleStoreSpace runs TestRescaleStoreSpace's job: two instances
// checkpoint 20 times (KeepLast 3 each), overwriting a tenth of their
// keys before each, rescale 2 -> 3 after the 7th and 3 -> 2 after the
// 14th by reference, and retire and destroy the instances they replace.
func rescaleStoreSpace(t *testing.T, cfg spaceRun) spaceResult {
	ctx := t.Context()
	fs, store, n := cfg.fs, cfg.store, cfg.keys
	path := func(name string) string { return fs.PathJoin(cfg.dir, name) }
	if cfg.dir == "" {
		path = func(name string) string { return name }
	}
	rng := rand.New(rand.NewPCG(21, 22))
	type inst struct {
		*rescaleInstance
		lo, hi int
	}
	start := func(name string, lo, hi int, db *DB, want model) *inst {
		in := newRescaleInstance(t, store, name, db, want)
		var err error
		in.up, err = checkpoint.NewUploader(in.reg, &checkpoint.UploadOptions{KeepLast: 3})
		require.NoError(t, err)
		return &inst{in, lo, hi}
	}
	open := func(name string) *DB {
		db, err := Open(path(name), cfg.opts())
		require.NoError(t, err)
		return db
	}
	var value []byte
	churn := cfg.churn
	if churn == 0 {
		churn = 0.1
	}
	draw := func(in *inst) int { return in.lo + rng.IntN(in.hi-in.lo) }
	if cfg.zipf > 1 {
		z := rand.NewZipf(rng, cfg.zipf, 1, uint64(n-1))
		draw = func(in *inst) int {
			for {
				// 1,000,003 is a prime: rank -> key is a permutation.
				if i := int(z.Uint64() * 1_000_003 % uint64(n)); in.lo <= i && i < in.hi {
					return i
				}
			}
		}
	}
	overwrite := func(in *inst, round int) {
		for range int(float64(in.hi-in.lo) * churn) {
			i := draw(in)
			k := rescaleKey(i)
			value = fmt.Appendf(value[:0], "%s-%d-", k, round)
			for range 1000 + rng.IntN(1000) {
				value = append(value, byte('a'+rng.IntN(26)))
			}
			require.NoError(t, in.db.Set([]byte(k), value, NoSync))
			in.want[k] = string(value)
		}
	}
	live := []*inst{start("a", 0, n/2, open("a"), model{}), start("b", n/2, n, open("b"), model{})}
	var dirs []string
	for _, in := range live {
		// A full state first, then the rounds' overwrites.
		for i := in.lo; i < in.hi; i++ {
			k := rescaleKey(i)
			v := fmt.Sprintf("%s-load-%s", k, strings.Repeat("v", 1000+rng.IntN(1000)))
			require.NoError(t, in.db.Set([]byte(k), []byte(v), NoSync))
			in.want[k] = v
		}
		dirs = append(dirs, path(in.name))
	}
	last := map[string]part{}
	rescale := func(names []string, bounds []int) {
		t.Helper()
		var next []*inst
		for j, name := range names {
			lo, hi := bounds[j], bounds[j+1]
			var srcs []checkpoint.StoreCheckpoint
			want := model{}
			for _, in := range live {
				if in.lo < hi && lo < in.hi {
					p := last[in.name]
					srcs = append(srcs, p.c)
					for k, v := range restrict(p.want, rescaleKey(lo), rescaleKey(hi)) {
						want[k] = v
					}
				}
			}
			var startKey, endKey []byte
			if lo > 0 {
				startKey = []byte(rescaleKey(lo))
			}
			if hi < n {
				endKey = []byte(rescaleKey(hi))
			}
			db, err := OpenRangeFromCheckpoints(ctx, srcs, startKey, endKey, path(name), cfg.opts())
			require.NoError(t, err)
			next = append(next, start(name, lo, hi, db, want))
			dirs = append(dirs, path(name))
		}
		// The old instances go: their registries are retired and their
		// databases destroyed (their references dropped).
		for _, in := range live {
			require.NoError(t, in.db.Close())
			_, err := in.up.Retire(ctx, 0)
			require.NoError(t, err)
			require.NoError(t, Destroy(ctx, path(in.name), cfg.opts()))
			dirs = slices.DeleteFunc(dirs, func(d string) bool { return d == path(in.name) })
		}
		live = next
	}
	// trace: the store over the live state after each round.
	var trace []string
	for round := 1; round <= 20; round++ {
		for _, in := range live {
			overwrite(in, round)
			last[in.name] = part{in.checkpoint(t), in.want.clone()}
		}
		if cfg.trace {
			var storeBytes, liveBytes int64
			objs, err := store.List(ctx, "")
			require.NoError(t, err)
			var own int64 // the live instances' own shared objects
			for _, o := range objs {
				storeBytes += o.Size
				for _, in := range live {
					if strings.HasPrefix(o.Name, "shared/"+in.db.shared.files.Instance()+"/") {
						own += o.Size
					}
				}
			}
			for _, in := range live {
				for k, v := range in.want {
					liveBytes += int64(len(k) + len(v))
				}
			}
			trace = append(trace, fmt.Sprintf("%.2f(%.2f)", float64(storeBytes)/float64(liveBytes), float64(own)/float64(liveBytes)))
		}
		switch round {
		case 7:
			rescale([]string{"x", "y", "z"}, []int{0, n / 3, 2 * n / 3, n})
		case 14:
			rescale([]string{"p", "q"}, []int{0, n / 2, n})
		}
	}
	if cfg.trace {
		t.Logf("the store over the live state after each round: %v", trace)
	}
	var liveBytes int64
	for _, in := range live {
		if cfg.check {
			in.check(t, "at the end")
		}
		for k, v := range in.want {
			liveBytes += int64(len(k) + len(v))
		}
		in.db.waitSharedIdle()
		held, vlive, _ := vlogSpace(in.db)
		tables := tableBytes(in.db)
		t.Logf("%s (instance %s): value logs %d bytes (%d referenced), tables %d bytes", in.name, in.db.shared.files.Instance(), held, vlive, tables)
	}
	objs, err := store.List(ctx, "")
	require.NoError(t, err)
	var storeBytes int64
	byPrefix := map[string]int64{}
	for _, o := range objs {
		storeBytes += o.Size
		parts := strings.SplitN(o.Name, "/", 3)
		pre := parts[0]
		if len(parts) > 2 && pre != "refs" {
			pre += "/" + parts[1]
		}
		byPrefix[pre] += o.Size
	}
	t.Logf("bytes by prefix: %v", byPrefix)
	res := spaceResult{store: float64(storeBytes) / float64(liveBytes), settled: map[string]float64{}}
	t.Logf("after 20 checkpoints and two rescales: store %d bytes in %d objects, live state %d bytes: %.2fx", storeBytes, len(objs), liveBytes, res.store)
	requireNoProblems(t, fs, store, "at the end", dirs...)

	// Each instance settles: full compactions until garbage collection
	// is idle.
	for _, in := range live {
		var own int64
		for k, v := range in.want {
			own += int64(len(k) + len(v))
		}
		waitGCIdle(t, in.db)
		in.db.waitSharedIdle()
		held, vlive, _ := vlogSpace(in.db)
		tables := tableBytes(in.db)
		res.settled[in.name] = float64(held+tables) / float64(own)
		t.Logf("%s settled: value logs %d bytes (%d referenced), tables %d bytes, live %d bytes: %.2fx", in.name, held, vlive, tables, own, res.settled[in.name])
		if cfg.check {
			in.check(t, "settled")
		}
		require.NoError(t, in.db.Close())
	}
	requireNoProblems(t, fs, store, "settled", dirs...)
	return res
}

// tableBytes returns the bytes of db's tables.
func tableBytes(db *DB) uint64 {
	var n uint64
	db.mu.Lock()
	db.vs.Current().Files(func(_ int, f *manifest.FileMetadata) { n += f.Size })
	db.mu.Unlock()
	return n
}

// TestDestroy: Destroy drops the references of a database's instance and
// removes its directory: objects it alone held go, those a checkpoint
// still uses stay; it refuses a database that is open, and one that
// shares files without its store; a directory that does not exist is not
// an error.
func TestDestroy(t *testing.T) {
	ctx := t.Context()
	fs := vfs.NewMem()
	store, err := checkpoint.NewLocalStoreFS(fs, "store")
	require.NoError(t, err)
	opts := rescaleOptions(fs, store, nil)
	db, err := Open("a", opts)
	require.NoError(t, err)
	in := newRescaleInstance(t, store, "a", db, model{})
	in.write(t, rand.New(rand.NewPCG(1, 2)), 0, 1000, 2000, 0)
	require.NoError(t, db.Compact(nil, nil))
	db.waitSharedIdle()
	instance := db.shared.files.Instance()
	c := in.checkpoint(t)
	want := in.want.clone()
	// Files after the checkpoint: the instance alone holds them.
	in.write(t, rand.New(rand.NewPCG(3, 4)), 0, 1000, 2000, 1)
	require.NoError(t, db.Compact(nil, nil))
	db.waitSharedIdle()
	require.ErrorContains(t, Destroy(ctx, "a", opts), "lock")
	require.NoError(t, db.Close())
	require.ErrorIs(t, Destroy(ctx, "a", &Options{FS: fs}), ErrSharedStoreRequired)

	own, err := store.List(ctx, "shared/"+instance+"/")
	require.NoError(t, err)
	require.NotEmpty(t, own)
	require.NoError(t, Destroy(ctx, "a", opts))
	_, err = fs.Stat("a")
	require.ErrorIs(t, err, os.ErrNotExist)
	require.NoError(t, Destroy(ctx, "a", opts))
	require.Empty(t, markersOf(t, store, remote.InstanceHolder(instance)))
	left, err := store.List(ctx, "shared/"+instance+"/")
	require.NoError(t, err)
	require.Less(t, len(left), len(own), "no object of the instance went")
	// What stays is what the checkpoint uses: it restores.
	requireLeftForCheckpoint(t, fs, store, c, want)
}

// requireNoProblems audits store with the databases in dirs (closed):
// every object they or a retained checkpoint use is there, whole.
func requireNoProblems(t *testing.T, fs vfs.FS, store checkpoint.Store, what string, dirs ...string) {
	t.Helper()
	var instances []*remote.Instance
	for _, dir := range dirs {
		in, err := remote.ReadInstance(fs, dir)
		require.NoError(t, err, "%s: %s", what, dir)
		instances = append(instances, in)
	}
	rep, err := checkpoint.Audit(t.Context(), store, &checkpoint.AuditOptions{Instances: instances})
	require.NoError(t, err, what)
	require.Empty(t, rep.Problems, "%s: %v", what, rep.Problems)
}

// TestUnionCheckpointMovesSharedPiece: a table of checkpoint 1 straddles
// the bound of a split into two instances (c, d); their union e holds it
// twice, as two virtual tables, and checkpoints into the registry whose
// segment holds the table just as that upload empties the segment
// (checkpoint 1 retired). The piece moved twice, the first copy taking
// every reference and the older checkpoints pointed at the second, which
// had none: every upload of e failed its registry check, for good. Now
// it moves once; e's checkpoints and c's and d's restore.
func TestUnionCheckpointMovesSharedPiece(t *testing.T) {
	ctx := t.Context()
	fs := vfs.NewMem()
	opts := func() *Options {
		return &Options{FS: fs, ValueThreshold: -1, TargetFileSize: 4 << 10, MemTableSize: 64 << 10,
			DisableAutomaticCompactions: true, DisableGC: true}
	}
	key := func(i int) []byte { return fmt.Appendf(nil, "k%04d", i) }
	a, err := Open("a", opts())
	require.NoError(t, err)
	for i := range 300 {
		require.NoError(t, a.Set(key(i), fmt.Appendf(nil, "%s%d", strings.Repeat("v", 100), i), NoSync))
	}
	require.NoError(t, a.Compact(nil, nil))
	want := scanRange(t, a, key(100), key(200))
	store, err := checkpoint.NewLocalStoreFS(fs, "store")
	require.NoError(t, err)
	upload := func(db *DB) checkpoint.Stats { return uploadCheckpoint(t, db, store) }
	st1 := upload(a)
	require.NoError(t, a.Close())
	mid := key(151)
	c, err := OpenRangeFromStore(ctx, store, []uint64{st1.ID}, key(100), mid, "c", opts())
	require.NoError(t, err)
	defer c.Close()
	d, err := OpenRangeFromStore(ctx, store, []uint64{st1.ID}, mid, key(200), "d", opts())
	require.NoError(t, err)
	defer d.Close()
	stc, std := upload(c), upload(d)
	e, err := OpenRangeFromStore(ctx, store, []uint64{stc.ID, std.ID}, nil, nil, "e", opts())
	require.NoError(t, err)
	defer e.Close()
	require.Equal(t, want, scanRange(t, e, nil, nil))
	for round := range 2 {
		ste := upload(e)
		r, err := OpenFromStore(ctx, store, ste.ID, fmt.Sprintf("e%d", ste.ID), opts())
		require.NoError(t, err)
		require.Equal(t, want, scanRange(t, r, nil, nil))
		require.NoError(t, r.Close())
		if round > 0 {
			continue
		}
		// c's and d's checkpoints (still retained) name the moved piece.
		for _, st := range []checkpoint.Stats{stc, std} {
			dir := fmt.Sprintf("restored%d", st.ID)
			require.NoError(t, checkpoint.Restore(ctx, store, st.ID, fs, dir, nil))
			r, err := Open(dir, opts())
			require.NoError(t, err)
			require.NotEmpty(t, scanRange(t, r, nil, nil))
			require.NoError(t, r.Close())
		}
	}
}
