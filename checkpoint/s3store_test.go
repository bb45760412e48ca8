package checkpoint_test

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/checkpoint"
	"github.com/strata-db/strata/checkpoint/storetest"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// The S3 store's tests run against a real S3 server that they start on
// the loopback interface (see storetest.StartS3Server).

const (
	s3Access = storetest.S3AccessKey
	s3Secret = storetest.S3SecretKey
)

func startS3Server(t *testing.T) string { return storetest.StartS3Server(t) }

func newS3Store(t *testing.T, endpoint, bucket, prefix string) *checkpoint.S3Store {
	t.Helper()
	s, err := checkpoint.NewS3Store(checkpoint.S3Options{Endpoint: endpoint, Bucket: bucket, Prefix: prefix, AccessKey: s3Access, SecretKey: s3Secret})
	require.NoError(t, err)
	require.NoError(t, s.EnsureBucket(context.Background()))
	return s
}

func TestS3Store(t *testing.T) {
	endpoint := startS3Server(t)
	n := 0
	t.Run("Conformance", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) checkpoint.Store {
			n++
			return newS3Store(t, endpoint, fmt.Sprintf("bucket-%d", n), "")
		})
	})
	t.Run("Prefixes", func(t *testing.T) {
		// Two stores sharing a bucket under different prefixes do not see
		// each other's objects.
		a := newS3Store(t, endpoint, "shared", "a")
		b := newS3Store(t, endpoint, "shared", "b/c")
		ctx := context.Background()
		require.NoError(t, a.Put(ctx, "x", strings.NewReader("1"), 1))
		require.NoError(t, b.Put(ctx, "x", strings.NewReader("22"), 2))
		la, err := a.List(ctx, "")
		require.NoError(t, err)
		require.Equal(t, []checkpoint.ObjectInfo{{Name: "x", Size: 1}}, la)
		lb, err := b.List(ctx, "")
		require.NoError(t, err)
		require.Equal(t, []checkpoint.ObjectInfo{{Name: "x", Size: 2}}, lb)
	})
	t.Run("ComposeCopies", func(t *testing.T) {
		// Ranges of 5 MiB or more are copied by the server, not sent:
		// the server enforces S3's minimum part size at completion, so a
		// plan that broke it would fail here.
		ctx := context.Background()
		s := newS3Store(t, endpoint, "compose", "")
		const mib = 1 << 20
		src := strings.Repeat("0123456789abcdef", 12*mib/16)
		require.NoError(t, s.Put(ctx, "src", strings.NewReader(src), int64(len(src))))
		copied, err := s.Compose(ctx, "copies", []checkpoint.Part{
			{Object: "src", Offset: 6 * mib, Length: 5 * mib},
			{Object: "src", Offset: 3, Length: 7 * mib},
			{R: strings.NewReader("tail"), Length: 4},
			{Object: "src", Offset: 100, Length: 10},
		})
		require.NoError(t, err)
		require.Equal(t, int64(12*mib), copied)
		rc, err := s.Get(ctx, "copies", 0, -1)
		require.NoError(t, err)
		got, err := io.ReadAll(rc)
		rc.Close()
		require.NoError(t, err)
		require.True(t, string(got) == src[6*mib:11*mib]+src[3:3+7*mib]+"tail"+src[100:110], "composed bytes differ")
		// A small part first: everything after it is sent.
		copied, err = s.Compose(ctx, "sent", []checkpoint.Part{{R: strings.NewReader("head"), Length: 4}, {Object: "src", Length: 6 * mib}})
		require.NoError(t, err)
		require.Equal(t, int64(0), copied)
	})
	t.Run("SharedFiles", func(t *testing.T) {
		// A database whose lower levels live in S3: shared files read with
		// ranged GETs, a checkpoint by reference, another instance opened
		// from it without downloading, and the objects released once
		// neither instance nor a retained checkpoint holds them.
		ctx := context.Background()
		fs, root := vfs.Default, t.TempDir()
		store := newS3Store(t, endpoint, "shared", "job-2")
		opts := smallOptions(fs)
		opts.SharedStore, opts.SharedFromLevel, opts.SharedCacheSize = store, 1, 1
		db, err := strata.Open(filepath.Join(root, "a"), opts)
		require.NoError(t, err)
		defer db.Close()
		for i := range 600 {
			require.NoError(t, db.Set([]byte(fmt.Sprintf("key%05d", i)), []byte(bigValue(i, 0)), strata.NoSync))
		}
		require.NoError(t, db.Compact(nil, nil))
		require.Eventually(t, func() bool { m := db.Metrics().Shared; return m.Pending == 0 && m.Tables > 0 },
			time.Minute, 10*time.Millisecond, "the lower levels were not shared")
		want := scanAll(t, db)
		require.Positive(t, db.Metrics().Shared.Gets, "reads did not go to the store")
		u, err := checkpoint.NewUploader(store, &checkpoint.UploadOptions{KeepLast: 1})
		require.NoError(t, err)
		st, err := db.CheckpointToStore(ctx, u)
		require.NoError(t, err)
		require.Less(t, st.UploadedBytes, st.Bytes/2, "shared files were uploaded again")

		other, err := strata.OpenFromStore(ctx, store, st.ID, filepath.Join(root, "b"), &strata.Options{FS: fs, SharedCacheSize: 1})
		require.NoError(t, err)
		defer other.Close()
		require.Equal(t, want, scanAll(t, other))

		// The first instance moves on and its checkpoint is replaced: the
		// second still reads everything.
		for i := range 600 {
			require.NoError(t, db.Set([]byte(fmt.Sprintf("key%05d", i)), []byte(bigValue(i, 1)), strata.NoSync))
		}
		require.NoError(t, db.Compact(nil, nil))
		_, err = db.CheckpointToStore(ctx, u)
		require.NoError(t, err)
		require.Equal(t, want, scanAll(t, other))
	})
	t.Run("CheckpointRestore", func(t *testing.T) {
		// Incremental checkpoints into S3, a full and a key-range restore.
		ctx := context.Background()
		fs, root := vfs.Default, t.TempDir()
		db, err := strata.Open(filepath.Join(root, "db"), smallOptions(fs))
		require.NoError(t, err)
		defer db.Close()
		store := newS3Store(t, endpoint, "checkpoints", "job-1/op-0")
		u, err := checkpoint.NewUploader(store, &checkpoint.UploadOptions{KeepLast: 2, SmallFileSize: 16 << 10})
		require.NoError(t, err)
		var last checkpoint.Stats
		for round := range 4 {
			for i := range 200 {
				require.NoError(t, db.Set([]byte(fmt.Sprintf("key%05d", (i*7+round*31)%500)), []byte(bigValue(i, round)), strata.NoSync))
			}
			last, err = db.CheckpointToStore(ctx, u)
			require.NoError(t, err)
		}
		requireStoreTidy(t, store)
		want := scanAll(t, db)
		dst := filepath.Join(root, "restored")
		require.NoError(t, checkpoint.Restore(ctx, store, last.ID, fs, dst, nil))
		require.Equal(t, want, dbState(t, fs, dst))
		part := filepath.Join(root, "part")
		require.NoError(t, strata.RestoreRangeFromStore(ctx, store, last.ID, []byte("key00100"), []byte("key00200"), part, smallOptions(fs)))
		wantPart := map[string]string{}
		for k, v := range want {
			if k >= "key00100" && k < "key00200" {
				wantPart[k] = v
			}
		}
		require.Equal(t, wantPart, dbState(t, fs, part))
	})
}
