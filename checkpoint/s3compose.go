package checkpoint

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// S3's multipart limits: every part but the last holds at least
// s3MinPart bytes and at most s3MaxPart, and an upload has at most
// s3MaxParts parts.
const (
	s3MinPart  = 5 << 20
	s3MaxPart  = 5 << 30
	s3MaxParts = 10000
)

// s3Part is one part of a multipart upload: a range of a stored object
// copied by the server (copy), or the caller's bytes (send), which may
// include stored ranges read back because they are too small to copy.
type s3Part struct {
	copy *Part
	send []Part
	size int64
}

// planS3Parts turns parts into the parts of a multipart upload. A stored
// range of at least s3MinPart bytes is copied by the server, unless the
// bytes to send before it are fewer than s3MinPart (a part that is not
// the last may not be smaller): then it is sent with them. Everything
// else is sent, consecutive pieces as one part.
func planS3Parts(parts []Part) []s3Part {
	var out []s3Part
	var pending []Part
	var pendingSize int64
	flush := func() {
		if len(pending) > 0 {
			out = append(out, s3Part{send: pending, size: pendingSize})
			pending, pendingSize = nil, 0
		}
	}
	for _, p := range parts {
		for p.R == nil && p.Length > s3MaxPart && (pendingSize == 0 || pendingSize >= s3MinPart) {
			// Too large for one copy: the first s3MaxPart bytes alone.
			head := p
			head.Length = s3MaxPart
			flush()
			out = append(out, s3Part{copy: &head, size: head.Length})
			p.Offset, p.Length = p.Offset+s3MaxPart, p.Length-s3MaxPart
		}
		if p.R == nil && p.Length >= s3MinPart && (pendingSize == 0 || pendingSize >= s3MinPart) {
			flush()
			c := p
			out = append(out, s3Part{copy: &c, size: p.Length})
			continue
		}
		if pendingSize+p.Length > s3MaxPart && pendingSize >= s3MinPart {
			flush()
		}
		pending = append(pending, p)
		pendingSize += p.Length
	}
	flush()
	return out
}

// Compose implements Composer with a multipart upload whose parts copy
// the stored ranges server-side (UploadPartCopy). Ranges below S3's 5 MiB
// minimum part size, and those that would follow a smaller part, are read
// back and sent; a composition with nothing to copy is a plain Put. The
// object appears when the upload completes, whole; a failure aborts the
// upload.
func (s *S3Store) Compose(ctx context.Context, name string, parts []Part) (int64, error) {
	if err := ValidName(name); err != nil {
		return 0, err
	}
	size, err := partsSize(parts)
	if err != nil {
		return 0, err
	}
	plan := planS3Parts(parts)
	var copied int64
	for _, p := range plan {
		if p.copy != nil {
			copied += p.size
		}
	}
	if copied == 0 || len(plan) > s3MaxParts {
		return 0, composeThrough(ctx, s, name, parts)
	}
	sizes := map[string]int64{} // one HEAD per source object
	for _, p := range plan {
		// The server checks ranges against the source's size, but an
		// answer to a bad range differs among servers: check first.
		if p.copy != nil {
			n, ok := sizes[p.copy.Object]
			if !ok {
				var err error
				if n, err = s.size(ctx, p.copy.Object); err != nil {
					return 0, err
				}
				sizes[p.copy.Object] = n
			}
			if p.copy.Offset+p.copy.Length > n {
				return 0, fmt.Errorf("checkpoint: compose %s: range %d+%d outside %s's %d bytes", name, p.copy.Offset, p.copy.Length, p.copy.Object, n)
			}
		}
	}
	key := s.key(name)
	// A retried creation may leave an upload of a lost answer behind; it
	// holds no object, and bucket lifecycle rules expire abandoned
	// uploads.
	var created struct{ UploadId string }
	err = s.call(ctx, &s3Request{method: http.MethodPost, key: key, query: url.Values{"uploads": {""}}, body: emptyBody}, func(resp *http.Response) error {
		return decodeS3Answer(resp, &created)
	})
	if err == nil && created.UploadId == "" {
		err = fmt.Errorf("no upload id in the answer")
	}
	if err != nil {
		return 0, fmt.Errorf("checkpoint: compose %s: create multipart upload: %w", name, err)
	}
	id := created.UploadId
	completed := false
	defer func() {
		if !completed {
			// Best effort, as above.
			_ = s.call(context.WithoutCancel(ctx), &s3Request{method: http.MethodDelete, key: key, query: url.Values{"uploadId": {id}}}, nil)
		}
	}()
	var done []donePart
	for i, p := range plan {
		q := url.Values{"partNumber": {strconv.Itoa(i + 1)}, "uploadId": {id}}
		var etag string
		if p.copy != nil {
			h := http.Header{}
			h.Set("X-Amz-Copy-Source", "/"+uriEncode(s.o.Bucket, false)+"/"+uriEncode(s.key(p.copy.Object), false))
			h.Set("X-Amz-Copy-Source-Range", fmt.Sprintf("bytes=%d-%d", p.copy.Offset, p.copy.Offset+p.copy.Length-1))
			var res struct{ ETag string }
			err := s.call(ctx, &s3Request{method: http.MethodPut, key: key, query: q, header: h, body: emptyBody, slowAnswer: true}, func(resp *http.Response) error {
				return decodeS3Answer(resp, &res)
			})
			if err != nil {
				return 0, fmt.Errorf("checkpoint: compose %s: copy part %d from %s: %w", name, i+1, p.copy.Object, s.notFound(p.copy.Object, "copy", err))
			}
			etag = res.ETag
		} else {
			r := &partsReader{ctx: ctx, s: s, parts: p.send}
			body, err := newPutBody(r, p.size, s.o.RetryBufferSize)
			if err == nil {
				err = s.call(ctx, &s3Request{method: http.MethodPut, key: key, query: q, body: body}, func(resp *http.Response) error {
					etag = resp.Header.Get("ETag")
					return nil
				})
			}
			r.close()
			if err != nil {
				return 0, fmt.Errorf("checkpoint: compose %s: part %d: %w", name, i+1, err)
			}
		}
		if etag == "" {
			return 0, fmt.Errorf("checkpoint: compose %s: part %d: no ETag in the answer", name, i+1)
		}
		done = append(done, donePart{i + 1, etag})
	}
	var body bytes.Buffer
	if err := xml.NewEncoder(&body).Encode(struct {
		XMLName xml.Name   `xml:"CompleteMultipartUpload"`
		Parts   []donePart `xml:"Part"`
	}{Parts: done}); err != nil {
		return 0, fmt.Errorf("checkpoint: compose %s: %w", name, err)
	}
	complete := &putBody{buf: body.Bytes(), size: int64(body.Len())}
	err = s.call(ctx, &s3Request{method: http.MethodPost, key: key, query: url.Values{"uploadId": {id}}, body: complete, slowAnswer: true}, func(resp *http.Response) error {
		return decodeS3Answer(resp, &struct{ ETag string }{})
	})
	var se *S3Error
	if err != nil && errors.As(err, &se) && se.Code == "NoSuchUpload" {
		// A completion retried after its answer was lost finds the
		// upload gone: the first attempt may have made the object. It
		// did if the object has the size and the ETag (S3's, of a
		// multipart object: of its parts' ETags) this upload makes.
		n, etag, herr := s.head(ctx, name)
		if want, ok := multipartETag(done); herr == nil && ok && n == size && etag == want {
			err = nil
		}
	}
	if err != nil {
		return 0, fmt.Errorf("checkpoint: compose %s: complete: %w", name, err)
	}
	completed = true
	// S3 reports the size only by a HEAD: a server that dropped or
	// doubled a part would leave an object of the wrong size.
	if n, err := s.size(ctx, name); err != nil || n != size {
		if err == nil {
			_ = s.Delete(context.WithoutCancel(ctx), name)
		}
		return 0, fmt.Errorf("checkpoint: compose %s: the object holds %d bytes, expected %d (%v)", name, n, size, err)
	}
	return copied, nil
}

// donePart is a part of a multipart upload, as its completion lists it.
type donePart struct {
	PartNumber int
	ETag       string
}

// multipartETag returns the ETag S3 gives the object a multipart upload
// of parts makes: the MD5 of the concatenated MD5s of the parts (their
// ETags), in hex, a dash and the number of parts, quoted; ok is false if
// a part's ETag is not an MD5.
func multipartETag(parts []donePart) (etag string, ok bool) {
	h := md5.New()
	for _, p := range parts {
		sum, err := hex.DecodeString(strings.Trim(p.ETag, `"`))
		if err != nil || len(sum) != md5.Size {
			return "", false
		}
		h.Write(sum)
	}
	return fmt.Sprintf(`"%x-%d"`, h.Sum(nil), len(parts)), true
}

// decodeS3Answer decodes the XML body of a 2xx answer into v. S3 may
// answer a copy or a completion with status 200 and an Error document
// (the failure came after the status was sent): that is an *S3Error,
// retried as such.
func decodeS3Answer(resp *http.Response, v any) error {
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	var probe struct {
		XMLName       xml.Name
		Code, Message string
	}
	if err := xml.Unmarshal(b, &probe); err != nil {
		return fmt.Errorf("decode the answer: %w", err)
	}
	if probe.XMLName.Local == "Error" {
		return &S3Error{Status: resp.StatusCode, Code: probe.Code, Message: probe.Message}
	}
	if err := xml.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decode the answer: %w", err)
	}
	return nil
}
