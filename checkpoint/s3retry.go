package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// The S3 store's retry policy. Its defaults are those of the AWS SDKs'
// "standard" retry mode, so that the store asks no more of a server than
// the SDKs do:
//
//   - 3 attempts in all (aws-sdk-go-v2 aws/retry: DefaultMaxAttempts = 3;
//     the SDKs and Tools Reference Guide, "Retry behavior": standard mode
//     "makes three attempts");
//   - before retry n, a wait drawn uniformly from
//     [0, min(cap, base × 2^(n-1))) ("full jitter"), with base 1 s and cap
//     20 s (AWS SDK for Java 2.x StandardRetryStrategy: exponentialDelay
//     with a base delay of 1 second and a max delay of 20 seconds;
//     aws-sdk-go-v2: DefaultMaxBackoff = 20 s).
//
// What is retried is what the standard mode retries: HTTP 500, 502, 503,
// 504 and 429, the error codes of throttling (SlowDown) and of a server's
// timeout (RequestTimeout, also HTTP 408), and failures of the connection:
// a reset, a refused dial, an EOF before the answer, a timeout. The
// standard mode's retry quota (a token bucket shared by a client's
// requests, which stops retrying once most retries fail) is not built:
// during an outage every operation still makes its MaxAttempts tries,
// with the backoff between them, before it fails.
const (
	defaultS3MaxAttempts    = 3
	defaultS3RetryBaseDelay = time.Second
	defaultS3RetryMaxDelay  = 20 * time.Second
	// A request that makes no progress for 30 s is stuck, not slow: a
	// healthy server answers a GET's headers in well under a second and
	// then sends its body steadily. 30 s still leaves room for the
	// server-side work some answers wait on (an overloaded server, a
	// completion of a large multipart upload).
	defaultS3RequestTimeout = 30 * time.Second
	// Bodies up to 8 MiB that cannot be sought back are held in memory
	// so that a failed PUT can be repeated (the Uploader's smaller
	// objects, the parts of a composition read back from the store);
	// larger ones are streamed.
	defaultS3RetryBufferSize = 8 << 20
)

// ErrTransient matches (errors.Is) an error of the S3 store that may pass
// if the operation is tried again later: the server was throttling or
// unavailable, a connection failed, a request stalled, and retrying within
// S3Options.MaxAttempts did not get through (or the body of a Put could
// not be read again). The error also wraps the last failure, such as an
// *S3Error.
var ErrTransient = errors.New("checkpoint: transient store failure")

// retryCause is why a failed attempt may be retried; causeNone: it may not.
type retryCause int

const (
	causeNone retryCause = iota
	causeThrottled
	causeServer
	causeConnection
	causeTimeout
	causeShortBody
	numCauses
)

// S3Stats counts the requests of an S3Store and its retries by cause, for
// operators and benchmarks (S3Store.Stats).
type S3Stats struct {
	// Requests is the number of HTTP requests sent, retries included.
	Requests int64
	// Retries by cause: the server was throttling (429, 503 SlowDown);
	// it failed (500, 502, 503, 504); the connection failed (reset,
	// refused, closed before the answer); nothing moved for
	// RequestTimeout (or the server timed out waiting: 408,
	// RequestTimeout); a GET's body ended before its range did.
	RetriedThrottled, RetriedServer, RetriedConnection, RetriedTimeout, RetriedShortBody int64
	// Resumed counts the GETs that picked up a body where a failed one
	// stopped (a ranged GET of the rest), included in the retries above.
	Resumed int64
	// GaveUp counts operations that failed with ErrTransient.
	GaveUp int64
}

// Retries is the number of retries, all causes together.
func (st S3Stats) Retries() int64 {
	return st.RetriedThrottled + st.RetriedServer + st.RetriedConnection + st.RetriedTimeout + st.RetriedShortBody
}

func (st S3Stats) String() string {
	return fmt.Sprintf("%d requests, %d retries (throttled %d, server %d, connection %d, timeout %d, short body %d), %d GETs resumed, %d gave up",
		st.Requests, st.Retries(), st.RetriedThrottled, st.RetriedServer, st.RetriedConnection, st.RetriedTimeout, st.RetriedShortBody, st.Resumed, st.GaveUp)
}

type s3Counters struct {
	requests atomic.Int64
	retried  [numCauses]atomic.Int64
	resumed  atomic.Int64
	gaveUp   atomic.Int64
}

// Stats returns the store's counts since NewS3Store.
func (s *S3Store) Stats() S3Stats {
	c := &s.stats
	return S3Stats{
		Requests:          c.requests.Load(),
		RetriedThrottled:  c.retried[causeThrottled].Load(),
		RetriedServer:     c.retried[causeServer].Load(),
		RetriedConnection: c.retried[causeConnection].Load(),
		RetriedTimeout:    c.retried[causeTimeout].Load(),
		RetriedShortBody:  c.retried[causeShortBody].Load(),
		Resumed:           c.resumed.Load(),
		GaveUp:            c.gaveUp.Load(),
	}
}

// backoffDelay returns the wait before retry n (1 for the first retry)
// for a uniform random r in [0, 1): r × min(max, base × 2^(n-1)).
func backoffDelay(base, max time.Duration, n int, r float64) time.Duration {
	d := max
	if n >= 1 && n < 63 {
		if b := base << (n - 1); b > 0 && b>>(n-1) == base && b < max {
			d = b
		}
	}
	return time.Duration(r * float64(d))
}

// sleepCtx waits d, or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// s3Retrier carries the policy's parameters and its randomness, which a
// test replaces.
type s3Retrier struct {
	maxAttempts int
	base, max   time.Duration
	rand        func() float64                                   // uniform in [0, 1)
	sleep       func(ctx context.Context, d time.Duration) error // waits d unless ctx ends first
}

func newS3Retrier(o *S3Options) s3Retrier {
	return s3Retrier{maxAttempts: o.MaxAttempts, base: o.RetryBaseDelay, max: o.RetryMaxDelay, rand: rand.Float64, sleep: sleepCtx}
}

// retry decides the fate of the tries-th attempt of an operation, which
// failed with err: it returns nil once the backoff has passed and another
// attempt may start, or the error to return. It never retries once ctx
// is done, nor an error the policy does not name. rewind, if not nil,
// readies the request's body for another attempt, or says why it cannot.
func (s *S3Store) retry(ctx context.Context, tries int, err error, rewind func() error) error {
	if ctx.Err() != nil {
		return ctxError(ctx, err)
	}
	cause := classify(err)
	if cause == causeNone {
		return err
	}
	if tries >= s.retrier.maxAttempts {
		s.stats.gaveUp.Add(1)
		return &transientError{err: err, why: fmt.Sprintf("gave up after %d attempts", tries)}
	}
	if rewind != nil {
		if rerr := rewind(); rerr != nil {
			s.stats.gaveUp.Add(1)
			return &transientError{err: err, why: "not retried: " + rerr.Error()}
		}
	}
	s.stats.retried[cause].Add(1)
	d := backoffDelay(s.retrier.base, s.retrier.max, tries, s.retrier.rand())
	if serr := s.retrier.sleep(ctx, d); serr != nil {
		return ctxError(ctx, err)
	}
	return nil
}

// ctxError is the error of an operation whose ctx ended: it matches the
// ctx's error, and says what failed last.
func ctxError(ctx context.Context, err error) error {
	if errors.Is(err, ctx.Err()) {
		return err
	}
	return fmt.Errorf("%w (after: %v)", ctx.Err(), err)
}

// transientError is a transient failure the store stopped retrying.
type transientError struct {
	err error
	why string
}

func (e *transientError) Error() string   { return fmt.Sprintf("%v (%s)", e.err, e.why) }
func (e *transientError) Unwrap() []error { return []error{ErrTransient, e.err} }

// stallError is the failure of an attempt that made no progress for
// RequestTimeout.
type stallError struct{ d time.Duration }

func (e *stallError) Error() string {
	return fmt.Sprintf("no progress for %v (S3Options.RequestTimeout)", e.d)
}

// shortBodyError is a GET body that ended before its range did.
type shortBodyError struct{ at, off, end int64 }

func (e *shortBodyError) Error() string {
	if e.end < 0 {
		return fmt.Sprintf("the body from byte %d to the object's end ended early, at byte %d", e.off, e.at)
	}
	return fmt.Sprintf("the body of bytes [%d, %d) ended early, at byte %d", e.off, e.end, e.at)
}

func (e *shortBodyError) Unwrap() error { return io.ErrUnexpectedEOF }

// callerReadError is a failure of the reader a Put's body comes from:
// the caller's, never retried.
type callerReadError struct{ err error }

func (e *callerReadError) Error() string { return "reading the body: " + e.err.Error() }
func (e *callerReadError) Unwrap() error { return e.err }

// S3 error codes that are retried whatever the status they come with (S3
// can send an Error document with status 200 after a copy or a
// completion has begun).
var (
	s3ThrottleCodes = map[string]bool{"SlowDown": true, "Throttling": true, "ThrottlingException": true, "RequestThrottled": true, "TooManyRequests": true, "TooManyRequestsException": true, "RequestLimitExceeded": true, "BandwidthLimitExceeded": true}
	s3ServerCodes   = map[string]bool{"InternalError": true, "ServiceUnavailable": true}
	s3TimeoutCodes  = map[string]bool{"RequestTimeout": true, "RequestTimeoutException": true}
)

// classify says why err may be retried, or causeNone.
func classify(err error) retryCause {
	var se *S3Error
	if errors.As(err, &se) {
		switch {
		case s3ThrottleCodes[se.Code] || se.Status == http.StatusTooManyRequests:
			return causeThrottled
		case s3TimeoutCodes[se.Code] || se.Status == http.StatusRequestTimeout:
			return causeTimeout
		case s3ServerCodes[se.Code]:
			return causeServer
		}
		switch se.Status {
		case http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return causeServer
		}
		return causeNone
	}
	var ce *callerReadError
	if errors.As(err, &ce) {
		return causeNone
	}
	var stall *stallError
	if errors.As(err, &stall) {
		return causeTimeout
	}
	var short *shortBodyError
	if errors.As(err, &short) {
		return causeShortBody
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		// The caller's context (an attempt's own ends as a stallError).
		return causeNone
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		if dns.IsNotFound {
			return causeNone
		}
		return causeConnection
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return causeTimeout
	}
	var op *net.OpError
	switch {
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, syscall.EPIPE), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return causeConnection
	case errors.As(err, &op) && op.Op == "dial":
		return causeConnection
	case errors.Is(err, net.ErrClosed):
		// A connection the server closed (its idle timeout) as the
		// request was sent on it: net/http reports "use of closed
		// network connection" for a request with a body.
		return causeConnection
	case strings.Contains(err.Error(), "connection reset"), strings.Contains(err.Error(), "server closed idle connection"):
		// As the SDKs do: some layers (TLS, HTTP/2) report a reset
		// only in words.
		return causeConnection
	}
	return causeNone
}

// watchdog cancels an attempt that makes no progress for d: it runs
// while the attempt waits on the server (sending the request, awaiting
// the answer, inside a Read of the body) and restarts at each sign of
// progress; between the caller's Reads it is paused, so a slow reader is
// not taken for a stalled server.
type watchdog struct {
	d     time.Duration
	t     *time.Timer
	fired atomic.Bool
}

func newWatchdog(d time.Duration, cancel context.CancelFunc) *watchdog {
	w := &watchdog{d: d}
	w.t = time.AfterFunc(d, func() {
		w.fired.Store(true)
		cancel()
	})
	return w
}

// kick restarts the clock: something moved, or the attempt waits again.
func (w *watchdog) kick() { w.t.Reset(w.d) }

// pause stops the clock until the next kick.
func (w *watchdog) pause() { w.t.Stop() }

// explain replaces the error of an attempt the watchdog cut off.
func (w *watchdog) explain(err error) error {
	if err != nil && w.fired.Load() {
		return &stallError{w.d}
	}
	return err
}

// attempt is one request in flight: its context, cancelled when it ends
// or stalls, and its watchdog.
type attempt struct {
	cancel context.CancelFunc
	w      *watchdog
}

func (a *attempt) end() {
	a.w.pause()
	a.cancel()
}

// watchedBody is a response body read under the attempt's watchdog; Close
// ends the attempt.
type watchedBody struct {
	rc      io.ReadCloser
	a       *attempt
	untimed bool // the server may think between bytes (see s3Request.slowAnswer)
}

func (b *watchedBody) Read(p []byte) (int, error) {
	if !b.untimed {
		b.a.w.kick()
		defer b.a.w.pause()
	}
	n, err := b.rc.Read(p)
	if err != nil && err != io.EOF {
		err = b.a.w.explain(err)
	}
	return n, err
}

func (b *watchedBody) Close() error {
	err := b.rc.Close()
	b.a.end()
	return err
}

// putBody is the body of a request, which an attempt after a failed one
// must send again from its start: a reader that can seek is sought back;
// a small one that cannot is read into memory first (up to
// S3Options.RetryBufferSize); a large one that cannot is sent again only
// if no attempt has read any of it.
type putBody struct {
	r      io.Reader
	size   int64
	seeker io.Seeker // non-nil: sought back to start before each retry
	start  int64
	buf    []byte // non-nil: the whole body, read before the first attempt
	read   bool   // some attempt has read from r (neither sought nor buffered)
}

func newPutBody(r io.Reader, size, bufferLimit int64) (*putBody, error) {
	b := &putBody{r: r, size: size}
	if sk, ok := r.(io.Seeker); ok {
		if pos, err := sk.Seek(0, io.SeekCurrent); err == nil {
			b.seeker, b.start = sk, pos
			return b, nil
		}
	}
	if size <= bufferLimit {
		b.buf = make([]byte, size)
		if n, err := io.ReadFull(r, b.buf); err != nil {
			if err == io.ErrUnexpectedEOF || err == io.EOF {
				return nil, fmt.Errorf("the body has %d bytes, expected %d", n, size)
			}
			return nil, &callerReadError{err}
		}
	}
	return b, nil
}

// reader returns the reader of an attempt.
func (b *putBody) reader() io.Reader {
	if b.buf != nil {
		return bytes.NewReader(b.buf)
	}
	return b.r
}

// rewind readies the body for another attempt, or says why it cannot be.
func (b *putBody) rewind() error {
	switch {
	case b.buf != nil:
		return nil
	case b.seeker != nil:
		if _, err := b.seeker.Seek(b.start, io.SeekStart); err != nil {
			return fmt.Errorf("the body cannot be read again: %w", err)
		}
		return nil
	case b.read:
		return fmt.Errorf("the body (%d bytes, more than S3Options.RetryBufferSize) was read and its reader cannot seek", b.size)
	}
	return nil
}
