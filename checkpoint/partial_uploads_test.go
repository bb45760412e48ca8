package checkpoint_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-db/strata/checkpoint"
	"github.com/stretchr/testify/require"
)

// noAbort is a transport that refuses to abort multipart uploads, as a
// client that crashed during a Compose never does.
type noAbort struct{ http.RoundTripper }

func (t noAbort) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodDelete && r.URL.Query().Has("uploadId") {
		return nil, errors.New("injected: the client is gone")
	}
	return t.RoundTripper.RoundTrip(r)
}

// failingReader fails once it has given n bytes.
type failingReader struct{ n int }

func (r *failingReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, errors.New("injected: the source failed")
	}
	k := min(len(p), r.n)
	clear(p[:k])
	r.n -= k
	return k, nil
}

// TestS3PartialUploads: a Compose whose client stops between its
// multipart upload's creation and its completion leaves the upload in
// the bucket, invisible to List. ListPartialUploads finds it; the audit
// notes it while it may be in flight, reports it with the unreferenced
// objects once older than PartialUploadAge (so check --store fails), and
// its Fix aborts it.
func TestS3PartialUploads(t *testing.T) {
	ctx := context.Background()
	endpoint := startS3Server(t)
	mk := func(client *http.Client) *checkpoint.S3Store {
		s, err := checkpoint.NewS3Store(checkpoint.S3Options{Endpoint: endpoint, Bucket: "partial", Prefix: "p", AccessKey: s3Access, SecretKey: s3Secret,
			Client: client, MaxAttempts: 1})
		require.NoError(t, err)
		require.NoError(t, s.EnsureBucket(ctx))
		return s
	}
	crashing := mk(&http.Client{Transport: noAbort{http.DefaultTransport}})
	s := mk(nil)
	const mib = 1 << 20
	require.NoError(t, s.Put(ctx, "src", strings.NewReader(strings.Repeat("x", 6*mib)), 6*mib))
	// A range of 5 MiB is copied by the server: a multipart upload.
	_, err := crashing.Compose(ctx, "data/left", []checkpoint.Part{
		{Object: "src", Offset: 0, Length: 5 * mib},
		{R: &failingReader{n: 10}, Length: 1000},
	})
	require.Error(t, err)
	objs, err := s.List(ctx, "")
	require.NoError(t, err)
	require.Equal(t, []checkpoint.ObjectInfo{{Name: "src", Size: 6 * mib}}, objs, "the upload is not an object")
	ups, err := s.ListPartialUploads(ctx, "")
	require.NoError(t, err)
	require.Len(t, ups, 1)
	require.Equal(t, "data/left", ups[0].Name)
	require.WithinDuration(t, time.Now(), ups[0].Initiated, time.Hour)
	none, err := s.ListPartialUploads(ctx, "shared/")
	require.NoError(t, err)
	require.Empty(t, none)

	rep, err := checkpoint.Audit(ctx, s, nil)
	require.NoError(t, err)
	require.False(t, hasFinding(rep.Unreferenced, "data/left", ""))
	require.True(t, hasFinding(rep.Notes, "data/left", "perhaps in flight"), "%v", rep.Notes)
	rep, err = checkpoint.Audit(ctx, s, &checkpoint.AuditOptions{PartialUploadAge: time.Nanosecond})
	require.NoError(t, err)
	require.True(t, hasFinding(rep.Unreferenced, "data/left", "abandoned"), "%v", rep.Unreferenced)
	require.False(t, rep.OK())
	rep, err = checkpoint.Audit(ctx, s, &checkpoint.AuditOptions{PartialUploadAge: time.Nanosecond, Fix: true})
	require.NoError(t, err)
	require.True(t, hasFinding(rep.Fixed, "data/left", "abandoned"), "%v", rep.Fixed)
	ups, err = s.ListPartialUploads(ctx, "")
	require.NoError(t, err)
	require.Empty(t, ups)
	require.NoError(t, s.AbortPartialUpload(ctx, checkpoint.PartialUpload{Name: "data/left", ID: "gone"}), "an upload already gone")
}

func hasFinding(fs []checkpoint.Finding, object, what string) bool {
	for _, f := range fs {
		if f.Object == object && strings.Contains(f.What, what) {
			return true
		}
	}
	return false
}

// TestLocalPartialUploads: a local store's Put that a crash stopped
// leaves its temporary file; the audit notes a young one (perhaps in
// flight), reports one older than an hour with the unreferenced objects,
// and its Fix removes that one alone.
func TestLocalPartialUploads(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := checkpoint.NewLocalStore(dir)
	require.NoError(t, err)
	require.NoError(t, s.Put(ctx, "data/x", strings.NewReader("whole"), 5))
	ups, err := s.ListPartialUploads(ctx, "")
	require.NoError(t, err)
	require.Empty(t, ups, "a Put that finished leaves nothing")
	old := filepath.Join(dir, ".tmp", "0123456789abcdef")
	require.NoError(t, os.WriteFile(old, []byte("half"), 0o644))
	then := time.Now().Add(-2 * time.Hour)
	require.NoError(t, os.Chtimes(old, then, then))
	young := filepath.Join(dir, ".tmp", "fedcba9876543210")
	require.NoError(t, os.WriteFile(young, []byte("hal"), 0o644))
	ups, err = s.ListPartialUploads(ctx, "")
	require.NoError(t, err)
	require.Len(t, ups, 2)
	none, err := s.ListPartialUploads(ctx, "data/")
	require.NoError(t, err)
	require.Empty(t, none)

	rep, err := checkpoint.Audit(ctx, s, nil)
	require.NoError(t, err)
	require.True(t, hasFinding(rep.Unreferenced, ".tmp/0123456789abcdef", "abandoned"), "%v", rep.Unreferenced)
	require.True(t, hasFinding(rep.Notes, ".tmp/fedcba9876543210", "perhaps in flight"), "%v", rep.Notes)
	require.False(t, rep.OK())
	rep, err = checkpoint.Audit(ctx, s, &checkpoint.AuditOptions{Fix: true})
	require.NoError(t, err)
	require.True(t, hasFinding(rep.Fixed, ".tmp/0123456789abcdef", "abandoned"), "%v", rep.Fixed)
	_, err = os.Stat(old)
	require.ErrorIs(t, err, os.ErrNotExist)
	_, err = os.Stat(young)
	require.NoError(t, err, "an upload perhaps in flight was removed")
	require.Error(t, s.AbortPartialUpload(ctx, checkpoint.PartialUpload{ID: "../data/x"}))
	require.NoError(t, s.AbortPartialUpload(ctx, checkpoint.PartialUpload{ID: "0123456789abcdef"}), "already gone")
}
