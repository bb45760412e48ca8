package strata

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/strata-db/strata/checkpoint"
	"github.com/strata-db/strata/remote"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// TestAuditSharedFiles: the audit of a store holding a database's shared
// files, a checkpoint that references them (external objects of the
// registry) and a database opened from it passes, and reports, naming
// the object, a shared file's object gone or cut short, and the marker of
// its instance or of the registry gone; Fix writes missing markers back.
func TestAuditSharedFiles(t *testing.T) {
	ctx := t.Context()
	base := vfs.NewMem()
	opts := sharedOptions(t, base, 1<<20)
	a, err := Open("a", opts)
	require.NoError(t, err)
	for i := range 1500 {
		require.NoError(t, a.Set([]byte(fmt.Sprintf("k%05d", i)), sharedValue(i, 0), NoSync))
	}
	require.NoError(t, a.Compact(nil, nil))
	a.waitSharedIdle()
	u, err := checkpoint.NewUploader(opts.SharedStore, nil)
	require.NoError(t, err)
	st, err := a.CheckpointToStore(ctx, u)
	require.NoError(t, err)
	bo := *opts
	bo.SharedStore = nil
	b, err := OpenFromStore(ctx, opts.SharedStore, st.ID, "b", &bo)
	require.NoError(t, err)
	require.NoError(t, b.Close())
	require.NoError(t, a.Close())

	in, err := remote.ReadInstance(base, "a")
	require.NoError(t, err)
	var object string // a shared file of a, which the checkpoint references
	for _, f := range in.Files {
		if strings.HasSuffix(f.Name, ".vlog") {
			object = f.Ref.Object
		}
	}
	require.NotEmpty(t, object)
	aHolder := remote.InstanceHolder(in.ID)

	audit := func(fs vfs.FS, fix bool) *checkpoint.AuditReport {
		t.Helper()
		store, err := checkpoint.NewLocalStoreFS(fs, "store")
		require.NoError(t, err)
		var instances []*remote.Instance
		for _, dir := range []string{"a", "b"} {
			in, err := remote.ReadInstance(fs, dir)
			require.NoError(t, err)
			instances = append(instances, in)
		}
		r, err := checkpoint.Audit(ctx, store, &checkpoint.AuditOptions{Instances: instances, Fix: fix})
		require.NoError(t, err)
		return r
	}
	r := audit(base, false)
	require.True(t, r.OK(), "%v %v %v", r.Problems, r.Strays, r.Unreferenced)
	require.Positive(t, r.ExternalObjects)
	require.Equal(t, 2, r.Instances)

	for _, c := range []struct {
		name   string
		damage func(s checkpoint.Store)
		want   []string
		fixed  bool
	}{
		{"Missing", func(s checkpoint.Store) { require.NoError(t, s.Delete(ctx, object)) },
			[]string{"missing; retained checkpoint", "missing; the database a (instance " + in.ID + ") reads", "missing; the database b"}, false},
		{"Short", func(s checkpoint.Store) {
			rc, err := s.Get(ctx, object, 0, -1)
			require.NoError(t, err)
			data, err := io.ReadAll(rc)
			require.NoError(t, err)
			rc.Close()
			require.NoError(t, s.Put(ctx, object, bytes.NewReader(data[:len(data)-1]), int64(len(data)-1)))
		}, []string{"but its pieces end at", "but the database a (instance " + in.ID + ") reads"}, false},
		{"NoInstanceMarker", func(s checkpoint.Store) { require.NoError(t, s.Delete(ctx, remote.MarkerName(object, aHolder))) },
			[]string{"no marker of instance " + in.ID + ", whose database a reads"}, true},
		{"NoRegistryMarker", func(s checkpoint.Store) {
			require.NoError(t, s.Delete(ctx, remote.MarkerName(object, remote.RegistryHolder)))
		}, []string{"a shared file's object the registry references has no marker of the registry"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := base.CrashClone(vfs.CrashOptions{})
			store, err := checkpoint.NewLocalStoreFS(fs, "store")
			require.NoError(t, err)
			c.damage(store)
			r := audit(fs, false)
			for _, w := range c.want {
				found := false
				for _, p := range r.Problems {
					found = found || (p.Object == object && strings.Contains(p.What, w))
				}
				require.True(t, found, "no problem on %s saying %q in %v", object, w, r.Problems)
			}
			r = audit(fs, true)
			require.Equal(t, c.fixed, r.OK(), "after Fix: %v", r.Problems)
		})
	}
}
