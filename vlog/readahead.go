package vlog

const (
	// initialWindow is the first read-ahead window of a sequential run.
	initialWindow = 64 << 10
	// DefaultReadAheadMax is the largest window of a ReadAhead made with
	// maxBytes <= 0.
	DefaultReadAheadMax = 1 << 20
)

// ReadAhead serves the pointers of a scan through one file. While each
// pointer lies just after the previous one (forward scan) or just before
// it (reverse scan), leaving a gap no wider than the current window, a
// read fetches a whole window of the file in the scan's direction and the
// following records are served from it; the window starts at 64 KiB and
// doubles with each such read up to the ReadAhead's maximum. Any other
// pointer (the first, a jump back in a forward scan, a jump far ahead)
// reads just its record and resets the window. A record larger than the
// window is read alone. Records found in the value cache are served from
// it; records read here are not added to it (a scan would only churn it).
// A Reader that maps its file reads nothing ahead: each value is verified
// in the mapping and copied to a buffer the ReadAhead reuses.
//
// Every record is verified like Reader.Get verifies it. A ReadAhead is not
// safe for concurrent use (make one per iterator and file); a value it
// returns is valid until the next call on it.
type ReadAhead struct {
	r      *Reader
	max    int
	window int
	// buf holds the bytes of the file at [bufOff, bufOff+len(buf)).
	buf    []byte
	bufOff uint64
	// last is the previous pointer served; valid is false before the first.
	last  Pointer
	valid bool
	// val holds the last value read through a mapping.
	val []byte
}

// NewReadAhead returns a ReadAhead whose window grows to at most maxBytes
// (DefaultReadAheadMax when maxBytes <= 0). Its buffer is allocated on
// first use and grows with the window.
func (r *Reader) NewReadAhead(maxBytes int) *ReadAhead {
	if maxBytes <= 0 {
		maxBytes = DefaultReadAheadMax
	}
	return &ReadAhead{r: r, max: maxBytes, window: min(initialWindow, maxBytes)}
}

// Get returns the value p locates, verified as by Reader.Get. The slice is
// valid until the next call on the ReadAhead.
func (ra *ReadAhead) Get(p Pointer, key []byte) ([]byte, error) {
	r := ra.r
	if err := r.checkPointer(p); err != nil {
		return nil, err
	}
	if r.mapped != nil {
		v, err := r.readMapped(ra.val[:0], p, key, nil)
		if err != nil {
			return nil, err
		}
		ra.val = v
		ra.last, ra.valid = p, true
		return v, nil
	}
	if p.Offset >= ra.bufOff && p.End() <= ra.bufOff+uint64(len(ra.buf)) {
		return ra.serve(p, key, ra.buf[p.Offset-ra.bufOff:p.End()-ra.bufOff])
	}
	if rec := r.cache.Get(r.cacheID, r.fileNum, p.Offset); rec != nil {
		v, err := r.cachedValue(rec, p, key)
		if err == nil {
			ra.last, ra.valid = p, true
		}
		return v, err
	}

	// Pick the bytes to read: a window in the direction of the run, or the
	// record alone.
	start, end := p.Offset, p.End()
	win := uint64(ra.window)
	switch {
	case ra.valid && p.Offset >= ra.last.End() && p.Offset-ra.last.End() <= win:
		if uint64(p.Length) <= win {
			end = min(p.Offset+win, r.recordsEnd)
		}
		ra.window = min(2*ra.window, ra.max)
	case ra.valid && p.End() <= ra.last.Offset && ra.last.Offset-p.End() <= win:
		if uint64(p.Length) <= win {
			start = max(p.End()-min(win, p.End()), HeaderLen)
		}
		ra.window = min(2*ra.window, ra.max)
	default:
		ra.window = min(initialWindow, ra.max)
	}
	n := int(end - start)
	if n > ra.max {
		// A record too large to keep: read it into a buffer of its own and
		// leave the window as it is for the next call.
		rec := make([]byte, n)
		if err := r.readAt(rec, start); err != nil {
			return nil, err
		}
		return ra.serve(p, key, rec)
	}
	if cap(ra.buf) < n {
		ra.buf = make([]byte, n, max(n, min(2*cap(ra.buf), ra.max)))
	}
	ra.buf, ra.bufOff = ra.buf[:n], start
	if err := r.readAt(ra.buf, start); err != nil {
		ra.buf = ra.buf[:0]
		return nil, err
	}
	return ra.serve(p, key, ra.buf[p.Offset-start:p.End()-start])
}

// serve verifies the record rec read for p and returns its value.
func (ra *ReadAhead) serve(p Pointer, key []byte, rec []byte) ([]byte, error) {
	v, err := ra.r.verify(rec, p, key)
	if err != nil {
		return nil, err
	}
	ra.last, ra.valid = p, true
	return v, nil
}
