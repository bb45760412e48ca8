package sstable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/strata-db/strata/index/learned"
	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/vfs"
)

// Cache is the block cache hook. Blocks stored in it are checksum-verified
// and decompressed, freshly allocated by the reader, and immutable once
// stored: the cache and every reader may share them without copying.
type Cache interface {
	// Get returns the block, or nil when absent.
	Get(cacheID uint64, fileNum base.FileNum, offset uint64) []byte
	// Set stores a block. The cache may drop it at any time.
	Set(cacheID uint64, fileNum base.FileNum, offset uint64, block []byte)
}

// ReaderOptions configure a Reader. The zero value is valid.
type ReaderOptions struct {
	// Cache caches data blocks; nil reads every block from the file.
	Cache Cache
	// CacheID distinguishes users of a shared cache (for example two DBs).
	CacheID uint64
	// FileNum is the table's file number, the cache key and the default
	// name in errors.
	FileNum base.FileNum
	// FileName names the file in error messages; default
	// base.MakeFilename(base.FileTypeTable, FileNum).
	FileName string
	// DisableLearned ignores the table's learned index: Get
	// binary-searches the index block.
	DisableLearned bool
	// LearnedStats, if set, counts the learned indexes of the Readers that
	// share it and the lookups they serve.
	LearnedStats *LearnedStats
	// Map reads the table through a read-only memory mapping (see
	// vfs.MapFile) where the filesystem allows it: a block the cache does
	// not hold is copied from the mapping, verified, instead of read with a
	// system call. The file must not change while the Reader is open (a
	// table never does). Default false.
	Map bool
	// Populate, with Map, maps the pages of the file the page cache holds
	// in the background (vfs.PopulateAsync), so that reads of blocks the
	// block cache does not hold do not fault. Default false.
	Populate bool
}

// Reader reads one table. It is safe for concurrent use: every read goes
// through File.ReadAt, and everything decoded at open is read-only.
type Reader struct {
	f       vfs.File
	o       ReaderOptions
	file    string
	dataEnd uint64 // blocks lie in [0, dataEnd): the file without its footer

	index     indexArray
	hasFilter bool
	filter    bloomFilter
	fuse      filterUse // whether Get probes filter
	props     Properties
	rangeDels []base.RangeTombstone
	meta      metaIndex

	// lidx is the learned index Get uses, or nil; lreason says why it is
	// nil.
	lidx    *learnedIndex
	lreason learned.Reason

	// mapped is the file mapped read-only, or nil (reads use f.ReadAt).
	mapped []byte
	// unpopulate stops the background vfs.Populate of mapped and waits
	// for it (nil when not mapped).
	unpopulate func()
}

// indexArray is the index block decoded into a flat array so lookups do not
// re-parse it: entry i covers data block i, and its separator is
// keys[keyStart:keyEnd] with its trailer.
//
// The binary search compares fixed-width integers first: prefixes[i] holds
// the 8 bytes of separator i's user key that follow the prefix common to all
// separators (big-endian, zero-padded), and whole keys are compared only
// when those are equal. The prefixes of a 16k-entry index fit in 128 KiB.
type indexArray struct {
	keys     []byte
	entries  []indexEntry
	common   []byte // prefix shared by every separator's user key
	prefixes []uint64
}

type indexEntry struct {
	keyStart, keyEnd uint32
	trailer          uint64
	handle           blockHandle
}

// keyPrefix returns the first 8 bytes of k as a big-endian integer, padded
// with zeros: keyPrefix(a) < keyPrefix(b) implies a < b.
func keyPrefix(k []byte) uint64 {
	if len(k) >= 8 {
		return binary.BigEndian.Uint64(k)
	}
	var b [8]byte
	copy(b[:], k)
	return binary.BigEndian.Uint64(b[:])
}

// finish computes common and prefixes once all entries are in.
func (x *indexArray) finish() {
	if len(x.entries) == 0 {
		return
	}
	e0 := x.entries[0]
	x.common = x.keys[e0.keyStart:e0.keyEnd:e0.keyEnd]
	for _, e := range x.entries[1:] {
		k := x.keys[e.keyStart:e.keyEnd]
		n := 0
		for n < len(k) && n < len(x.common) && k[n] == x.common[n] {
			n++
		}
		x.common = x.common[:n]
	}
	x.prefixes = make([]uint64, len(x.entries))
	for i, e := range x.entries {
		x.prefixes[i] = keyPrefix(x.keys[int(e.keyStart)+len(x.common) : e.keyEnd])
	}
}

// seek returns the first entry whose separator is >= (ukey, trailer) in
// internal-key order, or len(entries).
func (x *indexArray) seek(ukey []byte, trailer uint64) int {
	n := len(x.entries)
	if !bytes.HasPrefix(ukey, x.common) {
		// ukey sorts before or after every separator.
		if bytes.Compare(ukey, x.common) < 0 {
			return 0
		}
		return n
	}
	rest := ukey[len(x.common):]
	q := keyPrefix(rest)
	lo, hi := 0, n
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		var less bool
		if p := x.prefixes[mid]; p != q {
			less = p < q
		} else {
			e := &x.entries[mid]
			c := bytes.Compare(x.keys[int(e.keyStart)+len(x.common):e.keyEnd], rest)
			less = c < 0 || (c == 0 && e.trailer > trailer)
		}
		if less {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// below reports whether the separator of entry i is below (ukey, trailer)
// in internal-key order: the first entry >= (ukey, trailer) lies in a
// later block.
//
// As seek does, it compares the separator's 8-byte integer prefix first,
// which is usually enough and reads one word of a dense array instead of
// the entry and its key.
func (x *indexArray) below(i int, ukey []byte, trailer uint64) bool {
	if len(ukey) >= len(x.common)+8 && bytes.HasPrefix(ukey, x.common) {
		if p, q := x.prefixes[i], binary.BigEndian.Uint64(ukey[len(x.common):]); p != q {
			return p < q
		}
	}
	e := &x.entries[i]
	c := bytes.Compare(x.keys[e.keyStart:e.keyEnd], ukey)
	return c < 0 || (c == 0 && e.trailer > trailer)
}

// CheckFooter reads only the footer of the table in f, of size bytes, and
// reports whether this build can read the table: a file too short, a
// footer that does not verify is an error matching base.ErrCorruption that
// names fileName, and a table of a newer format version than this build
// reads one matching base.ErrNewerFormat. It costs one
// small read, so a DB can check every table at Open.
func CheckFooter(f vfs.File, size int64, fileName string) error {
	if size < footerLen {
		return base.CorruptionErrorf(fileName, 0, "file of %d bytes is shorter than a footer (%d)", size, footerLen)
	}
	var buf [footerLen]byte
	off := size - footerLen
	n, err := f.ReadAt(buf[:], off)
	if n < footerLen {
		if err == nil || errors.Is(err, io.EOF) {
			return base.CorruptionErrorf(fileName, off, "file ends before its footer (size given: %d)", size)
		}
		return fmt.Errorf("sstable: reading the footer of %s: %w", fileName, err)
	}
	_, err = decodeFooter(buf[:], fileName, off)
	return err
}

// NewReader opens a table: it reads and verifies the footer, meta-index,
// index, filter, properties and range-del blocks, which stay in memory while
// the Reader lives. size is the file size. On error f is not closed.
func NewReader(f vfs.File, size int64, o ReaderOptions) (*Reader, error) {
	r := &Reader{f: f, o: o, file: o.FileName}
	if r.file == "" {
		r.file = base.MakeFilename(base.FileTypeTable, o.FileNum)
	}
	if size < footerLen {
		return nil, base.CorruptionErrorf(r.file, 0, "file of %d bytes is shorter than a footer (%d)", size, footerLen)
	}
	if o.Map {
		m, ok, err := vfs.MapFile(f, size)
		if err != nil {
			return nil, fmt.Errorf("sstable: mapping %s: %w", r.file, err)
		}
		if ok {
			r.mapped = m
		}
	}
	if err := r.open(size); err != nil {
		vfs.Unmap(r.mapped)
		return nil, err
	}
	if r.mapped != nil && o.Populate {
		r.unpopulate = vfs.PopulateAsync(r.mapped)
	}
	o.LearnedStats.noteOpen(r, 1)
	return r, nil
}

// open reads what NewReader keeps in memory.
func (r *Reader) open(size int64) error {
	o := r.o
	footOff := uint64(size) - footerLen
	buf := make([]byte, footerLen)
	if err := r.readAt(buf, footOff); err != nil {
		return err
	}
	ft, err := decodeFooter(buf, r.file, int64(footOff))
	if err != nil {
		return err
	}
	r.dataEnd = footOff

	b, err := r.readBlock(ft.metaIndex, nil)
	if err != nil {
		return err
	}
	if r.meta, err = decodeMetaIndex(b, r.file, ft.metaIndex.Offset); err != nil {
		return err
	}
	if r.mapped == nil {
		// The blocks read next, at once: from an object store each
		// would be a round trip after the one before.
		start := min(ft.index.Offset, ft.metaIndex.Offset)
		for _, e := range r.meta {
			start = min(start, e.handle.Offset)
		}
		if start < footOff {
			vfs.Prefetch(r.f, int64(start), int64(footOff-start))
		}
	}
	if b, err = r.readBlock(ft.index, nil); err != nil {
		return err
	}
	if r.index, err = r.decodeIndex(b, ft.index.Offset); err != nil {
		return err
	}

	h, ok := r.meta.lookup(MetaPropertiesName)
	if !ok {
		return base.CorruptionErrorf(r.file, int64(ft.metaIndex.Offset), "meta-index has no %s block", MetaPropertiesName)
	}
	if b, err = r.readBlock(h, nil); err != nil {
		return err
	}
	if r.props, err = decodeProperties(b, r.file, h.Offset); err != nil {
		return err
	}
	if h, ok = r.meta.lookup(MetaFilterName); ok {
		if b, err = r.readBlock(h, nil); err != nil {
			return err
		}
		if r.filter, ok = decodeFilter(b); !ok {
			return base.CorruptionErrorf(r.file, int64(h.Offset), "malformed filter block of %d bytes", len(b))
		}
		r.hasFilter = true
	}
	if h, ok = r.meta.lookup(MetaRangeDelName); ok {
		if b, err = r.readBlock(h, nil); err != nil {
			return err
		}
		if r.rangeDels, err = decodeRangeDels(b, r.file, h.Offset); err != nil {
			return err
		}
	}
	r.lreason = learned.ReasonDisabled
	if h, ok = r.meta.lookup(MetaLearnedName); ok && !o.DisableLearned {
		if b, err = r.readBlock(h, nil); err != nil {
			return err
		}
		if r.lidx, r.lreason, err = decodeLearned(b, len(r.index.entries), r.props.NumEntries, r.file, h.Offset); err != nil {
			return err
		}
		if r.lidx != nil {
			r.lidx.setOffsets(&r.index)
		}
	}
	return nil
}

// decodeIndex flattens the index block, checking that separators strictly
// increase and that data blocks are in bounds, in order and disjoint.
func (r *Reader) decodeIndex(b []byte, off uint64) (indexArray, error) {
	var x indexArray
	if len(b) >= 4 {
		if n := binary.LittleEndian.Uint32(b[len(b)-4:]); uint64(n)*4 <= uint64(len(b)) {
			x.entries = make([]indexEntry, 0, n)
		}
	}
	var prevEnd uint64
	err := forEachEntry(b, r.file, off, base.CompareEncoded, func(k, v []byte) error {
		ik, ok := base.DecodeInternalKey(k)
		if !ok {
			return base.CorruptionErrorf(r.file, int64(off), "index entry %d: key %x shorter than a trailer", len(x.entries), k)
		}
		h, n := decodeHandle(v)
		if n <= 0 || n != len(v) {
			return base.CorruptionErrorf(r.file, int64(off), "index entry %d: bad block handle", len(x.entries))
		}
		if h.Offset < prevEnd || !r.inBounds(h) {
			return base.CorruptionErrorf(r.file, int64(off), "index entry %d: block [%d, +%d) overlaps or is out of bounds", len(x.entries), h.Offset, h.Length)
		}
		prevEnd = h.Offset + h.Length + blockTrailerLen
		if uint64(len(x.keys))+uint64(len(ik.UserKey)) > 1<<32-1 {
			return base.CorruptionErrorf(r.file, int64(off), "index keys too large")
		}
		start := uint32(len(x.keys))
		x.keys = append(x.keys, ik.UserKey...)
		x.entries = append(x.entries, indexEntry{
			keyStart: start,
			keyEnd:   uint32(len(x.keys)),
			trailer:  uint64(ik.Trailer),
			handle:   h,
		})
		return nil
	})
	x.finish()
	return x, err
}

// inBounds reports whether the block h and its trailer lie before the
// footer and within the size limit of a block.
func (r *Reader) inBounds(h blockHandle) bool {
	return h.Length <= MaxBlockLen && h.Offset <= r.dataEnd && r.dataEnd-h.Offset >= h.Length+blockTrailerLen
}

// readAt fills buf from off; a short read is corruption (the file is shorter
// than its size says), any other failure an I/O error.
func (r *Reader) readAt(buf []byte, off uint64) error {
	if r.mapped != nil {
		return r.readMapped(buf, off)
	}
	n, err := r.f.ReadAt(buf, int64(off))
	if n == len(buf) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return base.CorruptionErrorf(r.file, int64(off), "file truncated: read %d of %d bytes", n, len(buf))
	}
	return fmt.Errorf("sstable: reading %s at offset %d: %w", r.file, off, err)
}

// readMapped is readAt through the mapping. A fault (the file shrank
// under the mapping) is corruption, as a short read is.
func (r *Reader) readMapped(buf []byte, off uint64) error {
	if off > uint64(len(r.mapped)) || uint64(len(buf)) > uint64(len(r.mapped))-off {
		return base.CorruptionErrorf(r.file, int64(off), "file truncated: read past its %d bytes", len(r.mapped))
	}
	if err := copyMapped(buf, r.mapped[off:]); err != nil {
		return base.CorruptionErrorf(r.file, int64(off), "%v", err)
	}
	return nil
}

// cloneMapped returns a fresh copy of the n mapped bytes at off.
func (r *Reader) cloneMapped(off uint64, n int) ([]byte, error) {
	if off > uint64(len(r.mapped)) || uint64(n) > uint64(len(r.mapped))-off {
		return nil, base.CorruptionErrorf(r.file, int64(off), "file truncated: read past its %d bytes", len(r.mapped))
	}
	buf, err := appendMapped(nil, r.mapped[off:off+uint64(n)])
	if err != nil {
		return nil, base.CorruptionErrorf(r.file, int64(off), "%v", err)
	}
	return buf, nil
}

func appendMapped(dst, src []byte) (out []byte, err error) {
	old := vfs.BeginMapped()
	defer vfs.EndMapped(old, &err)
	return append(dst, src...), nil
}

func copyMapped(dst, src []byte) (err error) {
	old := vfs.BeginMapped()
	defer vfs.EndMapped(old, &err)
	copy(dst, src)
	return nil
}

// readBufs are an iterator's reusable read buffers.
type readBufs struct {
	raw, dec []byte
}

// readBlock reads the block at h, verifies its checksum and decompresses it.
// With bufs == nil the result is freshly allocated; otherwise it lives in
// bufs and is valid until their next use.
func (r *Reader) readBlock(h blockHandle, bufs *readBufs) ([]byte, error) {
	if !r.inBounds(h) {
		return nil, base.CorruptionErrorf(r.file, int64(h.Offset), "block handle [%d, +%d) out of bounds (data ends at %d)", h.Offset, h.Length, r.dataEnd)
	}
	n := int(h.Length)
	var buf []byte
	switch {
	case bufs != nil:
		if cap(bufs.raw) < n+blockTrailerLen {
			bufs.raw = make([]byte, n+blockTrailerLen)
		}
		buf = bufs.raw[:n+blockTrailerLen]
		if err := r.readAt(buf, h.Offset); err != nil {
			return nil, err
		}
	case r.mapped != nil:
		// A fresh copy of the mapped bytes, not zeroed first.
		var err error
		if buf, err = r.cloneMapped(h.Offset, n+blockTrailerLen); err != nil {
			return nil, err
		}
	default:
		buf = make([]byte, n+blockTrailerLen)
		if err := r.readAt(buf, h.Offset); err != nil {
			return nil, err
		}
	}
	if got, want := binary.LittleEndian.Uint32(buf[n+1:]), checksum(buf[:n+1]); got != want {
		return nil, base.CorruptionErrorf(r.file, int64(h.Offset), "block checksum mismatch: stored %#08x, computed %#08x (block of %d bytes)", got, want, n)
	}
	typ := Compression(buf[n])
	block := buf[:n:n]
	if typ == NoCompression {
		return block, nil
	}
	dlen, err := decompressedLen(block, typ)
	if err != nil {
		return nil, base.CorruptionErrorf(r.file, int64(h.Offset), "block type %d: %v", typ, err)
	}
	var dst []byte
	if bufs != nil {
		if cap(bufs.dec) < dlen {
			bufs.dec = make([]byte, dlen)
		}
		dst = bufs.dec[:dlen]
	} else {
		dst = make([]byte, dlen)
	}
	out, err := decompressBlock(dst, block, typ)
	if err != nil {
		return nil, base.CorruptionErrorf(r.file, int64(h.Offset), "decompressing %s block: %v", typ, err)
	}
	return out[:dlen:dlen], nil
}

// dataBlock returns a data block, through the cache when there is one.
// Without a cache the block lives in bufs (or is fresh when bufs is nil).
func (r *Reader) dataBlock(h blockHandle, bufs *readBufs) ([]byte, error) {
	c := r.o.Cache
	if c == nil {
		return r.readBlock(h, bufs)
	}
	if b := c.Get(r.o.CacheID, r.o.FileNum, h.Offset); b != nil {
		return b, nil
	}
	b, err := r.readBlock(h, nil)
	if err != nil {
		return nil, err
	}
	c.Set(r.o.CacheID, r.o.FileNum, h.Offset, b)
	return b, nil
}

// dataBlockAt is dataBlock for block i of the index, at offset off: a
// lookup that knows the offset reads the index entry only on a cache miss.
func (r *Reader) dataBlockAt(i int, off uint64) ([]byte, error) {
	c := r.o.Cache
	if c != nil {
		if b := c.Get(r.o.CacheID, r.o.FileNum, off); b != nil {
			return b, nil
		}
	}
	h := r.index.entries[i].handle
	b, err := r.readBlock(h, nil)
	if err != nil || c == nil {
		return b, err
	}
	c.Set(r.o.CacheID, r.o.FileNum, h.Offset, b)
	return b, nil
}

var blockIterPool = sync.Pool{New: func() any { return new(blockIter) }}

// Get returns the newest point entry of userKey with seq <= snap, of any
// point kind (deletes included). It does not consider range tombstones.
// value is read-only and stays valid after the call: it aliases a cached
// or freshly read block, or, for a mapped table, the mapping (valid until
// Close), never a reused buffer. A caller that reads a value of a mapped
// table after Get returns should do so between vfs.BeginMapped and
// vfs.EndMapped, as Get does, so that a file truncated behind the
// Reader's back is an error rather than a crash.
func (r *Reader) Get(userKey []byte, snap base.SeqNum) (value []byte, kind base.Kind, seq base.SeqNum, found bool, err error) {
	snap = min(snap, base.SeqNumMax)
	trailer := uint64(base.MakeTrailer(snap, base.KindMax))
	if r.hasFilter {
		if counted := sample(); counted || !r.fuse.skip.Load() {
			rejected := !r.filter.mayContain(filterHash(userKey))
			if counted {
				r.fuse.record(rejected)
			}
			if rejected {
				return nil, 0, 0, false, nil
			}
		}
	}
	// The block and restart points to search: all of the block's restart
	// points unless the learned index narrows them.
	var w window
	// A pooled block iterator keeps its key buffer across calls, so a Get
	// on a cached block does not allocate.
	bi := blockIterPool.Get().(*blockIter)
	defer func() {
		bi.data, bi.key, bi.val = nil, nil, nil
		blockIterPool.Put(bi)
	}()
	if x := r.lidx; x != nil {
		r.o.LearnedStats.hit()
		if w = x.window(&r.index, userKey, trailer); !w.ok {
			return nil, 0, 0, false, nil
		}
		if x.inPlace && r.mapped != nil {
			if v, kind, seq, found, ok := r.getInPlace(bi, &w, userKey, trailer); ok {
				r.o.LearnedStats.servedInPlace()
				return v, kind, seq, found, nil
			}
		}
	} else {
		w.jhi = -1
		r.o.LearnedStats.fallback()
		if w.i = r.index.seek(userKey, trailer); w.i == len(r.index.entries) {
			return nil, 0, 0, false, nil
		}
		w.off = r.index.entries[w.i].handle.Offset
	}
	i, jlo, jhi, skip := w.i, w.jlo, w.jhi, w.skip
	// The first entry >= the search key is in block i or, if block i has
	// none, first in block i+1.
	for off := w.off; i < len(r.index.entries); i, jlo, jhi, skip = i+1, 0, -1, 0 {
		if i != w.i {
			off = r.index.entries[i].handle.Offset
		}
		b, err := r.dataBlockAt(i, off)
		if err != nil {
			return nil, 0, 0, false, err
		}
		if w.numRestarts > 0 {
			// The learned index knows where in the block the search
			// reads: start loading those lines and the restart array at
			// once, so their misses overlap.
			bi.sink += r.lidx.touch(b, &w)
			err = bi.initWindow(b, true, r.file, off, w.numRestarts)
			w.numRestarts = 0
		} else {
			err = bi.init(b, true, r.file, off)
		}
		if err != nil {
			return nil, 0, 0, false, err
		}
		if bi.seekGEWithin(userKey, trailer, jlo, jhi, skip) {
			k := bi.ikey()
			if !bytes.Equal(k.UserKey, userKey) {
				return nil, 0, 0, false, nil
			}
			return bi.val, k.Kind(), k.SeqNum(), true, nil
		}
		if bi.err != nil {
			return nil, 0, 0, false, bi.err
		}
	}
	return nil, 0, 0, false, nil
}

// MayContain reports whether the table may hold userKey, from the Bloom
// filter (true when the table has no filter).
func (r *Reader) MayContain(userKey []byte) bool {
	return !r.hasFilter || r.filter.mayContain(filterHash(userKey))
}

// PropPrefixExtractor is the user property that names the prefix extractor
// (WriterOptions.PrefixName) whose prefixes the table's filter holds.
const PropPrefixExtractor = "strata.prefix_extractor"

// MayContainPrefix reports whether the table may hold a key whose prefix by
// the extractor named extractor is prefix. It is false only when the
// table's filter holds that extractor's prefixes (PropPrefixExtractor) and
// not this one; a table without a filter, or written without or with
// another extractor, may hold anything.
func (r *Reader) MayContainPrefix(extractor string, prefix []byte) bool {
	if !r.hasFilter || extractor == "" || r.props.User[PropPrefixExtractor] != extractor {
		return true
	}
	return r.filter.mayContain(prefixFilterHash(prefix))
}

// RangeTombstones returns the table's range tombstones in the order written
// (decoded at open; shared and read-only).
func (r *Reader) RangeTombstones() []base.RangeTombstone { return r.rangeDels }

// Properties returns the table's properties (shared and read-only).
func (r *Reader) Properties() *Properties { return &r.props }

// MetaBlock reads the named meta block. found is false when the table has
// none by that name. The returned bytes are freshly allocated.
func (r *Reader) MetaBlock(name string) (data []byte, found bool, err error) {
	h, ok := r.meta.lookup(name)
	if !ok {
		return nil, false, nil
	}
	b, err := r.readBlock(h, nil)
	if err != nil {
		return nil, true, err
	}
	return b, true, nil
}

// FileNum returns the table's file number.
func (r *Reader) FileNum() base.FileNum { return r.o.FileNum }

// Close closes the file. Iterators must be closed first.
func (r *Reader) Close() error {
	r.o.LearnedStats.noteOpen(r, -1)
	if r.unpopulate != nil {
		r.unpopulate()
	}
	err := vfs.Unmap(r.mapped)
	r.mapped = nil
	if cerr := r.f.Close(); err == nil {
		err = cerr
	}
	return err
}
