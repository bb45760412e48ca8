package checkpoint

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// S3Options configure an S3Store.
type S3Options struct {
	// Endpoint is the server's base URL, such as "https://s3.us-east-1.amazonaws.com"
	// or "http://127.0.0.1:7070". Requests use path-style addressing
	// (Endpoint/Bucket/key), which every S3-compatible server accepts.
	Endpoint string
	// Region signs requests (default "us-east-1").
	Region string
	Bucket string
	// Prefix, if set, is prepended to every object name (with a '/'
	// between), so that several stores share a bucket.
	Prefix string
	// AccessKey and SecretKey are the credentials (Signature Version 4).
	AccessKey, SecretKey string
	// Client sends the requests (default: a client with a 5-minute
	// timeout per request).
	Client *http.Client
}

// S3Store is a Store in a bucket of an S3-compatible server, spoken to
// with the standard library alone (Signature Version 4, path-style
// addressing), so that the engine's module needs no SDK. A Put is one
// PUT request (objects up to S3's 5 GiB limit), which S3 applies
// atomically; List uses ListObjectsV2.
type S3Store struct {
	o    S3Options
	base *url.URL
}

// NewS3Store returns a store in opts.Bucket at opts.Endpoint. It does not
// contact the server; EnsureBucket creates the bucket if needed.
func NewS3Store(opts S3Options) (*S3Store, error) {
	var problems []string
	u, err := url.Parse(opts.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		problems = append(problems, fmt.Sprintf("Endpoint %q is not an http(s) URL", opts.Endpoint))
	}
	if opts.Bucket == "" || strings.ContainsAny(opts.Bucket, "/?#") {
		problems = append(problems, fmt.Sprintf("Bucket %q is empty or holds '/', '?' or '#'", opts.Bucket))
	}
	if opts.Prefix != "" {
		if err := ValidName(opts.Prefix); err != nil {
			problems = append(problems, "Prefix: "+err.Error())
		}
	}
	if opts.AccessKey == "" || opts.SecretKey == "" {
		problems = append(problems, "AccessKey and SecretKey are required")
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("checkpoint: invalid S3 options: %s", strings.Join(problems, "; "))
	}
	if opts.Region == "" {
		opts.Region = "us-east-1"
	}
	if opts.Client == nil {
		opts.Client = &http.Client{Timeout: 5 * time.Minute}
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	return &S3Store{o: opts, base: u}, nil
}

func (s *S3Store) key(name string) string {
	if s.o.Prefix != "" {
		return s.o.Prefix + "/" + name
	}
	return name
}

// EnsureBucket creates the bucket unless it exists.
func (s *S3Store) EnsureBucket(ctx context.Context) error {
	resp, err := s.do(ctx, http.MethodHead, "", nil, nil, -1, nil)
	if err == nil {
		resp.Body.Close()
		return nil
	}
	resp, err = s.do(ctx, http.MethodPut, "", nil, nil, 0, nil)
	if err != nil {
		var se *S3Error
		if errors.As(err, &se) && (se.Code == "BucketAlreadyOwnedByYou" || se.Code == "BucketAlreadyExists") {
			return nil
		}
		return fmt.Errorf("checkpoint: create bucket %s: %w", s.o.Bucket, err)
	}
	resp.Body.Close()
	return nil
}

// Put implements Store.
func (s *S3Store) Put(ctx context.Context, name string, r io.Reader, size int64) error {
	if err := ValidName(name); err != nil {
		return err
	}
	// net/http may go on reading a request's body after Do returns (it
	// closes it in its own goroutine): the guard cuts r off when Put
	// returns, so the caller's reader is never read after that.
	body := &guardedReader{r: r}
	resp, err := s.do(ctx, http.MethodPut, s.key(name), nil, body, size, nil)
	sent := body.stop()
	if err != nil {
		return fmt.Errorf("checkpoint: put %s: %w", name, err)
	}
	resp.Body.Close()
	if sent != size {
		// The server took fewer bytes than announced; it cannot have
		// stored the object whole, so this does not happen with a
		// conforming server, but say so rather than trust it.
		return fmt.Errorf("checkpoint: put %s: sent %d bytes, expected %d", name, sent, size)
	}
	return nil
}

// Get implements Store.
func (s *S3Store) Get(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	// S3 clips a range past the end instead of failing; ask for the size
	// first when the range has an end.
	if off < 0 {
		return nil, fmt.Errorf("checkpoint: get %s: negative offset %d", name, off)
	}
	if length >= 0 || off > 0 {
		size, err := s.size(ctx, name)
		if err != nil {
			return nil, err
		}
		if length < 0 {
			length = size - off
		}
		if length < 0 || off+length > size {
			return nil, fmt.Errorf("checkpoint: get %s: range %d+%d outside the object's %d bytes", name, off, length, size)
		}
		if length == 0 {
			return io.NopCloser(strings.NewReader("")), nil
		}
	}
	h := http.Header{}
	if length >= 0 {
		h.Set("Range", fmt.Sprintf("bytes=%d-%d", off, off+length-1))
	}
	resp, err := s.do(ctx, http.MethodGet, s.key(name), nil, nil, -1, h)
	if err != nil {
		return nil, s.notFound(name, "get", err)
	}
	if length >= 0 && resp.ContentLength >= 0 && resp.ContentLength != length {
		resp.Body.Close()
		return nil, fmt.Errorf("checkpoint: get %s: the server sent %d bytes for a range of %d", name, resp.ContentLength, length)
	}
	return resp.Body, nil
}

func (s *S3Store) size(ctx context.Context, name string) (int64, error) {
	resp, err := s.do(ctx, http.MethodHead, s.key(name), nil, nil, -1, nil)
	if err != nil {
		return 0, s.notFound(name, "get", err)
	}
	resp.Body.Close()
	n, err := strconv.ParseInt(resp.Header.Get("Content-Length"), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("checkpoint: get %s: no size in the server's answer", name)
	}
	return n, nil
}

func (s *S3Store) notFound(name, op string, err error) error {
	var se *S3Error
	if errors.As(err, &se) && (se.Status == http.StatusNotFound || se.Code == "NoSuchKey") {
		return fmt.Errorf("%w: %s", ErrNotExist, name)
	}
	return fmt.Errorf("checkpoint: %s %s: %w", op, name, err)
}

// List implements Store.
func (s *S3Store) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	var out []ObjectInfo
	token := ""
	strip := s.key("")
	for {
		q := url.Values{"list-type": {"2"}, "prefix": {s.key(prefix)}}
		if token != "" {
			q.Set("continuation-token", token)
		}
		resp, err := s.do(ctx, http.MethodGet, "", q, nil, -1, nil)
		if err != nil {
			return nil, fmt.Errorf("checkpoint: list %q: %w", prefix, err)
		}
		var res struct {
			Contents []struct {
				Key  string
				Size int64
			}
			IsTruncated           bool
			NextContinuationToken string
		}
		err = xml.NewDecoder(resp.Body).Decode(&res)
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("checkpoint: list %q: decode the answer: %w", prefix, err)
		}
		for _, c := range res.Contents {
			name, ok := strings.CutPrefix(c.Key, strip)
			if ok && ValidName(name) == nil {
				out = append(out, ObjectInfo{Name: name, Size: c.Size})
			}
		}
		if !res.IsTruncated || res.NextContinuationToken == "" {
			break
		}
		token = res.NextContinuationToken
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Delete implements Store.
func (s *S3Store) Delete(ctx context.Context, name string) error {
	if err := ValidName(name); err != nil {
		return err
	}
	resp, err := s.do(ctx, http.MethodDelete, s.key(name), nil, nil, -1, nil)
	if err != nil {
		var se *S3Error
		if errors.As(err, &se) && (se.Status == http.StatusNotFound || se.Code == "NoSuchKey") {
			return nil
		}
		return fmt.Errorf("checkpoint: delete %s: %w", name, err)
	}
	resp.Body.Close()
	return nil
}

// S3Error is an error answer of the server.
type S3Error struct {
	Status  int
	Code    string
	Message string
}

func (e *S3Error) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("S3 status %d", e.Status)
	}
	return fmt.Sprintf("S3 status %d: %s: %s", e.Status, e.Code, e.Message)
}

// do sends a signed request for key ("" for the bucket itself) and returns
// the response of a 2xx status; any other status is an *S3Error. body is
// sent with Content-Length size (size < 0: no body).
func (s *S3Store) do(ctx context.Context, method, key string, q url.Values, body io.Reader, size int64, h http.Header) (*http.Response, error) {
	u := *s.base
	u.Path = u.Path + "/" + s.o.Bucket
	if key != "" {
		u.Path += "/" + key
	}
	u.RawPath = s.base.EscapedPath() + "/" + uriEncode(s.o.Bucket, false)
	if key != "" {
		u.RawPath += "/" + uriEncode(key, false)
	}
	u.RawQuery = canonicalQuery(q)
	var rb io.Reader
	if size >= 0 {
		rb = body
		if rb == nil {
			rb = strings.NewReader("")
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rb)
	if err != nil {
		return nil, err
	}
	if size >= 0 {
		req.ContentLength = size
		if size == 0 {
			req.Body = http.NoBody
		}
	}
	for k, v := range h {
		req.Header[k] = v
	}
	s.sign(req, u.RawPath, time.Now().UTC())
	resp, err := s.o.Client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	se := &S3Error{Status: resp.StatusCode}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var x struct{ Code, Message string }
	if xml.Unmarshal(b, &x) == nil {
		se.Code, se.Message = x.Code, x.Message
	}
	return nil, se
}

// sign adds Signature Version 4 headers to req. The payload is not
// hashed (UNSIGNED-PAYLOAD): bodies are streamed, and every object's
// integrity is checked by its XXH64 on restore.
func (s *S3Store) sign(req *http.Request, escapedPath string, now time.Time) {
	const payload = "UNSIGNED-PAYLOAD"
	amzDate := now.Format("20060102T150405Z")
	day := now.Format("20060102")
	req.Header.Set("X-Amz-Date", amzDate)
	req.Header.Set("X-Amz-Content-Sha256", payload)
	host := req.URL.Host
	signed := []string{"host"}
	for name := range req.Header {
		// Every x-amz-* header is signed, as S3 requires.
		if l := strings.ToLower(name); strings.HasPrefix(l, "x-amz-") || l == "range" {
			signed = append(signed, l)
		}
	}
	sort.Strings(signed)
	var ch strings.Builder
	for _, name := range signed {
		v := host
		if name != "host" {
			v = strings.TrimSpace(req.Header.Get(name))
		}
		ch.WriteString(name + ":" + v + "\n")
	}
	canonical := strings.Join([]string{req.Method, escapedPath, req.URL.RawQuery, ch.String(), strings.Join(signed, ";"), payload}, "\n")
	scope := day + "/" + s.o.Region + "/s3/aws4_request"
	sum := sha256.Sum256([]byte(canonical))
	toSign := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(sum[:])
	key := hmacSHA256([]byte("AWS4"+s.o.SecretKey), day)
	key = hmacSHA256(key, s.o.Region)
	key = hmacSHA256(key, "s3")
	key = hmacSHA256(key, "aws4_request")
	sig := hex.EncodeToString(hmacSHA256(key, toSign))
	req.Header.Set("Authorization", fmt.Sprintf("AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s",
		s.o.AccessKey, scope, strings.Join(signed, ";"), sig))
}

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}

// uriEncode percent-encodes s as Signature Version 4 asks: every byte but
// the unreserved ones (A-Z a-z 0-9 - _ . ~), and '/' too unless encodeSlash
// is false (paths keep it; query strings encode it).
func uriEncode(s string, encodeSlash bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_', c == '.', c == '~':
			b.WriteByte(c)
		case c == '/' && !encodeSlash:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// canonicalQuery encodes q sorted by key, as both the URL and the
// signature use it.
func canonicalQuery(q url.Values) string {
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		vs := append([]string(nil), q[k]...)
		sort.Strings(vs)
		for _, v := range vs {
			parts = append(parts, uriEncode(k, true)+"="+uriEncode(v, true))
		}
	}
	return strings.Join(parts, "&")
}

// guardedReader counts what is read through it, and after stop reads
// nothing more.
type guardedReader struct {
	mu      sync.Mutex
	r       io.Reader
	n       int64
	stopped bool
}

func (g *guardedReader) Read(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return 0, io.ErrClosedPipe
	}
	n, err := g.r.Read(p)
	g.n += int64(n)
	return n, err
}

// stop waits for a Read in progress, cuts the reader off, and returns the
// bytes read.
func (g *guardedReader) stop() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stopped = true
	return g.n
}
