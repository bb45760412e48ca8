package tool

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/checkpoint"
	"github.com/strata-db/strata/checkpoint/storetest"
	"github.com/strata-db/strata/remote"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// makeStore builds, on fs, a store "store" holding checkpoints of a
// database "a" and a checkpoint by reference, in registry "b", of a
// database "b" opened from one of them (OpenFromStore: b holds the checkpoint's objects by its
// markers and reads its files from them), and returns b's instance: its
// shared files and the objects they are in. Nothing runs in the
// background when it returns.
func makeStore(t *testing.T, fs vfs.FS) *remote.Instance {
	t.Helper()
	ctx := context.Background()
	store, err := checkpoint.NewLocalStoreFS(fs, "store")
	require.NoError(t, err)
	a, err := strata.Open("a", testOptions(fs))
	require.NoError(t, err)
	u, err := checkpoint.NewUploader(store, &checkpoint.UploadOptions{KeepLast: 3, SmallFileSize: 32 << 10})
	require.NoError(t, err)
	for round := range 2 {
		for i := range 1000 {
			require.NoError(t, a.Set([]byte(testKey(i)), []byte(testValue(i, round)), strata.NoSync))
		}
		require.NoError(t, a.Compact(nil, nil))
		_, err := a.CheckpointToStore(ctx, u)
		require.NoError(t, err)
	}
	require.NoError(t, a.Close())

	bo := testOptions(fs)
	// No compaction and no value-log GC: b's files stay those of the
	// checkpoint, all of which the hold converted below names (a's GC may
	// not have deleted round 1's value logs, all garbage, before its
	// second checkpoint; b's would, leaving markers b's state no longer
	// explains).
	bo.DisableAutomaticCompactions, bo.DisableGC = true, true
	b, err := strata.OpenFromStore(ctx, store, 2, "b", bo)
	require.NoError(t, err)
	// Small values: the flush writes a table and no value log, and nothing
	// new qualifies for sharing.
	for i := range 50 {
		require.NoError(t, b.Set([]byte(testKey(i)), []byte("b"), strata.NoSync))
	}
	// b checkpoints into a registry of its own.
	bs, err := checkpoint.Named(store, "b")
	require.NoError(t, err)
	ub, err := checkpoint.NewUploader(bs, &checkpoint.UploadOptions{KeepLast: 3, SmallFileSize: 32 << 10})
	require.NoError(t, err)
	_, err = b.CheckpointToStore(ctx, ub)
	require.NoError(t, err)
	require.NoError(t, b.Close())
	in, err := remote.ReadInstance(fs, "b")
	require.NoError(t, err)
	require.NotEmpty(t, in.Files)
	// b closed before its share loop turned the hold OpenFromStore wrote
	// into markers (a second after Open): do it as the loop would, so
	// that b holds its objects by markers, which the cases damage.
	held, err := remote.Held(ctx, store)
	require.NoError(t, err)
	require.Contains(t, held, in.Holder())
	require.NoError(t, remote.ConvertHold(ctx, store, in.Holder()))
	return in
}

// storeObjects lists the objects of the store under prefix.
func storeObjects(t *testing.T, fs vfs.FS, prefix string) []checkpoint.ObjectInfo {
	t.Helper()
	s, err := checkpoint.NewLocalStoreFS(fs, "store")
	require.NoError(t, err)
	list, err := s.List(context.Background(), prefix)
	require.NoError(t, err)
	return list
}

func putObject(t *testing.T, fs vfs.FS, name string, data []byte) {
	t.Helper()
	s, err := checkpoint.NewLocalStoreFS(fs, "store")
	require.NoError(t, err)
	require.NoError(t, s.Put(context.Background(), name, bytes.NewReader(data), int64(len(data))))
}

func getObject(t *testing.T, fs vfs.FS, name string) []byte {
	t.Helper()
	s, err := checkpoint.NewLocalStoreFS(fs, "store")
	require.NoError(t, err)
	rc, err := s.Get(context.Background(), name, 0, -1)
	require.NoError(t, err)
	defer rc.Close()
	b, err := io.ReadAll(rc)
	require.NoError(t, err)
	return b
}

func deleteObject(t *testing.T, fs vfs.FS, name string) {
	t.Helper()
	s, err := checkpoint.NewLocalStoreFS(fs, "store")
	require.NoError(t, err)
	require.NoError(t, s.Delete(context.Background(), name))
}

// TestCheckStore: check --store passes a healthy store (checkpoints, one
// by reference, and a database opened from one), and fails each kind of
// damage with exit status 1 and a report naming the object; --quick does
// not read the pieces; --fix deletes unreferenced objects and writes
// missing markers, and leaves stray markers to their holders.
func TestCheckStore(t *testing.T) {
	base := vfs.NewMem()
	b := makeStore(t, base)
	holder := b.Holder()
	// A data object b reads a file from, and the other data objects.
	bObject := b.Files[0].Ref.Object
	var other string
	for _, o := range storeObjects(t, base, "data/") {
		if !slices.ContainsFunc(b.Files, func(f remote.InstanceFile) bool { return f.Ref.Object == o.Name }) {
			other = o.Name
		}
	}
	require.NotEmpty(t, other, "every data object holds a file of b")
	fresh := func() vfs.FS { return base.CrashClone(vfs.CrashOptions{}) }

	t.Run("Healthy", func(t *testing.T) {
		fs := fresh()
		code, out := run(t, fs, "check", "--store", "store", "b")
		require.Equal(t, 0, code, out)
		contains(t, out, "registry    2 retained checkpoints (1, 2)")
		contains(t, out, "registry b: 1 retained checkpoints (1)")
		contains(t, out, "against their XXH64")
		contains(t, out, "database    b: instance "+b.ID)
		contains(t, out, "keys read")
		require.True(t, strings.HasSuffix(out, "OK\n"), out)
		code, out = run(t, fs, "check", "--store", "store", "--quick", "b")
		require.Equal(t, 0, code, out)
		contains(t, out, "sizes only (--quick)")
		contains(t, out, "not scanned")
		// Without b, its markers are a holder the audit does not know.
		code, out = run(t, fs, "check", "--store", "store")
		require.Equal(t, 0, code, out)
		contains(t, out, "note: "+holder+": holds ")
		// Unless the databases given are all there are: then they are
		// stray, as a gone instance's would be.
		code, out = run(t, fs, "check", "--store", "store", "--all")
		require.Equal(t, 1, code, out)
		contains(t, out, "stray: "+holder+": holds ")
		code, out = run(t, fs, "check", "--store", "store", "--all", "b")
		require.Equal(t, 0, code, out)
	})

	// A hold of an instance that is gone (an OpenFromStore a crash
	// stopped): a note, or with --all a stray; a Destroy of a directory
	// being destroyed was not finished: it is left out, said so.
	t.Run("GoneInstance", func(t *testing.T) {
		fs := fresh()
		gone := remote.InstanceHolder(remote.NewInstanceID())
		hold := remote.EncodeHold([]string{bObject})
		putObject(t, fs, remote.HoldName(gone), hold)
		code, out := run(t, fs, "check", "--store", "store", "b")
		require.Equal(t, 0, code, out)
		contains(t, out, "note: "+gone+": holds 1 objects")
		code, out = run(t, fs, "check", "--store", "store", "--all", "b")
		require.Equal(t, 1, code, out)
		contains(t, out, "stray: "+gone+": holds 1 objects")
		require.NoError(t, remote.MarkDestroying(fs, "b"))
		code, out = run(t, fs, "check", "--store", "store", "b")
		contains(t, out, "database    b: instance "+b.ID+", ")
		contains(t, out, "being destroyed: not audited")
		require.Equal(t, 0, code, out)
	})

	for _, c := range []struct {
		name   string
		damage func(t *testing.T, fs vfs.FS)
		want   []string // in the report
		quick  bool     // --quick sees it too
		fixed  bool     // --fix repairs it
	}{
		{name: "MissingDataObject", damage: func(t *testing.T, fs vfs.FS) { deleteObject(t, fs, other) },
			want: []string{"PROBLEM: " + other + ": missing; retained checkpoint"}, quick: true},
		{name: "TruncatedDataObject", damage: func(t *testing.T, fs vfs.FS) {
			data := getObject(t, fs, other)
			putObject(t, fs, other, data[:len(data)-10])
		}, want: []string{fmt.Sprintf("PROBLEM: %s: %d bytes, the registry says %d", other, len(getObject(t, base, other))-10, len(getObject(t, base, other)))}, quick: true},
		{name: "FlippedByte", damage: func(t *testing.T, fs vfs.FS) {
			data := slices.Clone(getObject(t, fs, other))
			data[len(data)/2] ^= 0x10
			putObject(t, fs, other, data)
		}, want: []string{"PROBLEM: " + other + ": offset ", "has XXH64"}},
		{name: "MissingSharedFileObject", damage: func(t *testing.T, fs vfs.FS) { deleteObject(t, fs, bObject) },
			want: []string{"PROBLEM: " + bObject + ": missing; the database b (instance " + b.ID + ") reads " + b.Files[0].Name,
				"PROBLEM: " + bObject + ": missing; retained checkpoint"}, quick: true},
		{name: "SharedFileWithoutInstanceMarker", damage: func(t *testing.T, fs vfs.FS) { deleteObject(t, fs, remote.MarkerName(bObject, holder)) },
			want: []string{"PROBLEM: " + bObject + ": no marker of instance " + b.ID + ", whose database b reads "}, quick: true, fixed: true},
		{name: "MarkerWithoutObject", damage: func(t *testing.T, fs vfs.FS) {
			putObject(t, fs, remote.MarkerName("shared/"+b.ID+"/000999.sst", holder), nil)
		}, want: []string{"stray: " + remote.MarkerName("shared/"+b.ID+"/000999.sst", holder) + ": on a missing object"}, quick: true},
		{name: "UnmarkedOrphanSharedObject", damage: func(t *testing.T, fs vfs.FS) {
			putObject(t, fs, "shared/"+b.ID+"/000998.sst", []byte("orphan"))
		}, want: []string{"unreferenced: shared/" + b.ID + "/000998.sst: 6 bytes that no marker holds"}, quick: true, fixed: true},
		{name: "UnmarkedOrphanDataObject", damage: func(t *testing.T, fs vfs.FS) {
			putObject(t, fs, "data/00000000000000000099-0000-0badf00d", []byte("left by a failed upload"))
		}, want: []string{"unreferenced: data/00000000000000000099-0000-0badf00d: "}, quick: true, fixed: true},
		{name: "StrayRegistryMarker", damage: func(t *testing.T, fs vfs.FS) {
			putObject(t, fs, "shared/"+b.ID+"/000997.sst", []byte("x"))
			putObject(t, fs, remote.MarkerName("shared/"+b.ID+"/000997.sst", remote.RegistryHolder), nil)
		}, want: []string{"stray: " + remote.MarkerName("shared/"+b.ID+"/000997.sst", remote.RegistryHolder) + ": its holder's state does not name the object"}, quick: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := fresh()
			c.damage(t, fs)
			code, out := run(t, fs, "check", "--store", "store", "b")
			require.Equal(t, 1, code, out)
			for _, w := range c.want {
				contains(t, out, w)
			}
			require.Contains(t, out, "problems, ")
			code, out = run(t, fs, "check", "--store", "store", "--quick", "b")
			if c.quick {
				require.Equal(t, 1, code, out)
				contains(t, out, c.want[0])
			} else {
				require.Equal(t, 0, code, "--quick reads no piece:\n%s", out)
			}
			code, out = run(t, fs, "check", "--store", "store", "--fix", "b")
			if !c.fixed {
				require.Equal(t, 1, code, "--fix: %s", out)
				return
			}
			require.Equal(t, 0, code, out)
			contains(t, out, "fixed: ")
			code, out = run(t, fs, "check", "--store", "store", "b")
			require.Equal(t, 0, code, "after --fix: %s", out)
		})
	}

	t.Run("Usage", func(t *testing.T) {
		fs := fresh()
		code, out := run(t, fs, "check", "--quick", "b")
		require.Equal(t, 2, code, out)
		contains(t, out, "--quick, --fix and --all go with --store")
		code, out = run(t, fs, "check", "--store", "nowhere")
		require.Equal(t, 1, code, out)
		contains(t, out, "no store at nowhere")
		_, err := fs.Stat("nowhere")
		require.Error(t, err, "a check created a store")
		code, out = run(t, fs, "check", "--store", "s3://bucket/prefix?x=1")
		require.Equal(t, 1, code, out)
		contains(t, out, "is not s3://BUCKET[/PREFIX]")
	})
}

// TestS3Options: an s3:// URL names the bucket and prefix; the endpoint,
// region and keys come from the environment, as the AWS tools read them.
func TestS3Options(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	keys := map[string]string{"AWS_ACCESS_KEY_ID": "ak", "AWS_SECRET_ACCESS_KEY": "sk"}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range keys {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	for _, c := range []struct {
		url  string
		env  map[string]string
		want checkpoint.S3Options
		err  string
	}{
		{url: "s3://bkt", env: keys, want: checkpoint.S3Options{Bucket: "bkt", Region: "us-east-1", Endpoint: "https://s3.us-east-1.amazonaws.com", AccessKey: "ak", SecretKey: "sk"}},
		{url: "s3://bkt/a/b/", env: with(map[string]string{"AWS_REGION": "eu-west-1"}),
			want: checkpoint.S3Options{Bucket: "bkt", Prefix: "a/b", Region: "eu-west-1", Endpoint: "https://s3.eu-west-1.amazonaws.com", AccessKey: "ak", SecretKey: "sk"}},
		{url: "s3://bkt/p", env: with(map[string]string{"AWS_ENDPOINT_URL": "http://127.0.0.1:7070", "AWS_DEFAULT_REGION": "x"}),
			want: checkpoint.S3Options{Bucket: "bkt", Prefix: "p", Region: "x", Endpoint: "http://127.0.0.1:7070", AccessKey: "ak", SecretKey: "sk"}},
		{url: "s3://bkt", env: with(map[string]string{"AWS_ENDPOINT_URL": "http://a", "AWS_ENDPOINT_URL_S3": "http://b"}),
			want: checkpoint.S3Options{Bucket: "bkt", Region: "us-east-1", Endpoint: "http://b", AccessKey: "ak", SecretKey: "sk"}},
		{url: "s3://bkt", env: map[string]string{}, err: "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set"},
		{url: "s3:///p", env: keys, err: "is not s3://"},
	} {
		got, err := s3Options(c.url, env(c.env))
		if c.err != "" {
			require.ErrorContains(t, err, c.err, c.url)
			continue
		}
		require.NoError(t, err, c.url)
		require.Equal(t, c.want, got, c.url)
	}
}

// TestCheckStoreS3: check --store s3://BUCKET/PREFIX reaches an S3 store
// with the endpoint and keys of the environment, and audits it as a local
// one.
func TestCheckStoreS3(t *testing.T) {
	endpoint := storetest.StartS3Server(t)
	ctx := context.Background()
	s, err := checkpoint.NewS3Store(checkpoint.S3Options{Endpoint: endpoint, Bucket: "audit", Prefix: "p/q",
		AccessKey: storetest.S3AccessKey, SecretKey: storetest.S3SecretKey})
	require.NoError(t, err)
	require.NoError(t, s.EnsureBucket(ctx))
	fs := vfs.NewMem()
	db, err := strata.Open("a", testOptions(fs))
	require.NoError(t, err)
	for i := range 500 {
		require.NoError(t, db.Set([]byte(testKey(i)), []byte(testValue(i, 0)), strata.NoSync))
	}
	u, err := checkpoint.NewUploader(s, nil)
	require.NoError(t, err)
	_, err = db.CheckpointToStore(ctx, u)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	t.Setenv("AWS_ENDPOINT_URL", endpoint)
	t.Setenv("AWS_ENDPOINT_URL_S3", "")
	t.Setenv("AWS_ACCESS_KEY_ID", storetest.S3AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", storetest.S3SecretKey)
	code, out := run(t, fs, "check", "--store", "s3://audit/p/q")
	require.Equal(t, 0, code, out)
	contains(t, out, "check --store s3://audit/p/q")
	contains(t, out, "registry    1 retained checkpoints (1)")
	require.True(t, strings.HasSuffix(out, "OK\n"), out)

	put := func(name string) {
		require.NoError(t, s.Put(ctx, name, strings.NewReader("x"), 1))
	}
	put("shared/0123456789abcdef/000001.sst")
	code, out = run(t, fs, "check", "--store", "s3://audit/p/q")
	require.Equal(t, 1, code, out)
	contains(t, out, "unreferenced: shared/0123456789abcdef/000001.sst")
	// Another prefix of the bucket is another store, here an empty one
	// beside objects of none of its formats.
	code, out = run(t, fs, "check", "--store", "s3://audit/p")
	require.Equal(t, 0, code, out)
	contains(t, out, "note: q/registry: not an object this store's formats name")
}
