package strata

import (
	"sync"

	"github.com/strata-db/strata/cache"
	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/vfs"
	"github.com/strata-db/strata/vlog"
)

// vlogCache keeps the readers of value logs open. Value logs are few (one
// per flush that separated values, until garbage collection merges them),
// so every live one stays open; a reader is closed when its file is
// deleted, which happens only once no version (so no read) can reach it.
type vlogCache struct {
	fs      vfs.FS
	dirname string
	cache   *cache.Cache
	cacheID uint64

	mu      sync.RWMutex
	readers map[base.FileNum]*vlogHandle
}

type vlogHandle struct {
	ready  chan struct{}
	reader *vlog.Reader
	err    error
}

func newVlogCache(fs vfs.FS, dirname string, c *cache.Cache) *vlogCache {
	vc := &vlogCache{fs: fs, dirname: dirname, cache: c, readers: make(map[base.FileNum]*vlogHandle)}
	if c != nil {
		vc.cacheID = c.NewID()
	}
	return vc
}

// get returns the reader of the value log m.
func (vc *vlogCache) get(m *manifest.VlogMetadata) (*vlog.Reader, error) {
	vc.mu.RLock()
	h := vc.readers[m.FileNum]
	vc.mu.RUnlock()
	if h == nil {
		vc.mu.Lock()
		if h = vc.readers[m.FileNum]; h == nil {
			h = &vlogHandle{ready: make(chan struct{})}
			vc.readers[m.FileNum] = h
			vc.mu.Unlock()
			h.reader, h.err = vc.open(m)
			close(h.ready)
			if h.err != nil {
				vc.mu.Lock()
				if vc.readers[m.FileNum] == h {
					delete(vc.readers, m.FileNum)
				}
				vc.mu.Unlock()
			}
			return h.reader, h.err
		}
		vc.mu.Unlock()
	}
	<-h.ready
	return h.reader, h.err
}

func (vc *vlogCache) open(m *manifest.VlogMetadata) (*vlog.Reader, error) {
	name := base.MakeFilename(base.FileTypeVlog, m.FileNum)
	f, err := openLiveFile(vc.fs, vc.dirname, name, "value log")
	if err != nil {
		return nil, err
	}
	r, err := vlog.NewReader(f, m.FileNum, int64(m.Size), vlog.ReaderOptions{Cache: vc.cache, CacheID: vc.cacheID, FileName: name})
	if err != nil {
		f.Close()
		return nil, err
	}
	return r, nil
}

// evict closes the reader of a deleted value log.
func (vc *vlogCache) evict(num base.FileNum) {
	vc.mu.Lock()
	h := vc.readers[num]
	delete(vc.readers, num)
	vc.mu.Unlock()
	if h != nil {
		<-h.ready
		if h.reader != nil {
			h.reader.Close()
		}
	}
}

func (vc *vlogCache) close() {
	vc.mu.Lock()
	readers := vc.readers
	vc.readers = make(map[base.FileNum]*vlogHandle)
	vc.mu.Unlock()
	for _, h := range readers {
		<-h.ready
		if h.reader != nil {
			h.reader.Close()
		}
	}
}

// resolvePointer decodes a value pointer stored in source (a table, for
// error messages) and looks up the value log it points into in version v.
func resolvePointer(v *manifest.Version, ptr []byte, source string) (vlog.Pointer, *manifest.VlogMetadata, error) {
	p, err := vlog.DecodePointer(ptr)
	if err != nil {
		return vlog.Pointer{}, nil, base.CorruptionErrorf(source, -1, "bad value pointer: %v", err)
	}
	m := v.Vlogs[p.FileNum]
	if m == nil {
		return vlog.Pointer{}, nil, base.CorruptionErrorf(source, -1, "value pointer into value log %s, which the database does not hold", p.FileNum)
	}
	return p, m, nil
}
