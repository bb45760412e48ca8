package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestS3Backoff: the wait before each retry, as a table. The wait is
// r × min(max, base × 2^(n-1)) for the random r in [0, 1).
func TestS3Backoff(t *testing.T) {
	const ms = time.Millisecond
	for _, c := range []struct {
		base, max time.Duration
		n         int
		r         float64
		want      time.Duration
	}{
		// The defaults (1 s, 20 s): the ceiling doubles up to the cap.
		{time.Second, 20 * time.Second, 1, 0.5, 500 * ms},
		{time.Second, 20 * time.Second, 2, 0.5, time.Second},
		{time.Second, 20 * time.Second, 3, 0.5, 2 * time.Second},
		{time.Second, 20 * time.Second, 5, 0.5, 8 * time.Second},
		{time.Second, 20 * time.Second, 6, 0.5, 10 * time.Second}, // 32 s capped at 20 s
		{time.Second, 20 * time.Second, 1000, 0.5, 10 * time.Second},
		// Full jitter: anything from 0 to just under the ceiling.
		{100 * ms, time.Second, 1, 0, 0},
		{100 * ms, time.Second, 1, 0.999, 99900 * time.Microsecond},
		{100 * ms, time.Second, 4, 0.25, 200 * ms}, // 800 ms
		{100 * ms, time.Second, 5, 0.25, 250 * ms}, // 1.6 s capped at 1 s
		// No overflow far past the cap.
		{time.Hour, 2 * time.Hour, 62, 1, 2 * time.Hour},
		{time.Hour, 2 * time.Hour, 63, 1, 2 * time.Hour},
	} {
		got := backoffDelay(c.base, c.max, c.n, c.r)
		require.Equal(t, c.want, got, "base %v max %v retry %d r %v", c.base, c.max, c.n, c.r)
	}
}

// TestS3RetrySchedule drives the retry loop with an injected random
// source and sleep against a server that always throttles: the store
// tries MaxAttempts times, waits what the schedule says between, and
// gives up with an error that says so.
func TestS3RetrySchedule(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, "<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>")
	}))
	defer srv.Close()
	s, err := NewS3Store(S3Options{Endpoint: srv.URL, Bucket: "b", AccessKey: "a", SecretKey: "s",
		MaxAttempts: 4, RetryBaseDelay: 100 * time.Millisecond, RetryMaxDelay: 250 * time.Millisecond})
	require.NoError(t, err)
	randoms := []float64{0.5, 0.25, 0.9}
	var slept []time.Duration
	s.retrier.rand = func() float64 {
		r := randoms[0]
		randoms = randoms[1:]
		return r
	}
	s.retrier.sleep = func(ctx context.Context, d time.Duration) error {
		slept = append(slept, d)
		return nil
	}
	err = s.Delete(context.Background(), "x")
	require.ErrorIs(t, err, ErrTransient)
	var se *S3Error
	require.ErrorAs(t, err, &se)
	require.Equal(t, "SlowDown", se.Code)
	require.Contains(t, err.Error(), "gave up after 4 attempts")
	require.Equal(t, int64(4), requests.Load())
	// 0.5 × 100 ms, 0.25 × 200 ms, 0.9 × min(400 ms, 250 ms).
	require.Equal(t, []time.Duration{50 * time.Millisecond, 50 * time.Millisecond, 225 * time.Millisecond}, slept)
	st := s.Stats()
	require.Equal(t, S3Stats{Requests: 4, RetriedThrottled: 3, GaveUp: 1}, st)
	require.Equal(t, "4 requests, 3 retries (throttled 3, server 0, connection 0, timeout 0, short body 0), 0 GETs resumed, 1 gave up", st.String())

	// The caller's context ends during the backoff: no further attempt.
	requests.Store(0)
	ctx, cancel := context.WithCancel(context.Background())
	s.retrier.rand = func() float64 { return 0.5 }
	s.retrier.sleep = func(ctx context.Context, d time.Duration) error {
		cancel()
		return ctx.Err()
	}
	err = s.Delete(ctx, "x")
	require.ErrorIs(t, err, context.Canceled)
	require.NotErrorIs(t, err, ErrTransient)
	require.Equal(t, int64(1), requests.Load())

	// MaxAttempts 1: no retries at all, but the error still says the
	// failure is transient.
	s1, err := NewS3Store(S3Options{Endpoint: srv.URL, Bucket: "b", AccessKey: "a", SecretKey: "s", MaxAttempts: 1})
	require.NoError(t, err)
	requests.Store(0)
	require.ErrorIs(t, s1.Delete(context.Background(), "x"), ErrTransient)
	require.Equal(t, int64(1), requests.Load())
}

// TestS3Classify: which failures are retried, and as what.
func TestS3Classify(t *testing.T) {
	s3err := func(status int, code string) error { return &S3Error{Status: status, Code: code} }
	wrapped := func(err error) error {
		return &url.Error{Op: "Get", URL: "http://x", Err: err}
	}
	for _, c := range []struct {
		err  error
		want retryCause
	}{
		{s3err(503, "SlowDown"), causeThrottled},
		{s3err(429, ""), causeThrottled},
		{s3err(200, "SlowDown"), causeThrottled}, // an Error document after a 200
		{s3err(500, "InternalError"), causeServer},
		{s3err(200, "InternalError"), causeServer},
		{s3err(502, ""), causeServer},
		{s3err(503, "ServiceUnavailable"), causeServer},
		{s3err(504, ""), causeServer},
		{s3err(400, "RequestTimeout"), causeTimeout},
		{s3err(408, ""), causeTimeout},
		{s3err(400, "InvalidArgument"), causeNone},
		{s3err(403, "AccessDenied"), causeNone},
		{s3err(404, "NoSuchKey"), causeNone},
		{s3err(412, "PreconditionFailed"), causeNone},
		{s3err(501, "NotImplemented"), causeNone},
		{fmt.Errorf("checkpoint: get x: %w", s3err(503, "SlowDown")), causeThrottled},
		{wrapped(&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}), causeConnection},
		{wrapped(&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}), causeConnection},
		{wrapped(io.EOF), causeConnection},
		{io.ErrUnexpectedEOF, causeConnection},
		{wrapped(errors.New("read tcp: connection reset by peer")), causeConnection},
		{wrapped(&net.OpError{Op: "write", Net: "tcp", Err: net.ErrClosed}), causeConnection},
		{wrapped(errors.New("http: server closed idle connection")), causeConnection},
		{wrapped(&net.DNSError{Err: "no such host", Name: "x", IsNotFound: true}), causeNone},
		{wrapped(&net.DNSError{Err: "server misbehaving", Name: "x", IsTemporary: true}), causeConnection},
		{wrapped(timeoutError{}), causeTimeout},
		{&stallError{time.Second}, causeTimeout},
		{&shortBodyError{at: 5, off: 0, end: 10}, causeShortBody},
		{wrapped(context.Canceled), causeNone},
		{wrapped(context.DeadlineExceeded), causeNone},
		{&callerReadError{io.ErrUnexpectedEOF}, causeNone},
		{wrapped(&callerReadError{syscall.ECONNRESET}), causeNone},
		{errors.New("x509: certificate signed by unknown authority"), causeNone},
	} {
		require.Equal(t, c.want, classify(c.err), "%v", c.err)
	}
}

type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

// TestS3Options: the zero value gets the defaults, and every bad field is
// reported at once.
func TestS3Options(t *testing.T) {
	s, err := NewS3Store(S3Options{Endpoint: "http://127.0.0.1:1", Bucket: "b", AccessKey: "a", SecretKey: "s"})
	require.NoError(t, err)
	require.Equal(t, 3, s.o.MaxAttempts)
	require.Equal(t, 30*time.Second, s.o.RequestTimeout)
	require.Equal(t, time.Second, s.o.RetryBaseDelay)
	require.Equal(t, 20*time.Second, s.o.RetryMaxDelay)
	require.Equal(t, int64(8<<20), s.o.RetryBufferSize)
	require.Zero(t, s.o.Client.Timeout)
	_, err = NewS3Store(S3Options{Endpoint: "ftp://x", Bucket: "b", AccessKey: "a", SecretKey: "s", MaxAttempts: -1, RequestTimeout: -time.Second})
	require.Error(t, err)
	for _, want := range []string{"Endpoint", "MaxAttempts -1", "RequestTimeout (-1s)"} {
		require.True(t, strings.Contains(err.Error(), want), "%v lacks %q", err, want)
	}
}

// TestS3ReaderAnswers: what a ranged read makes of answers that real
// servers rarely give, from a fake server: chunked bodies (no
// Content-Length), bytes past the range, a range ignored.
func TestS3ReaderAnswers(t *testing.T) {
	data := make([]byte, 1000)
	for i := range data {
		data[i] = byte(i * 7)
	}
	var mode string
	var gets atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead {
			w.Header().Set("Content-Length", fmt.Sprint(len(data)))
			return
		}
		gets.Add(1)
		var first, last int
		if _, err := fmt.Sscanf(r.Header.Get("Range"), "bytes=%d-%d", &first, &last); err != nil {
			t.Errorf("range %q: %v", r.Header.Get("Range"), err)
			return
		}
		body := data[first : last+1]
		switch mode {
		case "ignore-range":
			w.Header().Set("Content-Length", fmt.Sprint(len(data)))
			w.Write(data)
			return
		case "no-content-range":
			w.Header().Set("Content-Length", fmt.Sprint(len(body)))
			w.WriteHeader(http.StatusPartialContent)
			w.Write(body)
			return
		}
		// Chunked: no Content-Length, the body flushed in pieces.
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", first, last, len(data)))
		w.WriteHeader(http.StatusPartialContent)
		w.Write(body[:len(body)/2])
		w.(http.Flusher).Flush()
		w.Write(body[len(body)/2:])
		switch mode {
		case "extra":
			w.Write([]byte("extra"))
		case "cut-after-last":
			// Every byte sent, then the connection dropped before the
			// chunked body's end.
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}
	}))
	defer srv.Close()
	s, err := NewS3Store(S3Options{Endpoint: srv.URL, Bucket: "b", AccessKey: "a", SecretKey: "s", RetryBaseDelay: time.Millisecond})
	require.NoError(t, err)
	for _, c := range []struct{ mode, err string }{
		{"exact", ""},
		{"cut-after-last", ""},
		{"extra", "more than the bytes [100, 400) asked for"},
		{"ignore-range", "status 200"},
		{"no-content-range", "not a range asked for"},
	} {
		mode = c.mode
		gets.Store(0)
		rc, err := s.Get(context.Background(), "obj", 100, 300)
		var got []byte
		if err == nil {
			got, err = io.ReadAll(rc)
			rc.Close()
		}
		if c.err == "" {
			require.NoError(t, err, c.mode)
			require.Equal(t, data[100:400], got, c.mode)
		} else {
			require.ErrorContains(t, err, c.err, c.mode)
			require.NotErrorIs(t, err, ErrTransient, c.mode)
		}
		require.Equal(t, int64(1), gets.Load(), c.mode)
	}
}

// lastBytesFail returns its bytes together with a failure, as an
// io.Reader may.
type lastBytesFail struct{ b []byte }

func (l *lastBytesFail) Read(p []byte) (int, error) {
	n := copy(p, l.b)
	l.b = l.b[n:]
	return n, syscall.ECONNRESET
}

func (l *lastBytesFail) Close() error { return nil }

// TestS3ReaderFailureAfterLastByte: a failure that comes with the last
// bytes of a range does not fail the read: every byte is there.
func TestS3ReaderFailureAfterLastByte(t *testing.T) {
	s, err := NewS3Store(S3Options{Endpoint: "http://127.0.0.1:1", Bucket: "b", AccessKey: "a", SecretKey: "s"})
	require.NoError(t, err)
	r := &s3Reader{s: s, ctx: context.Background(), name: "obj", off: 5, pos: 5, end: 15, size: -1, tries: 1, body: &lastBytesFail{b: []byte("0123456789")}}
	got, err := io.ReadAll(r)
	require.NoError(t, err)
	require.Equal(t, "0123456789", string(got))
	require.Zero(t, s.Stats().Requests)
}
