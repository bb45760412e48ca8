package tool

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/strata-db/strata"
)

// The stress workload's mode switches and side doors: ingests of external
// tables, and bulk loads, both racing the other workers' writes (Sync ones
// among them), so that a kill lands in them and in the writes around them.

// ingestDir is where a stress run writes the external tables it ingests.
// A kill can leave tables there; each run starts by removing it.
func ingestDir(dbDir string) string { return dbDir + ".ingest" }

// ingest writes a few consecutive keys (some deleted) into an external
// table and ingests it. Ingest makes every write acknowledged before it
// durable, and its own once it returns, as a Sync write does.
func (s *stresser) ingest(rng *rand.Rand) error {
	lo, _, keys := s.randomRange(rng)
	keys = s.lockKeys(keys)
	defer s.unlockKeys(keys)
	fs := s.opts.FS
	dir := ingestDir(s.cfg.Dir)
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	path := fs.PathJoin(dir, fmt.Sprintf("%d-%d.sst", lo, s.ingests.Add(1)))
	w, err := strata.NewTableWriter(path, &strata.TableWriterOptions{FS: fs, ValueThreshold: s.opts.ValueThreshold})
	if err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	for _, k := range keys { // ascending: lockKeys sorts them
		st := s.e.get(k)
		id := st.maxID + 1
		del := rng.IntN(8) == 0
		s.e.put(k, st.begin(id, del))
		if del {
			err = w.Delete(stressKey(k))
		} else {
			err = w.Set(stressKey(k), stressValue(k, id))
		}
		if err != nil {
			w.Abort()
			return fmt.Errorf("ingest: %w", err)
		}
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	before := s.e.acks().Load()
	if err := s.db.Ingest([]string{path}); err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	atomic.AddInt64(&s.stats.Ingests, 1)
	s.acked(keys, true, before)
	return nil
}

// bulkLoad runs a bulk load of a few milliseconds, in which the other
// workers' writes skip the WAL and their Sync writes are refused
// (commit). Once EndBulkLoad returns, every write acknowledged before it
// is durable. One load at a time: EndBulkLoad ends the load whoever began
// it, and would otherwise end another worker's before its writes were
// made durable.
func (s *stresser) bulkLoad(rng *rand.Rand) error {
	if !s.bulkMu.TryLock() {
		return nil
	}
	defer s.bulkMu.Unlock()
	if err := s.db.BeginBulkLoad(); err != nil {
		return fmt.Errorf("begin bulk load: %w", err)
	}
	atomic.AddInt64(&s.stats.BulkLoads, 1)
	time.Sleep(time.Duration(1+rng.IntN(20)) * time.Millisecond)
	return s.durableCall(func() error {
		if err := s.db.EndBulkLoad(); err != nil {
			return fmt.Errorf("end bulk load: %w", err)
		}
		return nil
	})
}

// refused undoes the pending writes of keys after the DB refused them as
// a whole (a Sync write during a bulk load): nothing of them happened.
func (s *stresser) refused(keys []int, err error) bool {
	if !errors.Is(err, strata.ErrBulkLoadSync) {
		return false
	}
	for _, k := range keys {
		s.e.put(k, s.e.get(k).refused())
	}
	atomic.AddInt64(&s.stats.Refused, 1)
	return true
}
