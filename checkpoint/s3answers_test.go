package checkpoint

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Answers of S3 servers that misbehave in one way each, and what the
// client makes of them: never bytes or lists that are not the store's.

func answersStore(t *testing.T, url string) *S3Store {
	s, err := NewS3Store(S3Options{Endpoint: url, Bucket: "b", AccessKey: "a", SecretKey: "s",
		RetryBaseDelay: time.Millisecond, RetryMaxDelay: time.Millisecond})
	require.NoError(t, err)
	return s
}

// TestS3GetResumeOtherVersion: a whole-object GET cut short is resumed
// with a range and If-Match; a server that ignores If-Match answers with
// another version of the object. Its bytes were spliced onto the first
// version's: the first answer's length was not kept as the object's size
// to check against, nor its ETag compared.
func TestS3GetResumeOtherVersion(t *testing.T) {
	for _, sameSize := range []bool{false, true} {
		t.Run(fmt.Sprintf("same-size=%t", sameSize), func(t *testing.T) {
			v1 := []byte(strings.Repeat("A", 1000))
			v2 := []byte(strings.Repeat("B", 2000))
			if sameSize {
				v2 = v2[:1000]
			}
			var n atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if n.Add(1) == 1 {
					w.Header().Set("ETag", `"v1"`)
					w.Header().Set("Content-Length", "1000")
					w.WriteHeader(200)
					w.Write(v1[:500])
					w.(http.Flusher).Flush()
					panic(http.ErrAbortHandler) // the connection drops
				}
				var first, last int
				fmt.Sscanf(r.Header.Get("Range"), "bytes=%d-%d", &first, &last)
				w.Header().Set("ETag", `"v2"`)
				w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", first, last, len(v2)))
				w.Header().Set("Content-Length", fmt.Sprint(last-first+1))
				w.WriteHeader(206)
				w.Write(v2[first : last+1])
			}))
			defer srv.Close()
			rc, err := answersStore(t, srv.URL).Get(context.Background(), "obj", 0, -1)
			require.NoError(t, err)
			defer rc.Close()
			got, err := io.ReadAll(rc)
			require.Error(t, err, "read %d bytes of two versions", len(got))
			require.GreaterOrEqual(t, n.Load(), int64(2), "the read was resumed")
		})
	}
}

// TestS3PutServerClosedIdle: the server closes each connection just
// after its answer, as one whose keep-alive timeout is reached does; a
// PUT sent on such a connection fails with "use of closed network
// connection", a connection failure to retry, not a final error.
func TestS3PutServerClosedIdle(t *testing.T) {
	var puts atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		puts.Add(1)
		conn, bw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		bw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
		bw.Flush()
		time.Sleep(time.Duration(puts.Load()%7) * 30 * time.Microsecond)
		conn.Close()
	}))
	defer srv.Close()
	s := answersStore(t, srv.URL)
	for i := range 1000 {
		require.NoError(t, s.Put(context.Background(), "obj", strings.NewReader("hello"), 5), "put %d", i)
	}
}

// TestS3ListTruncatedWithoutToken: a listing that says it is truncated
// and gives no way on was returned as complete, its remaining keys lost.
func TestS3ListTruncatedWithoutToken(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("uploads") {
			fmt.Fprint(w, `<ListMultipartUploadsResult><IsTruncated>true</IsTruncated></ListMultipartUploadsResult>`)
			return
		}
		fmt.Fprint(w, `<ListBucketResult><IsTruncated>true</IsTruncated><Contents><Key>a</Key><Size>1</Size></Contents></ListBucketResult>`)
	}))
	defer srv.Close()
	s := answersStore(t, srv.URL)
	_, err := s.List(context.Background(), "")
	require.ErrorContains(t, err, "truncated")
	_, err = s.ListPartialUploads(context.Background(), "")
	require.ErrorContains(t, err, "truncated")
}

// TestS3ComposeCompletionAnswerLost: the completion of a composition
// takes effect, but its answer is lost with the connection; the retry
// finds the upload gone (NoSuchUpload). The object is whole, and was
// reported as a failure. Now the object's size and multipart ETag say
// whether the first attempt made it; an upload someone else aborted
// still fails.
func TestS3ComposeCompletionAnswerLost(t *testing.T) {
	for _, abortedBySomeoneElse := range []bool{false, true} {
		t.Run(fmt.Sprintf("aborted=%t", abortedBySomeoneElse), func(t *testing.T) {
			const src = 6 << 20
			partETag := fmt.Sprintf("%x", md5.Sum([]byte("the copied part")))
			var mu sync.Mutex
			type object struct {
				size int64
				etag string
			}
			objects := map[string]object{"/b/src": {src, `"src"`}}
			uploads := map[string]bool{}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				defer mu.Unlock()
				q := r.URL.Query()
				switch {
				case r.Method == http.MethodHead:
					o, ok := objects[r.URL.Path]
					if !ok {
						w.WriteHeader(404)
						return
					}
					w.Header().Set("Content-Length", fmt.Sprint(o.size))
					w.Header().Set("ETag", o.etag)
				case r.Method == http.MethodPost && q.Has("uploads"):
					uploads["u1"] = true
					fmt.Fprint(w, `<InitiateMultipartUploadResult><UploadId>u1</UploadId></InitiateMultipartUploadResult>`)
				case r.Method == http.MethodPut && q.Has("uploadId"):
					io.Copy(io.Discard, r.Body)
					fmt.Fprintf(w, `<CopyPartResult><ETag>"%s"</ETag></CopyPartResult>`, partETag)
				case r.Method == http.MethodPost && q.Has("uploadId"):
					io.Copy(io.Discard, r.Body)
					if !uploads[q.Get("uploadId")] {
						w.WriteHeader(404)
						fmt.Fprint(w, `<Error><Code>NoSuchUpload</Code><Message>gone</Message></Error>`)
						return
					}
					delete(uploads, q.Get("uploadId"))
					if abortedBySomeoneElse {
						// Gone before the completion came: a retryable
						// answer, then the retry finds no upload.
						w.WriteHeader(500)
						fmt.Fprint(w, `<Error><Code>InternalError</Code></Error>`)
						return
					}
					sum, _ := hex.DecodeString(partETag)
					objects[r.URL.Path] = object{src, fmt.Sprintf(`"%x-1"`, md5.Sum(sum))}
					panic(http.ErrAbortHandler) // the answer is lost
				case r.Method == http.MethodDelete && q.Has("uploadId"):
					if !uploads[q.Get("uploadId")] {
						w.WriteHeader(404)
						fmt.Fprint(w, `<Error><Code>NoSuchUpload</Code></Error>`)
						return
					}
					delete(uploads, q.Get("uploadId"))
					w.WriteHeader(204)
				default:
					t.Errorf("unexpected %s %s", r.Method, r.URL)
					w.WriteHeader(400)
				}
			}))
			defer srv.Close()
			_, err := answersStore(t, srv.URL).Compose(context.Background(), "dst", []Part{{Object: "src", Offset: 0, Length: src}})
			mu.Lock()
			_, exists := objects["/b/dst"]
			mu.Unlock()
			require.Equal(t, !abortedBySomeoneElse, exists)
			if abortedBySomeoneElse {
				require.Error(t, err)
			} else {
				require.NoError(t, err, "the composition took effect")
			}
		})
	}
}
