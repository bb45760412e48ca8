package strata

import (
	"fmt"
	"io"
	"slices"

	"github.com/strata-db/strata/cache"
	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/internal/filecache"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/lsm/merging"
	"github.com/strata-db/strata/lsm/rangedel"
	"github.com/strata-db/strata/lsm/sstable"
	"github.com/strata-db/strata/vfs"
)

// tableCache keeps open the readers of recently used SSTables: their index,
// filter and range tombstones stay in memory, so a read costs at most one
// block fetch per table, a copy from the table's read-only mapping when
// the block cache misses. The readers live in the DB's file cache, whose
// MaxOpenFiles bound they share with the value logs' readers.
type tableCache struct {
	fs      vfs.FS
	dirname string
	cache   *cache.Cache // may be nil
	cacheID uint64
	files   *filecache.Cache
	// noLearned reads tables without their learned indexes; learned counts
	// what the open tables' indexes hold and the lookups they serve.
	noLearned bool
	learned   sstable.LearnedStats
	// populate: readers populate their mappings (Options.DisablePrefault
	// off; see sstable.ReaderOptions.Populate).
	populate bool
	// openFile, if set, opens a table for reading (the DB's, which knows
	// shared files); otherwise the table is read from the directory.
	openFile func(base.FileNum) (vfs.File, error)
}

// openTable is a table's reader and what is derived from it once. Of a
// virtual table (manifest.FileMetadata.Virtual) it shows only what lies in
// the table's visible range [lower, upper): its iterators, point lookups
// and range deletions (clipped to the range). Of an ingested table
// (manifest.FileMetadata.SeqOffset) they show every sequence number with
// the offset added.
type openTable struct {
	reader       *sstable.Reader
	rangeDels    *rangedel.Set
	tombs        []base.RangeTombstone
	virtual      bool
	lower, upper []byte
	seqOffset    base.SeqNum
}

// tombstones returns the table's range deletions (within its visible
// range).
func (t *openTable) tombstones() []base.RangeTombstone { return t.tombs }

// newIter returns an iterator over the table's point entries (within its
// visible range).
func (t *openTable) newIter() base.InternalIterator {
	it := t.reader.NewIter()
	if t.seqOffset != 0 {
		it = &offsetIter{InternalIterator: it, offset: t.seqOffset}
	}
	if t.virtual {
		return merging.NewBoundedIter(it, t.lower, t.upper)
	}
	return it
}

// get returns the newest entry of key visible at snap (see
// sstable.Reader.Get), its sequence number as reads see it.
func (t *openTable) get(key []byte, snap base.SeqNum) (value []byte, kind base.Kind, seq base.SeqNum, found bool, err error) {
	if t.seqOffset == 0 {
		return t.reader.Get(key, snap)
	}
	if snap < t.seqOffset {
		return nil, 0, 0, false, nil // every entry is newer than snap
	}
	value, kind, seq, found, err = t.reader.Get(key, snap-t.seqOffset)
	return value, kind, seq + t.seqOffset, found, err
}

// offsetIter adds an ingested table's sequence-number offset to the
// sequence number of every key it shows.
type offsetIter struct {
	base.InternalIterator
	offset base.SeqNum
}

func (it *offsetIter) Key() base.InternalKey {
	return it.InternalIterator.Key().WithSeqOffset(it.offset)
}

// visible reports whether a point lookup of key may find it in the table.
func (t *openTable) visible(key []byte) bool {
	return !t.virtual || (base.Compare(key, t.lower) >= 0 && base.Compare(key, t.upper) < 0)
}

// clipTombstones returns the parts of ts within [lower, upper).
func clipTombstones(ts []base.RangeTombstone, lower, upper []byte) []base.RangeTombstone {
	var out []base.RangeTombstone
	for _, t := range ts {
		if base.Compare(t.Start, lower) < 0 {
			t.Start = lower
		}
		if base.Compare(t.End, upper) > 0 {
			t.End = upper
		}
		if base.Compare(t.Start, t.End) < 0 {
			out = append(out, t)
		}
	}
	return out
}

func (t *openTable) Close() error { return t.reader.Close() }

// tableHandle is an open table with a reference to it; release it.
type tableHandle struct {
	fh filecache.Ref
	*openTable
}

func newTableCache(fs vfs.FS, dirname string, c *cache.Cache, files *filecache.Cache, o *Options) *tableCache {
	tc := &tableCache{fs: fs, dirname: dirname, cache: c, files: files, noLearned: o.DisableLearnedIndex, populate: !o.DisablePrefault}
	if c != nil {
		tc.cacheID = c.NewID()
	}
	return tc
}

// get returns the open table of f with a reference the caller must release.
func (tc *tableCache) get(f *manifest.FileMetadata) (tableHandle, error) {
	key := filecache.Key{Type: base.FileTypeTable, Num: f.FileNum}
	fh, err := tc.files.Get(key, func() (io.Closer, error) {
		t, err := tc.open(f)
		if err != nil {
			return nil, err
		}
		return t, nil
	})
	if err != nil {
		return tableHandle{}, err
	}
	return tableHandle{fh: fh, openTable: fh.Reader().(*openTable)}, nil
}

// release drops the reference of h.
func (tc *tableCache) release(h tableHandle) { tc.files.Release(h.fh) }

func (tc *tableCache) open(f *manifest.FileMetadata) (*openTable, error) {
	name := base.MakeFilename(base.FileTypeTable, f.FileNum)
	var file vfs.File
	var err error
	if tc.openFile != nil {
		file, err = tc.openFile(f.FileNum)
	} else {
		file, err = filecache.OpenLive(tc.fs, tc.dirname, name, "table")
	}
	if err != nil {
		return nil, err
	}
	// A table in an object store: its footer and the meta blocks before
	// it (index, filter, properties) in one round trip, not one for the
	// footer and one for what it points to. The meta blocks of a table
	// of keys and value pointers take some 6% of it; a guess that falls
	// short is made up by the reader's own prefetch once it has read the
	// footer.
	vfs.Prefetch(file, int64(f.Size)-tableTailPrefetch(int64(f.Size)), tableTailPrefetch(int64(f.Size)))
	opts := sstable.ReaderOptions{CacheID: tc.cacheID, FileNum: f.FileNum, FileName: name,
		DisableLearned: tc.noLearned, LearnedStats: &tc.learned, Map: true, Populate: tc.populate}
	if tc.cache != nil {
		opts.Cache = tc.cache
	}
	r, err := sstable.NewReader(file, int64(f.Size), opts)
	if err != nil {
		file.Close()
		return nil, err
	}
	t := &openTable{reader: r, tombs: r.RangeTombstones(), seqOffset: f.SeqOffset}
	if f.SeqOffset != 0 && len(t.tombs) > 0 {
		t.tombs = slices.Clone(t.tombs)
		for i := range t.tombs {
			t.tombs[i].Seq += f.SeqOffset
		}
	}
	if f.Virtual {
		t.virtual = true
		t.lower, t.upper = f.VisibleRange()
		t.tombs = clipTombstones(t.tombs, t.lower, t.upper)
	}
	t.rangeDels = rangedel.Build(t.tombs)
	return t, nil
}

// tableTailPrefetch is how much of the end of a table of size bytes an
// open from an object store asks for at once: a twelfth (the meta blocks
// of a table of keys and value pointers are some 6% of it), and at least
// its footer.
func tableTailPrefetch(size int64) int64 {
	return min(size, max(size/12, 64))
}

// evict forgets the table of a deleted file and drops its cached blocks.
// Reads still using it finish first.
func (tc *tableCache) evict(num base.FileNum) {
	tc.files.Evict(filecache.Key{Type: base.FileTypeTable, Num: num})
	if tc.cache != nil {
		tc.cache.EvictFile(tc.cacheID, num)
	}
}

// reopen forgets the open table of a file that is still live, keeping its
// cached blocks, so that the next read opens the file anew. Reads still
// using it finish first.
func (tc *tableCache) reopen(num base.FileNum) {
	tc.files.Evict(filecache.Key{Type: base.FileTypeTable, Num: num})
}

// size returns the number of tables open.
func (tc *tableCache) size() int {
	_, n := tc.files.Len(base.FileTypeTable)
	return n
}

// tableIter is a table's iterator holding a reference to the table.
type tableIter struct {
	base.InternalIterator
	tc *tableCache
	h  tableHandle
}

func (i *tableIter) Close() error {
	err := i.InternalIterator.Close()
	if i.h.openTable != nil {
		i.tc.release(i.h)
		i.h = tableHandle{}
	}
	return err
}

// LearnedIndexMetrics describe the learned indexes of the open tables and
// the point lookups tables served since Open.
type LearnedIndexMetrics struct {
	// Tables is the number of open tables with a model; Without those
	// without one: refused when written (keys the model does not fit),
	// written without one (older tables, or DisableLearnedIndex), or read
	// with DisableLearnedIndex.
	Tables, Without int
	// Segments and Bytes are what the models of the open tables hold:
	// their linear segments, and the memory they and their
	// position-to-block maps take. TableBytes is the size of those tables.
	Segments, Bytes, TableBytes int64
	// Hits counts point lookups in a table that went through its model;
	// Fallbacks those that binary-searched a table's index. InPlace counts
	// the hits that read the table's block from its memory mapping,
	// verifying only the restart intervals they searched, instead of
	// going through the block cache (tables with a model on a filesystem
	// that maps files; see lsm/sstable).
	Hits, Fallbacks, InPlace uint64
}

// Share returns the models' memory as a share of their tables' size.
func (m LearnedIndexMetrics) Share() float64 {
	if m.TableBytes <= 0 {
		return 0
	}
	return float64(m.Bytes) / float64(m.TableBytes)
}

// String prints the metrics on one line.
func (m LearnedIndexMetrics) String() string {
	return fmt.Sprintf("%d tables (%d without), %d segments, %s (%.2f%% of %s), %d hits (%d in place), %d fallbacks",
		m.Tables, m.Without, m.Segments, humanBytes(uint64(max(m.Bytes, 0))), 100*m.Share(),
		humanBytes(uint64(max(m.TableBytes, 0))), m.Hits, m.InPlace, m.Fallbacks)
}

func (tc *tableCache) learnedMetrics() LearnedIndexMetrics {
	s := tc.learned.Metrics()
	return LearnedIndexMetrics{
		Tables: int(s.Tables), Without: int(s.Without),
		Segments: s.Segments, Bytes: s.Bytes, TableBytes: s.TableBytes,
		Hits: s.Hits, Fallbacks: s.Fallbacks, InPlace: s.InPlace,
	}
}
