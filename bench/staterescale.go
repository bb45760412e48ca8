package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/checkpoint"
	"github.com/strata-db/strata/checkpoint/keygroup"
)

// refSource is a checkpoint an instance took into its registry.
type refSource struct {
	registry string
	id       uint64
}

// rescaleByReference runs RescaleReference: stateOldInstances ->
// stateNewInstances from the old instances' last checkpoints ids, then
// back from the new instances' checkpoints.
func (r *stateRun) rescaleByReference(ss *stateStores, ids [stateOldInstances]uint64) ([]StateTiming, error) {
	split := StateTiming{Method: RescaleReference}
	switch {
	case slices.Contains(r.spec.RescaleSkip, RescaleReference):
		split.Skipped, split.Note = true, "left out (--rescale_skip)"
		return []StateTiming{split}, nil
	case !r.shared:
		split.Skipped, split.Note = true, "shared mode only (--shared_cache): instances that do not share files number their value logs alike"
		return []StateTiming{split}, nil
	}
	olds := make([]refSource, stateOldInstances)
	for i := range olds {
		olds[i] = refSource{oldRegistry(i), ids[i]}
	}
	news, err := r.referenceStep(ss, &split, olds, stateNewInstances, "new")
	if err != nil {
		return nil, err
	}
	back := StateTiming{Method: RescaleReference, From: stateNewInstances, To: stateOldInstances}
	if _, err := r.referenceStep(ss, &back, news, stateOldInstances, "back"); err != nil {
		return nil, err
	}
	return []StateTiming{split, back}, nil
}

// referenceStep opens n new instances one after the other, instance op
// with the key range of instance op of n, by reference to the checkpoints
// srcs (srcs[i] of instance i of len(srcs)) whose ranges overlap it, and
// adds to t the time from each open to its first Get returning and what
// it asked of the store. Untimed, each new instance then checkpoints into
// a registry of its own (whose checkpoints it returns), its keys are
// counted against the loaded ones, and it is closed.
func (r *stateRun) referenceStep(ss *stateStores, t *StateTiming, srcs []refSource, n int, tag string) ([]refSource, error) {
	out := make([]refSource, n)
	for op := range n {
		start, end, first, last, err := instanceRange(n, op)
		if err != nil {
			return nil, err
		}
		// The new instance reaches the store through a link of its own
		// (one of the old instances' links: they are idle now).
		link := ss.slow[op%stateOldInstances]
		var cks []checkpoint.StoreCheckpoint
		for i, s := range srcs {
			f, l, err := keygroup.OperatorRange(stateMaxParallelism, len(srcs), i)
			if err != nil {
				return nil, err
			}
			if max(f, first) > min(l, last) {
				continue
			}
			view, err := checkpoint.Named(link, s.registry)
			if err != nil {
				return nil, err
			}
			cks = append(cks, checkpoint.StoreCheckpoint{Store: view, ID: s.id})
		}
		var want int64
		k := -1 // a key of the range, read first
		for i, g := range r.groups {
			if g >= first && g <= last {
				want++
				if k < 0 {
					k = i
				}
			}
		}
		key, _ := r.keyWith(nil, make([]byte, r.spec.KeySize), uint64(max(k, 0)))
		dir := filepath.Join(r.dir, fmt.Sprintf("rescale-%s-%s-%d", RescaleReference, tag, op))
		os.RemoveAll(dir)
		opts := r.opts
		opts.SharedCacheSize = r.spec.Config.SharedCache
		before := ss.stats()
		began := time.Now()
		db, err := strata.OpenRangeFromCheckpoints(r.ctx, cks, start, end, dir, &opts)
		if err != nil {
			return nil, err
		}
		if k >= 0 {
			_, err = db.Get(key)
		}
		took := time.Since(began)
		t.Duration += took
		t.FirstGet = max(t.FirstGet, took)
		t.Store = t.Store.add(ss.since(before))
		t.FileBytes += tableFileBytes(dir)
		// What the rescale left on disk (a manifest, and the cache's
		// parts the first Get and the opens fetched), not what the
		// checkpoint and the count below read into the cache.
		t.Bytes += DirSize(dir)
		if err != nil {
			db.Close()
			return nil, fmt.Errorf("first Get of new instance %d: %w", op, err)
		}
		reg := fmt.Sprintf("%s-%d", tag, op)
		view, err := checkpoint.Named(link, reg)
		if err == nil {
			var u *checkpoint.Uploader
			if u, err = checkpoint.NewUploader(view, nil); err == nil {
				var st checkpoint.Stats
				st, err = db.CheckpointToStore(r.ctx, u)
				out[op] = refSource{reg, st.ID}
			}
		}
		var got int64
		if err == nil {
			got, err = countIn(db, start, end)
		}
		if cerr := db.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
		if got != want {
			return nil, fmt.Errorf("new instance %d of %d holds %d keys, its key groups [%d, %d] have %d", op, n, got, first, last, want)
		}
		t.Keys += got
		if !r.spec.KeepDB {
			os.RemoveAll(dir)
		}
	}
	return out, nil
}

// countIn counts the keys of db in [start, end).
func countIn(db *strata.DB, start, end []byte) (int64, error) {
	it, err := db.NewIter(&strata.IterOptions{LowerBound: start, UpperBound: end})
	if err != nil {
		return 0, err
	}
	var n int64
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	return n, it.Close() // the error that ended the loop, if one did
}

// tableFileBytes returns the bytes of the tables and value logs in dir
// itself (not in its shared-file cache).
func tableFileBytes(dir string) int64 {
	var n int64
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Type().IsRegular() && (strings.HasSuffix(e.Name(), ".sst") || strings.HasSuffix(e.Name(), ".vlog")) {
			if info, err := e.Info(); err == nil {
				n += info.Size()
			}
		}
	}
	return n
}
