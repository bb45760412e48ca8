package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// s3Reader is the body of an S3Store.Get: the bytes [off, end) of an
// object (end < 0: to its end, unknown until an answer tells). Every
// answer must hold exactly the bytes asked for: a status, Content-Range
// or Content-Length that says otherwise, or a body longer than its range,
// is an error, never retried (the server is wrong, and asking again will
// not set it right). A body that fails part way (a reset, a stall, an end
// before its range's) is transient: the reader asks for the rest with a
// ranged GET, conditional on the ETag of the first answer (If-Match), so
// that bytes of two versions of a replaced object are never joined. All
// the requests of one Get share the store's MaxAttempts.
type s3Reader struct {
	s    *S3Store
	ctx  context.Context
	name string
	off  int64 // the first byte of the Get
	pos  int64 // the next byte to return
	end  int64 // past the last byte; < 0: not known yet
	size int64 // the object's size, from a HEAD or the first answer; < 0: not known

	etag   string
	tries  int           // requests made, all answers together
	body   io.ReadCloser // the answer being read; nil between answers
	from   int64         // the first byte of the answer being read
	failed error         // the failure of the last answer, retried at the next Read
	err    error         // sticky: what every Read returns from now on
}

// open asks for the bytes from pos on, retrying as the policy allows.
func (r *s3Reader) open() error {
	for {
		r.tries++
		err := r.request()
		if err == nil {
			return nil
		}
		if err := r.s.retry(r.ctx, r.tries, err, nil); err != nil {
			return err
		}
	}
}

func (r *s3Reader) request() error {
	h := http.Header{}
	switch {
	case r.end >= 0:
		h.Set("Range", fmt.Sprintf("bytes=%d-%d", r.pos, r.end-1))
	case r.pos > 0:
		h.Set("Range", fmt.Sprintf("bytes=%d-", r.pos))
	}
	if r.etag != "" {
		h.Set("If-Match", r.etag)
	}
	resp, err := r.s.send(r.ctx, &s3Request{method: http.MethodGet, key: r.s.key(r.name), header: h})
	if err != nil {
		var se *S3Error
		if r.etag != "" && errors.As(err, &se) && se.Status == http.StatusPreconditionFailed {
			return fmt.Errorf("the object was replaced while it was read (its ETag is no longer %s): %w", r.etag, err)
		}
		return err
	}
	if err := r.check(resp, h.Get("Range") != ""); err != nil {
		resp.Body.Close()
		return err
	}
	etag := resp.Header.Get("ETag")
	switch {
	case r.etag == "":
		r.etag = etag
	case etag != "" && etag != r.etag:
		// A server that ignored If-Match: the bytes would be another
		// version's, spliced onto the first's.
		resp.Body.Close()
		return fmt.Errorf("the object was replaced while it was read (its ETag is %s, not %s)", etag, r.etag)
	}
	r.body, r.from = resp.Body, r.pos
	return nil
}

// check verifies that resp holds the bytes from pos to end, and learns
// end if it was not known.
func (r *s3Reader) check(resp *http.Response, ranged bool) error {
	cr := resp.Header.Get("Content-Range")
	bad := func(why string) error {
		asked := "to the end"
		if r.end >= 0 {
			asked = fmt.Sprintf("to %d", r.end)
		}
		return fmt.Errorf("asked for bytes from %d %s, the server answered status %d, Content-Range %q, Content-Length %d: %s",
			r.pos, asked, resp.StatusCode, cr, resp.ContentLength, why)
	}
	switch resp.StatusCode {
	case http.StatusPartialContent:
		first, last, total, ok := parseContentRange(cr)
		switch {
		case !ok || !ranged:
			return bad("not a range asked for")
		case first != r.pos || (r.end >= 0 && last != r.end-1):
			return bad("another range")
		case total >= 0 && r.size >= 0 && total != r.size:
			return bad(fmt.Sprintf("the object holds %d bytes, not %d as when the read began", total, r.size))
		case r.end < 0 && total >= 0 && last != total-1:
			return bad("not the rest of the object")
		}
		if r.end < 0 {
			r.end = last + 1
		}
		if r.size < 0 {
			r.size = total // -1 if it does not say
		}
	case http.StatusOK:
		// The whole object: right only if that is what was asked for.
		if r.pos != 0 {
			return bad("the whole object")
		}
		if r.end < 0 {
			r.end = resp.ContentLength // -1 if it does not say
		}
		if r.size < 0 {
			// The object's size, which a resumed read's answer must
			// repeat.
			r.size = resp.ContentLength
		}
	default:
		return bad("not a status of a read")
	}
	if resp.ContentLength >= 0 && r.end >= 0 && resp.ContentLength != r.end-r.pos {
		return bad("the length differs")
	}
	return nil
}

// parseContentRange parses "bytes first-last/total" (total "*": -1).
func parseContentRange(s string) (first, last, total int64, ok bool) {
	spec, found := strings.CutPrefix(s, "bytes ")
	rng, tot, found2 := strings.Cut(spec, "/")
	a, b, found3 := strings.Cut(rng, "-")
	if !found || !found2 || !found3 {
		return 0, 0, 0, false
	}
	var err1, err2, err3 error
	first, err1 = strconv.ParseInt(a, 10, 64)
	last, err2 = strconv.ParseInt(b, 10, 64)
	total = -1
	if tot != "*" {
		total, err3 = strconv.ParseInt(tot, 10, 64)
	}
	if err1 != nil || err2 != nil || err3 != nil || first < 0 || last < first || (total >= 0 && last >= total) {
		return 0, 0, 0, false
	}
	return first, last, total, true
}

func (r *s3Reader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	for {
		if r.failed != nil {
			// The last answer failed part way: wait out the backoff and
			// ask for the rest.
			err := r.s.retry(r.ctx, r.tries, r.failed, nil)
			r.failed = nil
			if err == nil {
				r.s.stats.resumed.Add(1)
				err = r.open()
			}
			if err != nil {
				r.err = r.s.notFound(r.name, "get", err)
				return 0, r.err
			}
		}
		q := p
		if r.end >= 0 && int64(len(q)) > r.end-r.pos {
			q = q[:r.end-r.pos]
		}
		n, err := r.body.Read(q)
		r.pos += int64(n)
		switch {
		case r.end >= 0 && r.pos == r.end:
			// Every byte is here (a failure after the last one does not
			// matter); the answer must end with them.
			var extra error
			if err == nil {
				extra = r.finish()
			}
			r.closeBody()
			if extra != nil {
				r.err = fmt.Errorf("checkpoint: get %s: %w", r.name, extra)
				return n, r.err
			}
			r.err = io.EOF
			return n, nil
		case err == nil:
			return n, nil
		case err == io.EOF && r.end < 0:
			// The end of an object whose size no answer said.
			r.closeBody()
			r.err = io.EOF
			return n, io.EOF
		case err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF):
			// The body ended early: closed by the server, or (with a
			// Content-Length) the connection was.
			err = &shortBodyError{at: r.pos, off: r.from, end: r.end}
		}
		r.closeBody()
		r.failed = err
		if n > 0 {
			return n, nil
		}
	}
}

// finish checks that the answer ends after the last byte asked for: with
// a Content-Length net/http stops there itself, a chunked answer might
// go on. Reading to its end also lets the connection carry another
// request.
func (r *s3Reader) finish() error {
	var b [1]byte
	n, _ := r.body.Read(b[:])
	if n > 0 {
		return fmt.Errorf("the server sent more than the bytes [%d, %d) asked for", r.from, r.end)
	}
	return nil
}

func (r *s3Reader) closeBody() {
	if r.body != nil {
		r.body.Close()
		r.body = nil
	}
}

func (r *s3Reader) Close() error {
	r.closeBody()
	if r.err == nil {
		r.err = errors.New("checkpoint: read after Close")
	}
	return nil
}
