package strata

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/internal/filecache"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/remote"
	"github.com/strata-db/strata/vfs"
)

// Shared files (Options.SharedStore). Package remote owns them: object
// names, reference markers, the local cache and its reads. The DB wires
// it in: at Open it registers the version's shared files; a background
// goroutine uploads the files that qualify (sharedCandidates), records
// them in a version edit and releases the shared files compactions and
// garbage collection made obsolete; readers open shared files through it.

// ErrSharedStoreRequired is returned by Open for a database that has
// shared files when Options.SharedStore is nil.
var ErrSharedStoreRequired = errors.New("strata: the database has shared files: open it with Options.SharedStore")

// ErrDestroying is returned by Open for a database whose Destroy began and
// did not finish (a crash or a failed store request stopped it): objects
// it reads may be gone from the store. Call Destroy again.
var ErrDestroying = errors.New("strata: the database is being destroyed: call Destroy again")

// sharedState is the DB's side of its shared files; nil without a store.
type sharedState struct {
	files *remote.Files
	// from is the first level whose tables are shared.
	from int
	// kick wakes the share loop; ctx ends with Close.
	kick   chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	// warmDone is closed when the warm-up loop ends (nil without one);
	// prefetchDone when prefetchTables ends.
	warmDone     chan struct{}
	prefetchDone chan struct{}
	// reconciled is set once the loop has converted the instance's hold
	// and dropped the references a crash left (reconcileShared).
	reconciled atomic.Bool

	mu sync.Mutex
	// releases are obsolete shared files waiting for the loop to release
	// them (store requests stay off the flush path).
	releases []sharedKey
	// errs counts failed uploads and releases (retried later).
	errs int
	// idle is set, and cond broadcast, after a pass of the loop that left
	// nothing to share or release; a kick clears it.
	idle bool
	// shares counts the files shared since Open; cond is broadcast with
	// each.
	shares int
	cond   sync.Cond
}

type sharedKey struct {
	t   base.FileType
	num base.FileNum
}

// sharedFromLevel resolves Options.SharedFromLevel.
func sharedFromLevel(o *Options) int {
	if o.SharedFromLevel > 0 {
		return o.SharedFromLevel
	}
	return manifest.NumLevels - 2
}

// openShared sets up the shared files of the database Open is opening:
// names is the directory listing. Without a store, a database with shared
// files is refused.
func (d *DB) openShared(names []string) error {
	d.mu.Lock()
	v := d.vs.Current()
	tables, vlogs := v.NumShared()
	instance := v.InstanceID
	d.mu.Unlock()
	o := d.opts
	if o.SharedStore == nil {
		if tables+vlogs > 0 {
			return fmt.Errorf("%w (%d tables and %d value logs are in a store)", ErrSharedStoreRequired, tables, vlogs)
		}
		return nil
	}
	if instance == "" {
		if o.ReadOnly {
			// Nothing is shared yet (the instance id comes first), and a
			// read-only DB shares nothing: read the local files.
			return nil
		}
		instance = remote.NewInstanceID()
		d.mu.Lock()
		// Its file numbers from here on are its own (see
		// remote.NewFileNumBase); the edit records the next one.
		d.vs.MarkFileNumUsed(remote.NewFileNumBase(d.vs.NextFileNum()) - 1)
		err := d.vs.LogAndApply(&manifest.VersionEdit{InstanceID: instance})
		d.mu.Unlock()
		if err != nil {
			return fmt.Errorf("strata: record the instance id: %w", err)
		}
	}
	files, err := remote.New(remote.Options{
		Store: o.SharedStore, FS: d.fs, Dir: d.dirname, Instance: instance,
		CacheSize: o.SharedCacheSize, PartSize: o.SharedPartSize, ReadOnly: o.ReadOnly,
	})
	if err != nil {
		return err
	}
	local := make(map[string]bool, len(names))
	for _, n := range names {
		local[n] = true
	}
	d.mu.Lock()
	v = d.vs.Current()
	v.SharedFiles(func(sf manifest.SharedFile) {
		t, size := base.FileTypeTable, uint64(0)
		if sf.Vlog {
			t = base.FileTypeVlog
			size = v.Vlogs[sf.FileNum].Size
		} else {
			v.Files(func(_ int, f *manifest.FileMetadata) {
				if f.FileNum == sf.FileNum {
					size = f.Size
				}
			})
		}
		files.Track(t, sf.FileNum, sf.Ref, int64(size), local[base.MakeFilename(t, sf.FileNum)])
	})
	d.mu.Unlock()
	if err := files.Start(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	d.shared = &sharedState{files: files, from: sharedFromLevel(o), kick: make(chan struct{}, 1), ctx: ctx, cancel: cancel, done: make(chan struct{})}
	d.shared.cond.L = &d.shared.mu
	open := func(t base.FileType) func(base.FileNum) (vfs.File, error) {
		return func(num base.FileNum) (vfs.File, error) { return d.openFile(t, num) }
	}
	d.tableCache.openFile = open(base.FileTypeTable)
	d.vlogs.SetOpener(open(base.FileTypeVlog))
	return nil
}

// openFile opens a table or value log of the manifest for reading: a
// shared one through package remote, a local one from the directory.
func (d *DB) openFile(t base.FileType, num base.FileNum) (vfs.File, error) {
	s := d.shared
	if s != nil {
		if _, ok := s.files.Shared(t, num); ok {
			return s.files.Open(t, num)
		}
	}
	if testHookOpenLocal != nil {
		testHookOpenLocal(t, num)
	}
	what := "table"
	if t == base.FileTypeVlog {
		what = "value log"
	}
	f, err := filecache.OpenLive(d.fs, d.dirname, base.MakeFilename(t, num), what)
	if err != nil && s != nil && errors.Is(err, base.ErrCorruption) {
		// Shared since the check above, and its local copy evicted: the
		// share loop records a file as shared, and only then may the cache
		// drop its local copy.
		if _, ok := s.files.Shared(t, num); ok {
			return s.files.Open(t, num)
		}
	}
	return f, err
}

// testHookOpenLocal runs in openFile between the check that a file is not
// shared and the open of its local copy (TestReadWhileSharing).
var testHookOpenLocal func(t base.FileType, num base.FileNum)

// isRemoteOnly reports whether the file is shared and has no local copy.
func (d *DB) isRemoteOnly(t base.FileType, num base.FileNum) bool {
	s := d.shared
	if s == nil {
		return false
	}
	_, ok := s.files.Shared(t, num)
	return ok && !s.files.HasLocal(t, num)
}

// startShared starts the share loop of a writable DB with a store.
func (d *DB) startShared() {
	if d.shared == nil || d.opts.ReadOnly {
		return
	}
	d.shared.prefetchDone = make(chan struct{})
	go d.shareLoop()
	d.scheduleShare()
	go d.prefetchTables()
	if d.opts.SharedWarmup > 0 {
		d.shared.warmDone = make(chan struct{})
		go func() {
			defer close(d.shared.warmDone)
			d.warmLoop()
		}()
	}
}

// stopShared stops the share loop (Close): an upload in flight is
// abandoned, its object left for the next Open to release.
func (d *DB) stopShared() {
	if d.shared == nil || d.opts.ReadOnly {
		return
	}
	d.shared.cancel()
	<-d.shared.done
	<-d.shared.prefetchDone
	if d.shared.warmDone != nil {
		<-d.shared.warmDone
	}
}

// closeSharedFiles ends the shared files' fetches and cache writes
// (remote.Files.Close), once nothing of the database reads any more.
func (d *DB) closeSharedFiles() {
	if d.shared != nil {
		d.shared.files.Close()
	}
}

// prefetchParallel bounds the tables prefetchTables opens at once.
const prefetchParallel = 16

// prefetchTables opens, after Open, the shared tables without a local
// copy, up to prefetchParallel at a time, each into the table cache and
// released there. Opening a table reads its footer, index and filter, a
// part fetched from the store for each not cached; a point read probes
// a table of each level in turn, so a database just opened from a
// checkpoint would wait for those round trips one level after the other.
// Failures are left to the reads that need the table.
func (d *DB) prefetchTables() {
	s := d.shared
	defer close(s.prefetchDone)
	d.mu.Lock()
	v := d.vs.Current()
	v.Ref()
	d.mu.Unlock()
	defer v.Unref()
	var tables []*manifest.FileMetadata
	v.Files(func(_ int, f *manifest.FileMetadata) { // level by level, as reads probe them
		if d.isRemoteOnly(base.FileTypeTable, f.FileNum) {
			tables = append(tables, f)
		}
	})
	forEachParallel(len(tables), prefetchParallel, func(i int) error {
		if s.ctx.Err() == nil { // the DB closes: open no more
			if h, err := d.tableCache.get(tables[i]); err == nil {
				d.tableCache.release(h)
			}
		}
		return nil
	})
}

// forEachParallel calls fn(i) for every i in [0, n), at most limit at a
// time, and returns their errors by i once every call has returned.
func forEachParallel(n, limit int, fn func(i int) error) []error {
	errs := make([]error, n)
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = fn(i)
		}()
	}
	wg.Wait()
	return errs
}

// scheduleShare wakes the share loop without blocking.
func (d *DB) scheduleShare() {
	if s := d.shared; s != nil {
		// Under s.mu, so that the loop, which checks for a kick before it
		// says it is idle, sees this one.
		s.mu.Lock()
		s.idle = false
		select {
		case s.kick <- struct{}{}:
		default:
		}
		s.mu.Unlock()
	}
}

// releaseShared queues the release of an obsolete file if it is shared,
// and reports whether it was.
func (d *DB) releaseShared(t base.FileType, num base.FileNum) bool {
	s := d.shared
	if s == nil {
		return false
	}
	if _, ok := s.files.Shared(t, num); !ok {
		return false
	}
	s.mu.Lock()
	s.releases = append(s.releases, sharedKey{t, num})
	s.mu.Unlock()
	d.scheduleShare()
	return true
}

// shareRetryInterval is how long the share loop waits after a failed
// store request before it tries again.
const shareRetryInterval = time.Second

// shareLoop uploads the files that qualify for sharing and releases the
// obsolete shared ones, one request at a time, until Close. It begins by
// dropping the instance's references a crash left behind.
func (d *DB) shareLoop() {
	s := d.shared
	defer func() {
		s.mu.Lock()
		s.cond.Broadcast()
		s.mu.Unlock()
		close(s.done)
	}()
	// The tables' prefetch first: it opens what the first reads need
	// (a database just opened from a checkpoint has all of it in the
	// store), and the loop's requests would queue beside its own.
	select {
	case <-s.prefetchDone:
	case <-s.ctx.Done():
		return
	}
	converted, reconciled := false, false
	convertAt := time.Now().Add(holdConvertDelay)
	for {
		if !converted && !time.Now().Before(convertAt) {
			converted = d.convertHold() == nil
		}
		// Releases wait for the hold's markers: a marker written for
		// an object released before it would hold that object for
		// nothing (reconcile, which follows, drops such markers).
		if converted && !reconciled {
			reconciled = d.reconcileShared() == nil
			s.reconciled.Store(reconciled)
		}
		if converted {
			d.releaseObsoleteShared()
		}
		failed := d.shareCandidates()
		var retry <-chan time.Time
		if failed || !reconciled {
			retry = time.After(shareRetryInterval)
		} else {
			s.mu.Lock()
			if len(s.releases) == 0 && len(s.kick) == 0 {
				s.idle = true
				s.cond.Broadcast()
			}
			s.mu.Unlock()
		}
		select {
		case <-s.ctx.Done():
			return
		case <-s.kick:
		case <-retry:
		}
	}
}

// holdConvertDelay is how long after Open the share loop waits before it
// converts a hold (convertHold): the first reads of a database just
// opened from a checkpoint go first, its markers' Puts after them. Tests
// set it to zero.
var holdConvertDelay = time.Second

// convertHold turns the hold of an instance opened from a checkpoint
// (checkpoint.Reference) into its markers, one per object, and deletes
// it (remote.ConvertHold): deletions list the holds, and the fewer there
// are, the less they read. It runs in the share loop.
func (d *DB) convertHold() error {
	s := d.shared
	err := remote.ConvertHold(s.ctx, s.files.Store(), remote.InstanceHolder(s.files.Instance()))
	if err != nil && s.ctx.Err() == nil {
		s.mu.Lock()
		s.errs++
		s.mu.Unlock()
		d.opts.Logger.Warn("strata: turning the hold of the checkpoint's objects into markers failed; retrying later", "err", err)
	}
	return err
}

// reconcileShared drops the instance's reference markers on objects no
// version it may still read names: what a crash between a marker and the
// manifest edit naming its object (or an abandoned upload) left. The
// objects in use are those Files tracks, not the current version's alone:
// an iterator or snapshot may hold an older version whose files garbage
// collection has dropped since (Files releases them when no version
// holds them). It runs in the share loop, so no upload is in flight.
func (d *DB) reconcileShared() error {
	s := d.shared
	marked, err := remote.Marked(s.ctx, s.files.Store())
	if err != nil {
		return err
	}
	inUse := s.files.Objects()
	holder := remote.InstanceHolder(s.files.Instance())
	for object, holders := range marked {
		if inUse[object] || !slices.Contains(holders, holder) {
			continue
		}
		if _, err := remote.DropRef(s.ctx, s.files.Store(), object, holder); err != nil {
			return err
		}
	}
	return nil
}

// waitSharedIdle waits until the share loop has nothing left to upload or
// release (for tests), or the DB closes.
func (d *DB) waitSharedIdle() {
	s := d.shared
	d.scheduleShare()
	s.mu.Lock()
	defer s.mu.Unlock()
	for !s.idle && s.ctx.Err() == nil {
		s.cond.Wait()
	}
}

// releaseObsoleteShared releases the queued obsolete shared files; those
// that fail stay queued.
func (d *DB) releaseObsoleteShared() {
	s := d.shared
	s.mu.Lock()
	queue := s.releases
	s.releases = nil
	s.mu.Unlock()
	// Side by side: each release waits for round trips (its marker's
	// Delete, the Lists of the object's markers and of the holds, the
	// object's Delete),
	// and a garbage-collection pass or a compaction makes many files
	// obsolete at once, whose local copies stay until then.
	errs := forEachParallel(len(queue), releaseParallel, func(i int) error { return s.files.Release(s.ctx, queue[i].t, queue[i].num) })
	for i, err := range errs {
		if err == nil {
			continue
		}
		k := queue[i]
		s.mu.Lock()
		s.releases = append(s.releases, k)
		s.errs++
		s.mu.Unlock()
		if s.ctx.Err() == nil {
			d.opts.Logger.Warn("strata: releasing a shared file failed; retrying later", "file", base.MakeFilename(k.t, k.num), "err", err)
		}
	}
}

// releaseParallel bounds the releases of obsolete shared files in flight.
const releaseParallel = 8

// sharedCandidates returns the local files of v that qualify for sharing:
// tables at level from or deeper, and finished value logs (an unfinished
// one, adopted by recovery, is still a local file), in file number order.
// shared says whether a file is already shared. A pure decision of a
// version.
func sharedCandidates(v *manifest.Version, from int) (tables []*manifest.FileMetadata, vlogs []*manifest.VlogMetadata) {
	for level := from; level < manifest.NumLevels; level++ {
		for _, f := range v.Levels[level] {
			if _, ok := v.SharedRef(false, f.FileNum); !ok {
				tables = append(tables, f)
			}
		}
	}
	slices.SortFunc(tables, func(a, b *manifest.FileMetadata) int { return int(a.FileNum) - int(b.FileNum) })
	for _, vl := range v.SortedVlogs() {
		if _, ok := v.SharedRef(true, vl.FileNum); !ok && vl.RecordsEnd == 0 {
			vlogs = append(vlogs, vl)
		}
	}
	return tables, vlogs
}

// shareParallel bounds the files the share loop uploads at once: each
// upload waits for round trips (its marker, its Put) and, in an object
// store, one stream moves less than the link can, so one at a time
// falls behind a write-heavy database, and a checkpoint that waits for
// the files to be shared (shareForCheckpoint) waits longer.
const shareParallel = 4

// shareCandidates uploads the files that qualify, value logs first, up to
// shareParallel at a time, each recorded in a version edit of its own
// once its object is in the store; it stops after the first failure
// (reporting it) or when the DB closes.
func (d *DB) shareCandidates() (failed bool) {
	s := d.shared
	for s.ctx.Err() == nil {
		batch := d.currentShareCandidates()
		if len(batch) == 0 {
			return false
		}
		batch = batch[:min(len(batch), shareParallel)]
		errs := forEachParallel(len(batch), shareParallel, func(i int) error { return d.shareFile(batch[i].k, batch[i].size) })
		for i, err := range errs {
			if err == nil {
				continue
			}
			failed = true
			if s.ctx.Err() == nil {
				s.mu.Lock()
				s.errs++
				s.cond.Broadcast()
				s.mu.Unlock()
				d.opts.Logger.Warn("strata: sharing a file failed; retrying later", "file", base.MakeFilename(batch[i].k.t, batch[i].k.num), "err", err)
			}
		}
		if failed {
			return true
		}
	}
	return false
}

// shareCandidate is a local file that qualifies for sharing, and its
// size.
type shareCandidate struct {
	k    sharedKey
	size uint64
}

// currentShareCandidates returns the files of the current version that
// qualify for sharing (sharedCandidates), value logs first.
func (d *DB) currentShareCandidates() []shareCandidate {
	d.mu.Lock()
	tables, vlogs := sharedCandidates(d.vs.Current(), d.shared.from)
	d.mu.Unlock()
	var out []shareCandidate
	for _, m := range vlogs {
		out = append(out, shareCandidate{sharedKey{base.FileTypeVlog, m.FileNum}, m.Size})
	}
	for _, f := range tables {
		out = append(out, shareCandidate{sharedKey{base.FileTypeTable, f.FileNum}, f.Size})
	}
	return out
}

// shareForCheckpoint waits until the share loop has shared the files of
// the current version that qualify (a checkpoint to the store is about to
// flush and pin it; the flush adds level-0 tables, shared only with
// SharedFromLevel 0): the checkpoint then references their objects
// instead of uploading copies of them, which the loop would upload again
// as shared objects. It returns early, leaving the rest to the
// checkpoint's copies, when an upload fails, the DB closes or ctx ends.
func (d *DB) shareForCheckpoint(ctx context.Context) {
	s := d.shared
	if s == nil || d.opts.ReadOnly {
		return
	}
	want := map[sharedKey]bool{}
	for _, c := range d.currentShareCandidates() {
		want[c.k] = true
	}
	if len(want) == 0 {
		return
	}
	stop := context.AfterFunc(ctx, func() {
		s.mu.Lock()
		s.cond.Broadcast()
		s.mu.Unlock()
	})
	defer stop()
	s.mu.Lock()
	errs := s.errs
	s.mu.Unlock()
	d.scheduleShare()
	for {
		// Still waiting for one of them: it qualifies in the current
		// version (a compaction may have dropped it meanwhile).
		pending := false
		for _, c := range d.currentShareCandidates() {
			pending = pending || want[c.k]
		}
		if !pending {
			return
		}
		s.mu.Lock()
		shares := s.shares
		for s.shares == shares && s.errs == errs && !s.idle && s.ctx.Err() == nil && ctx.Err() == nil {
			s.cond.Wait()
		}
		done := s.errs != errs || s.idle || s.ctx.Err() != nil || ctx.Err() != nil
		s.mu.Unlock()
		if done {
			return
		}
	}
}

// shareFile uploads one local file and records it as shared. A file the
// tree dropped meanwhile (the edit then finds it gone, and writes
// nothing) has its new object released at once.
func (d *DB) shareFile(k sharedKey, size uint64) error {
	s := d.shared
	ref, err := s.files.Share(s.ctx, k.t, k.num, int64(size))
	if err != nil {
		return err
	}
	d.mu.Lock()
	ve := &manifest.VersionEdit{SharedFiles: []manifest.SharedFile{{Vlog: k.t == base.FileTypeVlog, FileNum: k.num, Ref: ref}}}
	err = d.vs.LogAndApply(ve)
	switch {
	case err == nil:
		// Under d.mu, so that the file's obsolescence (a later version)
		// cannot be seen before it is tracked.
		s.files.Track(k.t, k.num, ref, int64(size), true)
		s.mu.Lock()
		s.shares++
		s.cond.Broadcast()
		s.mu.Unlock()
	case errors.Is(err, manifest.ErrSharedFileGone):
		d.mu.Unlock()
		_, err := remote.DropRef(s.ctx, s.files.Store(), ref.Object, remote.InstanceHolder(s.files.Instance()))
		return err
	default:
		d.setBackgroundErrorLocked(fmt.Errorf("strata: record shared file: %w", err))
	}
	d.mu.Unlock()
	return err
}
