package strata

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/strata-db/strata/cache"
	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/lsm/rangedel"
	"github.com/strata-db/strata/lsm/sstable"
	"github.com/strata-db/strata/vfs"
)

// tableCache keeps open the readers of recently used SSTables: their index,
// filter and range tombstones stay in memory, so a read costs at most one
// block fetch per table. It holds at most maxOpen readers; past that the
// least recently used ones that no read is using are closed (a CLOCK
// approximation of LRU: a hit only sets a bit, so hits share a read lock).
type tableCache struct {
	fs      vfs.FS
	dirname string
	cache   *cache.Cache // may be nil
	cacheID uint64
	maxOpen int

	mu     sync.RWMutex
	tables map[base.FileNum]*tableHandle
	hand   []base.FileNum // clock order of the cached tables
	handAt int
}

// tableHandle is an open table. refs counts the cache's own reference
// (while the table is cached) and one per user; the reader is closed when it
// drops to zero.
type tableHandle struct {
	num       base.FileNum
	ready     chan struct{}
	reader    *sstable.Reader
	rangeDels *rangedel.Set
	err       error
	refs      atomic.Int32
	used      atomic.Bool
}

func newTableCache(fs vfs.FS, dirname string, c *cache.Cache, maxOpen int) *tableCache {
	tc := &tableCache{fs: fs, dirname: dirname, cache: c, maxOpen: maxOpen, tables: make(map[base.FileNum]*tableHandle)}
	if c != nil {
		tc.cacheID = c.NewID()
	}
	return tc
}

// get returns the open table of f with a reference the caller must release.
func (tc *tableCache) get(f *manifest.FileMetadata) (*tableHandle, error) {
	tc.mu.RLock()
	h := tc.tables[f.FileNum]
	if h != nil {
		h.refs.Add(1)
		h.used.Store(true)
	}
	tc.mu.RUnlock()
	if h == nil {
		tc.mu.Lock()
		if h = tc.tables[f.FileNum]; h == nil {
			h = &tableHandle{num: f.FileNum, ready: make(chan struct{})}
			h.refs.Store(2) // the cache's and the caller's
			tc.tables[f.FileNum] = h
			tc.hand = append(tc.hand, f.FileNum)
			victims := tc.evictLocked()
			tc.mu.Unlock()
			tc.release(victims...)
			h.reader, h.err = tc.open(f)
			if h.err == nil {
				h.rangeDels = rangedel.Build(h.reader.RangeTombstones())
			}
			close(h.ready)
			if h.err != nil {
				// Do not remember failures: the next read tries again.
				tc.forget(f.FileNum, h)
				err := h.err
				tc.release(h)
				return nil, err
			}
			return h, nil
		}
		h.refs.Add(1)
		h.used.Store(true)
		tc.mu.Unlock()
	}
	<-h.ready
	if h.err != nil {
		err := h.err
		tc.release(h)
		return nil, err
	}
	return h, nil
}

// release drops references; the last one closes the reader.
func (tc *tableCache) release(hs ...*tableHandle) {
	for _, h := range hs {
		if h.refs.Add(-1) == 0 {
			<-h.ready
			if h.reader != nil {
				h.reader.Close()
			}
		}
	}
}

// evictLocked takes tables out of the cache until it holds at most maxOpen,
// skipping recently used ones once (CLOCK). It returns them for release
// outside the lock. tc.mu held for writing.
func (tc *tableCache) evictLocked() []*tableHandle {
	var victims []*tableHandle
	for scans := 0; len(tc.tables) > tc.maxOpen && scans < 2*len(tc.hand)+1; scans++ {
		if tc.handAt >= len(tc.hand) {
			tc.handAt = 0
		}
		num := tc.hand[tc.handAt]
		h := tc.tables[num]
		if h == nil {
			tc.hand = append(tc.hand[:tc.handAt], tc.hand[tc.handAt+1:]...)
			continue
		}
		if h.used.Swap(false) {
			tc.handAt++
			continue
		}
		delete(tc.tables, num)
		tc.hand = append(tc.hand[:tc.handAt], tc.hand[tc.handAt+1:]...)
		victims = append(victims, h)
	}
	return victims
}

// forget removes h from the cache if it is still there, dropping the
// cache's reference.
func (tc *tableCache) forget(num base.FileNum, h *tableHandle) {
	tc.mu.Lock()
	cached := tc.tables[num] == h
	if cached {
		delete(tc.tables, num)
	}
	tc.mu.Unlock()
	if cached {
		tc.release(h)
	}
}

func (tc *tableCache) open(f *manifest.FileMetadata) (*sstable.Reader, error) {
	name := base.MakeFilename(base.FileTypeTable, f.FileNum)
	file, err := openLiveFile(tc.fs, tc.dirname, name, "table")
	if err != nil {
		return nil, err
	}
	opts := sstable.ReaderOptions{CacheID: tc.cacheID, FileNum: f.FileNum, FileName: name}
	if tc.cache != nil {
		opts.Cache = tc.cache
	}
	r, err := sstable.NewReader(file, int64(f.Size), opts)
	if err != nil {
		file.Close()
		return nil, err
	}
	return r, nil
}

// openLiveFile opens a file the manifest names. Its absence is corruption
// of the database (what names it says it exists), reported as such.
func openLiveFile(fs vfs.FS, dirname, name, what string) (vfs.File, error) {
	f, err := fs.Open(fs.PathJoin(dirname, name))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, base.CorruptionErrorf(name, -1, "%s is in the manifest but missing from the directory", what)
		}
		return nil, fmt.Errorf("strata: open %s %s: %w", what, name, err)
	}
	return f, nil
}

// evict forgets the table of a deleted file and drops its cached blocks.
// Reads still using it finish first.
func (tc *tableCache) evict(num base.FileNum) {
	tc.mu.RLock()
	h := tc.tables[num]
	tc.mu.RUnlock()
	if h != nil {
		tc.forget(num, h)
	}
	if tc.cache != nil {
		tc.cache.EvictFile(tc.cacheID, num)
	}
}

func (tc *tableCache) size() int {
	tc.mu.RLock()
	defer tc.mu.RUnlock()
	return len(tc.tables)
}

func (tc *tableCache) close() {
	tc.mu.Lock()
	tables := tc.tables
	tc.tables = make(map[base.FileNum]*tableHandle)
	tc.hand = nil
	tc.mu.Unlock()
	for _, h := range tables {
		tc.release(h)
	}
}

// tableIter is a table's iterator holding a reference to the table.
type tableIter struct {
	base.InternalIterator
	tc *tableCache
	h  *tableHandle
}

func (i *tableIter) Close() error {
	err := i.InternalIterator.Close()
	if i.h != nil {
		i.tc.release(i.h)
		i.h = nil
	}
	return err
}
