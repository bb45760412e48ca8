package vlog

import (
	"io"

	"github.com/strata-db/strata/cache"
	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/internal/filecache"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/vfs"
)

// ReaderCache keeps the Readers of a database's value logs open in the
// database's file cache (shared with its tables under one bound on open
// files), and resolves value pointers through them. A Reader is closed
// when the file cache evicts it and nobody uses it, or once its file is
// deleted, which happens only once no version can reach it. Safe for
// concurrent use.
//
// Finished value logs are read through read-only memory mappings where the
// filesystem allows it (see ReaderOptions.Map): a point read then costs no
// system call and one copy of the value, and skips the value cache, which
// 4 KiB values would only churn. The mappings share the page cache; they
// hold address space, not memory, and the file cache's bound on open files
// bounds them too.
type ReaderCache struct {
	fs      vfs.FS
	dirname string
	cache   *cache.Cache
	cacheID uint64
	files   *filecache.Cache
	// openFile, if set, opens a value log for reading (see SetOpener).
	openFile func(base.FileNum) (vfs.File, error)
	// populate: the Readers populate their mappings (see
	// ReaderOptions.Populate).
	populate bool
}

// SetOpener makes the cache open value logs with open (a database whose
// files may be elsewhere than its directory) instead of from the
// directory. Call it before the first read.
func (rc *ReaderCache) SetOpener(open func(base.FileNum) (vfs.File, error)) { rc.openFile = open }

// NewReaderCache returns a cache of the value logs in dirname. c, the value
// cache, may be nil. With populate, the Readers it opens populate their
// mappings (see ReaderOptions.Populate).
func NewReaderCache(fs vfs.FS, dirname string, c *cache.Cache, files *filecache.Cache, populate bool) *ReaderCache {
	rc := &ReaderCache{fs: fs, dirname: dirname, cache: c, files: files, populate: populate}
	if c != nil {
		rc.cacheID = c.NewID()
	}
	return rc
}

// Handle is an open value log with a reference to it: Release it.
type Handle struct {
	fh     filecache.Ref
	Reader *Reader
}

// Acquire returns the Reader of value log m with a reference the caller
// must Release.
func (rc *ReaderCache) Acquire(m *manifest.VlogMetadata) (Handle, error) {
	return rc.acquire(m, nil)
}

// AcquireOpen is Acquire of a value log that is open already; ok is false,
// and nothing is opened, when it is not.
func (rc *ReaderCache) AcquireOpen(m *manifest.VlogMetadata) (h Handle, ok bool) {
	fh, ok := rc.files.GetOpen(filecache.Key{Type: base.FileTypeVlog, Num: m.FileNum})
	if !ok {
		return Handle{}, false
	}
	return Handle{fh: fh, Reader: fh.Reader().(*Reader)}, true
}

// acquire is Acquire; if it opens the file, it first hints next, the
// record the caller reads next, to the file (vfs.Prefetch): a value log
// in an object store then fetches the record's bytes in the round trip
// that opening it (its header and footer) takes, not in one after it.
func (rc *ReaderCache) acquire(m *manifest.VlogMetadata, next *Pointer) (Handle, error) {
	key := filecache.Key{Type: base.FileTypeVlog, Num: m.FileNum}
	fh, err := rc.files.Get(key, func() (io.Closer, error) {
		r, err := rc.open(m, next)
		if err != nil {
			return nil, err
		}
		return r, nil
	})
	if err != nil {
		return Handle{}, err
	}
	return Handle{fh: fh, Reader: fh.Reader().(*Reader)}, nil
}

// Release drops the reference of h.
func (rc *ReaderCache) Release(h Handle) {
	rc.files.Release(h.fh) // a zero Ref is ignored
}

func (rc *ReaderCache) open(m *manifest.VlogMetadata, next *Pointer) (*Reader, error) {
	name := base.MakeFilename(base.FileTypeVlog, m.FileNum)
	var f vfs.File
	var err error
	if rc.openFile != nil {
		f, err = rc.openFile(m.FileNum)
	} else {
		f, err = filecache.OpenLive(rc.fs, rc.dirname, name, "value log")
	}
	if err != nil {
		return nil, err
	}
	if next != nil {
		vfs.Prefetch(f, int64(next.Offset), int64(next.Length))
	}
	r, err := NewReader(f, m.FileNum, int64(m.Size), ReaderOptions{Cache: rc.cache, CacheID: rc.cacheID, FileName: name, Map: true, Populate: rc.populate})
	if err != nil {
		f.Close()
		return nil, err
	}
	return r, nil
}

// Value reads the value p locates (in value log m, for key) and appends
// it to dst. With dst nil the result is a fresh slice holding just the
// value, which a mapped file fills with its only copy.
func (rc *ReaderCache) Value(m *manifest.VlogMetadata, p Pointer, key, dst []byte) ([]byte, error) {
	h, err := rc.acquire(m, &p)
	if err != nil {
		return nil, err
	}
	defer rc.Release(h)
	return h.Reader.AppendValue(dst, p, key)
}

// Evict forgets the Reader of a deleted value log and drops its records
// from the value cache.
func (rc *ReaderCache) Evict(num base.FileNum) {
	rc.files.Evict(filecache.Key{Type: base.FileTypeVlog, Num: num})
	if rc.cache != nil {
		rc.cache.EvictFile(rc.cacheID, num)
	}
}

// Reopen forgets the Reader of a value log that is still live, keeping
// its records in the value cache, so that the next read opens the file
// anew (a shared value log whose whole local copy was just downloaded).
// Reads still using it finish first.
func (rc *ReaderCache) Reopen(num base.FileNum) {
	rc.files.Evict(filecache.Key{Type: base.FileTypeVlog, Num: num})
}

// Open returns the number of value logs open.
func (rc *ReaderCache) Open() int {
	_, n := rc.files.Len(base.FileTypeVlog)
	return n
}

// Resolve decodes a value pointer stored in source (a table, named in
// errors) and finds the value log it points into among vlogs (a version's).
// A pointer that does not decode, or into a value log the version does not
// hold, is corruption of source (in the second case the decoded pointer is
// returned with the error).
func Resolve(vlogs map[base.FileNum]*manifest.VlogMetadata, ptr []byte, source string) (Pointer, *manifest.VlogMetadata, error) {
	p, err := DecodePointer(ptr)
	if err != nil {
		return Pointer{}, nil, base.CorruptionErrorf(source, -1, "bad value pointer: %v", err)
	}
	m := vlogs[p.FileNum]
	if m == nil {
		// p is returned: the caller may know the value log by other means.
		return p, nil, base.CorruptionErrorf(source, -1, "value pointer into value log %s, which the database does not hold", p.FileNum)
	}
	return p, m, nil
}
