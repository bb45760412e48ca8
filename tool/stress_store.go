package tool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/checkpoint"
	"github.com/strata-db/strata/remote"
	"github.com/strata-db/strata/vfs"
)

// A shared stress run (StressConfig.Store, crashtest --shared) keeps the
// database's lower levels and finished value logs in a local object store
// (Options.SharedStore) with a cache far smaller than the data, so that
// reads, compactions and garbage collection read shared files through
// the store; its checkpoints go to the store by reference, and each is
// opened as a new instance, read and destroyed. Under crashtest every
// store request that writes is a place to kill the process, and after
// each kill the store is audited (CheckStore): no object a database or a
// retained checkpoint refers to may be missing or damaged.

// stressStore is the store of a shared stress run: it prints an event
// before each request that writes (crashtest kills on them) and, when
// slow, waits a little first, so that kills fall between requests as
// well as in them.
type stressStore struct {
	checkpoint.Store
	c      checkpoint.Composer
	events func(string)
	slow   bool

	mu  sync.Mutex
	rng *rand.Rand
}

func newStressStore(dir string, events func(string), slow bool, seed uint64) (*stressStore, error) {
	s, err := checkpoint.NewLocalStore(dir)
	if err != nil {
		return nil, err
	}
	return &stressStore{Store: s, c: s, events: events, slow: slow, rng: rand.New(rand.NewPCG(seed, 0x570e))}, nil
}

func (s *stressStore) before(verb string) {
	if s.events != nil {
		s.events("store-" + verb)
	}
	if !s.slow {
		return
	}
	s.mu.Lock()
	d := time.Duration(s.rng.IntN(2000)) * time.Microsecond
	s.mu.Unlock()
	time.Sleep(d)
}

func (s *stressStore) Put(ctx context.Context, name string, r io.Reader, size int64) error {
	s.before("put")
	return s.Store.Put(ctx, name, r, size)
}

func (s *stressStore) Delete(ctx context.Context, name string) error {
	s.before("delete")
	return s.Store.Delete(ctx, name)
}

func (s *stressStore) Compose(ctx context.Context, name string, parts []checkpoint.Part) (int64, error) {
	s.before("compose")
	return s.c.Compose(ctx, name, parts)
}

// stressSharedOptions adds a shared run's settings to o: tables shared
// from level 1 or from the default level, small parts and a cache of a
// few parts to a few megabytes.
func stressSharedOptions(rng *rand.Rand, o *strata.Options, store checkpoint.Store) string {
	o.SharedStore = store
	o.SharedFromLevel = []int{0, 1}[rng.IntN(2)]
	o.SharedPartSize = []int64{4 << 10, 16 << 10, 64 << 10}[rng.IntN(3)]
	o.SharedCacheSize = []int64{64 << 10, 512 << 10, 4 << 20}[rng.IntN(3)]
	return fmt.Sprintf(", shared from level %d (0: default), parts %d, cache %d", o.SharedFromLevel, o.SharedPartSize, o.SharedCacheSize)
}

// openedDir is where a shared run opens its checkpoints as instances.
func openedDir(dbDir string) string { return dbDir + ".opened" }

// destroyOpened destroys the instance a killed run may have left in
// openedDir (its references to the store dropped).
func destroyOpened(dbDir string, o *strata.Options) error {
	if err := strata.Destroy(context.Background(), openedDir(dbDir), o); err != nil {
		return fmt.Errorf("destroy %s: %w", openedDir(dbDir), err)
	}
	return nil
}

// storeCheckpoint checkpoints the database into the store by reference,
// opens the checkpoint (or, one time in two, a key range of it, as a
// rescale does) as a new instance, checks that every key and value in it
// is one that was written, within the range, and destroys the instance.
// One at a time: the instance has one directory, and a later checkpoint
// could otherwise retire this one before it is opened.
func (s *stresser) storeCheckpoint(rng *rand.Rand) error {
	s.storeMu.Lock()
	defer s.storeMu.Unlock()
	ctx := context.Background()
	var id uint64
	if err := s.durableCall(func() error {
		st, err := s.db.CheckpointToStore(ctx, s.up)
		id = st.ID
		return err
	}); err != nil {
		return err
	}
	atomic.AddInt64(&s.stats.StoreCheckpoints, 1)
	o := *s.opts
	o.EventListener = nil
	lo, hi := 0, s.e.keys
	var db *strata.DB
	var err error
	if rng.IntN(2) == 0 {
		db, err = strata.OpenFromStore(ctx, s.opts.SharedStore, id, openedDir(s.cfg.Dir), &o)
	} else {
		lo = rng.IntN(s.e.keys)
		hi = lo + 1 + rng.IntN(s.e.keys-lo)
		db, err = strata.OpenRangeFromStore(ctx, s.opts.SharedStore, []uint64{id}, stressKey(lo), stressKey(hi), openedDir(s.cfg.Dir), &o)
	}
	if err != nil {
		return fmt.Errorf("open checkpoint %d [%d, %d) from the store: %w", id, lo, hi, err)
	}
	err = s.checkValuesWritten(db, lo, hi, fmt.Sprintf("store checkpoint %d [%d, %d)", id, lo, hi))
	err = errors.Join(err, db.Close())
	return errors.Join(err, destroyOpened(s.cfg.Dir, &o))
}

// verifySharedAfterKill is verifyAfterKill's check of a shared database:
// the store's audit (with the database and, if a run left it, the
// instance a checkpoint was opened as) finds no object in use missing or
// damaged, and a read-only open with the store reads every key. Stray
// markers and unreferenced objects are allowed: a crash leaves them, and
// the next open and upload drop them (checked at the end,
// checkStoreClean).
func verifySharedAfterKill(dbDir string, store checkpoint.Store) []string {
	dirs := []string{dbDir}
	if _, err := os.Stat(filepath.Join(openedDir(dbDir), "CURRENT")); err == nil {
		dirs = append(dirs, openedDir(dbDir))
	}
	rep, err := CheckStore(context.Background(), vfs.Default, store, dirs, nil, StoreCheckOptions{})
	if err != nil {
		return []string{fmt.Sprintf("check --store: %v", err)}
	}
	var problems []string
	for _, p := range rep.Problems {
		problems = append(problems, "check --store: "+p)
	}
	for _, p := range rep.Audit.Problems {
		problems = append(problems, "check --store: "+p.String())
	}
	return problems
}

// checkStoreClean ends a shared crash test: the database is opened with
// the store, checkpointed once more (the registry drops its own strays)
// and closed once it has dropped its own (Metrics.Shared.Reconciled); the instance a checkpoint was opened as
// is destroyed, and remote.Sweep deletes the objects a crash left
// without a marker. Then the audit must find the store clean: no object
// missing or damaged, no stray marker, nothing unreferenced.
func checkStoreClean(dbDir, storeDir string) []string {
	ctx := context.Background()
	store, err := checkpoint.NewLocalStore(storeDir)
	if err != nil {
		return []string{err.Error()}
	}
	// Nothing in the background but the share loop: what the store
	// holds stays as the upload leaves it.
	o := &strata.Options{SharedStore: store, DisableAutomaticCompactions: true, DisableGC: true, Merger: stressMerger{}}
	if err := destroyOpened(dbDir, o); err != nil {
		return []string{err.Error()}
	}
	db, err := strata.Open(dbDir, o)
	if err != nil {
		return []string{fmt.Sprintf("open with the store: %v", err)}
	}
	up, err := checkpoint.NewUploader(store, &checkpoint.UploadOptions{KeepLast: stressKeepLast})
	if err == nil {
		_, err = db.CheckpointToStore(ctx, up)
	}
	// The database drops the references the kills left once it has
	// converted any hold, from a second after Open.
	for deadline := time.Now().Add(time.Minute); err == nil && !db.Metrics().Shared.Reconciled; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			err = errors.New("the database did not reconcile its references within a minute")
		}
	}
	if err = errors.Join(err, db.Close()); err != nil {
		return []string{fmt.Sprintf("last checkpoint: %v", err)}
	}
	if _, err := remote.Sweep(ctx, store); err != nil {
		return []string{fmt.Sprintf("sweep: %v", err)}
	}
	rep, err := CheckStore(ctx, vfs.Default, store, []string{dbDir}, nil, StoreCheckOptions{Quick: true, All: true})
	if err != nil {
		return []string{fmt.Sprintf("check --store: %v", err)}
	}
	if rep.OK() {
		return nil
	}
	var b strings.Builder
	rep.Write(&b)
	return []string{"the store is not clean after a reopen, an upload and a sweep:\n" + b.String()}
}

// stressKeepLast is how many checkpoints a shared run's registry keeps.
const stressKeepLast = 2
