package remote

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/vfs"
)

// DefaultPartSize is the unit in which shared files are fetched and cached
// when no whole local copy exists: 1 MiB, enough that a ranged GET's
// transfer outweighs its latency on a fast link only a little (at 20 ms a
// request and 100 MB/s, 1 MiB takes 10 ms to move), small enough that a
// point read of a cold table fetches little it does not need.
const DefaultPartSize = 1 << 20

// DefaultCacheSize is the local bytes of shared files kept when
// Options.CacheSize is 0: 1 GiB.
const DefaultCacheSize = 1 << 30

// CacheDirName is the directory, inside the database's, of the parts of
// shared files fetched from the store.
const CacheDirName = "shared-cache"

// Options configure Files.
type Options struct {
	// Store holds the shared files.
	Store Store
	// FS and Dir are the database's filesystem and directory: a whole
	// local copy of a shared file is in Dir under the file's own name (as
	// a local file would be), parts in Dir/shared-cache.
	FS  vfs.FS
	Dir string
	// Instance is the database's instance id (see NewInstanceID): the
	// objects it writes are named after it, and its reference markers.
	Instance string
	// CacheSize bounds the local bytes of shared files, whole copies and
	// parts together; the least recently used go first. 0:
	// DefaultCacheSize; negative: no bound.
	CacheSize int64
	// PartSize is the size of the parts fetched (0: DefaultPartSize).
	PartSize int64
	// RequestTimeout bounds each store request the read path makes (0:
	// one minute): a read of a shared file cannot wait longer.
	RequestTimeout time.Duration
	// ReadOnly reads without writing anything, locally or to the store:
	// parts already cached are used, fetched ones are not kept, and
	// Share, Adopt and Release fail.
	ReadOnly bool
}

// errReadOnly is returned by the requests a read-only Files refuses.
var errReadOnly = errors.New("remote: read-only")

// fileKey names a file of the database.
type fileKey struct {
	t   base.FileType
	num base.FileNum
}

func (k fileKey) name() string { return base.MakeFilename(k.t, k.num) }

// shared is what Files knows of one shared file. Guarded by Files.mu.
type shared struct {
	key  fileKey
	ref  manifest.SharedRef
	size int64
	// whole is the LRU element of the whole local copy in Dir, nil when
	// there is none.
	whole *list.Element
	// parts are the LRU elements of the parts in the cache directory.
	parts map[int64]*list.Element
	// fetching are the parts being fetched.
	fetching map[int64]*fetch
	released bool
}

// lruEntry is one cached piece: a whole copy (part < 0) or a part.
type lruEntry struct {
	f    *shared
	part int64
	size int64
}

// fetch is a part being fetched; done is closed when data or err is set.
type fetch struct {
	done chan struct{}
	data []byte
	err  error
}

// Files is the database's view of its shared files: which files are
// shared and where their objects are, a local cache of their bytes, and
// the requests that share a local file, adopt an object, and release one.
// Its methods are safe for concurrent use.
type Files struct {
	o        Options
	cacheDir string
	holder   string

	mu    sync.Mutex
	files map[fileKey]*shared
	lru   *list.List // of *lruEntry, most recent first
	used  int64
	cap   int64
	// failedDrops are the objects of released files whose DropRef
	// failed: a Release of the file again retries it.
	failedDrops map[fileKey]string
	// keeping counts the prefetches and cache writes in flight (Close
	// waits for them); Add only under mu, while ctx is not done.
	keeping sync.WaitGroup
	// ctx ends with Close (cancel, under mu): fetches in flight then,
	// prefetches included, fail at once instead of keeping Close waiting
	// for a slow store, and fetches keep no more parts.
	ctx    context.Context
	cancel context.CancelFunc

	stats struct {
		gets, getBytes, hits, misses, evicted, evictedBytes, prefetches, copies atomic.Int64
	}
}

// Stats counts what Files did.
type Stats struct {
	Files        int   // shared files known
	CachedBytes  int64 // local bytes of shared files: whole copies and parts
	CacheSize    int64 // the bound on CachedBytes (negative: none)
	Gets         int64 // ranged GETs of parts
	GetBytes     int64 // bytes they fetched
	PartHits     int64 // part reads served by the local cache
	PartMisses   int64 // part reads that waited for a GET
	Prefetches   int64 // parts fetched ahead of a read (Prefetch)
	Evicted      int64 // whole copies and parts evicted
	EvictedBytes int64
	Copies       int64 // private copies OpenCopy made
}

// New returns Files over o's store and directory. Register the shared
// files with Track, then call Start.
func New(o Options) (*Files, error) {
	if o.Store == nil || o.FS == nil {
		return nil, errors.New("remote: Options.Store and Options.FS are required")
	}
	if err := CheckInstanceID(o.Instance); err != nil {
		return nil, err
	}
	if o.PartSize <= 0 {
		o.PartSize = DefaultPartSize
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = time.Minute
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &Files{
		ctx:         ctx,
		cancel:      cancel,
		o:           o,
		cacheDir:    o.FS.PathJoin(o.Dir, CacheDirName),
		holder:      InstanceHolder(o.Instance),
		files:       make(map[fileKey]*shared),
		failedDrops: map[fileKey]string{},
		lru:         list.New(),
		cap:         o.CacheSize,
	}
	if f.cap == 0 {
		f.cap = DefaultCacheSize
	}
	if !o.ReadOnly {
		if err := o.FS.MkdirAll(f.cacheDir, 0o755); err != nil {
			return nil, fmt.Errorf("remote: create %s: %w", f.cacheDir, err)
		}
	}
	return f, nil
}

// Instance returns the instance id.
func (f *Files) Instance() string { return f.o.Instance }

// Store returns the store.
func (f *Files) Store() Store { return f.o.Store }

// Track records that the file t/num of size bytes is shared, its bytes at
// ref; local says whether a whole local copy is in the directory. Open
// calls it for every shared file of the version it recovers, and the
// database after every edit that shares a file.
func (f *Files) Track(t base.FileType, num base.FileNum, ref manifest.SharedRef, size int64, local bool) {
	k := fileKey{t, num}
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.files[k]
	if s == nil {
		s = &shared{key: k, parts: make(map[int64]*list.Element), fetching: make(map[int64]*fetch)}
		f.files[k] = s
	}
	s.ref, s.size = ref, size
	if local && s.whole == nil {
		s.whole = f.lru.PushFront(&lruEntry{f: s, part: -1, size: size})
		f.used += size
	}
	f.evictLocked()
}

// Start accounts for the parts already in the cache directory (a restart
// keeps them) and deletes those of files no longer shared, and parts left
// half written. Call it once the shared files are tracked.
func (f *Files) Start() error {
	names, err := f.o.FS.List(f.cacheDir)
	if err != nil {
		if f.o.ReadOnly && errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("remote: list %s: %w", f.cacheDir, err)
	}
	remove := func(name string) {
		if !f.o.ReadOnly {
			_ = f.o.FS.Remove(f.o.FS.PathJoin(f.cacheDir, name))
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, name := range names {
		k, off, ok := parsePartName(name)
		idx := off / f.o.PartSize
		s := f.files[k]
		if !ok || off%f.o.PartSize != 0 || s == nil || s.whole != nil || idx*f.o.PartSize >= s.size || s.parts[idx] != nil {
			remove(name)
			continue
		}
		n := min(f.o.PartSize, s.size-idx*f.o.PartSize)
		if st, err := f.o.FS.Stat(f.o.FS.PathJoin(f.cacheDir, name)); err != nil || st.Size() != n {
			remove(name)
			continue
		}
		s.parts[idx] = f.lru.PushBack(&lruEntry{f: s, part: idx, size: n})
		f.used += n
	}
	f.evictLocked()
	return nil
}

// Shared returns where the file t/num is stored, if it is shared.
func (f *Files) Shared(t base.FileType, num base.FileNum) (manifest.SharedRef, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.files[fileKey{t, num}]
	if s == nil {
		return manifest.SharedRef{}, false
	}
	return s.ref, true
}

// Objects returns the objects of the shared files Files tracks: every
// shared file of a version the database may still read (a file is
// tracked from the version that shares it until Release).
func (f *Files) Objects() map[string]bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]bool, len(f.files))
	for _, s := range f.files {
		out[s.ref.Object] = true
	}
	return out
}

// HasLocal reports whether a whole local copy of the shared file t/num is
// in the directory.
func (f *Files) HasLocal(t base.FileType, num base.FileNum) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.files[fileKey{t, num}]
	return s != nil && s.whole != nil
}

// Open opens the shared file t/num for reading: its whole local copy when
// there is one (a file of the directory, which readers may map), and
// otherwise a File whose reads fetch the parts they need into the cache.
// A file that is not shared is an error.
func (f *Files) Open(t base.FileType, num base.FileNum) (vfs.File, error) {
	k := fileKey{t, num}
	f.mu.Lock()
	s := f.files[k]
	if s == nil {
		f.mu.Unlock()
		return nil, fmt.Errorf("remote: %s is not shared", k.name())
	}
	if s.whole != nil {
		f.lru.MoveToFront(s.whole)
		f.mu.Unlock()
		file, err := f.o.FS.Open(f.o.FS.PathJoin(f.o.Dir, k.name()))
		if err == nil {
			return file, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("remote: open local copy of %s: %w", k.name(), err)
		}
		// Evicted meanwhile, or lost: read through the cache.
		f.mu.Lock()
		if s.whole != nil {
			f.dropLocked(s.whole)
		}
		f.mu.Unlock()
	} else {
		f.mu.Unlock()
	}
	return &partFile{files: f, s: s, name: k.name()}, nil
}

// Share uploads the local file t/num of size bytes as an object of its
// own, after writing the instance's reference marker on it, and returns
// where it is. The caller records the file as shared (a version edit) and
// then calls Track; the local file stays, as the cache's whole copy. If
// it fails (the file was deleted meanwhile, the Put failed), it drops the
// marker again, unless ctx is done (the database closes: the next Open
// drops it).
func (f *Files) Share(ctx context.Context, t base.FileType, num base.FileNum, size int64) (_ manifest.SharedRef, err error) {
	if f.o.ReadOnly {
		return manifest.SharedRef{}, errReadOnly
	}
	object := ObjectName(f.o.Instance, t, num)
	defer func() {
		// Nothing names the object: a marker left would hold it, and
		// the instance's later markers, until the next Open. A failed
		// Put leaves no object; DropRef deletes one an unknown outcome
		// left.
		if err != nil && ctx.Err() == nil {
			_, _ = DropRef(ctx, f.o.Store, object, f.holder)
		}
	}()
	if err := AddRef(ctx, f.o.Store, object, f.holder); err != nil {
		return manifest.SharedRef{}, err
	}
	file, err := f.o.FS.Open(f.o.FS.PathJoin(f.o.Dir, base.MakeFilename(t, num)))
	if err != nil {
		return manifest.SharedRef{}, fmt.Errorf("remote: share %s: %w", base.MakeFilename(t, num), err)
	}
	defer file.Close()
	if err := f.o.Store.Put(ctx, object, io.NewSectionReader(file, 0, size), size); err != nil {
		return manifest.SharedRef{}, fmt.Errorf("remote: share %s: %w", base.MakeFilename(t, num), err)
	}
	return manifest.SharedRef{Object: object}, nil
}

// Adopt writes the instance's reference marker on the object ref names
// (an object another holder keeps: a database opened from a checkpoint
// adopts the checkpoint's objects before its manifest names them).
func (f *Files) Adopt(ctx context.Context, ref manifest.SharedRef) error {
	if f.o.ReadOnly {
		return errReadOnly
	}
	return AddRef(ctx, f.o.Store, ref.Object, f.holder)
}

// Release forgets the shared file t/num, which the database no longer
// holds (nothing durable of it names the file): it deletes the local copy
// and parts and, unless another file it tracks is in the same object (a
// database opened from a checkpoint reads several files from one
// segment, and holds it by one marker), drops the instance's reference
// marker and deletes the object if no holder is left. A file Files does
// not know is ignored, unless its release failed to drop the marker: a
// Release of it again retries that.
//
// INVARIANT: the marker stays while a tracked file is in its object, so
// rule 3 holds for each object, not only each file. Files share an object
// only when a database opened from a checkpoint reads them from one of
// its segments, and those are all tracked at Open; a file the instance
// shares gets an object of its own.
func (f *Files) Release(ctx context.Context, t base.FileType, num base.FileNum) error {
	if f.o.ReadOnly {
		return errReadOnly
	}
	k := fileKey{t, num}
	f.mu.Lock()
	s := f.files[k]
	if s == nil {
		// A release whose DropRef failed is retried with its object.
		object, retry := f.failedDrops[k]
		f.mu.Unlock()
		if !retry {
			return nil
		}
		if _, err := DropRef(ctx, f.o.Store, object, f.holder); err != nil {
			return err
		}
		f.mu.Lock()
		delete(f.failedDrops, k)
		f.mu.Unlock()
		return nil
	}
	delete(f.files, k)
	s.released = true
	if s.whole != nil {
		f.dropLocked(s.whole)
	}
	for _, e := range s.parts {
		f.dropLocked(e)
	}
	inUse := false
	for _, o := range f.files {
		inUse = inUse || o.ref.Object == s.ref.Object
	}
	f.mu.Unlock()
	if inUse {
		return nil
	}
	if _, err := DropRef(ctx, f.o.Store, s.ref.Object, f.holder); err != nil {
		f.mu.Lock()
		f.failedDrops[k] = s.ref.Object
		f.mu.Unlock()
		return err
	}
	return nil
}

// Warmed is the file Warm downloaded.
type Warmed struct {
	Type base.FileType
	Num  base.FileNum
	Size int64 // 0: no file was left to warm
}

// Warm downloads the whole local copy of one shared file that has none
// and fits in the cache beside what it holds (tables first, the
// smallest first: their indexes serve every read), and returns it; Size
// 0 when no file is left to warm. The copy is written as the directory's
// own file (a temporary file, synced, renamed), which readers may map, and
// the file's cached parts are dropped. Files opened before (Open) still
// read through the cache, fetching again the parts they need: the caller
// reopens the file to read the copy.
func (f *Files) Warm(ctx context.Context) (Warmed, error) {
	if f.o.ReadOnly {
		return Warmed{}, errReadOnly
	}
	k, n, err := f.warm(ctx)
	return Warmed{Type: k.t, Num: k.num, Size: n}, err
}

// warm is Warm.
func (f *Files) warm(ctx context.Context) (fileKey, int64, error) {
	f.mu.Lock()
	var pick *shared
	for _, s := range f.files {
		if s.whole != nil || s.released || (f.cap >= 0 && f.used+s.size > f.cap) {
			continue
		}
		if pick == nil || warmBefore(s, pick) {
			pick = s
		}
	}
	f.mu.Unlock()
	if pick == nil {
		return fileKey{}, 0, nil
	}
	data, err := getRange(ctx, f.o.Store, pick.ref.Object, int64(pick.ref.Offset), pick.size)
	f.stats.gets.Add(1)
	if err != nil {
		return pick.key, 0, fmt.Errorf("remote: warm %s (object %s): %w", pick.key.name(), pick.ref, err)
	}
	f.stats.getBytes.Add(int64(len(data)))
	path := f.o.FS.PathJoin(f.o.Dir, pick.key.name())
	// In the cache directory, which Start clears of such leftovers.
	tmp := f.o.FS.PathJoin(f.cacheDir, "warm-"+strconv.FormatUint(rand.Uint64(), 16))
	if err := vfs.WriteFileSynced(f.o.FS, tmp, data); err != nil {
		_ = f.o.FS.Remove(tmp)
		return pick.key, 0, fmt.Errorf("remote: warm %s: %w", pick.key.name(), err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if pick.released || pick.whole != nil {
		_ = f.o.FS.Remove(tmp)
		return pick.key, pick.size, nil
	}
	if err := f.o.FS.Rename(tmp, path); err != nil {
		_ = f.o.FS.Remove(tmp)
		return pick.key, 0, fmt.Errorf("remote: warm %s: %w", pick.key.name(), err)
	}
	for _, e := range pick.parts {
		f.dropLocked(e)
	}
	pick.whole = f.lru.PushFront(&lruEntry{f: pick, part: -1, size: pick.size})
	f.used += pick.size
	f.evictLocked()
	return pick.key, pick.size, nil
}

// warmBefore orders the files Warm picks: tables before value logs, then
// the smaller first, then by number.
func warmBefore(a, b *shared) bool {
	at, bt := a.key.t == base.FileTypeTable, b.key.t == base.FileTypeTable
	if at != bt {
		return at
	}
	if a.size != b.size {
		return a.size < b.size
	}
	return a.key.num < b.key.num
}

// Stats returns counters of what Files did.
func (f *Files) Stats() Stats {
	f.mu.Lock()
	st := Stats{Files: len(f.files), CachedBytes: f.used, CacheSize: f.cap}
	f.mu.Unlock()
	st.Gets = f.stats.gets.Load()
	st.GetBytes = f.stats.getBytes.Load()
	st.PartHits = f.stats.hits.Load()
	st.PartMisses = f.stats.misses.Load()
	st.Prefetches = f.stats.prefetches.Load()
	st.Evicted = f.stats.evicted.Load()
	st.EvictedBytes = f.stats.evictedBytes.Load()
	st.Copies = f.stats.copies.Load()
	return st
}

// partPath returns the path of part idx of the file k in the cache. The
// name holds the part's offset in the file, not its index, so that a part
// cached under another PartSize is never taken for a different range:
// Start keeps it only where it is a whole part of this size.
func (f *Files) partPath(k fileKey, idx int64) string {
	return f.o.FS.PathJoin(f.cacheDir, k.name()+"."+strconv.FormatInt(idx*f.o.PartSize, 10))
}

// parsePartName parses a part's file name: the file and the part's
// offset in it.
func parsePartName(name string) (fileKey, int64, bool) {
	i := strings.LastIndexByte(name, '.')
	if i <= 0 {
		return fileKey{}, 0, false
	}
	idx, err := strconv.ParseInt(name[i+1:], 10, 64)
	if err != nil || idx < 0 {
		return fileKey{}, 0, false
	}
	t, num, ok := base.ParseFilename(name[:i])
	if !ok || (t != base.FileTypeTable && t != base.FileTypeVlog) {
		return fileKey{}, 0, false
	}
	return fileKey{t, num}, idx, true
}

// dropLocked deletes a cached piece and forgets it. f.mu held.
func (f *Files) dropLocked(e *list.Element) {
	le := e.Value.(*lruEntry)
	f.lru.Remove(e)
	f.used -= le.size
	if le.part < 0 {
		le.f.whole = nil
		if !f.o.ReadOnly {
			_ = f.o.FS.Remove(f.o.FS.PathJoin(f.o.Dir, le.f.key.name()))
		}
	} else {
		delete(le.f.parts, le.part)
		if !f.o.ReadOnly {
			_ = f.o.FS.Remove(f.partPath(le.f.key, le.part))
		}
	}
}

// evictLocked drops the least recently used pieces until the cache is
// within its bound. f.mu held.
func (f *Files) evictLocked() {
	for f.cap >= 0 && f.used > f.cap {
		e := f.lru.Back()
		if e == nil {
			return
		}
		le := e.Value.(*lruEntry)
		f.stats.evicted.Add(1)
		f.stats.evictedBytes.Add(le.size)
		f.dropLocked(e)
	}
}

// readPart copies into p the bytes of part idx of s from offset off in
// the part, fetching the part if the cache does not hold it.
func (f *Files) readPart(s *shared, idx int64, p []byte, off int64) (int, error) {
	for attempt := 0; ; attempt++ {
		f.mu.Lock()
		if e := s.parts[idx]; e != nil {
			f.lru.MoveToFront(e)
			f.mu.Unlock()
			f.stats.hits.Add(1)
			n, err := f.readLocalPart(s.key, idx, p, off)
			if err == nil || attempt > 0 || !errors.Is(err, os.ErrNotExist) {
				return n, err
			}
			continue // evicted between the lookup and the open: fetch it
		}
		f.stats.misses.Add(1)
		fe := s.fetching[idx]
		if fe == nil {
			fe = f.startFetchLocked(s, idx)
			f.mu.Unlock()
			f.runFetch(s, idx, fe)
		} else {
			f.mu.Unlock()
		}
		<-fe.done
		if fe.err != nil {
			return 0, fe.err
		}
		if off >= int64(len(fe.data)) {
			return 0, io.EOF
		}
		return copy(p, fe.data[off:]), nil
	}
}

// readLocalPart reads from the cached part file.
func (f *Files) readLocalPart(k fileKey, idx int64, p []byte, off int64) (int, error) {
	file, err := f.o.FS.Open(f.partPath(k, idx))
	if err != nil {
		return 0, err
	}
	defer file.Close()
	n, err := file.ReadAt(p, off)
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

// startFetchLocked registers a fetch of part idx of s, which the caller
// then runs (runFetch); readers of the part wait for it instead of
// fetching it again. f.mu is held.
func (f *Files) startFetchLocked(s *shared, idx int64) *fetch {
	fe := &fetch{done: make(chan struct{})}
	s.fetching[idx] = fe
	return fe
}

// runFetch GETs part idx of s for fe and hands the bytes to the readers
// waiting for them at once; the copy the cache keeps is written after,
// in the background (keepPart), so that a read that misses waits for the
// store's round trip and not for a file's sync as well. Meanwhile the
// part stays in s.fetching with its bytes, and readers take them from
// there.
//
// The write is counted in f.keeping before the readers get the bytes, so
// that a Close after a read returned waits for its part to be written
// (a restart then finds it cached).
func (f *Files) runFetch(s *shared, idx int64, fe *fetch) {
	fe.data, fe.err = f.fetchPart(f.ctx, s, idx)
	f.mu.Lock()
	keep := fe.err == nil && !f.o.ReadOnly && f.ctx.Err() == nil
	if keep {
		f.keeping.Add(1)
	} else {
		delete(s.fetching, idx)
	}
	f.mu.Unlock()
	close(fe.done)
	if keep {
		go func() {
			defer f.keeping.Done()
			f.keepPart(s, idx, fe.data)
		}()
	}
}

// keepPart writes part idx of s, data, into the cache (a temporary file,
// synced, renamed into place: a part file is whole or absent, also after
// a crash) and accounts for it, unless the file was released or a whole
// copy arrived meanwhile (the warm-up's, which holds its bytes).
func (f *Files) keepPart(s *shared, idx int64, data []byte) {
	path := f.partPath(s.key, idx)
	tmp := path + ".tmp-" + strconv.FormatUint(rand.Uint64(), 16)
	written := vfs.WriteFileSynced(f.o.FS, tmp, data) == nil
	if written {
		if err := f.o.FS.Rename(tmp, path); err != nil {
			written = false
		}
	}
	if !written {
		_ = f.o.FS.Remove(tmp) // the cache just does not keep it
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(s.fetching, idx)
	switch {
	case !written:
	case !s.released && s.whole == nil && s.parts[idx] == nil:
		s.parts[idx] = f.lru.PushFront(&lruEntry{f: s, part: idx, size: int64(len(data))})
		f.used += int64(len(data))
		f.evictLocked()
	default:
		_ = f.o.FS.Remove(path)
	}
}

// Prefetch starts fetching, in the background, the parts of the shared
// file t/num that hold [off, off+n) and that the cache has neither whole
// nor in part: a reader about to open the file (its header and footer, a
// round trip) asks for the bytes it will read next in the same round
// trip. A file that is not shared, or is local, is left alone.
func (f *Files) Prefetch(t base.FileType, num base.FileNum, off, n int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.files[fileKey{t, num}]
	if s == nil || s.whole != nil || s.released || f.ctx.Err() != nil || n <= 0 || off < 0 || off+n > s.size {
		return
	}
	for idx := off / f.o.PartSize; idx <= (off+n-1)/f.o.PartSize; idx++ {
		if s.parts[idx] != nil || s.fetching[idx] != nil {
			continue
		}
		f.stats.prefetches.Add(1)
		fe := f.startFetchLocked(s, idx)
		f.keeping.Add(1)
		go func() {
			defer f.keeping.Done()
			f.runFetch(s, idx, fe)
		}()
	}
}

// Close ends the part fetches in flight (their reads fail) and waits for
// them and for the cache writes in flight; later reads fetch nothing and
// fail. The database calls it when it closes.
func (f *Files) Close() {
	f.mu.Lock()
	f.cancel()
	f.mu.Unlock()
	f.keeping.Wait()
}

// fetchPart GETs part idx of s from the store, within ctx (and the
// request timeout).
func (f *Files) fetchPart(ctx context.Context, s *shared, idx int64) ([]byte, error) {
	start := idx * f.o.PartSize
	n := min(f.o.PartSize, s.size-start)
	if n <= 0 {
		return nil, fmt.Errorf("remote: part %d of %s is past its end (%d bytes)", idx, s.key.name(), s.size)
	}
	ctx, cancel := context.WithTimeout(ctx, f.o.RequestTimeout)
	defer cancel()
	data, err := getRange(ctx, f.o.Store, s.ref.Object, int64(s.ref.Offset)+start, n)
	f.stats.gets.Add(1)
	if err != nil {
		return nil, fmt.Errorf("remote: read %s (object %s): %w", s.key.name(), s.ref, err)
	}
	f.stats.getBytes.Add(int64(len(data)))
	return data, nil
}

// getRange reads exactly n bytes of object from off.
func getRange(ctx context.Context, s Store, object string, off, n int64) ([]byte, error) {
	rc, err := s.Get(ctx, object, off, n)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data := make([]byte, n)
	if _, err := io.ReadFull(rc, data); err != nil {
		return nil, fmt.Errorf("short read of [%d, %d): %w", off, off+n, err)
	}
	return data, nil
}

// partFile reads a shared file through the cache, a part at a time.
type partFile struct {
	files *Files
	s     *shared
	name  string
	mu    sync.Mutex // guards off
	off   int64
}

var _ vfs.File = (*partFile)(nil)

func (p *partFile) ReadAt(b []byte, off int64) (int, error) {
	size := p.s.size
	if off < 0 {
		return 0, fmt.Errorf("remote: read %s at negative offset %d", p.name, off)
	}
	if off >= size {
		return 0, io.EOF
	}
	ps := p.files.o.PartSize
	if end := min(off+int64(len(b)), size); (end-1)/ps > off/ps {
		// Several parts: fetched side by side, not one after the other.
		p.Prefetch(off, end-off)
	}
	n := 0
	for n < len(b) && off < size {
		idx := off / ps
		m, err := p.files.readPart(p.s, idx, b[n:min(len(b), n+int(min(ps-off%ps, size-off)))], off%ps)
		n += m
		off += int64(m)
		if err != nil {
			return n, err
		}
		if m == 0 {
			return n, io.ErrUnexpectedEOF
		}
	}
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}

// Prefetch fetches the parts of [off, off+n) the cache lacks, in the
// background (vfs.Prefetcher).
func (p *partFile) Prefetch(off, n int64) { p.files.Prefetch(p.s.key.t, p.s.key.num, off, n) }

func (p *partFile) Read(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n, err := p.ReadAt(b, p.off)
	p.off += int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

func (p *partFile) Write([]byte) (int, error) {
	return 0, fmt.Errorf("remote: %s is read-only", p.name)
}

func (p *partFile) Sync() error  { return nil }
func (p *partFile) Close() error { return nil }

func (p *partFile) Stat() (os.FileInfo, error) {
	return fileInfo{name: p.name, size: p.s.size}, nil
}

type fileInfo struct {
	name string
	size int64
}

func (fi fileInfo) Name() string       { return fi.name }
func (fi fileInfo) Size() int64        { return fi.size }
func (fi fileInfo) Mode() os.FileMode  { return 0o444 }
func (fi fileInfo) ModTime() time.Time { return time.Time{} }
func (fi fileInfo) IsDir() bool        { return false }
func (fi fileInfo) Sys() any           { return nil }
