package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/checkpoint"
	"github.com/strata-db/strata/checkpoint/keygroup"
	"github.com/strata-db/strata/vfs"
)

// The statebackend workload (StateBackend) runs Strata as the state
// backend of a stream processor: the keyed state of a job of
// stateMaxParallelism key groups lives in stateOldInstances databases,
// each holding a contiguous range of key groups (keys prefixed with their
// group, package checkpoint/keygroup). It loads Num keys, then overwrites
// Num random ones, checkpointing every instance into a store of its own
// (checkpoint.NewLocalStore, in the run's directory, behind a
// checkpoint.SlowStore that adds Spec.StoreLatency to every request,
// limits the store to Spec.StoreBandwidth and counts the requests of each
// step) after every Spec.CheckpointEvery overwrites, and once more at the
// end. Then it restores every instance's last checkpoint in full, and
// rescales the job from stateOldInstances to stateNewInstances instances
// by each method of RescaleMethods, checking that the new instances hold
// exactly the keys.
//
// With Config.SharedCache positive (shared mode), the state lives in the
// stores: each instance has its store as Options.SharedStore with a
// cache of that many bytes, so it uploads its lower levels and finished
// value logs itself and checkpoints them by reference (each round reports
// what the databases uploaded since the previous one, and the registry's
// bytes of what it uploaded); after the rescales the open-from-store step
// (stateopen.go) opens the latest checkpoints without downloading them.
//
// Only Strata runs it: checkpoints into a store, key-range restore and
// ingest are Strata's APIs, and the peers get a skipped result saying so.
const (
	stateMaxParallelism = 128
	stateOldInstances   = 2
	stateNewInstances   = 3
)

// Rescale methods: how a new instance gets the state of its key groups.
const (
	// RescaleRestore restores the new instance's key-group range from the
	// checkpoint of the old instance that holds most of it
	// (strata.RestoreRangeFromStore: only the overlapping tables and their value
	// logs are fetched, the keys outside the range deleted with range
	// deletions); the part another old instance holds is restored the same
	// way apart and copied in through the API.
	RescaleRestore = "restore"
	// RescaleCopy is the naive way: restore each overlapping old
	// instance's checkpoint in full (checkpoint.Restore: after a failure or
	// on another machine, the old state is in the store only), open it and
	// Set every key of the range into a fresh database, then flush it.
	RescaleCopy = "copy"
	// RescaleCopyLocal is RescaleCopy from the old instances' own
	// directories, as if their state were still on this machine: a lower
	// bound for the copy, not a rescale a restarted job can do.
	RescaleCopyLocal = "copy-local"
	// RescaleIngest takes each old instance's part of the range into a
	// fresh database with DB.IngestRange: it fetches the overlapping tables
	// and their value logs, writes the range's live entries into an
	// external table and ingests it (DB.Ingest).
	RescaleIngest = "ingest"
	// RescaleReference opens each new instance's range of the old
	// instances' checkpoints by reference (strata.OpenRangeFromCheckpoints:
	// nothing copied, tables straddling the range kept virtual), times it
	// to its first Get, and rescales back the same way from the new
	// instances' checkpoints (3 -> 2). Shared mode only: the instances'
	// value logs must have numbers of their own.
	RescaleReference = "reference"
)

// RescaleMethods lists the rescale methods in the order they run; a
// method without a function in rescaleFuncs would be reported skipped.
var RescaleMethods = []string{RescaleReference, RescaleRestore, RescaleCopy, RescaleIngest, RescaleCopyLocal}

// StateBackendNote is what the workload's results say about the peers.
const StateBackendNote = "statebackend runs on Strata only: checkpoints into a store, key-range restore and rescale use Strata's own APIs (package checkpoint), which the peers do not have"

// StateBackendResult is what the statebackend workload measured, beyond
// its Result's throughput of the overwrites (checkpoints included).
type StateBackendResult struct {
	MaxParallelism  int   `json:"max_parallelism"`
	OldInstances    int   `json:"old_instances"`
	NewInstances    int   `json:"new_instances"`
	CheckpointEvery int64 `json:"checkpoint_every"`
	// StoreLatency and StoreBandwidth (bytes/s) are what every store added
	// to each request and shared between them (0: nothing, unlimited).
	StoreLatency   time.Duration `json:"store_latency_ns,omitempty"`
	StoreBandwidth int64         `json:"store_bandwidth,omitempty"`
	// StoreS3 is set when the stores were prefixes of an S3 bucket
	// (Spec.StoreS3), not local directories.
	StoreS3 bool `json:"store_s3,omitempty"`
	// Checkpoints has one entry per checkpoint round, the first after the
	// load: every instance checkpointed into its own store, summed.
	Checkpoints []StateCheckpoint `json:"checkpoints"`
	// Restore is the full restore of every old instance's last
	// checkpoint, one after the other, each opened (and closed) after.
	Restore StateTiming `json:"restore"`
	// Rescale has one entry per method of RescaleMethods.
	Rescale []StateTiming `json:"rescale"`
	// SharedCache is Config.SharedCache: when positive, the instances
	// had their stores as Options.SharedStore with a cache of that many
	// bytes, checkpointed by reference, and Open is the open-from-store
	// step; 0: every file local (nil Open).
	SharedCache int64      `json:"shared_cache,omitempty"`
	Open        *StateOpen `json:"open,omitempty"`
	Note        string     `json:"note,omitempty"`
}

// StateCheckpoint is one checkpoint round over every instance.
type StateCheckpoint struct {
	Index int `json:"index"`
	// Ops counts the overwrites before it (0 for the one after the load).
	Ops int64 `json:"ops"`
	// Duration is the time the checkpoints took, one instance after the
	// other (writes wait meanwhile, as a stream processor's synchronous
	// phase).
	Duration time.Duration `json:"duration_ns"`
	// WrittenBytes are the key and value bytes written since the last
	// round (the load's for the first).
	WrittenBytes int64 `json:"written_bytes"`
	// The sums of checkpoint.Stats over the instances.
	Files           int   `json:"files"`
	UploadedBytes   int64 `json:"uploaded_bytes"`
	NewBytes        int64 `json:"new_bytes"`
	ReuploadedBytes int64 `json:"reuploaded_bytes"`
	// ComposedBytes, of ReuploadedBytes, the store copied itself: they
	// were moved without being uploaded.
	ComposedBytes   int64 `json:"composed_bytes"`
	StoreBytes      int64 `json:"store_bytes"`
	ReferencedBytes int64 `json:"referenced_bytes"`
	Objects         int   `json:"objects"`
	ReferencedFiles int   `json:"referenced_files"`
	// SpaceAmp is StoreBytes / ReferencedBytes.
	SpaceAmp float64 `json:"space_amp"`
	// RegistryBytes, of UploadedBytes, are the registries' (each holds
	// the manifests of the checkpoints it retains): UploadedBytes less
	// the data sent (NewBytes and ReuploadedBytes, less ComposedBytes).
	RegistryBytes int64 `json:"registry_bytes"`
	// Store is what the round asked of the stores.
	Store StoreStats `json:"store"`
	// Shared (shared mode) is what the databases themselves asked of the
	// stores since the previous round ended, up to this one's end: the
	// uploads of the files they share (PutBytes) and the releases of
	// those they no longer need, made in the background. Store counts
	// those of them made during the round too.
	Shared StoreStats `json:"shared,omitempty"`
}

// StateTiming is how long a restore or a rescale took and what it yielded.
type StateTiming struct {
	Method   string        `json:"method,omitempty"`
	Duration time.Duration `json:"duration_ns"`
	// Keys counts the keys the restored or rescaled instances hold (it is
	// checked against what the old instances held); Bytes the size of
	// their directories.
	Keys  int64 `json:"keys"`
	Bytes int64 `json:"bytes"`
	// Store is what it asked of the stores.
	Store   StoreStats `json:"store"`
	Skipped bool       `json:"skipped,omitempty"`
	Note    string     `json:"note,omitempty"`
	// From and To are the numbers of instances of a rescale, when it is
	// not stateOldInstances -> stateNewInstances (the way back).
	From int `json:"from,omitempty"`
	To   int `json:"to,omitempty"`
	// FirstGet (RescaleReference) is the longest time from the open of a
	// new instance to its first Get returning; FileBytes the bytes of
	// tables and value logs in the new instances' directories then: the
	// rescale writes none, but the new instances' compactions (of the
	// tables they reference) begin at once. The shared-file cache's parts
	// are not counted: they are cache.
	FirstGet  time.Duration `json:"first_get_ns,omitempty"`
	FileBytes int64         `json:"file_bytes,omitempty"`
}

// strataDBEngine is an engine that is a Strata database.
type strataDBEngine interface {
	strataDB() (*strata.DB, strata.Options)
}

func (e *strataEngine) strataDB() (*strata.DB, strata.Options) { return e.db, e.opts }

// stateRun is one run of the workload.
type stateRun struct {
	ctx  context.Context
	spec *Spec
	info EngineInfo
	dir  string
	opts strata.Options // of the engine, for the databases it opens itself
	// shared: the old instances share their files (Config.SharedCache).
	shared bool
	// oldOpts are the options of the old instances: opts, and in shared
	// mode their stores.
	oldOpts [stateOldInstances]strata.Options
	write   *strata.WriteOptions
	// perInstance counts the keys of each old instance.
	perInstance [stateOldInstances]int64
	groups      []uint16 // key group of each key index
	user        []byte   // the user key, KeySize bytes
}

// runStateBackend runs the statebackend workload on a Strata engine in
// dir.
func runStateBackend(ctx context.Context, spec *Spec, info EngineInfo, dir string, progress Progress) (res Result, err error) {
	res = Result{Benchmark: StateBackend}
	r := &stateRun{ctx: ctx, spec: spec, info: info, dir: dir, write: strata.NoSync, user: make([]byte, spec.KeySize)}
	if spec.Config.Sync {
		r.write = strata.Sync
	}
	sb := &StateBackendResult{MaxParallelism: stateMaxParallelism, OldInstances: stateOldInstances,
		NewInstances: stateNewInstances, CheckpointEvery: spec.CheckpointEvery,
		StoreLatency: spec.StoreLatency, StoreBandwidth: spec.StoreBandwidth, StoreS3: spec.StoreS3 != "",
		Note: StateBackendNote}

	var dbs [stateOldInstances]*strata.DB
	var ss *stateStores
	defer func() {
		for _, db := range dbs {
			if db != nil {
				err = errors.Join(err, db.Close())
			}
		}
		if ss != nil {
			// Once nothing uses them: a bucket's objects outlive the
			// run's directory.
			err = errors.Join(err, ss.removeS3(context.WithoutCancel(ctx), spec))
		}
	}()
	ss, err = openStateStores(spec, dir)
	if err != nil {
		return res, err
	}
	stores := ss.stores
	shared := spec.Config.SharedCache > 0
	r.shared = shared
	sb.SharedCache = spec.Config.SharedCache
	var uploaders [stateOldInstances]*checkpoint.Uploader
	for i := range dbs {
		cfg := spec.Config
		if shared {
			cfg.sharedStore = ss.db[i]
		}
		eng, err := info.Open(r.oldDir(i), cfg)
		if err != nil {
			return res, fmt.Errorf("open: %w", err)
		}
		se, ok := eng.(strataDBEngine)
		if !ok {
			eng.Close()
			return res, fmt.Errorf("engine %s is not a Strata database", info.Name)
		}
		dbs[i], r.opts = se.strataDB()
		r.oldOpts[i] = r.opts
		// The databases the workload opens itself (restores, rescales,
		// local copies) keep their files local.
		r.opts.SharedStore, r.opts.SharedCacheSize, r.opts.SharedWarmup = nil, 0, 0
		if uploaders[i], err = checkpoint.NewUploader(stores[i], nil); err != nil {
			return res, err
		}
	}

	// The load, then the first checkpoint.
	values := newValueSource(spec.Value, spec.Seed)
	key := make([]byte, 0, keygroup.PrefixLen+spec.KeySize)
	r.groups = make([]uint16, spec.Num)
	var loaded int64
	progress.Start(info.Name, StateBackend+" (load)", spec.Num)
	for i := range spec.Num {
		key, inst := r.key(key, uint64(i), true)
		v := values.next()
		if err := dbs[inst].Set(key, v, r.write); err != nil {
			progress.Done()
			return res, err
		}
		r.perInstance[inst]++
		loaded += int64(len(key) + len(v))
		if i%1024 == 1023 || i == spec.Num-1 {
			progress.Add(i%1024 + 1)
			if err := ctx.Err(); err != nil {
				progress.Done()
				return res, err
			}
		}
	}
	progress.Done()
	ids := [stateOldInstances]uint64{}
	var stateBytes [stateOldInstances]int64 // of each instance's last checkpoint
	var sharedBefore StoreStats             // the databases' requests before the round
	checkpointAll := func(ops, written int64) error {
		c := StateCheckpoint{Index: len(sb.Checkpoints), Ops: ops, WrittenBytes: written}
		before := ss.stats()
		start := time.Now()
		for i, db := range dbs {
			st, err := db.CheckpointToStore(ctx, uploaders[i])
			if err != nil {
				return fmt.Errorf("checkpoint of instance %d: %w", i, err)
			}
			ids[i], stateBytes[i] = st.ID, st.Bytes
			c.Files += st.Files
			c.UploadedBytes += st.UploadedBytes
			c.NewBytes += st.NewBytes
			c.ReuploadedBytes += st.ReuploadedBytes
			c.ComposedBytes += st.ComposedBytes
			c.StoreBytes += st.StoreBytes
			c.ReferencedBytes += st.ReferencedBytes
			c.Objects += st.Objects
			c.ReferencedFiles += st.ReferencedFiles
		}
		c.Duration = time.Since(start)
		c.Store = ss.since(before)
		c.RegistryBytes = c.UploadedBytes - c.NewBytes - c.ReuploadedBytes + c.ComposedBytes
		if shared {
			now := ss.dbStats()
			c.Shared, sharedBefore = now.sub(sharedBefore), now
		}
		if c.ReferencedBytes > 0 {
			c.SpaceAmp = float64(c.StoreBytes) / float64(c.ReferencedBytes)
		}
		sb.Checkpoints = append(sb.Checkpoints, c)
		return nil
	}
	if err := checkpointAll(0, loaded); err != nil {
		return res, err
	}

	// The overwrites, a checkpoint round every CheckpointEvery of them.
	rng := newRandSource(spec.Seed ^ 0x57a7e)
	pick := func() uint64 { return rng.Uint64N(uint64(spec.Num)) }
	if spec.KeyDist == KeyZipfian {
		z := newZipfian(uint64(spec.Num), spec.ZipfTheta)
		pick = func() uint64 { return fnv64(z.next(rng)) % uint64(spec.Num) }
	}
	progress.Start(info.Name, StateBackend, spec.Num)
	var h histogram
	var since, user int64
	start := time.Now()
	for op := int64(1); op <= spec.Num; op++ {
		key, inst := r.key(key, pick(), false)
		v := values.next()
		t0 := time.Now()
		if err := dbs[inst].Set(key, v, r.write); err != nil {
			progress.Done()
			return res, err
		}
		h.record(time.Since(t0))
		n := int64(len(key) + len(v))
		since += n
		user += n
		if op%spec.CheckpointEvery == 0 || op == spec.Num {
			if err := checkpointAll(op, since); err != nil {
				progress.Done()
				return res, err
			}
			since = 0
		}
		if op%1024 == 0 || op == spec.Num {
			progress.Add((op-1)%1024 + 1)
			if err := ctx.Err(); err != nil {
				progress.Done()
				return res, err
			}
		}
	}
	res.Duration = time.Since(start)
	progress.Done()
	res.Ops = spec.Num
	res.UserBytes = user
	res.Latency = h.buckets()
	res.P50, res.P95, res.P99, res.P999 = h.percentile(50), h.percentile(95), h.percentile(99), h.percentile(99.9)
	for i, db := range dbs {
		dbs[i] = nil
		if err := db.Close(); err != nil {
			return res, err
		}
	}
	for i := range dbs {
		res.DiskSize += DirSize(r.oldDir(i))
	}
	res.LiveBytes = int64(keygroup.PrefixLen+spec.KeySize) * spec.Num
	if spec.Value.Kind == "fixed" {
		res.LiveBytes += int64(spec.Value.Size) * spec.Num
	} else {
		res.LiveBytes = 0 // unknown: the values' sizes vary
	}
	res.Finish(user)

	// A full restore of every instance.
	before := ss.stats()
	restore, err := r.restoreAll(stores, ids)
	if err != nil {
		return res, fmt.Errorf("restore: %w", err)
	}
	restore.Store = ss.since(before)
	sb.Restore = restore
	for _, m := range RescaleMethods {
		if m == RescaleReference {
			ts, err := r.rescaleByReference(ss, ids)
			if err != nil {
				return res, fmt.Errorf("rescale by %s: %w", m, err)
			}
			sb.Rescale = append(sb.Rescale, ts...)
			continue
		}
		before := ss.stats()
		t, err := r.rescale(m, stores, ids)
		if err != nil {
			return res, fmt.Errorf("rescale by %s: %w", m, err)
		}
		t.Store = ss.since(before)
		sb.Rescale = append(sb.Rescale, t)
	}
	if shared {
		// The old instances' directories are not needed any more, and
		// the step makes two more copies of the state.
		if !spec.KeepDB {
			for i := range dbs {
				os.RemoveAll(r.oldDir(i))
			}
		}
		if sb.Open, err = r.openFromStore(ss, ids, stateBytes); err != nil {
			return res, fmt.Errorf("open from the store: %w", err)
		}
	}
	res.StateBackend = sb
	return res, nil
}

func (r *stateRun) oldDir(i int) string { return filepath.Join(r.dir, fmt.Sprintf("instance-%d", i)) }

// key appends to dst[:0] the stored key of key index i (its key group,
// then the key) and returns it with the old instance that holds it; load
// says i is loaded now (its group is computed and remembered).
func (r *stateRun) key(dst []byte, i uint64, load bool) ([]byte, int) {
	if load {
		g, _ := keygroup.Of(MakeKey(r.user, i), stateMaxParallelism)
		r.groups[i] = g
	}
	return r.keyWith(dst, r.user, i)
}

// keyWith is key of a key index already loaded, with user as the buffer
// of the user key: readers in parallel each have their own.
func (r *stateRun) keyWith(dst, user []byte, i uint64) ([]byte, int) {
	g := r.groups[i]
	return keygroup.Key(dst[:0], g, MakeKey(user, i)), int(g) * stateOldInstances / stateMaxParallelism
}

// instanceRange returns the key range of instance op of n.
func instanceRange(n, op int) (start, end []byte, first, last uint16, err error) {
	first, last, err = keygroup.OperatorRange(stateMaxParallelism, n, op)
	if err != nil {
		return nil, nil, 0, 0, err
	}
	start, end, err = keygroup.Range(first, last)
	return start, end, first, last, err
}

// restoreAll restores every old instance's checkpoint in full into a
// directory of its own, and opens it, counting its keys afterwards
// (untimed).
func (r *stateRun) restoreAll(stores [stateOldInstances]checkpoint.Store, ids [stateOldInstances]uint64) (StateTiming, error) {
	var t StateTiming
	for i, s := range stores {
		dst := filepath.Join(r.dir, fmt.Sprintf("restore-%d", i))
		start := time.Now()
		if err := checkpoint.Restore(r.ctx, s, ids[i], vfs.Default, dst, nil); err != nil {
			return t, err
		}
		db, err := r.open(dst)
		if err != nil {
			return t, err
		}
		if err := db.Close(); err != nil {
			return t, err
		}
		t.Duration += time.Since(start)
		n, err := r.countKeys(dst, nil, nil)
		if err != nil {
			return t, err
		}
		if n != r.perInstance[i] {
			return t, fmt.Errorf("instance %d restored %d keys, it held %d", i, n, r.perInstance[i])
		}
		t.Keys += n
		t.Bytes += DirSize(dst)
		if !r.spec.KeepDB {
			os.RemoveAll(dst)
		}
	}
	return t, nil
}

// rescaleFuncs make new instance op's database in dir from the old
// instances by one method.
var rescaleFuncs = map[string]func(r *stateRun, stores [stateOldInstances]checkpoint.Store, ids [stateOldInstances]uint64, op int, dir string) error{
	RescaleRestore:   (*stateRun).rescaleByRestore,
	RescaleCopy:      (*stateRun).rescaleByCopy,
	RescaleIngest:    (*stateRun).rescaleByIngest,
	RescaleCopyLocal: (*stateRun).rescaleByLocalCopy,
}

// rescale makes the stateNewInstances new instances by method, timed,
// and checks that they hold exactly the old instances' keys, each its own
// range (untimed).
func (r *stateRun) rescale(method string, stores [stateOldInstances]checkpoint.Store, ids [stateOldInstances]uint64) (StateTiming, error) {
	t := StateTiming{Method: method}
	if slices.Contains(r.spec.RescaleSkip, method) {
		t.Skipped = true
		t.Note = "left out (--rescale_skip)"
		return t, nil
	}
	fn := rescaleFuncs[method]
	if fn == nil {
		t.Skipped = true
		t.Note = "no way to run it in this build"
		return t, nil
	}
	var dirs []string
	for op := range stateNewInstances {
		dir := filepath.Join(r.dir, fmt.Sprintf("rescale-%s-%d", method, op))
		dirs = append(dirs, dir)
		start := time.Now()
		if err := fn(r, stores, ids, op, dir); err != nil {
			return t, err
		}
		t.Duration += time.Since(start)
	}
	for op, dir := range dirs {
		_, _, first, last, err := instanceRange(stateNewInstances, op)
		if err != nil {
			return t, err
		}
		var want int64
		for _, g := range r.groups {
			if g >= first && g <= last {
				want++
			}
		}
		all, err := r.countKeys(dir, nil, nil)
		if err != nil {
			return t, err
		}
		if all != want {
			return t, fmt.Errorf("new instance %d holds %d keys, its key groups [%d, %d] have %d", op, all, first, last, want)
		}
		t.Keys += all
		t.Bytes += DirSize(dir)
		if !r.spec.KeepDB {
			os.RemoveAll(dir)
		}
	}
	return t, nil
}

// overlaps returns the old instances whose key groups overlap [first,
// last], the one holding most of them first.
func overlaps(first, last uint16) ([]int, error) {
	type ov struct{ op, n int }
	var out []ov
	for op := range stateOldInstances {
		f, l, err := keygroup.OperatorRange(stateMaxParallelism, stateOldInstances, op)
		if err != nil {
			return nil, err
		}
		lo, hi := max(f, first), min(l, last)
		if lo <= hi {
			out = append(out, ov{op, int(hi-lo) + 1})
		}
	}
	for i := 1; i < len(out); i++ { // at most stateOldInstances: insertion sort
		for j := i; j > 0 && out[j].n > out[j-1].n; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	ops := make([]int, len(out))
	for i, o := range out {
		ops[i] = o.op
	}
	return ops, nil
}

// rescaleTarget returns new instance op's key range and the old
// instances whose key groups overlap it, the one holding most first.
func rescaleTarget(op int) (start, end []byte, olds []int, err error) {
	start, end, first, last, err := instanceRange(stateNewInstances, op)
	if err != nil {
		return nil, nil, nil, err
	}
	olds, err = overlaps(first, last)
	return start, end, olds, err
}

// rescaleByRestore: RescaleRestore for new instance op.
func (r *stateRun) rescaleByRestore(stores [stateOldInstances]checkpoint.Store, ids [stateOldInstances]uint64, op int, dir string) error {
	start, end, olds, err := rescaleTarget(op)
	if err != nil {
		return err
	}
	opts := r.opts
	if err := strata.RestoreRangeFromStore(r.ctx, stores[olds[0]], ids[olds[0]], start, end, dir, &opts); err != nil {
		return err
	}
	if len(olds) == 1 {
		return nil
	}
	return r.copyInto(dir, olds[1:], start, end, func(o int) (string, func() error, error) {
		part := fmt.Sprintf("%s-part-%d", dir, o)
		if err := strata.RestoreRangeFromStore(r.ctx, stores[o], ids[o], start, end, part, &opts); err != nil {
			return "", nil, err
		}
		return part, func() error { return os.RemoveAll(part) }, nil
	})
}

// rescaleByCopy: RescaleCopy for new instance op.
func (r *stateRun) rescaleByCopy(stores [stateOldInstances]checkpoint.Store, ids [stateOldInstances]uint64, op int, dir string) error {
	start, end, olds, err := rescaleTarget(op)
	if err != nil {
		return err
	}
	return r.copyInto(dir, olds, start, end, func(o int) (string, func() error, error) {
		src := fmt.Sprintf("%s-old-%d", dir, o)
		if err := checkpoint.Restore(r.ctx, stores[o], ids[o], nil, src, nil); err != nil {
			return "", nil, err
		}
		return src, func() error { return os.RemoveAll(src) }, nil
	})
}

// rescaleByLocalCopy: RescaleCopyLocal for new instance op.
func (r *stateRun) rescaleByLocalCopy(_ [stateOldInstances]checkpoint.Store, _ [stateOldInstances]uint64, op int, dir string) error {
	start, end, olds, err := rescaleTarget(op)
	if err != nil {
		return err
	}
	return r.copyInto(dir, olds, start, end, func(o int) (string, func() error, error) {
		return r.oldDir(o), func() error { return nil }, nil
	})
}

// copyInto copies [start, end) through the API into the database in dir
// (opened, or created) from each of the old instances olds, whose
// database source gives (with what to do once it is copied), then
// flushes and closes it.
func (r *stateRun) copyInto(dir string, olds []int, start, end []byte, source func(old int) (string, func() error, error)) error {
	db, err := r.open(dir)
	if err != nil {
		return err
	}
	for _, o := range olds {
		path, done, err := source(o)
		if err != nil {
			db.Close()
			return err
		}
		opts := r.opts
		if path == r.oldDir(o) {
			opts = r.oldOpts[o] // with its store, in shared mode
		}
		src, err := strata.Open(path, &opts)
		if err != nil {
			db.Close()
			return errors.Join(err, done())
		}
		if err := errors.Join(copyRange(db, src, start, end, r.write), src.Close(), done()); err != nil {
			db.Close()
			return err
		}
	}
	return errors.Join(db.Flush(), db.Close())
}

// rescaleByIngest: RescaleIngest for new instance op.
func (r *stateRun) rescaleByIngest(stores [stateOldInstances]checkpoint.Store, ids [stateOldInstances]uint64, op int, dir string) error {
	start, end, olds, err := rescaleTarget(op)
	if err != nil {
		return err
	}
	db, err := r.open(dir)
	if err != nil {
		return err
	}
	for _, o := range olds {
		if _, err := db.IngestRange(r.ctx, stores[o], ids[o], start, end); err != nil {
			db.Close()
			return err
		}
	}
	return db.Close()
}

// copyBatchBytes is the size of the batches copyRange writes.
const copyBatchBytes = 1 << 20

// copyRange sets every key of src in [start, end) into dst, in batches.
func copyRange(dst, src *strata.DB, start, end []byte, wo *strata.WriteOptions) error {
	it, err := src.NewIter(&strata.IterOptions{LowerBound: start, UpperBound: end})
	if err != nil {
		return err
	}
	b := dst.NewBatch()
	size := 0
	for ok := it.First(); ok; ok = it.Next() {
		k, v := it.Key(), it.Value()
		if v == nil && it.Error() != nil {
			break // a value that could not be read: copy nothing for it
		}
		if err := b.Set(k, v); err != nil {
			it.Close()
			return err
		}
		size += len(k) + len(v)
		if size >= copyBatchBytes {
			if err := dst.Apply(b, wo); err != nil {
				it.Close()
				return err
			}
			b, size = dst.NewBatch(), 0
		}
	}
	// Close returns the error that ended the loop, if one did.
	if err := it.Close(); err != nil {
		return err
	}
	if size > 0 {
		return dst.Apply(b, wo)
	}
	return nil
}

// open opens the database in dir with the engine's options.
func (r *stateRun) open(dir string) (*strata.DB, error) {
	opts := r.opts
	return strata.Open(dir, &opts)
}

// countKeys counts the keys of the database in dir within [start, end).
func (r *stateRun) countKeys(dir string, start, end []byte) (n int64, err error) {
	db, err := r.open(dir)
	if err != nil {
		return 0, err
	}
	defer func() { err = errors.Join(err, db.Close()) }()
	return countIn(db, start, end)
}
