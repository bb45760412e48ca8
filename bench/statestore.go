package bench

import (
	"fmt"
	"path/filepath"

	"github.com/strata-db/strata/checkpoint"
)

// StoreStats are the requests a step of the statebackend workload made
// of its stores, and their bytes, summed over the stores (from
// checkpoint.SlowStats).
type StoreStats struct {
	Gets     int64 `json:"gets"`
	Puts     int64 `json:"puts"`
	Lists    int64 `json:"lists"`
	Deletes  int64 `json:"deletes"`
	Composes int64 `json:"composes"`
	// GetBytes came from the stores (Get bodies); PutBytes went to them
	// (Put bodies and the bytes Composes sent).
	GetBytes int64 `json:"get_bytes"`
	PutBytes int64 `json:"put_bytes"`
	// CopiedBytes were copied by the stores from objects they held
	// (Compose), moving neither way.
	CopiedBytes int64 `json:"copied_bytes"`
}

func storeStatsOf(s checkpoint.SlowStats) StoreStats {
	return StoreStats{Gets: s.Gets, Puts: s.Puts, Lists: s.Lists, Deletes: s.Deletes, Composes: s.Composes,
		GetBytes: s.GetBytes, PutBytes: s.PutBytes, CopiedBytes: s.CopiedBytes}
}

// stateStores are the old instances' stores: each a local store in the
// run's directory, made as slow as Spec.StoreLatency and
// Spec.StoreBandwidth say, and counting its requests.
type stateStores struct {
	slow   [stateOldInstances]*checkpoint.SlowStore
	stores [stateOldInstances]checkpoint.Store // the same, as Stores
}

// openStateStores makes the stores of the old instances in dir.
func openStateStores(spec *Spec, dir string) (*stateStores, error) {
	ss := &stateStores{}
	for i := range ss.slow {
		local, err := checkpoint.NewLocalStore(filepath.Join(dir, fmt.Sprintf("store-%d", i)))
		if err != nil {
			return nil, err
		}
		// Each store has a link of its own, as each instance of a job
		// would on its own machine.
		s, err := checkpoint.NewSlowStore(local, checkpoint.SlowOptions{
			Latency: spec.StoreLatency, Bandwidth: spec.StoreBandwidth, Seed: uint64(i)})
		if err != nil {
			return nil, err
		}
		ss.slow[i], ss.stores[i] = s, s
	}
	return ss, nil
}

// stats returns the stores' counts so far, summed.
func (ss *stateStores) stats() checkpoint.SlowStats {
	var sum checkpoint.SlowStats
	for _, s := range ss.slow {
		sum = sum.Add(s.Stats())
	}
	return sum
}

// since returns what the stores did since before, a snapshot of stats.
func (ss *stateStores) since(before checkpoint.SlowStats) StoreStats {
	return storeStatsOf(ss.stats().Sub(before))
}
