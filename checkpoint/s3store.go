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
	// Client sends the requests (default: a client of the store's own,
	// with no overall timeout, RequestTimeout bounding each attempt
	// instead, which keeps up to 100 idle connections to the server). A
	// Client's own Timeout, if set, bounds each attempt too, the reading
	// of its body included.
	Client *http.Client

	// MaxAttempts is how many times a request is tried before its
	// failure is returned (default 3, as in the AWS SDKs' standard retry
	// mode; 1: never retried). Only transient failures are retried: HTTP
	// 500, 502, 503, 504, 429 and 408, S3's SlowDown and RequestTimeout,
	// and failures of the connection, a request that makes no progress
	// for RequestTimeout included; never another 4xx, and never once the
	// caller's context is done. A GET whose body fails part way goes on
	// with a ranged GET of the rest, within the same MaxAttempts. A
	// transient failure given up on matches ErrTransient.
	MaxAttempts int
	// RequestTimeout is how long an attempt may go without progress
	// before it is abandoned, and retried (default 30 s): the answer's
	// headers must come within it of the request's last byte being
	// handed to the connection (a PUT's body may take as long as it
	// takes, but may not stall for longer), and a Read of a GET's body
	// that waits longer than it for a byte fails. Time between the
	// caller's Reads is not counted.
	RequestTimeout time.Duration
	// RetryBaseDelay and RetryMaxDelay shape the backoff: before retry n
	// the store waits a uniformly random time in
	// [0, min(RetryMaxDelay, RetryBaseDelay × 2^(n-1))), the "full
	// jitter" of the AWS SDKs (defaults 1 s and 20 s, the SDKs'
	// standard mode).
	RetryBaseDelay, RetryMaxDelay time.Duration
	// RetryBufferSize decides how a Put's body is sent again after a
	// failed attempt (bytes, default 8 MiB). A reader that implements
	// io.Seeker (strings.Reader, bytes.Reader, *os.File,
	// io.SectionReader) is sought back to where the Put found it: wrap a
	// bare io.ReaderAt in an io.SectionReader to get this. A reader that
	// cannot seek is read into memory before the first attempt if its
	// size is at most RetryBufferSize; a larger one is streamed, and its
	// Put is retried only if the failed attempt read none of it.
	// Negative: never buffer.
	RetryBufferSize int64
}

// S3Store is a Store in a bucket of an S3-compatible server, spoken to
// with the standard library alone (Signature Version 4, path-style
// addressing), so that the engine's module needs no SDK. A Put is one
// PUT request (objects up to S3's 5 GiB limit), which S3 applies
// atomically; List uses ListObjectsV2. Transient failures are retried
// as S3Options say; Stats counts the retries.
type S3Store struct {
	o       S3Options
	base    *url.URL
	retrier s3Retrier
	stats   s3Counters
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
	if opts.MaxAttempts < 0 {
		problems = append(problems, fmt.Sprintf("MaxAttempts %d is negative (1: no retries)", opts.MaxAttempts))
	}
	if opts.RequestTimeout < 0 || opts.RetryBaseDelay < 0 || opts.RetryMaxDelay < 0 {
		problems = append(problems, fmt.Sprintf("RequestTimeout (%v), RetryBaseDelay (%v) and RetryMaxDelay (%v) must not be negative",
			opts.RequestTimeout, opts.RetryBaseDelay, opts.RetryMaxDelay))
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("checkpoint: invalid S3 options: %s", strings.Join(problems, "; "))
	}
	if opts.Region == "" {
		opts.Region = "us-east-1"
	}
	if opts.Client == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		// Reads of shared files run in parallel, and an open from the
		// store writes up to 128 reference markers at once: keep their
		// connections (net/http keeps 2 per host unless told).
		t.MaxIdleConnsPerHost = 256
		opts.Client = &http.Client{Transport: t}
	}
	if opts.MaxAttempts == 0 {
		opts.MaxAttempts = defaultS3MaxAttempts
	}
	if opts.RequestTimeout == 0 {
		opts.RequestTimeout = defaultS3RequestTimeout
	}
	if opts.RetryBaseDelay == 0 {
		opts.RetryBaseDelay = defaultS3RetryBaseDelay
	}
	if opts.RetryMaxDelay == 0 {
		opts.RetryMaxDelay = defaultS3RetryMaxDelay
	}
	if opts.RetryBufferSize == 0 {
		opts.RetryBufferSize = defaultS3RetryBufferSize
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	s := &S3Store{o: opts, base: u}
	s.retrier = newS3Retrier(&s.o)
	return s, nil
}

func (s *S3Store) key(name string) string {
	if s.o.Prefix != "" {
		return s.o.Prefix + "/" + name
	}
	return name
}

// EnsureBucket creates the bucket unless it exists.
func (s *S3Store) EnsureBucket(ctx context.Context) error {
	if s.call(ctx, &s3Request{method: http.MethodHead}, nil) == nil {
		return nil
	}
	err := s.call(ctx, &s3Request{method: http.MethodPut, body: emptyBody}, nil)
	if err != nil {
		var se *S3Error
		if errors.As(err, &se) && (se.Code == "BucketAlreadyOwnedByYou" || se.Code == "BucketAlreadyExists") {
			return nil
		}
		return fmt.Errorf("checkpoint: create bucket %s: %w", s.o.Bucket, err)
	}
	return nil
}

// Put implements Store. The body is read again for a retry as
// S3Options.RetryBufferSize says.
func (s *S3Store) Put(ctx context.Context, name string, r io.Reader, size int64) error {
	if err := ValidName(name); err != nil {
		return err
	}
	body, err := newPutBody(r, size, s.o.RetryBufferSize)
	if err != nil {
		return fmt.Errorf("checkpoint: put %s: %w", name, err)
	}
	if err := s.call(ctx, &s3Request{method: http.MethodPut, key: s.key(name), body: body}, nil); err != nil {
		return fmt.Errorf("checkpoint: put %s: %w", name, err)
	}
	return nil
}

// Get implements Store. The reader checks that the server sends exactly
// the bytes asked for, and resumes a body that fails part way with a
// ranged GET of the rest (S3Options.MaxAttempts); should the object be
// replaced meanwhile, the read fails rather than mix two versions.
func (s *S3Store) Get(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	// S3 clips a range past the end instead of failing; ask for the size
	// first when the range has an end.
	if off < 0 {
		return nil, fmt.Errorf("checkpoint: get %s: negative offset %d", name, off)
	}
	end, size := int64(-1), int64(-1)
	if length >= 0 || off > 0 {
		var err error
		if size, err = s.size(ctx, name); err != nil {
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
		end = off + length
	}
	r := &s3Reader{s: s, ctx: ctx, name: name, off: off, pos: off, end: end, size: size}
	if err := r.open(); err != nil {
		return nil, s.notFound(name, "get", err)
	}
	return r, nil
}

func (s *S3Store) size(ctx context.Context, name string) (int64, error) {
	n, _, err := s.head(ctx, name)
	return n, err
}

// head returns the size and the ETag of object name.
func (s *S3Store) head(ctx context.Context, name string) (int64, string, error) {
	var n int64
	var etag string
	err := s.call(ctx, &s3Request{method: http.MethodHead, key: s.key(name)}, func(resp *http.Response) error {
		var err error
		if n, err = strconv.ParseInt(resp.Header.Get("Content-Length"), 10, 64); err != nil {
			return fmt.Errorf("no size in the server's answer")
		}
		etag = resp.Header.Get("ETag")
		return nil
	})
	if err != nil {
		return 0, "", s.notFound(name, "get", err)
	}
	return n, etag, nil
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
		var res struct {
			Contents []struct {
				Key  string
				Size int64
			}
			IsTruncated           bool
			NextContinuationToken string
		}
		err := s.call(ctx, &s3Request{method: http.MethodGet, query: q}, func(resp *http.Response) error {
			// Decoded inside the attempt, so that a body cut short is
			// retried as the request would be.
			res.Contents = res.Contents[:0]
			if err := xml.NewDecoder(resp.Body).Decode(&res); err != nil {
				return fmt.Errorf("decode the answer: %w", err)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("checkpoint: list %q: %w", prefix, err)
		}
		for _, c := range res.Contents {
			name, ok := strings.CutPrefix(c.Key, strip)
			if ok && ValidName(name) == nil {
				out = append(out, ObjectInfo{Name: name, Size: c.Size})
			}
		}
		if !res.IsTruncated {
			break
		}
		if res.NextContinuationToken == "" {
			// Keys follow that no request can reach: the list would be
			// returned short, as if complete.
			return nil, fmt.Errorf("checkpoint: list %q: the answer is truncated but gives no continuation token", prefix)
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
	err := s.call(ctx, &s3Request{method: http.MethodDelete, key: s.key(name)}, nil)
	if err != nil {
		var se *S3Error
		if errors.As(err, &se) && (se.Status == http.StatusNotFound || se.Code == "NoSuchKey") {
			return nil
		}
		return fmt.Errorf("checkpoint: delete %s: %w", name, err)
	}
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

// s3Request is a request as the retry loop sends it, once per attempt.
type s3Request struct {
	method string
	key    string // "" for the bucket itself
	query  url.Values
	header http.Header
	// body is sent with the request (nil: none, and no Content-Length
	// either; emptyBody: an empty one).
	body *putBody
	// slowAnswer: the answer's body may wait on work of the server after
	// its headers (a copied part, a completed upload: S3 then sends its
	// status first, and the outcome later in the body), so its Reads
	// are not held to RequestTimeout.
	slowAnswer bool
}

// emptyBody is the body of a PUT or POST that sends nothing.
var emptyBody = &putBody{buf: []byte{}}

// call sends rq, retrying as the policy allows, and hands the answer of a
// 2xx status to handle (nil: the answer is dropped). handle runs inside
// the attempt, so that a failure of the answer's body (a reset, a stall)
// is retried as the request would be.
func (s *S3Store) call(ctx context.Context, rq *s3Request, handle func(*http.Response) error) error {
	var rewind func() error
	if rq.body != nil {
		rewind = rq.body.rewind
	}
	for tries := 1; ; tries++ {
		err := s.try(ctx, rq, handle)
		if err == nil {
			return nil
		}
		if err := s.retry(ctx, tries, err, rewind); err != nil {
			return err
		}
	}
}

func (s *S3Store) try(ctx context.Context, rq *s3Request, handle func(*http.Response) error) error {
	resp, err := s.send(ctx, rq)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if handle != nil {
		if err := handle(resp); err != nil {
			return err
		}
	}
	// Read what is left of a short answer, so that the connection can
	// carry another request.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	return nil
}

// send makes one attempt of rq and returns the response of a 2xx status,
// whose body the caller must close; any other status is an *S3Error.
func (s *S3Store) send(ctx context.Context, rq *s3Request) (*http.Response, error) {
	u := *s.base
	u.Path = u.Path + "/" + s.o.Bucket
	if rq.key != "" {
		u.Path += "/" + rq.key
	}
	u.RawPath = s.base.EscapedPath() + "/" + uriEncode(s.o.Bucket, false)
	if rq.key != "" {
		u.RawPath += "/" + uriEncode(rq.key, false)
	}
	u.RawQuery = canonicalQuery(rq.query)
	actx, cancel := context.WithCancel(ctx)
	req, err := http.NewRequestWithContext(actx, rq.method, u.String(), nil)
	if err != nil {
		cancel()
		return nil, err
	}
	a := &attempt{cancel: cancel}
	var guard *guardedReader
	if rq.body != nil {
		req.ContentLength = rq.body.size
		req.Body = http.NoBody
		if rq.body.size > 0 {
			guard = &guardedReader{r: rq.body.reader(), size: rq.body.size, read: &rq.body.read}
			req.Body = io.NopCloser(guard)
		}
	}
	for k, v := range rq.header {
		req.Header[k] = v
	}
	s.sign(req, u.RawPath, time.Now().UTC())
	s.stats.requests.Add(1)
	// The watchdog runs from here to the answer's headers, restarted by
	// every piece of the body the connection takes.
	a.w = newWatchdog(s.o.RequestTimeout, cancel)
	if guard != nil {
		guard.progress = a.w.kick
	}
	resp, err := s.o.Client.Do(req)
	var sent int64
	var bodyErr error
	if guard != nil {
		// net/http may go on reading a request's body after Do returns
		// (it closes it in its own goroutine): the guard cuts the body
		// off now, so the caller's reader is never read after the
		// attempt (and a retry may seek it), nor the watchdog restarted.
		sent, bodyErr = guard.stop()
	}
	a.w.pause()
	if err != nil {
		a.end()
		if bodyErr != nil {
			return nil, bodyErr
		}
		return nil, a.w.explain(err)
	}
	if resp.StatusCode/100 == 2 {
		if guard != nil && sent != rq.body.size {
			// The server took fewer bytes than announced; it cannot have
			// stored the object whole, so this does not happen with a
			// conforming server, but say so rather than trust it.
			resp.Body.Close()
			a.end()
			return nil, fmt.Errorf("sent %d bytes, expected %d", sent, rq.body.size)
		}
		resp.Body = &watchedBody{rc: resp.Body, a: a, untimed: rq.slowAnswer}
		return resp, nil
	}
	se := &S3Error{Status: resp.StatusCode}
	a.w.kick()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	a.end()
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

// guardedReader is a request's body: it counts what is read through it,
// tells the attempt's watchdog of each read, keeps the reader's own
// failure apart from the connection's, and after stop reads nothing more.
type guardedReader struct {
	mu       sync.Mutex
	r        io.Reader
	size     int64
	n        int64
	err      error // a failure of r, or r ending before size bytes
	stopped  bool
	progress func()
	read     *bool // set once anything was read from r
}

func (g *guardedReader) Read(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return 0, io.ErrClosedPipe
	}
	if g.progress != nil {
		g.progress()
	}
	n, err := g.r.Read(p)
	g.n += int64(n)
	if n > 0 {
		*g.read = true
	}
	switch {
	case err == io.EOF && g.n < g.size:
		g.err = &callerReadError{fmt.Errorf("the body has %d bytes, expected %d", g.n, g.size)}
	case err != nil && err != io.EOF:
		g.err = &callerReadError{err}
	}
	return n, err
}

// stop waits for a Read in progress, cuts the reader off, and returns the
// bytes read and the reader's failure, if any.
func (g *guardedReader) stop() (int64, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stopped = true
	return g.n, g.err
}
