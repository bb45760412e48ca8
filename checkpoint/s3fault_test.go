package checkpoint_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-db/strata/checkpoint"
	"github.com/strata-db/strata/checkpoint/storetest"
	"github.com/stretchr/testify/require"
)

// A faultProxy stands between an S3Store and the real S3 server (the
// versitygw that startS3Server starts) and, following a scripted plan,
// answers some requests itself with a fault instead of the server's
// answer. It closes every connection after one answer, so that net/http
// never repeats a request on its own and the requests it counts are
// exactly the store's attempts.
type faultProxy struct {
	t        *testing.T
	upstream string
	srv      *httptest.Server
	client   *http.Client
	done     chan struct{} // closed at the end of the test: stalls end

	mu    sync.Mutex
	plan  []*faultRule
	every int // > 0: every every-th request, of any kind, gets a fault of everyFaults in turn
	seen  int
	log   []string // each request: "GET 0-9 cut" (its kind, range and fault)
	hook  func(kind string, r *http.Request)
}

// faultRule injects fault into the next times requests of kind ("GET"
// of an object, "HEAD", "PUT", "POST", "DELETE", "LIST"). The faults:
//
//	503, 500, 403   an S3 error answer (SlowDown, InternalError, AccessDenied)
//	reset           the connection reset before any answer
//	cut             the answer's head and half its body, then a reset
//	truncate        the answer's head (its full Content-Length) and half
//	                its body, then the connection closed
//	stall-head      no answer at all
//	stall-body      the answer's head and half its body, then nothing
//	short-range     a well-formed answer for 10 bytes less than the range
//	                asked for
//	long-range      a well-formed answer for 10 bytes more
type faultRule struct {
	kind  string
	fault string
	times int
}

var everyFaults = []string{"503", "500", "reset"}

func newFaultProxy(t *testing.T, upstream string) *faultProxy {
	p := &faultProxy{t: t, upstream: upstream, client: &http.Client{Transport: &http.Transport{}}, done: make(chan struct{})}
	p.srv = httptest.NewServer(p)
	t.Cleanup(func() {
		close(p.done)
		p.srv.CloseClientConnections()
		p.srv.Close()
		p.client.CloseIdleConnections()
	})
	return p
}

// script replaces the plan and clears the log.
func (p *faultProxy) script(rules ...*faultRule) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.plan, p.log, p.every, p.seen, p.hook = rules, nil, 0, 0, nil
}

// requests returns the logged requests of kind (all kinds: "").
func (p *faultProxy) requests(kind string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, l := range p.log {
		if kind == "" || l == kind || strings.HasPrefix(l, kind+" ") {
			out = append(out, l)
		}
	}
	return out
}

func requestKind(r *http.Request) string {
	bucketOnly := strings.Count(strings.Trim(r.URL.EscapedPath(), "/"), "/") == 0
	if r.Method == http.MethodGet && bucketOnly {
		return "LIST"
	}
	return r.Method
}

func (p *faultProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	kind := requestKind(r)
	fault, hook := p.takeFor(kind, r)
	if hook != nil {
		hook(kind, r)
	}
	// The request's body is read whole first, so that an answer never
	// races the client still sending.
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	w.Header().Set("Connection", "close")
	switch fault {
	case "503":
		writeS3Error(w, http.StatusServiceUnavailable, "SlowDown", "Please reduce your request rate.")
		return
	case "500":
		writeS3Error(w, http.StatusInternalServerError, "InternalError", "We encountered an internal error. Please try again.")
		return
	case "403":
		writeS3Error(w, http.StatusForbidden, "AccessDenied", "Access Denied")
		return
	case "reset":
		if conn, _ := p.hijack(w); conn != nil {
			reset(conn)
		}
		return
	case "stall-head":
		p.stall(r)
		return
	}
	out, err := http.NewRequestWithContext(r.Context(), r.Method, p.upstream+r.RequestURI, bytes.NewReader(body))
	if err != nil {
		p.t.Errorf("proxy: %v", err)
		return
	}
	out.Header = r.Header.Clone()
	out.Host = r.Host // the request was signed for the proxy's host
	out.ContentLength = int64(len(body))
	resp, err := p.client.Do(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	head := resp.Header.Clone()
	head.Del("Content-Length")
	head.Del("Connection")
	half := data[:len(data)/2]
	switch fault {
	case "cut", "truncate":
		conn, bw := p.hijack(w)
		if conn == nil {
			return
		}
		writeRawAnswer(bw, resp.StatusCode, head, len(data), half)
		if fault == "cut" {
			// Let the client take what was sent before the reset.
			time.Sleep(20 * time.Millisecond)
			reset(conn)
		} else {
			conn.Close()
		}
		return
	case "stall-body":
		for k, v := range head {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.WriteHeader(resp.StatusCode)
		w.Write(half)
		w.(http.Flusher).Flush()
		p.stall(r)
		return
	case "short-range", "long-range":
		first, last, total := parseRange(p.t, resp.Header.Get("Content-Range"))
		if fault == "short-range" {
			last -= 10
			data = data[:len(data)-10]
		} else {
			last += 10
			data = append(data, make([]byte, 10)...)
		}
		head.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", first, last, total))
	}
	for k, v := range head {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	if r.Method == http.MethodHead {
		w.Header().Set("Content-Length", resp.Header.Get("Content-Length"))
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(data)
}

func (p *faultProxy) takeFor(kind string, r *http.Request) (string, func(string, *http.Request)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen++
	fault := ""
	if p.every > 0 && p.seen%p.every == 0 {
		fault = everyFaults[(p.seen/p.every)%len(everyFaults)]
	}
	for _, rule := range p.plan {
		if rule.kind == kind && rule.times > 0 {
			rule.times--
			fault = rule.fault
			break
		}
	}
	p.log = append(p.log, strings.Join(strings.Fields(fmt.Sprintf("%s %s %s", kind, strings.TrimPrefix(r.Header.Get("Range"), "bytes="), fault)), " "))
	return fault, p.hook
}

// stall holds an answer back until the client gives up (or the test ends).
func (p *faultProxy) stall(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-p.done:
	}
}

func (p *faultProxy) hijack(w http.ResponseWriter) (net.Conn, *bufio.ReadWriter) {
	conn, bw, err := w.(http.Hijacker).Hijack()
	if err != nil {
		p.t.Errorf("proxy: %v", err)
		return nil, nil
	}
	return conn, bw
}

// reset closes conn with a TCP reset rather than an orderly close.
func reset(conn net.Conn) {
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

func writeRawAnswer(bw *bufio.ReadWriter, status int, head http.Header, length int, body []byte) {
	fmt.Fprintf(bw, "HTTP/1.1 %d %s\r\n", status, http.StatusText(status))
	head.Write(bw)
	fmt.Fprintf(bw, "Content-Length: %d\r\nConnection: close\r\n\r\n", length)
	bw.Write(body)
	bw.Flush()
}

func writeS3Error(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message></Error>`, code, msg)
}

func parseRange(t *testing.T, cr string) (first, last, total int64) {
	if _, err := fmt.Sscanf(cr, "bytes %d-%d/%d", &first, &last, &total); err != nil {
		t.Errorf("proxy: Content-Range %q: %v", cr, err)
	}
	return first, last, total
}

// onlyReader hides every method of a reader but Read (so a Put cannot
// seek it).
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

func TestS3StoreFaults(t *testing.T) {
	endpoint := startS3Server(t)
	proxy := newFaultProxy(t, endpoint)
	ctx := context.Background()
	direct := newS3Store(t, endpoint, "faults", "")
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	require.NoError(t, direct.Put(ctx, "obj", bytes.NewReader(data), int64(len(data))))
	// A store through the proxy: 3 attempts, backoff of a few
	// milliseconds, so the tests do not wait.
	through := func(t *testing.T, o checkpoint.S3Options) *checkpoint.S3Store {
		o.Endpoint, o.Bucket, o.AccessKey, o.SecretKey = proxy.srv.URL, "faults", s3Access, s3Secret
		if o.RetryBaseDelay == 0 {
			o.RetryBaseDelay, o.RetryMaxDelay = time.Millisecond, 5*time.Millisecond
		}
		s, err := checkpoint.NewS3Store(o)
		require.NoError(t, err)
		return s
	}
	const off, length = 1000, 300000
	read := func(s *checkpoint.S3Store, name string, off, length int64) ([]byte, error) {
		rc, err := s.Get(ctx, name, off, length)
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		return io.ReadAll(rc)
	}
	// Stalls need a short RequestTimeout; the others keep the default,
	// so that a busy machine cannot make an answer look stalled.
	stallTimeout := 2 * time.Second
	optsFor := func(fault string) checkpoint.S3Options {
		if strings.HasPrefix(fault, "stall") {
			return checkpoint.S3Options{RequestTimeout: stallTimeout}
		}
		return checkpoint.S3Options{}
	}

	t.Run("GetSurvives", func(t *testing.T) {
		// Each fault twice on the ranged GET: the third attempt gets
		// through, and the bytes are exactly the object's.
		for _, c := range []struct {
			fault  string
			cause  func(checkpoint.S3Stats) int64
			resume bool // the retries ask for the rest, not the whole range
		}{
			{"503", func(s checkpoint.S3Stats) int64 { return s.RetriedThrottled }, false},
			{"500", func(s checkpoint.S3Stats) int64 { return s.RetriedServer }, false},
			{"reset", func(s checkpoint.S3Stats) int64 { return s.RetriedConnection }, false},
			{"cut", func(s checkpoint.S3Stats) int64 { return s.RetriedConnection + s.RetriedShortBody }, true},
			{"truncate", func(s checkpoint.S3Stats) int64 { return s.RetriedShortBody }, true},
			{"stall-head", func(s checkpoint.S3Stats) int64 { return s.RetriedTimeout }, false},
			{"stall-body", func(s checkpoint.S3Stats) int64 { return s.RetriedTimeout }, true},
		} {
			t.Run(c.fault, func(t *testing.T) {
				s := through(t, optsFor(c.fault))
				proxy.script(&faultRule{kind: "GET", fault: c.fault, times: 2})
				got, err := read(s, "obj", off, length)
				require.NoError(t, err)
				require.True(t, bytes.Equal(data[off:off+length], got), "the bytes read differ from the object's")
				gets := proxy.requests("GET")
				require.Len(t, gets, 3, "%q", gets)
				require.Len(t, proxy.requests("HEAD"), 1)
				st := s.Stats()
				require.Equal(t, int64(2), c.cause(st), "%v", st)
				require.Equal(t, int64(2), st.Retries(), "%v", st)
				require.Equal(t, int64(4), st.Requests)
				if !c.resume {
					require.Equal(t, fmt.Sprintf("GET %d-%d", off, off+length-1), gets[2])
					require.Zero(t, st.Resumed)
					return
				}
				if c.fault == "cut" {
					// A reset may drop bytes the client had not read yet,
					// the answer's head among them: the retry then asks
					// again from where the last bytes came, or from the
					// start.
					return
				}
				require.Equal(t, int64(2), st.Resumed)
				// Each answer held half of what it was asked for: each
				// retry asks for the rest.
				from := int64(off)
				for i, g := range gets {
					want := fmt.Sprintf("GET %d-%d", from, off+length-1)
					if i < 2 {
						want += " " + c.fault
					}
					require.Equal(t, want, g)
					from += (off + length - from) / 2
				}
			})
		}
	})

	t.Run("OtherRequestsSurvive", func(t *testing.T) {
		s := through(t, checkpoint.S3Options{RetryBufferSize: 64 << 10})
		small := data[:50000]
		large := data[:200000]
		for _, c := range []struct {
			name string
			rule *faultRule
			op   func() error
		}{
			{"PutSeekable", &faultRule{kind: "PUT", fault: "reset", times: 2}, func() error {
				return s.Put(ctx, "put/seekable", bytes.NewReader(large), int64(len(large)))
			}},
			{"PutBuffered", &faultRule{kind: "PUT", fault: "503", times: 2}, func() error {
				return s.Put(ctx, "put/buffered", onlyReader{bytes.NewReader(small)}, int64(len(small)))
			}},
			{"Head", &faultRule{kind: "HEAD", fault: "500", times: 2}, func() error {
				got, err := read(s, "obj", 10, 10)
				if err == nil && !bytes.Equal(got, data[10:20]) {
					return fmt.Errorf("read %x", got)
				}
				return err
			}},
			{"Whole", &faultRule{kind: "GET", fault: "truncate", times: 2}, func() error {
				got, err := read(s, "obj", 0, -1)
				if err == nil && !bytes.Equal(got, data) {
					return fmt.Errorf("read %d bytes, not the object's", len(got))
				}
				return err
			}},
			{"List", &faultRule{kind: "LIST", fault: "truncate", times: 2}, func() error {
				l, err := s.List(ctx, "ob")
				if err == nil && (len(l) != 1 || l[0].Size != int64(len(data))) {
					return fmt.Errorf("list: %v", l)
				}
				return err
			}},
			{"Delete", &faultRule{kind: "DELETE", fault: "503", times: 2}, func() error {
				return s.Delete(ctx, "put/seekable")
			}},
		} {
			t.Run(c.name, func(t *testing.T) {
				proxy.script(c.rule)
				require.NoError(t, c.op())
				require.Len(t, proxy.requests(c.rule.kind), 3, "%q", proxy.requests(""))
			})
		}
		got, err := read(direct, "put/buffered", 0, -1)
		require.NoError(t, err)
		require.True(t, bytes.Equal(small, got))
		_, err = read(direct, "put/seekable", 0, -1)
		require.ErrorIs(t, err, checkpoint.ErrNotExist)
	})

	t.Run("BeyondTheBudget", func(t *testing.T) {
		for _, fault := range []string{"503", "reset", "truncate", "stall-head"} {
			t.Run(fault, func(t *testing.T) {
				s := through(t, optsFor(fault))
				proxy.script(&faultRule{kind: "GET", fault: fault, times: 3})
				_, err := read(s, "obj", off, length)
				require.ErrorIs(t, err, checkpoint.ErrTransient)
				require.Contains(t, err.Error(), "gave up after 3 attempts")
				require.Len(t, proxy.requests("GET"), 3)
				require.Equal(t, int64(1), s.Stats().GaveUp)
				switch fault {
				case "503":
					var se *checkpoint.S3Error
					require.ErrorAs(t, err, &se)
					require.Equal(t, "SlowDown", se.Code)
				case "truncate":
					require.ErrorIs(t, err, io.ErrUnexpectedEOF)
				}
				t.Logf("%s: %v", fault, err)
			})
		}
		t.Run("PutLargeUnseekable", func(t *testing.T) {
			// A body that can neither seek nor fit RetryBufferSize is
			// sent once: the failure says why it was not retried.
			s := through(t, checkpoint.S3Options{RetryBufferSize: 1 << 10})
			proxy.script(&faultRule{kind: "PUT", fault: "503", times: 1})
			err := s.Put(ctx, "put/large", onlyReader{bytes.NewReader(data)}, int64(len(data)))
			require.ErrorIs(t, err, checkpoint.ErrTransient)
			require.Contains(t, err.Error(), "not retried")
			require.Len(t, proxy.requests("PUT"), 1)
			t.Logf("%v", err)
		})
	})

	t.Run("NotRetried", func(t *testing.T) {
		for _, c := range []struct {
			name, kind, fault, want string
		}{
			{"Denied", "GET", "403", "AccessDenied"},
			{"ShortRange", "GET", "short-range", "another range"},
			{"LongRange", "GET", "long-range", "another range"},
			{"DeniedHead", "HEAD", "403", "status 403"},
		} {
			t.Run(c.name, func(t *testing.T) {
				s := through(t, checkpoint.S3Options{})
				proxy.script(&faultRule{kind: c.kind, fault: c.fault, times: 3})
				_, err := read(s, "obj", off, length)
				require.Error(t, err)
				require.NotErrorIs(t, err, checkpoint.ErrTransient)
				require.Contains(t, err.Error(), c.want)
				require.Len(t, proxy.requests(c.kind), 1, "%q", proxy.requests(""))
				require.Zero(t, s.Stats().Retries())
				t.Logf("%v", err)
			})
		}
		t.Run("Missing", func(t *testing.T) {
			s := through(t, checkpoint.S3Options{})
			proxy.script()
			_, err := read(s, "nothing", 0, 10)
			require.ErrorIs(t, err, checkpoint.ErrNotExist)
			require.Len(t, proxy.requests(""), 1)
		})
		t.Run("CallerCancels", func(t *testing.T) {
			// The caller's context ends while a retry waits: no more
			// requests, and the error is the context's.
			s := through(t, checkpoint.S3Options{RetryBaseDelay: time.Hour, RetryMaxDelay: time.Hour})
			cctx, cancel := context.WithCancel(ctx)
			defer cancel()
			proxy.script(&faultRule{kind: "DELETE", fault: "503", times: 3})
			errc := make(chan error, 1)
			go func() { errc <- s.Delete(cctx, "obj") }()
			require.Eventually(t, func() bool { return len(proxy.requests("DELETE")) == 1 }, 10*time.Second, time.Millisecond)
			cancel()
			err := <-errc
			require.ErrorIs(t, err, context.Canceled)
			require.Len(t, proxy.requests("DELETE"), 1)
		})
	})

	t.Run("ReplacedWhileRead", func(t *testing.T) {
		// The object is replaced between an answer that failed part way
		// and the request for the rest: the rest is refused (If-Match),
		// not joined to the old bytes.
		require.NoError(t, direct.Put(ctx, "changing", bytes.NewReader(data), int64(len(data))))
		s := through(t, checkpoint.S3Options{})
		proxy.script(&faultRule{kind: "GET", fault: "truncate", times: 1})
		var replaced atomic.Bool
		proxy.mu.Lock()
		proxy.hook = func(kind string, r *http.Request) {
			if kind == "GET" && r.Header.Get("If-Match") != "" && !replaced.Swap(true) {
				other := bytes.Repeat([]byte{7}, len(data))
				if err := direct.Put(ctx, "changing", bytes.NewReader(other), int64(len(other))); err != nil {
					t.Errorf("replace: %v", err)
				}
			}
		}
		proxy.mu.Unlock()
		_, err := read(s, "changing", 0, int64(len(data)))
		require.Error(t, err)
		require.Contains(t, err.Error(), "replaced while it was read")
		require.True(t, replaced.Load())
		t.Logf("%v", err)
	})

	t.Run("ConformanceThroughFaults", func(t *testing.T) {
		// The store's conformance tests, with every third request
		// answered by a fault in turn (503, 500, reset): every one is
		// retried through.
		n := 0
		var stores []*checkpoint.S3Store
		storetest.Run(t, func(t *testing.T) checkpoint.Store {
			n++
			bucket := fmt.Sprintf("flaky-%d", n)
			newS3Store(t, endpoint, bucket, "")
			s, err := checkpoint.NewS3Store(checkpoint.S3Options{Endpoint: proxy.srv.URL, Bucket: bucket, AccessKey: s3Access, SecretKey: s3Secret,
				RetryBaseDelay: time.Millisecond, RetryMaxDelay: 5 * time.Millisecond})
			require.NoError(t, err)
			proxy.script()
			proxy.mu.Lock()
			proxy.every = 3
			proxy.mu.Unlock()
			stores = append(stores, s)
			return s
		})
		var total checkpoint.S3Stats
		for _, s := range stores {
			st := s.Stats()
			total.Requests += st.Requests
			total.RetriedThrottled += st.RetriedThrottled
			total.RetriedServer += st.RetriedServer
			total.RetriedConnection += st.RetriedConnection
			total.GaveUp += st.GaveUp
		}
		require.NotZero(t, total.RetriedThrottled)
		require.NotZero(t, total.RetriedServer)
		require.NotZero(t, total.RetriedConnection)
		t.Logf("S3 store through faults: %v", total)
		proxy.script()
	})
}
