package sstable

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/cespare/xxhash/v2"
	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/vfs"
)

var errWriterClosed = errors.New("sstable: writer is closed")

// writeBufs holds the Writers' output buffers, of vfs.MapAlign bytes each:
// a table reaches its file in aligned chunks of that size, so that its
// mapping, through which point lookups read data blocks (see
// Reader.getInPlace), uses huge pages where the filesystem allows (see
// vfs.MapAlign). Written through a 256 KiB buffer, a 4,000,000-key
// database's point lookups took a TLB miss on nearly every data block.
// The buffers are reused across tables rather than allocated per table.
var writeBufs = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, vfs.MapAlign) }}

// Writer builds one table. It is not safe for concurrent use.
//
// Data blocks are cut when they reach BlockSize and written as they fill;
// the index, filter, range tombstones, properties and extra meta blocks are
// kept in memory and written by Close.
type Writer struct {
	f      vfs.File
	bw     *bufio.Writer
	o      WriterOptions
	err    error // sticky
	closed bool
	offset uint64 // bytes handed to bw so far

	data     blockWriter
	index    blockWriter
	rangeDel blockWriter

	hasPoint bool
	lastKey  []byte // encoded internal key of the last point entry
	keyBuf   []byte
	sepBuf   []byte
	hdlBuf   []byte

	// The index entry of the last flushed data block waits for the next key
	// so that its separator can be short.
	pendingIndex  bool
	pendingHandle blockHandle

	hashes []uint64 // filter hashes of distinct user keys (and prefixes)
	// lastPrefix is the prefix of the last user key that had one (with
	// WriterOptions.PrefixLen); hasPrefix says whether there was one.
	lastPrefix []byte
	hasPrefix  bool

	hasRangeDel  bool
	lastRangeDel []byte // encoded start#seq,RANGEDEL of the last tombstone

	metaBlocks []namedBlock
	props      Properties
	hasSeq     bool
	md         WriterMetadata

	compressBuf []byte
	digest      xxhash.Digest

	learned *learnedWriter // nil without a learned index
}

type namedBlock struct {
	name string
	data []byte
}

// WriterMetadata describes a finished table.
type WriterMetadata struct {
	Size uint64 // file size in bytes

	HasPointKeys                bool
	SmallestPoint, LargestPoint base.InternalKey // copies (own memory)

	HasRangeDels bool
	// SmallestRangeDel is the smallest tombstone start, with the largest
	// seq among the tombstones at that start, kind RANGEDEL.
	SmallestRangeDel base.InternalKey
	// LargestRangeDel is the largest tombstone end as an exclusive
	// sentinel: end#SeqNumMax,RANGEDEL (trailer base.RangeDelSentinel).
	LargestRangeDel base.InternalKey

	SmallestSeq, LargestSeq base.SeqNum // over points and tombstones; 0, 0 when empty
	Properties              Properties
}

// Smallest returns the smallest of the point and range-del bounds in
// internal-key order (the zero key when the table is empty).
func (m *WriterMetadata) Smallest() base.InternalKey {
	switch {
	case !m.HasRangeDels:
		return m.SmallestPoint
	case !m.HasPointKeys:
		return m.SmallestRangeDel
	case base.InternalCompare(m.SmallestRangeDel, m.SmallestPoint) < 0:
		return m.SmallestRangeDel
	}
	return m.SmallestPoint
}

// Largest returns the largest of the point and range-del bounds in
// internal-key order (the zero key when the table is empty).
func (m *WriterMetadata) Largest() base.InternalKey {
	switch {
	case !m.HasRangeDels:
		return m.LargestPoint
	case !m.HasPointKeys:
		return m.LargestRangeDel
	case base.InternalCompare(m.LargestRangeDel, m.LargestPoint) > 0:
		return m.LargestRangeDel
	}
	return m.LargestPoint
}

// NewWriter writes a table to f. Close syncs and closes f. Invalid options
// make every call return the validation error.
func NewWriter(f vfs.File, o WriterOptions) *Writer {
	bw := writeBufs.Get().(*bufio.Writer)
	bw.Reset(f)
	w := &Writer{
		f:  f,
		bw: bw,
		o:  o.withDefaults(),
	}
	w.err = o.Validate()
	w.data = newBlockWriter(w.o.BlockRestartInterval)
	w.index = newBlockWriter(1)
	w.rangeDel = newBlockWriter(16)
	w.props.Compression = w.o.Compression.String()
	if w.o.PrefixLen != nil && w.o.BitsPerKey > 0 {
		w.SetUserProperty(PropPrefixExtractor, w.o.PrefixName)
	} else {
		w.o.PrefixLen = nil
	}
	if w.o.Learned != nil {
		w.learned = newLearnedWriter(*w.o.Learned, w.o.BlockRestartInterval)
		// Its point lookups read data blocks in place, verifying just the
		// restart intervals they read (see Reader.getInPlace).
		w.data.sums = true
	}
	return w
}

// addPrefix adds the filter hash of userKey's prefix, once per run of keys
// that share it (keys arrive in order, so a prefix's keys are adjacent).
func (w *Writer) addPrefix(userKey []byte) {
	n := w.prefixLen(userKey)
	if n < 0 || n > len(userKey) {
		return
	}
	p := userKey[:n]
	if w.hasPrefix && bytes.Equal(p, w.lastPrefix) {
		return
	}
	w.hashes = append(w.hashes, prefixFilterHash(p))
	w.lastPrefix, w.hasPrefix = append(w.lastPrefix[:0], p...), true
}

// prefixLen is the user's PrefixLen of userKey. If it panics (user code,
// asked about a key it did not expect), the table gives up its prefix
// filter: it no longer records the extractor, so readers never skip it
// by prefix, and no more prefixes are added. The table is still whole.
func (w *Writer) prefixLen(userKey []byte) (n int) {
	defer func() {
		if r := recover(); r != nil {
			delete(w.props.User, PropPrefixExtractor)
			w.o.PrefixLen, n = nil, -1
		}
	}()
	return w.o.PrefixLen(userKey)
}

func (w *Writer) fail(err error) error {
	w.err = err
	return err
}

func (w *Writer) check() error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return errWriterClosed
	}
	return nil
}

func (w *Writer) noteSeq(s base.SeqNum) {
	if !w.hasSeq {
		w.props.SmallestSeq, w.props.LargestSeq = s, s
		w.hasSeq = true
		return
	}
	w.props.SmallestSeq = min(w.props.SmallestSeq, s)
	w.props.LargestSeq = max(w.props.LargestSeq, s)
}

// Add appends a point entry (any kind except KindRangeDelete). Keys must be
// strictly increasing in internal-key order (base.InternalCompare); an
// out-of-order key returns an error. The writer copies key and value.
func (w *Writer) Add(key base.InternalKey, value []byte) error {
	if err := w.check(); err != nil {
		return err
	}
	if k := key.Kind(); !k.IsPoint() {
		return w.fail(fmt.Errorf("sstable: Add of %s: kind %s is not a point kind", key, k))
	}
	if len(key.UserKey)+len(value) > MaxEntrySize {
		return w.fail(fmt.Errorf("sstable: Add of %s: key and value of %d bytes exceed %d", key, len(key.UserKey)+len(value), MaxEntrySize))
	}
	if w.hasPoint && compareKey(w.lastKey, key.UserKey, uint64(key.Trailer)) >= 0 {
		last, _ := base.DecodeInternalKey(w.lastKey)
		return w.fail(fmt.Errorf("sstable: Add of %s out of order: not after %s", key, last))
	}
	if w.pendingIndex {
		w.addIndexEntry(key.UserKey)
	}
	if !w.hasPoint || !bytes.Equal(w.lastKey[:len(w.lastKey)-base.TrailerLen], key.UserKey) {
		// The first (newest) entry of a user key.
		if w.o.BitsPerKey > 0 {
			w.hashes = append(w.hashes, filterHash(key.UserKey))
			if w.o.PrefixLen != nil {
				w.addPrefix(key.UserKey)
			}
		}
		if w.learned != nil {
			w.learned.addKey(key.UserKey, w.props.NumEntries)
		}
	}
	w.keyBuf = key.AppendEncoded(w.keyBuf[:0])
	w.data.add(w.keyBuf, value)
	w.lastKey, w.keyBuf = w.keyBuf, w.lastKey

	if !w.hasPoint {
		w.md.SmallestPoint = key.Clone()
		w.hasPoint = true
	}
	w.props.NumEntries++
	if key.Kind() == base.KindDelete {
		w.props.NumDeletions++
	}
	w.props.RawKeySize += uint64(key.Size())
	w.props.RawValueSize += uint64(len(value))
	w.noteSeq(key.SeqNum())

	if w.data.estimatedSize() >= w.o.BlockSize {
		return w.flushData()
	}
	return nil
}

// AddRangeDel records a range tombstone [start, end)#seq. Calls must come in
// order of start ascending, then seq descending (strictly increasing
// start#seq in internal-key order); they may interleave freely with Add.
func (w *Writer) AddRangeDel(start, end []byte, seq base.SeqNum) error {
	if err := w.check(); err != nil {
		return err
	}
	if seq > base.SeqNumMax {
		return w.fail(fmt.Errorf("sstable: AddRangeDel: seq %d above SeqNumMax", seq))
	}
	if bytes.Compare(start, end) >= 0 {
		return w.fail(fmt.Errorf("sstable: AddRangeDel: empty range [%q, %q)", start, end))
	}
	if len(start)+len(end) > MaxEntrySize {
		return w.fail(fmt.Errorf("sstable: AddRangeDel: bounds exceed %d bytes", MaxEntrySize))
	}
	k := base.MakeInternalKey(start, seq, base.KindRangeDelete)
	w.keyBuf = k.AppendEncoded(w.keyBuf[:0])
	if w.hasRangeDel && base.CompareEncoded(w.lastRangeDel, w.keyBuf) >= 0 {
		last, _ := base.DecodeInternalKey(w.lastRangeDel)
		return w.fail(fmt.Errorf("sstable: AddRangeDel of %s out of order: not after %s", k, last))
	}
	w.rangeDel.add(w.keyBuf, end)
	w.lastRangeDel = append(w.lastRangeDel[:0], w.keyBuf...)
	if !w.hasRangeDel {
		w.md.SmallestRangeDel = k.Clone()
		w.md.LargestRangeDel = base.InternalKey{UserKey: bytes.Clone(end), Trailer: base.RangeDelSentinel}
		w.hasRangeDel = true
	} else if bytes.Compare(end, w.md.LargestRangeDel.UserKey) > 0 {
		w.md.LargestRangeDel.UserKey = append(w.md.LargestRangeDel.UserKey[:0], end...)
	}
	w.props.NumRangeDeletions++
	w.noteSeq(seq)
	return nil
}

// AddMetaBlock stores an extra named meta block, written by Close. The name
// must be non-empty, unused, and not one of the built-in names
// (MetaFilterName, MetaPropertiesName, MetaRangeDelName). The writer copies
// data.
func (w *Writer) AddMetaBlock(name string, data []byte) error {
	if err := w.check(); err != nil {
		return err
	}
	if name == "" || isBuiltinMeta(name) {
		return w.fail(fmt.Errorf("sstable: AddMetaBlock: reserved name %q", name))
	}
	for _, b := range w.metaBlocks {
		if b.name == name {
			return w.fail(fmt.Errorf("sstable: AddMetaBlock: duplicate name %q", name))
		}
	}
	if len(data) > MaxBlockSize {
		return w.fail(fmt.Errorf("sstable: AddMetaBlock %q: %d bytes exceed %d", name, len(data), MaxBlockSize))
	}
	w.metaBlocks = append(w.metaBlocks, namedBlock{name: name, data: bytes.Clone(data)})
	return nil
}

// SetUserProperty records a user property, stored in the properties block
// and returned in Properties.User. A later call with the same name wins.
func (w *Writer) SetUserProperty(name, value string) {
	if w.props.User == nil {
		w.props.User = make(map[string]string)
	}
	w.props.User[name] = value
}

// EstimatedSize returns the bytes written so far plus the pending data
// block; compaction uses it to cut output files.
func (w *Writer) EstimatedSize() uint64 {
	if w.data.empty() {
		return w.offset
	}
	return w.offset + uint64(w.data.estimatedSize())
}

// flushData writes the pending data block.
func (w *Writer) flushData() error {
	h, err := w.writeBlock(w.data.finish(), w.o.Compression)
	if err != nil {
		return err
	}
	w.data.reset()
	w.props.DataSize += h.Length + blockTrailerLen
	w.props.NumDataBlocks++
	if w.learned != nil {
		w.learned.blockDone(w.props.NumEntries)
	}
	w.pendingIndex = true
	w.pendingHandle = h
	return nil
}

// addIndexEntry adds the index entry of the last flushed block. Its key is
// a short separator s with last <= s < next (internal-key order), or a
// short successor of last when next is nil (the last block). A shortened
// user key gets trailer SeqNumMax,KindMax, the smallest internal key of that
// user key; when no shorter user key exists the last key itself is used.
func (w *Writer) addIndexEntry(next []byte) {
	lastUser := w.lastKey[:len(w.lastKey)-base.TrailerLen]
	if next != nil {
		w.sepBuf = base.Separator(w.sepBuf[:0], lastUser, next)
	} else {
		w.sepBuf = base.Successor(w.sepBuf[:0], lastUser)
	}
	key := w.lastKey
	if !bytes.Equal(w.sepBuf, lastUser) {
		w.sepBuf = binary.LittleEndian.AppendUint64(w.sepBuf, uint64(base.MakeTrailer(base.SeqNumMax, base.KindMax)))
		key = w.sepBuf
	}
	w.hdlBuf = w.pendingHandle.append(w.hdlBuf[:0])
	w.index.add(key, w.hdlBuf)
	w.pendingIndex = false
}

// writeBlock compresses raw with c (when it pays), writes it with its
// trailer and returns its handle.
func (w *Writer) writeBlock(raw []byte, c Compression) (blockHandle, error) {
	out, typ, err := compressBlock(w.compressBuf[:0], raw, c)
	if err != nil {
		return blockHandle{}, w.fail(err)
	}
	if typ != NoCompression {
		w.compressBuf = out[:0]
	}
	var trailer [blockTrailerLen]byte
	trailer[0] = byte(typ)
	w.digest.Reset()
	w.digest.Write(out)
	w.digest.Write(trailer[:1])
	binary.LittleEndian.PutUint32(trailer[1:], uint32(w.digest.Sum64()))
	h := blockHandle{Offset: w.offset, Length: uint64(len(out))}
	if _, err := w.bw.Write(out); err != nil {
		return blockHandle{}, w.fail(fmt.Errorf("sstable: write: %w", err))
	}
	if _, err := w.bw.Write(trailer[:]); err != nil {
		return blockHandle{}, w.fail(fmt.Errorf("sstable: write: %w", err))
	}
	w.offset += uint64(len(out)) + blockTrailerLen
	return h, nil
}

// Close finishes the table: it flushes the last data block, writes the extra
// meta blocks, filter, range-del block, index, properties, meta-index and
// footer, then syncs and closes f. After any error Close still closes f
// and returns the error.
func (w *Writer) Close() error {
	if w.closed {
		if w.err != nil {
			return w.err
		}
		return errWriterClosed
	}
	w.closed = true
	if w.err == nil {
		w.err = w.finish()
	}
	w.bw.Reset(nil)
	writeBufs.Put(w.bw)
	w.bw = nil
	if w.err != nil {
		_ = w.f.Close()
		return w.err
	}
	if err := w.f.Close(); err != nil {
		return w.fail(fmt.Errorf("sstable: close: %w", err))
	}
	return nil
}

func (w *Writer) finish() error {
	if !w.data.empty() {
		if err := w.flushData(); err != nil {
			return err
		}
	}
	if w.pendingIndex {
		w.addIndexEntry(nil)
	}
	if w.learned != nil {
		// The table's size as it will be, give or take the properties.
		size := w.props.DataSize + uint64(w.index.estimatedSize()) + uint64(w.rangeDel.estimatedSize())
		if w.o.BitsPerKey > 0 {
			size += uint64(len(w.hashes)) * uint64(w.o.BitsPerKey) / 8
		}
		w.metaBlocks = append(w.metaBlocks, namedBlock{name: MetaLearnedName, data: w.learned.finish(size)})
		w.learned = nil
	}
	var meta metaIndex
	slices.SortFunc(w.metaBlocks, func(a, b namedBlock) int { return strings.Compare(a.name, b.name) })
	for _, b := range w.metaBlocks {
		h, err := w.writeBlock(b.data, w.o.Compression)
		if err != nil {
			return err
		}
		meta = append(meta, metaEntry{b.name, h})
	}
	if w.o.BitsPerKey > 0 {
		h, err := w.writeBlock(buildFilter(w.hashes, w.o.BitsPerKey), NoCompression)
		if err != nil {
			return err
		}
		w.props.FilterSize = h.Length + blockTrailerLen
		meta = append(meta, metaEntry{MetaFilterName, h})
	}
	if w.hasRangeDel {
		h, err := w.writeBlock(w.rangeDel.finish(), w.o.Compression)
		if err != nil {
			return err
		}
		meta = append(meta, metaEntry{MetaRangeDelName, h})
	}
	ih, err := w.writeBlock(w.index.finish(), w.o.Compression)
	if err != nil {
		return err
	}
	w.props.IndexSize = ih.Length + blockTrailerLen
	ph, err := w.writeBlock(w.props.encode(), w.o.Compression)
	if err != nil {
		return err
	}
	meta = append(meta, metaEntry{MetaPropertiesName, ph})
	slices.SortFunc(meta, func(a, b metaEntry) int { return strings.Compare(a.name, b.name) })
	mh, err := w.writeBlock(meta.encode(), w.o.Compression)
	if err != nil {
		return err
	}
	version := uint32(formatVersion)
	if !w.data.sums {
		// Nothing of version 3 in it: builds that read up to version 2
		// read it too.
		version = 2
	}
	ft := footer{metaIndex: mh, index: ih, version: version}.encode()
	if _, err := w.bw.Write(ft); err != nil {
		return fmt.Errorf("sstable: write: %w", err)
	}
	w.offset += uint64(len(ft))
	if err := w.bw.Flush(); err != nil {
		return fmt.Errorf("sstable: write: %w", err)
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("sstable: sync: %w", err)
	}

	w.md.Size = w.offset
	w.md.HasPointKeys = w.hasPoint
	if w.hasPoint {
		last, _ := base.DecodeInternalKey(w.lastKey)
		w.md.LargestPoint = last.Clone()
	}
	w.md.HasRangeDels = w.hasRangeDel
	w.md.SmallestSeq, w.md.LargestSeq = w.props.SmallestSeq, w.props.LargestSeq
	w.md.Properties = w.props
	w.md.Properties.User = maps.Clone(w.props.User)
	return nil
}

// Metadata describes the table; it is valid after a successful Close.
func (w *Writer) Metadata() *WriterMetadata { return &w.md }
