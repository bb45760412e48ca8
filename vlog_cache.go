package strata

import (
	"io"

	"github.com/strata-db/strata/cache"
	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/internal/filecache"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/vfs"
	"github.com/strata-db/strata/vlog"
)

// vlogCache keeps the readers of value logs open in the DB's file cache,
// under the MaxOpenFiles bound they share with tables. A reader is closed
// when the cache evicts it and nobody uses it, or once its file is deleted,
// which happens only once no version (so no read) can reach it.
type vlogCache struct {
	fs      vfs.FS
	dirname string
	cache   *cache.Cache
	cacheID uint64
	files   *filecache.Cache
}

// vlogHandle is an open value log with a reference to it; release it.
type vlogHandle struct {
	fh     *filecache.Handle
	reader *vlog.Reader
}

func newVlogCache(fs vfs.FS, dirname string, c *cache.Cache, files *filecache.Cache) *vlogCache {
	vc := &vlogCache{fs: fs, dirname: dirname, cache: c, files: files}
	if c != nil {
		vc.cacheID = c.NewID()
	}
	return vc
}

// get returns the reader of the value log m with a reference the caller
// must release.
func (vc *vlogCache) get(m *manifest.VlogMetadata) (vlogHandle, error) {
	key := filecache.Key{Type: base.FileTypeVlog, Num: m.FileNum}
	fh, err := vc.files.Get(key, func() (io.Closer, error) {
		r, err := vc.open(m)
		if err != nil {
			return nil, err
		}
		return r, nil
	})
	if err != nil {
		return vlogHandle{}, err
	}
	return vlogHandle{fh: fh, reader: fh.Reader().(*vlog.Reader)}, nil
}

func (vc *vlogCache) release(h vlogHandle) { vc.files.Release(h.fh) }

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

// evict forgets the reader of a deleted value log and drops its cached
// records.
func (vc *vlogCache) evict(num base.FileNum) {
	vc.files.Evict(filecache.Key{Type: base.FileTypeVlog, Num: num})
	if vc.cache != nil {
		vc.cache.EvictFile(vc.cacheID, num)
	}
}

// size returns the number of value logs open.
func (vc *vlogCache) size() int {
	_, n := vc.files.Len(base.FileTypeVlog)
	return n
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
