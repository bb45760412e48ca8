package vlog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/strata-db/strata/cache"
	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/internal/crc32c"
	"github.com/strata-db/strata/vfs"
)

// ReaderOptions configures a Reader. The zero value works.
type ReaderOptions struct {
	// Cache is an optional value cache. Records that Get reads are cached
	// whole (the key too, so that a hit can still be checked against the
	// pointer's key), under (CacheID, file number, record offset). Default
	// nil: no cache.
	Cache *cache.Cache
	// CacheID is the namespace of this DB's files in Cache (see
	// cache.Cache.NewID). Default 0.
	CacheID uint64
	// FileName names the file in errors. Default:
	// base.MakeFilename(base.FileTypeVlog, fileNum).
	FileName string
	// Map reads a finished file through a read-only memory mapping (see
	// vfs.MapFile) instead of ReadAt, where the filesystem allows it: a read
	// then costs no system call, and the value cache is not used. Default
	// false.
	Map bool
	// Populate, with Map, maps the pages of a finished file that the page
	// cache holds in the background (vfs.PopulateAsync): a read that
	// faults costs far more. Default false.
	Populate bool
}

// Reader reads one value-log file by pointer. Its methods are safe for
// concurrent use, except Close; each ReadAhead and Scanner it makes is for
// one goroutine.
//
// INVARIANT: after NewReader, every field is read-only, so Get needs no
// lock; f.ReadAt is the only shared state.
type Reader struct {
	f        vfs.File
	fileNum  base.FileNum
	name     string
	size     uint64
	finished bool
	// recordsEnd is where records end: the footer's offset in a finished
	// file, the file's size in an unfinished one. No pointer reaches past
	// it.
	recordsEnd uint64
	// footer is the footer of a finished file (zero otherwise).
	footer  footer
	cache   *cache.Cache
	cacheID uint64
	// mapped is the whole file mapped read-only, or nil (reads go through
	// f.ReadAt). Every access to it is fault-protected (see readMapped).
	mapped []byte
	// unpopulate stops the background vfs.Populate of mapped and waits
	// for it (nil when not mapped).
	unpopulate func()
}

// NewReader opens the value log fileNum, of size bytes, for reading through
// f. It verifies the header, which must be intact, and looks for the
// footer: a file without a valid footer (a crash before Finish, or damage
// to the footer) is opened as unfinished, readable by pointer and
// scannable up to its first bad record. On success the Reader owns f and
// Close closes it; on error the caller still owns f.
func NewReader(f vfs.File, fileNum base.FileNum, size int64, o ReaderOptions) (*Reader, error) {
	r := &Reader{
		f:       f,
		fileNum: fileNum,
		name:    o.FileName,
		cache:   o.Cache,
		cacheID: o.CacheID,
	}
	if r.name == "" {
		r.name = base.MakeFilename(base.FileTypeVlog, fileNum)
	}
	if size < HeaderLen {
		return nil, base.CorruptionErrorf(r.name, 0, "file of %d bytes is shorter than the %d-byte header", size, HeaderLen)
	}
	r.size = uint64(size)
	// The header and the footer are read at once: through a shared
	// file's cache (package remote) each is a round trip to the store.
	var (
		hdr      [HeaderLen]byte
		fb       [FooterLen]byte
		footErr  error
		footDone chan struct{}
	)
	hasFooter := r.size >= HeaderLen+FooterLen
	if hasFooter {
		footDone = make(chan struct{})
		go func() {
			defer close(footDone)
			footErr = r.readAt(fb[:], r.size-FooterLen)
		}()
	}
	err := r.readAt(hdr[:], 0)
	if hasFooter {
		<-footDone
	}
	if err != nil {
		return nil, err
	}
	if err := checkHeader(hdr[:], fileNum, r.name); err != nil {
		return nil, err
	}
	r.recordsEnd = r.size
	if hasFooter {
		if footErr != nil {
			return nil, footErr
		}
		if ft, ok := decodeFooter(fb[:], r.size, fileNum); ok {
			r.finished, r.footer, r.recordsEnd = true, ft, ft.recordsEnd
		}
	}
	// Only a finished file is mapped: nothing writes to it any more, so
	// the mapping sees what the pointers were made for. A file shorter
	// than size faults on access; readMapped reports that as corruption.
	if o.Map && r.finished {
		m, ok, err := vfs.MapFile(f, size)
		if err != nil {
			return nil, fmt.Errorf("vlog: mapping %s: %w", r.name, err)
		}
		if ok {
			r.mapped, r.cache = m, nil
			if o.Populate {
				r.unpopulate = vfs.PopulateAsync(m)
			}
		}
	}
	return r, nil
}

// readAt fills buf from offset off. Bytes missing at the end of the file
// are corruption (the caller checked that they lie inside the size it was
// given); other failures are I/O errors.
func (r *Reader) readAt(buf []byte, off uint64) error {
	n, err := r.f.ReadAt(buf, int64(off))
	if n == len(buf) {
		return nil
	}
	if err == nil || err == io.EOF {
		return base.CorruptionErrorf(r.name, int64(off), "read %d of %d bytes: file ends early (size given: %d)", n, len(buf), r.size)
	}
	return fmt.Errorf("vlog: reading %s at offset %d: %w", r.name, off, err)
}

// Finished reports whether the file ends in a valid footer (Finish
// completed).
func (r *Reader) Finished() bool { return r.finished }

// FileNum returns the number of the file the Reader reads.
func (r *Reader) FileNum() base.FileNum { return r.fileNum }

// Mapped reports whether the Reader reads through a memory mapping.
func (r *Reader) Mapped() bool { return r.mapped != nil }

// Close closes the file. The Reader and everything it made must not be
// used afterwards.
func (r *Reader) Close() error {
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

// checkPointer verifies that p names this file and lies inside its
// records.
func (r *Reader) checkPointer(p Pointer) error {
	if p.FileNum != r.fileNum {
		return base.CorruptionErrorf(r.name, int64(p.Offset), "pointer %s is not into this file", p)
	}
	if p.Offset < HeaderLen || p.Offset > r.recordsEnd || uint64(p.Length) > r.recordsEnd-p.Offset {
		return base.CorruptionErrorf(r.name, int64(p.Offset), "pointer %s outside the records [%d, %d)", p, HeaderLen, r.recordsEnd)
	}
	if p.Length < minRecordLen || p.ValueLen > p.Length-minRecordLen {
		return base.CorruptionErrorf(r.name, int64(p.Offset), "pointer %s: length too small for the value", p)
	}
	return nil
}

// Get returns the value p locates, after verifying the record's checksum,
// that its key equals key and that its lengths match p. The returned slice
// is read-only and stays valid, also after Close: it may alias the value
// cache, never a reused buffer or the mapping. A pointer outside the file,
// a checksum mismatch or a key mismatch is a base.CorruptionError naming
// the file and p.Offset.
func (r *Reader) Get(p Pointer, key []byte) ([]byte, error) {
	if err := r.checkPointer(p); err != nil {
		return nil, err
	}
	if r.mapped != nil {
		return r.readMapped(nil, p, key, nil)
	}
	if rec := r.cache.Get(r.cacheID, r.fileNum, p.Offset); rec != nil {
		return r.cachedValue(rec, p, key)
	}
	rec := make([]byte, p.Length)
	if err := r.readAt(rec, p.Offset); err != nil {
		return nil, err
	}
	v, err := r.verify(rec, p, key)
	if err != nil {
		return nil, err
	}
	r.cache.Set(r.cacheID, r.fileNum, p.Offset, rec)
	return v, nil
}

// AppendValue appends the value p locates to dst, verified as Get
// verifies it. With dst nil the result is a fresh slice of the value's
// length; through a mapping, the value is copied once, straight into it.
func (r *Reader) AppendValue(dst []byte, p Pointer, key []byte) ([]byte, error) {
	return r.AppendValueAhead(dst, p, key, Ahead{})
}

// Ahead is a record a scan will read next, located by Reader.Ahead in a
// value log's mapping; AppendValueAhead and MappedValueAhead prefetch it.
// The zero Ahead locates nothing.
type Ahead struct{ rec []byte }

// Located reports whether a locates a record.
func (a Ahead) Located() bool { return len(a.rec) > 0 }

// Ahead locates the record p points to in the Reader's mapping, for a
// read of another record to prefetch; the zero Ahead when the Reader does
// not map its file or p is not a pointer into its records. Nothing is
// read: a prefetch is a hint that cannot fault, so an Ahead stays harmless
// after the Reader closes.
func (r *Reader) Ahead(p Pointer) Ahead {
	if r.mapped == nil || r.checkPointer(p) != nil {
		return Ahead{}
	}
	return Ahead{r.mapped[p.Offset:p.End():p.End()]}
}

// AppendValueAhead is AppendValue that, through a mapping, prefetches next
// while it verifies the value. A forward scan's values lie at random
// places in the value logs (they are in write order, the scan in key
// order), so each row waits for its record to come in from memory, and
// then checksums it with the memory idle; started here, the next row's
// loads overlap this row's work instead of stalling the next row.
func (r *Reader) AppendValueAhead(dst []byte, p Pointer, key []byte, next Ahead) ([]byte, error) {
	if err := r.checkPointer(p); err != nil {
		return nil, err
	}
	if r.mapped != nil {
		return r.readMapped(dst, p, key, next.rec)
	}
	v, err := r.Get(p, key)
	if err != nil {
		return nil, err
	}
	if dst = append(dst, v...); dst == nil {
		dst = []byte{}
	}
	return dst, nil
}

// MappedValue returns the value p locates as a slice of the Reader's
// memory mapping, verified in place as Get verifies it, without copying
// it; ok is false when the Reader does not map its file (read with
// AppendValue then). The slice is read-only and valid only while the
// Reader is open: reading it after Close faults, and so does reading it
// after another process truncates the file, and neither fault can be
// caught then. A fault while the record is verified is a corruption
// error, as for every mapped read.
func (r *Reader) MappedValue(p Pointer, key []byte) (v []byte, ok bool, err error) {
	return r.MappedValueAhead(p, key, Ahead{})
}

// MappedValueAhead is MappedValue that prefetches next while it verifies
// the value (see AppendValueAhead).
func (r *Reader) MappedValueAhead(p Pointer, key []byte, next Ahead) (v []byte, ok bool, err error) {
	if r.mapped == nil {
		return nil, false, nil
	}
	if err := r.checkPointer(p); err != nil {
		return nil, true, err
	}
	v, err = r.verifyMapped(p, key, next.rec)
	if err == vfs.ErrMappedFault {
		return nil, true, base.CorruptionErrorf(r.name, int64(p.Offset), "%v (reading %s of a file of %d bytes)", err, p, r.size)
	}
	return v, true, err
}

func (r *Reader) verifyMapped(p Pointer, key []byte, next []byte) (v []byte, err error) {
	old := vfs.BeginMapped()
	defer vfs.EndMapped(old, &err)
	rec := r.mapped[p.Offset:p.End():p.End()]
	// The loads bring the record in faster than the checksum loop would
	// (see copyMapped).
	if touchLines(rec) == touchNever {
		return nil, errTouchNever
	}
	return r.verifyAhead(rec, p, key, next)
}

// readMapped verifies the record p locates in the mapping and appends its
// value to dst. p has been checked against the file. A fault while the
// mapping is read (the file shrank under it) is corruption of the file.
func (r *Reader) readMapped(dst []byte, p Pointer, key []byte, next []byte) ([]byte, error) {
	out, err := r.copyMapped(dst, p, key, next)
	if err == vfs.ErrMappedFault {
		return nil, base.CorruptionErrorf(r.name, int64(p.Offset), "%v (reading %s of a file of %d bytes)", err, p, r.size)
	}
	return out, err
}

// copyMapped copies the value out of the mapping and checksums it as it
// copies (crc32c.CopyUpdate), having first loaded one byte of every cache
// line of the record: a record that is not in the CPU cache (a random read
// of a large file) comes in from memory fastest through such independent
// loads, next through a copy and slowest through a checksum loop. The
// checksum covers the same bytes as verify's, the front of the record and
// the value as the copy read it (the mapped file does not change); only a
// record whose checksum verifies is decoded and matched against p and
// key.
func (r *Reader) copyMapped(dst []byte, p Pointer, key []byte, next []byte) (out []byte, err error) {
	old := vfs.BeginMapped()
	defer vfs.EndMapped(old, &err)
	rec := r.mapped[p.Offset:p.End():p.End()]
	if touchLines(rec) == touchNever {
		return nil, errTouchNever
	}
	// checkPointer made sure the value fits after a minimal header.
	vstart := len(rec) - int(p.ValueLen)
	out, sum := appendSum(dst, rec[vstart:], crc(rec[recordChecksumLen:vstart]), next)
	if err := r.checkSum(rec, p, sum); err != nil {
		return nil, err
	}
	if _, err := r.match(rec, p, key); err != nil {
		return nil, err
	}
	if out == nil {
		out = []byte{} // an empty value is still a value
	}
	return out, nil
}

// appendSum appends src to dst and returns the checksum sum extended over
// src, prefetching next while it copies (see crc32c.CopyUpdate). A nil
// dst, or one too small, grows to exactly the value.
func appendSum(dst, src []byte, sum uint32, next []byte) ([]byte, uint32) {
	n := len(dst) + len(src)
	var out []byte
	if cap(dst) >= n {
		out = dst[:n]
	} else {
		out = make([]byte, n)
		copy(out, dst)
	}
	return out, crc32c.CopyUpdate(out[len(dst):], src, sum, next)
}

// touchLines loads one byte of every 64-byte cache line of b and returns
// their sum, which is below touchNever for any b a pointer can locate (at
// most 255 per line of a record of at most MaxRecordLen bytes): comparing
// the sum with it keeps the loads from being optimized away.
func touchLines(b []byte) uint64 {
	var s uint64
	for i := 0; i < len(b); i += 64 {
		s += uint64(b[i])
	}
	return s
}

// touchNever is a sum touchLines cannot return.
const touchNever = math.MaxUint64

// errTouchNever is never returned (see touchLines).
var errTouchNever = errors.New("vlog: impossible cache-line sum")

// verify checks rec, the p.Length bytes read at p.Offset, against p and
// key, and returns the value.
func (r *Reader) verify(rec []byte, p Pointer, key []byte) ([]byte, error) {
	return r.verifyAhead(rec, p, key, nil)
}

// verifyAhead is verify that prefetches next while it checksums rec (see
// crc32c.UpdateAhead).
func (r *Reader) verifyAhead(rec []byte, p Pointer, key []byte, next []byte) ([]byte, error) {
	if err := r.checkSum(rec, p, crc32c.UpdateAhead(0, rec[recordChecksumLen:], next)); err != nil {
		return nil, err
	}
	return r.match(rec, p, key)
}

// checkSum compares the checksum stored at the front of rec, the record p
// locates, with sum, the one computed over the rest of it.
func (r *Reader) checkSum(rec []byte, p Pointer, sum uint32) error {
	if got := binary.LittleEndian.Uint32(rec); got != sum {
		return base.CorruptionErrorf(r.name, int64(p.Offset),
			"record checksum mismatch: stored %#08x, computed %#08x over the %d bytes of %s", got, sum, len(rec)-recordChecksumLen, p)
	}
	return nil
}

// cachedValue returns the value of a record from the cache, verified when
// it was read, after checking it against p and key.
func (r *Reader) cachedValue(rec []byte, p Pointer, key []byte) ([]byte, error) {
	if len(rec) != int(p.Length) {
		return nil, base.CorruptionErrorf(r.name, int64(p.Offset),
			"pointer %s disagrees with the %d-byte record at its offset", p, len(rec))
	}
	return r.match(rec, p, key)
}

// match decodes a record whose checksum verified and checks that it is
// the one p and key describe.
func (r *Reader) match(rec []byte, p Pointer, key []byte) ([]byte, error) {
	h, problem := decodeRecordHeader(rec, uint64(len(rec)))
	if problem != "" {
		return nil, base.CorruptionErrorf(r.name, int64(p.Offset), "%s", problem)
	}
	if h.total() != uint64(p.Length) || h.valueLen != uint64(p.ValueLen) {
		return nil, base.CorruptionErrorf(r.name, int64(p.Offset),
			"record holds a %d-byte key and a %d-byte value in %d bytes, pointer %s says otherwise", h.keyLen, h.valueLen, h.total(), p)
	}
	k := rec[h.hdrLen : uint64(h.hdrLen)+h.keyLen]
	if !bytes.Equal(k, key) {
		return nil, base.CorruptionErrorf(r.name, int64(p.Offset),
			"record holds key %s, pointer %s was for key %s", quoteKey(k), p, quoteKey(key))
	}
	return rec[uint64(h.hdrLen)+h.keyLen : len(rec) : len(rec)], nil
}

// quoteKey formats a key for an error message, eliding the middle of a
// long one.
func quoteKey(k []byte) string {
	const max = 64
	if len(k) <= max {
		return fmt.Sprintf("%q", k)
	}
	return fmt.Sprintf("%q...%q (%d bytes)", k[:max/2], k[len(k)-max/2:], len(k))
}
