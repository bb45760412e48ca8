package checkpoint_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/strata-db/strata/checkpoint"
	"github.com/strata-db/strata/remote"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// findings returns the findings' texts.
func findings(fs []checkpoint.Finding) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.String()
	}
	return out
}

// requireFinding checks that one of fs names object (and holder, if set)
// and says what.
func requireFinding(t *testing.T, fs []checkpoint.Finding, object, holder, what string) {
	t.Helper()
	for _, f := range fs {
		if f.Object == object && f.Holder == holder && strings.Contains(f.What, what) {
			return
		}
	}
	t.Fatalf("no finding on %s (holder %q) saying %q in:\n%s", object, holder, what, strings.Join(findings(fs), "\n"))
}

func audit(t *testing.T, s checkpoint.Store, o *checkpoint.AuditOptions) *checkpoint.AuditReport {
	t.Helper()
	r, err := checkpoint.Audit(context.Background(), s, o)
	require.NoError(t, err)
	return r
}

func put(t *testing.T, s checkpoint.Store, name, data string) {
	t.Helper()
	require.NoError(t, s.Put(context.Background(), name, strings.NewReader(data), int64(len(data))))
}

// TestAuditRegistry: an audit of a store of checkpoints (one of them
// opened by reference, checkpoint.Reference, whose manifest remote.
// ReadInstance reads) passes; it reports objects written before markers
// as notes, unless another holder marks them (its release would delete
// them), strays of the registry and of a given instance, markers of
// instances not given, foreign objects, and a registry that does not
// load; Fix writes missing markers and deletes unreferenced objects; the
// next upload drops the registry's strays.
func TestAuditRegistry(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewMem()
	db, store, u := openWithUploader(t, fs, "", &checkpoint.UploadOptions{KeepLast: 2, SmallFileSize: 16 << 10})
	states := map[uint64]map[string]string{}
	for round := range 3 {
		overwriteRound(t, db, u, round, states)
	}
	ids, err := checkpoint.Checkpoints(ctx, store)
	require.NoError(t, err)
	const id = "0123456789abcdef"
	// The older checkpoint: the newer one has objects of its own (the
	// values of the last round), which the instance does not hold, while
	// the older one's may all live on in the newer one.
	require.NoError(t, checkpoint.Reference(ctx, store, ids[0], fs, "ref", id))
	in, err := remote.ReadInstance(fs, "ref")
	require.NoError(t, err)
	require.Equal(t, id, in.ID)
	m, err := checkpoint.ReadManifest(ctx, store, ids[0])
	require.NoError(t, err)
	require.Len(t, in.Files, len(m.Files))
	for _, f := range m.Files {
		require.True(t, slices.ContainsFunc(in.Files, func(g remote.InstanceFile) bool {
			return g.Name == f.Name && g.Ref.Object == f.Object && int64(g.Ref.Offset) == f.Offset && g.Size == f.Size
		}), "file %s", f.Name)
	}
	opts := &checkpoint.AuditOptions{Instances: []*remote.Instance{in}}

	r := audit(t, store, opts)
	require.True(t, r.OK(), "%v %v %v", findings(r.Problems), findings(r.Strays), findings(r.Unreferenced))
	require.Equal(t, ids, r.Checkpoints)
	require.Positive(t, r.VerifiedPieces)
	require.Equal(t, r.Pieces, r.VerifiedPieces)
	require.Empty(t, r.Notes)
	// The instance holds its objects by a hold (Reference), which counts
	// as its markers, until its database turns it into markers.
	require.Equal(t, 1, r.Holds)
	require.NoError(t, remote.ConvertHold(ctx, store, "i-"+id))
	r = audit(t, store, opts)
	require.True(t, r.OK(), "%v %v %v", findings(r.Problems), findings(r.Strays), findings(r.Unreferenced))
	require.Zero(t, r.Holds)
	require.Empty(t, r.Notes)
	// A damaged hold is a problem: deletions fail while it is there.
	put(t, store, remote.HoldName("i-"+id), "strata-hold 1\nshared/x\n")
	r = audit(t, store, opts)
	requireFinding(t, r.Problems, remote.HoldName("i-"+id), "", "deletions fail while it is there")
	require.NoError(t, store.Delete(ctx, remote.HoldName("i-"+id)))

	// An object written before markers: a note, which Fix repairs.
	objs, err := checkpoint.Objects(ctx, store)
	require.NoError(t, err)
	var lone, shared string // an object of the registry alone, one the instance holds too
	for _, o := range objs {
		if slices.ContainsFunc(in.Files, func(f remote.InstanceFile) bool { return f.Ref.Object == o.Name }) {
			shared = o.Name
		} else {
			lone = o.Name
		}
	}
	require.NotEmpty(t, lone)
	require.NotEmpty(t, shared)
	require.NoError(t, store.Delete(ctx, remote.MarkerName(lone, remote.RegistryHolder)))
	r = audit(t, store, opts)
	require.True(t, r.OK())
	requireFinding(t, r.Notes, lone, "", "written before markers existed")
	// Held by an instance too, it is a problem: the instance's release
	// would delete what a retained checkpoint uses.
	require.NoError(t, store.Delete(ctx, remote.MarkerName(shared, remote.RegistryHolder)))
	r = audit(t, store, opts)
	requireFinding(t, r.Problems, shared, "", "no marker of the registry, which uses it, while i-"+id+" holds it too")
	r = audit(t, store, &checkpoint.AuditOptions{Instances: opts.Instances, Fix: true})
	require.True(t, r.OK())
	require.Len(t, r.Fixed, 2)
	holders, err := remote.Holders(ctx, store, shared)
	require.NoError(t, err)
	require.Equal(t, []string{"i-" + id, remote.RegistryHolder}, holders)

	// Strays: the registry's on a missing object, and on one it does
	// not name; the instance's on one its manifest does not name. A
	// marker of an instance not given is only a note, as is an object of
	// no format of the store's.
	require.NoError(t, remote.AddRef(ctx, store, "data/00000000000000000099-0000-00000000", remote.RegistryHolder))
	put(t, store, "shared/fedcba9876543210/000001.sst", "x")
	require.NoError(t, remote.AddRef(ctx, store, "shared/fedcba9876543210/000001.sst", remote.RegistryHolder))
	require.NoError(t, remote.AddRef(ctx, store, "shared/fedcba9876543210/000001.sst", "i-"+id))
	require.NoError(t, remote.AddRef(ctx, store, "shared/fedcba9876543210/000001.sst", "i-fedcba9876543210"))
	put(t, store, "misc/notes.txt", "hello")
	r = audit(t, store, &checkpoint.AuditOptions{Instances: opts.Instances, Fix: true})
	require.Len(t, r.Strays, 3, "%v", findings(r.Strays))
	requireFinding(t, r.Strays, "data/00000000000000000099-0000-00000000", remote.RegistryHolder, "on a missing object")
	requireFinding(t, r.Strays, "shared/fedcba9876543210/000001.sst", remote.RegistryHolder, "the next upload's sweep drops it")
	requireFinding(t, r.Strays, "shared/fedcba9876543210/000001.sst", "i-"+id, "the instance drops it at its next Open")
	requireFinding(t, r.Notes, "i-fedcba9876543210", "", "holds 1 objects; no database of instance fedcba9876543210 was given")
	requireFinding(t, r.Notes, "misc/notes.txt", "", "not an object this store's formats name")
	require.Empty(t, r.Problems)
	require.Empty(t, r.Fixed, "Fix dropped a stray marker")

	// The next upload drops the registry's strays; the instance's stays
	// until it opens; the other instance's object is still held.
	overwriteRound(t, db, u, 3, states)
	require.NoError(t, store.Delete(ctx, remote.MarkerName("shared/fedcba9876543210/000001.sst", "i-"+id)))
	r = audit(t, store, opts)
	require.True(t, r.OK(), "%v %v %v", findings(r.Problems), findings(r.Strays), findings(r.Unreferenced))

	// Unreferenced objects, which Fix deletes: unless a holder marks
	// them meanwhile, which the deletion checks for.
	require.NoError(t, store.Delete(ctx, remote.MarkerName("shared/fedcba9876543210/000001.sst", "i-fedcba9876543210")))
	put(t, store, "data/00000000000000000098-0000-00000000", "left by a failed upload")
	r = audit(t, store, opts)
	require.Len(t, r.Unreferenced, 2)
	requireFinding(t, r.Unreferenced, "shared/fedcba9876543210/000001.sst", "", "no marker holds")
	requireFinding(t, r.Unreferenced, "data/00000000000000000098-0000-00000000", "", "no marker holds")
	r = audit(t, store, &checkpoint.AuditOptions{Instances: opts.Instances, Fix: true})
	require.Len(t, r.Fixed, 2)
	require.True(t, r.OK())
	for _, name := range []string{"shared/fedcba9876543210/000001.sst", "data/00000000000000000098-0000-00000000"} {
		_, err := store.Get(ctx, name, 0, -1)
		require.ErrorIs(t, err, checkpoint.ErrNotExist, name)
	}

	// Two databases of one instance, and one that shares nothing.
	r = audit(t, store, &checkpoint.AuditOptions{Instances: []*remote.Instance{in, {Dir: "copy", ID: id}, {Dir: "plain"}}})
	requireFinding(t, r.Problems, "copy", "", "instance "+id+" is also the instance of ref")
	requireFinding(t, r.Notes, "plain", "", "has shared no file")

	// A registry that does not load: a problem, and the data objects are
	// not called unreferenced (nothing is known of them).
	reg, err := store.Get(ctx, "registry", 0, -1)
	require.NoError(t, err)
	var buf bytes.Buffer
	_, err = buf.ReadFrom(reg)
	require.NoError(t, err)
	reg.Close()
	b := buf.Bytes()
	b[10] ^= 1
	put(t, store, "registry", string(b))
	r = audit(t, store, &checkpoint.AuditOptions{Fix: true})
	requireFinding(t, r.Problems, "registry", "", "checksum mismatch")
	require.Empty(t, r.Unreferenced)
	require.Empty(t, r.Fixed)
}

// TestAuditDamage: each kind of damage to a checkpoint's object is a
// problem naming the object and the checkpoints that use it; a flipped
// byte only when the pieces are read (not Quick).
func TestAuditDamage(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		apply func(s checkpoint.Store, object string, data []byte)
		want  string
		quick bool // Quick sees it
		// restore: Restore fails too (a longer object keeps its pieces
		// whole: only the audit, which knows its size, sees it)
		restore bool
	}{
		{"Missing", func(s checkpoint.Store, o string, _ []byte) { require.NoError(t, s.Delete(ctx, o)) }, "missing; retained checkpoint", true, true},
		{"Truncated", func(s checkpoint.Store, o string, d []byte) { put(t, s, o, string(d[:len(d)-1])) }, "bytes, the registry says", true, true},
		{"Longer", func(s checkpoint.Store, o string, d []byte) { put(t, s, o, string(d)+"x") }, "bytes, the registry says", true, false},
		{"FlippedByte", func(s checkpoint.Store, o string, d []byte) {
			d = slices.Clone(d)
			d[len(d)-1] ^= 0x80
			put(t, s, o, string(d))
		}, "has XXH64", false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := vfs.NewMem()
			db, store, u := openWithUploader(t, fs, "", &checkpoint.UploadOptions{KeepLast: 2, SmallFileSize: 16 << 10})
			states := map[uint64]map[string]string{}
			overwriteRound(t, db, u, 0, states)
			objs, err := checkpoint.Objects(ctx, store)
			require.NoError(t, err)
			object := objs[len(objs)/2].Name
			rc, err := store.Get(ctx, object, 0, -1)
			require.NoError(t, err)
			var buf bytes.Buffer
			_, err = buf.ReadFrom(rc)
			require.NoError(t, err)
			rc.Close()
			c.apply(store, object, buf.Bytes())
			r := audit(t, store, nil)
			require.False(t, r.OK())
			requireFinding(t, r.Problems, object, "", c.want)
			r = audit(t, store, &checkpoint.AuditOptions{Quick: true})
			require.Equal(t, !c.quick, r.OK(), "%v", findings(r.Problems))
			require.Zero(t, r.VerifiedPieces)
			err = checkpoint.Restore(ctx, store, 1, fs, fmt.Sprintf("restore-%s", c.name), nil)
			require.Equal(t, c.restore, err != nil, "restore: %v", err)
			require.NoError(t, db.Close())
		})
	}
}
