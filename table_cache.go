package strata

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/strata-db/strata/cache"
	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/lsm/rangedel"
	"github.com/strata-db/strata/lsm/sstable"
	"github.com/strata-db/strata/vfs"
)

// tableCache keeps the readers of live SSTables open: their index, filter
// and range tombstones stay in memory, so a read costs at most one block
// fetch per table. Every live table stays open; a bound on open handles
// arrives with leveled compaction, when the number of tables grows.
type tableCache struct {
	fs      vfs.FS
	dirname string
	cache   *cache.Cache // may be nil
	cacheID uint64

	mu     sync.RWMutex
	tables map[base.FileNum]*tableHandle
}

type tableHandle struct {
	ready     chan struct{}
	reader    *sstable.Reader
	rangeDels *rangedel.Set
	err       error
}

func newTableCache(fs vfs.FS, dirname string, c *cache.Cache) *tableCache {
	tc := &tableCache{fs: fs, dirname: dirname, cache: c, tables: make(map[base.FileNum]*tableHandle)}
	if c != nil {
		tc.cacheID = c.NewID()
	}
	return tc
}

// get returns the open table of f, opening it if needed.
func (tc *tableCache) get(f *manifest.FileMetadata) (*tableHandle, error) {
	tc.mu.RLock()
	h := tc.tables[f.FileNum]
	tc.mu.RUnlock()
	if h == nil {
		tc.mu.Lock()
		if h = tc.tables[f.FileNum]; h == nil {
			h = &tableHandle{ready: make(chan struct{})}
			tc.tables[f.FileNum] = h
			tc.mu.Unlock()
			h.reader, h.err = tc.open(f)
			if h.err == nil {
				h.rangeDels = rangedel.Build(h.reader.RangeTombstones())
			}
			close(h.ready)
			if h.err != nil {
				// Do not remember failures: the next read tries again.
				tc.mu.Lock()
				if tc.tables[f.FileNum] == h {
					delete(tc.tables, f.FileNum)
				}
				tc.mu.Unlock()
			}
			return h, h.err
		}
		tc.mu.Unlock()
	}
	<-h.ready
	return h, h.err
}

func (tc *tableCache) open(f *manifest.FileMetadata) (*sstable.Reader, error) {
	name := base.MakeFilename(base.FileTypeTable, f.FileNum)
	file, err := tc.fs.Open(tc.fs.PathJoin(tc.dirname, name))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, base.CorruptionErrorf(name, -1, "table is in the manifest but missing from the directory")
		}
		return nil, fmt.Errorf("strata: open table %s: %w", name, err)
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

// evict closes the table of a deleted file and drops its cached blocks.
func (tc *tableCache) evict(num base.FileNum) {
	tc.mu.Lock()
	h := tc.tables[num]
	delete(tc.tables, num)
	tc.mu.Unlock()
	if h != nil {
		<-h.ready
		if h.reader != nil {
			h.reader.Close()
		}
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
	tc.mu.Unlock()
	for _, h := range tables {
		<-h.ready
		if h.reader != nil {
			h.reader.Close()
		}
	}
}
